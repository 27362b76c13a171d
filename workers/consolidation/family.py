"""Who each person's family is: the first lines of MEMORY.md's "People" section.

People are seldom introduced in a sentence of their own: Melanie's kids, John's wife and
Nate's turtles come up in passing, in statements about something else ("Melanie's kids
are so excited about summer break", "John's wife and John hosted a small get-together"),
which are no line of MEMORY.md. A reader, and a small model asked "Does Melanie have
kids?", wants them in one place. So each speaker gets one line, written anew each time
from the active mined statements: "Melanie's family: kids, a husband." — "The user's
family: a sister (Stella), a cat (Luna)."

- **A mention**: a speaker's possessive, then a relative or a pet ("The user's sister",
  "Nate's turtles", "Melanie's two kids"), and the name that follows it ("… sister Stella",
  "… husband's name is Michael"); or that the speaker got or has one ("Maria got a puppy
  … Her name's Coco"). Kids and kid, a dog and dogs are one kind; so is a partner by any
  word ("my girlfriend" before the wedding, "my wife" after), shown by the word said most.
- **Who is in the line**: a kind mentioned in at least :data:`MIN_MENTIONS` turns, or
  with a name. A single unnamed mention may be everyone's ("Our kids are our future", said
  of all children, is mined as "Maria's kids are Maria's future": Maria has none). A
  parent or grandparent only with a name: everyone has them.
- **Who is not**: a kind any statement tells is gone or past ("… late grandma", "… dog
  passed away", "… ex-husband", "used to have a dog"); "pets" beside a kind of pet.
- **Nor a People line**: a statement that opens with a relative the family line leaves out
  as maybe everyone's (:meth:`Family.unattested`) joins no section: it would say what the
  family line does not. Consolidation weighs a statement once, the night it is new: when a
  later night's statements name that relative again, the family line names them, and the
  earlier statement stays in its journal.
- **"My …" once is enough**: a kind the speaker calls "my KIND" in a turn of their own
  ("I'm lucky to have my husband and kids", "Is Azul suitable for my sister?") is theirs
  even said once and unnamed, when the word ends its noun phrase (not "my horse
  painting"); "our" may speak for everyone ("Our kids are our future"). A parent or
  grandparent still only with a name.
- **Their own words, too**: a name is often said outside any statement of the speaker's:
  in a question ("Is it safe for my dog Max to eat grapes?"), in a reply to a photo
  ("Oscar, my guinea pig"), in a sentence about something else ("That picture was from
  my daughter Sara's birthday"). So a speaker's own turns are read as well (the caller
  gives those by a source, as mining chooses them), for a kind with a name in the first
  person: "my KIND NAME", "my KIND's name is NAME", "NAME, my KIND", "I/we got, adopted
  … a KIND named NAME" (:data:`_OWN`). Such a turn is one mention, whatever statements
  are mined from it too.
- **Which statements**: the caller's; consolidation gives the active mined statements that
  open with a speaker, not a pasted text ("Title: The Curb River 1“Rain, rain, go away,”
  the user's little sister Stella sang.").

Pure and deterministic: the same statements give the same lines, which name the people as
the statements do, by their kind and name, and nothing else.
"""
from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from projections.kin import RELATIVES, alternation
from projections.relative_time import DAY_NAME, MONTH_NAME
from projections.tense import is_past

from ..mining.attributes import ATTRIBUTES

MIN_MENTIONS = 2
MAX_KINDS = 8         # kinds in one line, the most mentioned first

# the words of a kind: relatives as said (:data:`projections.kin.RELATIVES`; a partner by any
# word, one person: "my girlfriend" before the wedding, "my wife" after), pets by the pet
# attribute's kinds
_PARTNERS = frozenset({"partner", "wife", "husband", "girlfriend", "boyfriend", "fiancé"})
_RELATIVES = {**{word: "partner" if kind in _PARTNERS else kind
                 for word, kind in RELATIVES.items()}, "pet": "pet", "pets": "pet"}
_ONLY_NAMED = frozenset({"mother", "father", "parent", "grandmother", "grandfather",
                         "grandparent"})
_PETS = {word: kind for attribute in ATTRIBUTES if attribute.key == "pet"
         for kind, words in attribute.kinds for word in words}
_PET_KINDS = frozenset(_PETS.values())
_KINDS = {**_PETS, **_RELATIVES}
_WORDS = alternation(_KINDS)
KIN_PHRASES = tuple(_KINDS)   # the words a turn may name one of a speaker's own with
_NAME = r"(?P<name>[A-Z][a-z]+)\b"
# a kind's word as the first half of another noun: "the user's dog walker", "… cat sitter",
# "… sister-in-law" (neither the dog nor the sister is named)
_COMPOUND = ("walkers?|sitters?|sitting|food|toys?|beds?|park|groomers?|trainers?|treats"
             "|daycare|shows?|lovers?|owners?|breeders?|shelters?|friendly|people|person")
_BEFORE = (r"(?:(?:new|little|older|younger|big|baby|eldest|oldest|youngest|two|three|four"
           r"|sweet|adorable|cute|rescue|lovely|beloved|furry|dear|late|pet)\s+)*")
_KIND = rf"(?P<kind>{_WORDS})\b(?!-\w|\s+(?:{_COMPOUND})\b)"
_MENTION = re.compile(
    rf"\b(?P<who>(?:[Tt]he user|[A-Z][\w-]*))['’]s\s+{_BEFORE}{_KIND}"
    rf"(?:(?:['’]s name is|,? (?:who is |whose name is )?(?:named|called)|,)?\s+{_NAME})?")
# a speaker's own words, in any sentence of their turn (a question, a reply to a caption,
# one about something else), naming one of their own: "… for my daughter Sara's birthday",
# "my dog's name is Max", "Oscar, my guinea pig." (not "Thankfully, my son's ok"), "we got
# another cat named Bailey"
_OWN = (re.compile(rf"\b[Mm]y\s+{_BEFORE}{_KIND}(?:['’]s name is|,? (?:named|called))?\s+{_NAME}"),
        re.compile(rf"\b{_NAME},\s+my\s+{_BEFORE}{_KIND}(?=\s*(?:[.!?,;:)]|$))"),
        re.compile(r"\b(?:I|[Ww]e)(?:['’]ve| have)?\s+(?:just\s+|recently\s+|finally\s+)?"
                   rf"(?:got|adopted|rescued|welcomed)\s+(?:a|an|another)\s+{_BEFORE}{_KIND}"
                   rf",?\s+(?:named|called)\s+{_NAME}"))
# a statement that its person got or has one: "Maria got a puppy around 28 July 2023. Her
# name's Coco", "Nate has three turtles", "The user adopted a cat named Miso"
_HAS = re.compile(
    r"\b(?P<who>(?:[Tt]he user|[A-Z][\w-]*)) (?:just |recently |finally |also |now )?"
    rf"(?:got|adopted|rescued|welcomed|has) (?:a|an|another|two|three|four) {_BEFORE}{_KIND}"
    rf"(?:,? (?:named|called) {_NAME}|[^.!?]*[.!?] (?:His|Her|Its) name(?:['’]s| is) "
    rf"{_NAME.replace('<name>', '<told>')})?")
# a speaker's own "my KIND", named or not, and the kinds listed with it ("my husband and
# kids", "for my niece"): theirs, even said once (not "our", which may be everyone's)
_MY = re.compile(rf"\b[Mm]y\s+{_BEFORE}{_KIND}(?:(?:,\s*|,?\s+and\s+){_BEFORE}"
                 rf"{_KIND.replace('?P<kind>', '?:')})*")
_ONE_KIND = re.compile(rf"\b{_KIND}")
# a word after "my KIND" that ends the noun phrase there ("my sister, who …", "my son got
# …", "my turtles always …"; not "my horse painting", "my bird identification skills"):
# these, a past or "-s" verb, an adverb in "-ly", a name
_PHRASE_ENDS = frozenset(
    "and or but so to for with in on at from of about when who whose that what before after"
    " while because if a an the this is are was were has have had do does did don't doesn't"
    " didn't will would can could should might may must just also really always never still"
    " actually soon now too out up back".split())
# told gone or past, near the mention: no longer the person's
_GONE = re.compile(r"\b(?:late|died|dies|passed away|passing|lost|funeral|ex|former"
                   r"|used to have|had to (?:give|get rid)|put down|divorced|broke up)\b",
                   re.IGNORECASE)
_NEAR = 40            # characters either side of a mention read for _GONE
_NOT_A_NAME = re.compile(rf"^(?:{MONTH_NAME}|{DAY_NAME}|The|And|But|Then|When|While|After"
                         r"|Before|Since|So|Also|Just|Still|Even|I)$")


@dataclass
class _Kind:
    forms: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    names: dict[str, None] = field(default_factory=dict)
    mentions: set[str] = field(default_factory=set)
    own: bool = False     # called "my KIND" in a turn of the speaker's own
    gone: bool = False


class Family:
    """The kin and pets each speaker's statements mention (see the module doc)."""

    def __init__(self, statements: Iterable[tuple[str, str]], names: frozenset[str],
                 turns: Iterable[tuple[str, str, str]] = ()) -> None:
        """``statements``: (key, text) of the active mined statements, the key the turn a
        statement cites (statements of one turn are one mention); ``names``: the home's
        speakers' first names, casefolded ("the" for "The user"); ``turns``: (ref, speaker
        as statements name them, text) of turns by a source, read for :data:`_OWN`."""
        self.names = names
        self.people: dict[str, dict[str, _Kind]] = {}
        for key, text in statements:
            for pattern in (_MENTION, _HAS):
                for found in pattern.finditer(text):
                    who = self._who(found)
                    if who is not None:
                        self._mention(who, found, key, text)
        for ref, who, text in turns:
            for pattern in _OWN:
                for found in pattern.finditer(text):
                    self._mention(who, found, ref, text)
            for listed in _MY.finditer(text):
                for found in _ONE_KIND.finditer(text, listed.start(), listed.end()):
                    if _ends_its_phrase(text[found.end():]):
                        self._mention(who, found, ref, text).own = True

    def _mention(self, who: str, found: re.Match[str], key: str, text: str) -> _Kind:
        """Count a mention of one of ``who``'s kin or pets, said in ``key`` (a statement or
        a turn): its kind, its name (when it is one) and whether it is told gone; the
        kind."""
        word = found["kind"].casefold()
        kind = self.people.setdefault(who, {}).setdefault(_KINDS[word], _Kind())
        kind.forms[word] += 1
        kind.mentions.add(key)
        name = found.groupdict().get("name") or found.groupdict().get("told")
        if name and name.casefold() not in self.names and not _NOT_A_NAME.match(name):
            kind.names[name] = None
        near = text[max(0, found.start() - _NEAR):found.end() + _NEAR]
        kind.gone = kind.gone or bool(_GONE.search(near))
        return kind

    def _who(self, found: re.Match[str]) -> str | None:
        """The speaker a mention's possessive names, or None for anyone else."""
        who = found["who"]
        if who.casefold().split()[0] not in self.names:
            return None
        return "The user" if who.casefold() == "the user" else who

    def lines(self) -> list[str]:
        """Each speaker's family line, in the order they are first mentioned. A line cites
        no turn: recall would take the turns it cites as shown, and it tells none of
        them."""
        lines = []
        for who, kinds in self.people.items():
            shown = [(key, kind) for key, kind in kinds.items() if _shown(key, kind)]
            if any(key in _PET_KINDS for key, _kind in shown):  # "pets" said of the turtles
                shown = [(key, kind) for key, kind in shown if key != "pet" or kind.names]
            shown.sort(key=lambda item: -len(item[1].mentions))
            shown = shown[:MAX_KINDS]
            if shown:
                lines.append(f"{who}'s family: "
                             f"{', '.join(_item(kind) for _key, kind in shown)}.")
        return lines

    def unattested(self, statement: str) -> bool:
        """Whether ``statement`` opens with a relative of its speaker whom the family line
        leaves out as maybe everyone's: no pet, parent nor one told gone, but a kind this
        statement alone mentions, unnamed ("Maria's kids are Maria's future", from "Our
        kids are our future"). It says nothing of the person's people either."""
        found = _MENTION.match(statement)
        who = self._who(found) if found else None
        if found is None or who is None:
            return False
        key = _KINDS[found["kind"]]
        kind = self.people.get(who, {}).get(key)
        return kind is not None and key not in _PET_KINDS and key != "pet" \
            and key not in _ONLY_NAMED and not kind.gone and not _shown(key, kind)


def _shown(key: str, kind: _Kind) -> bool:
    """Whether a kind is in its person's family line: named, or called "my KIND" in their
    own turn or mentioned in :data:`MIN_MENTIONS` turns (a parent or grandparent only
    named), and not gone."""
    return not kind.gone and (bool(kind.names) or (
        (kind.own or len(kind.mentions) >= MIN_MENTIONS) and key not in _ONLY_NAMED))


def _ends_its_phrase(after: str) -> bool:
    """Whether a kind's word, followed by ``after``, ends its noun phrase (see
    :data:`_PHRASE_ENDS`): then it is the kind, not half of another noun."""
    word = re.match(r"\s*([^\W\d_][\w'’]*)", after)
    if word is None:
        return True       # the end, a mark ("my kids.", "my sister's"), a number
    low = word[1].casefold()
    return word[1][0].isupper() or low in _PHRASE_ENDS or low.endswith("ly") or is_past(low) \
        or (low.endswith("s") and not low.endswith("ss"))


def family_lines(statements: Iterable[tuple[str, str]], names: frozenset[str]) -> list[str]:
    """Each speaker's family line (:meth:`Family.lines`)."""
    return Family(statements, names).lines()


def _item(kind: _Kind) -> str:
    """The word said most ("kids", "a turtle"), with an article when singular, plural for
    more names than one, and the names said with it: "a sister (Stella)", "kids (Kyle,
    Sara)", "dogs (Coco, Shadow)"."""
    word = max(kind.forms, key=lambda w: (kind.forms[w], w))
    if len(kind.names) > 1:
        word = _plural(word)
    elif not _is_plural(word):
        word = ("an " if word[0] in "aeiou" else "a ") + word
    return word + (f" ({', '.join(kind.names)})" if kind.names else "")


def _is_plural(word: str) -> bool:
    return word.endswith("s") or word in ("children", "grandchildren")


def _plural(word: str) -> str:
    """A kind's word for more than one: "dogs", "puppies", "children", "fish"."""
    if _is_plural(word) or word.endswith("fish"):
        return word
    if word.endswith("child"):
        return word + "ren"
    if word.endswith("y") and word[-2:-1] not in ("a", "e", "o", "u"):
        return word[:-1] + "ies"
    return word + "s"

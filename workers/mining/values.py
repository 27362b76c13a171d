"""Whether a mined statement says a current value: the one test MEMORY.md's sections
(:func:`workers.consolidation.consolidate.section_for`) and the dream's conflicts
(:mod:`workers.dreaming.dream`) share, so that what MEMORY.md would not show as a value
never replaces one.

A statement with a subject key (:mod:`.attributes`) says its person's current value when
it reads on its own, names its person, in its first clause, as the one who does or is
something, says the word its attribute needs (a partner: "partner", "married" …), and is
no intention, need, hearsay, guess, tally "so far", interest in what is no taste ("… is
interested in the Thule bike carrier" is no bike), nor — of a taste — one happening, nor —
of a state — a happening that sets nothing; nor does its first clause (after an opening
subordinate one: "Since …, the user is hoping to …") say what would be, a problem of the
moment or what was done before. A person's own note or a detected fact always does.
"""
from __future__ import annotations

import re

from projections import ProjectionStore
from projections.memories import NOT_MINED, Memory
from projections.readable import (
    NEXT_CLAUSE,
    first_sentence,
    self_contained,
    without_lead_in,
    without_opening,
)

from .attributes import is_taste, names_the_attribute, says_its_word, takes_up
from .statements import is_event

_COLON_OPENING = re.compile(r"^(?:[\w'’]+\s+){0,3}[\w'’]+:\s+")
# A tally "so far" is no current value: it changes as it goes ("… has earned 10 stamps so
# far"), as a verdict "so far" is no like
SO_FAR = re.compile(r"\bso far\b", re.IGNORECASE)
# the person a statement opens with — alone, or with someone ("Sophia and the user", "The
# user's partner and the user") — and the adverbs before its verb
_PERSON = r"(?:The user|the user|[A-Z][\w'’-]*(?: [A-Z][\w'’-]*)?)"
WHO = (r"^(?!(?:It|This|That|These|Those|They|There|Here|He|She|His|Her|Their|What|Everyone"
       r"|Everything|Nothing|Something|Seeing|Being|Having|Making)\b)"
       rf"(?:{_PERSON}(?:(?:'s|’s) \w+)? and )?{_PERSON}(?:'s?|’s?)?\s+"
       r"(?:(?:really|also|just|still|always|absolutely|truly|totally|now|so|mostly"
       r"|actually|definitely)\s+)*")
# adverbs between "is" and the verb ("… is actually planning to …", "… is also looking
# forward to …")
_ADVERBS = r"(?:(?:really|so|very|also|actually|still|now|definitely|just|even|seriously) )*"
# … or "not" ("Jon is not gonna give up on Jon's dreams": a resolve is no current value)
INTENDS = re.compile(WHO + rf"(?:will|won['’]t|(?:is|are) {_ADVERBS}(?:not |never )?{_ADVERBS}"
                     r"(?:going to|gonna|planning|(?:about"
                     r"|due|off) to|(?:excited|eager|keen) to|looking forward to)|plans? to"
                     r"|intends? to|hopes? to|wants? to)\b")
# A guess is no current value: "Mike … might have some specific cravings", "… might want to"
SPECULATES = re.compile(r"\b(?:might|may|must)(?: not)? (?:have|be|want)\b", re.IGNORECASE)
# what would be, in the first clause, is no current value ("… imagines Surgey would meet …")
_WOULD = re.compile(r"\bwould\b", re.IGNORECASE)
# a problem the person has now, which passes ("… is having some issues with the phone's
# screen", "… had an issue with the car's GPS"), in the first clause
_TROUBLE = re.compile(r"\b(?:having|had|has|have|facing|experiencing|dealing with|ran into"
                      r"|run into)\s+(?:some |an? |a few |lots of |a lot of |many |several )?"
                      r"(?:issues?|problems?|trouble)\b", re.IGNORECASE)
# what the person has done before, which is no current value ("… has worked with a driving
# instructor before", "… has lived in Leeds before"; not "has never used gochujang before,
# but … likes spicy food", whose value is the next clause's)
_BEFORE = re.compile(r"^(?!.*\bnever\b).*\b(?:has|have|had)\b.*\b(?:before|in the past)\W*$",
                     re.IGNORECASE)
# … or what the person did once and no more ("… used to live in San Francisco"; not "… is
# still getting used to being a senior manager", which they are now)
_USED_TO = re.compile(r"(?<!\bget )(?<!\bgets )(?<!\bgot )(?<!\bgetting )(?<!\bam )(?<!\bis )"
                      r"(?<!\bare )(?<!\bwas )(?<!\bwere )(?<!\bbe )(?<!\bbeen )\bused to\b",
                      re.IGNORECASE)
_NOT_NOW = (_WOULD, _TROUBLE, _BEFORE, _USED_TO)
# A wish or a need ("… is looking for a moving company", "… would like to know", "… is
# considering the swim membership", "… is curious about the sour beers", "… is interested in
# trying the rice bowl", "… has been meaning to try out some bike accessories", "… needs to
# restock the tackle box"), or what the person has only heard or just learnt ("… has heard
# great things about Memphis BBQ", "… never knew there were so many coffee options"): no
# state of the person's, and no plan
NEEDS = re.compile(WHO + r"(?:would like|'d like|’d like|(?:is|are|was|were|ha(?:s|ve) (?:(?:also"
                   r"|really|just|actually) )*been) (?:(?:really"
                   r"|particularly|very|also|definitely|actually|seriously|still|now|even"
                   r"|currently) )*(?:looking (?:for|to|into)|hoping|considering"
                   r"|thinking (?:of|about)|wondering|curious (?:about|to)"
                   r"|trying to (?:decide|figure out|find)"
                   r"|interested in \w+ing|meaning to|wanting to)|needs? to|(?:has|had) heard"
                   r"|never knew)\b")


# An interest in a thing, or learning about it, is no holding of it ("The user is interested
# in the Thule Evo 2 Bike Carrier" is no bike, "… has been trying to learn more about
# managing their money" no job); of a taste it is the value ("… is interested in jazz")
INTERESTED = re.compile(WHO + rf"(?:(?:is|are) {_ADVERBS}(?:(?:particularly|quite) )?"
                        r"interested in|(?:(?:is|are|has been|have been) )?(?:trying to learn"
                        r"|learning)(?: more)? about)\b")


def states_a_value(memory: Memory, names: frozenset[str] = frozenset()) -> bool:
    """Whether ``memory``, which has a subject key, says its person's current value (see
    the module doc). ``names``: the home's speakers (:func:`speaker_names`); when given,
    the statement must name one of them as its person (:func:`names_its_person`)."""
    if memory.source in NOT_MINED:
        return True
    if not self_contained(memory.content, mined=True):
        return False
    # … before a short opening with a colon and after it ("Maya's fix was: store UTC …"
    # names no one)
    after = _COLON_OPENING.sub("", memory.content, count=1)
    if names and not all(names_its_person(text, names) for text in {memory.content, after}):
        return False
    bare = without_opening(without_lead_in(memory.content))
    # read as written and from where it names its person ("Back to refill options - the
    # user will …")
    return not (sets_nothing(memory.subject, without_lead_in(memory.content))
                or not says_its_word(memory.subject, memory.content)
                or any(_says_no_value(text, memory.subject)
                       for text in {bare, from_its_person(bare, names), after_subordinate(bare)}))


def _says_no_value(text: str, subject: str) -> bool:
    """An intention, a need, an interest in what is no taste, a guess, a tally "so far",
    one happening of a taste, or a first clause that says what would be, a problem or what
    was done before."""
    first = first_sentence(text)
    clause = re.split(r"[,;]|\s(?:and|but|so)\s|\s[-–—]\s", first, maxsplit=1)[0]
    return bool(INTENDS.match(text) or NEEDS.match(text) or SPECULATES.search(first)
                or (INTERESTED.match(text) and not is_taste(subject))
                or SO_FAR.search(first) or happened_once(subject, first)
                or any(passing.search(clause) for passing in _NOT_NOW))


_SUBORDINATE = re.compile(r"^(?:since|because|as|if|when|while|although|though|once|now that)"
                          r"\b[^,]{3,160},\s+(?=\S)", re.IGNORECASE)


def after_subordinate(text: str) -> str:
    """``text`` from its main clause when a subordinate one opens it ("Since the user is
    already doing swimming lessons, the user is hoping to …" → "The user is hoping to …")."""
    cut = _SUBORDINATE.sub("", text, count=1)
    return cut[:1].upper() + cut[1:]


def from_its_person(text: str, names: frozenset[str]) -> str:
    """``text`` from where it first names its person, when it does not open with them
    ("Back to refill options - the user will look into those brands" → "The user will look
    into those brands"), so that what reads a statement's opening reads the person's."""
    others = sorted(names - {"the"})
    if re.match(r"the user\b", text, re.IGNORECASE) or first_word(text) in others:
        return text
    # a person named as the one who does something: a verb follows, no comma or "'s"
    named = "".join(f"|{re.escape(name.capitalize())}" for name in others)
    found = re.search(rf"\b(?:(?i:the user){named})\s+(?=[a-z])", text)
    return text[found.start()].upper() + text[found.start() + 1:] if found else text


def happened_once(subject: str, statement: str) -> bool:
    """Whether ``statement``, the current value of a taste (:func:`.attributes.is_taste`:
    a favourite drink or food, a hobby, a sport, a preference), tells of one happening
    rather than the taste: an event (:func:`.statements.is_event`: "… attended a
    cocktail-making class recently", "… served up grilled meats at the last barbecue")
    that takes up, drops or changes no taste (:func:`.attributes.takes_up`: "… took up
    climbing", "… switched to decaf" stay)."""
    return is_taste(subject) and is_event(statement) and not takes_up(statement)


# A happening sets a value when it says the change — got, moved, adopted, graduated, found
# out, besides what :func:`.attributes.takes_up` reads (started, joined, switched, quit,
# sold …) — or goes on to the state it left ("… found out Joanna is allergic to
# cockroaches", "… celebrated 3 years at XYZ Corp, where the user works as an analyst")
_SETS = re.compile(r"\b(?:got|bought|purchased|adopted|rescued|moved|relocated|married"
                   r"|engaged|graduated|enrolled|hired|retired|lost|broke up|divorced"
                   r"|signed up|named|found out|learned|realized|discovered)\b", re.IGNORECASE)
_STATE = re.compile(r"\b(?:is|are|am|has|have|works|lives|owns)\b", re.IGNORECASE)
# "has got" is having, not getting ("Melanie has got a pup and a kitty"); "is married" is
# being, not marrying
_HAVING = re.compile(r"\b(?:has|have|had|['’]ve|['’]s) got\b", re.IGNORECASE)
_WED = re.compile(r"\b(?:is|are|am|was|were|been|['’]s|['’]m|['’]re) (?:happily )?married\b",
                  re.IGNORECASE)


def says_a_change(statement: str) -> bool:
    """Whether ``statement`` tells of its value's beginning — a change (:data:`_SETS`: "…
    moved to Leeds", "… adopted a parrot", "… found out Joanna is allergic to cockroaches";
    :func:`.attributes.takes_up`: "… took up chess", "… switched to green tea", "… is now
    part of the brigade") — rather than telling of a state in passing ("… is lactose
    intolerant", "… has got a pup", "… is married", "… drives a red hatchback"), which it
    had already."""
    text = _WED.sub("is wed", _HAVING.sub("has", statement))
    return bool(_SETS.search(text)) or takes_up(text)


def sets_nothing(subject: str, statement: str) -> bool:
    """Whether ``statement``, the current value of a state (home, job, pet, partner …: not
    a taste, which :func:`happened_once` reads), tells of one happening (its first
    sentence) that nowhere says a change (:data:`_SETS`, :func:`.attributes.takes_up`: "…
    gave the hamster a new name. Everyone calls him Pudding now.") nor a state: what the
    classifier read a value into ("… bumped into Alex, a software engineer, on the
    escalator" as a partner, "… had to reach out to several businesses" as an employer, "…
    worked as a marketing specialist before quitting the job", a job no longer held). A
    happening of what it names says it is there (:func:`.attributes.names_the_attribute`:
    "Sofia's allergy to cats flared up again", "Elena's parrot chewed through a slipper").
    """
    return not is_taste(subject) and is_event(first_sentence(statement)) \
        and not (_SETS.search(statement) or _STATE.search(statement) or takes_up(statement)
                 or names_the_attribute(subject, statement))


_NAME_WORD = re.compile(r"[A-Za-z][\w-]*(?:['’]s?)?")


# a clause that says what follows from the one before, or why
_CONSEQUENCE = re.compile(r",\s+(?:so|because|since)\s+", re.IGNORECASE)


def names_its_person(text: str, names: frozenset[str]) -> bool:
    """Whether a current value's first clause names a speaker as one who does or is
    something — a name that is no possessive ("… the parrot Ravi adopted"), or one that
    opens it ("Ravi's cat has been renamed Mochi"), or "the user" — rather than mentioning
    them in passing, where the attribute the classifier heard is no fact about them ("Pets
    have a way of brightening Joanna's days", "Marrying Melanie's partner was the best
    part"), or only in a later clause ("The team has been really nice and John is having
    fun": :data:`projections.readable.NEXT_CLAUSE`; "The moving date is set for April 3rd,
    so the user still has some time": :data:`_CONSEQUENCE`)."""
    first = NEXT_CLAUSE.split(first_sentence(without_lead_in(" ".join(text.split()))),
                                maxsplit=1)[0]
    first = _CONSEQUENCE.split(first, maxsplit=1)[0]
    if re.search(r"\bthe user\b(?!['’])", first, re.IGNORECASE) \
            or re.match(r"the user['’]s?\s", first, re.IGNORECASE):
        return True       # … or opens it as its owner, as a name does ("The user's car is …")
    names = names - {"the"}     # "the" stands for "The user", found above
    words = _NAME_WORD.findall(first)
    if words and first_word(words[0]) in names:
        return True
    return any(w.casefold() in names for w in words[1:] if w[0].isupper())


def first_word(text: str) -> str:
    """A text's first word, casefolded, without a possessive "'s"."""
    first = text.split(maxsplit=1)[0] if text.split() else ""
    return re.sub(r"(?:'s?|’s?)$", "", first).casefold()


def speaker_names(store: ProjectionStore) -> frozenset[str]:
    """The first names of the home's speakers, casefolded, and "the" (for "The user");
    none when the home has no turns (then no statement is checked for a name)."""
    rows = [r[0] for r in store.db.execute("SELECT DISTINCT name FROM turns") if r[0]
            and r[0].strip()]
    return frozenset({"the"} | {first_word(name) for name in rows}) if rows else frozenset()

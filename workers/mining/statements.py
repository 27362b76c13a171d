"""The first pass of mining: a turn's sentences that tell something about a person, as
third-person statements that name who.

1. **Sentences.** A source turn is split into sentences; an image caption ("[a photo of
   …]") and anything in an injected block are not the speaker's words and are left out.
2. **Candidates** are disclosures: a sentence whose grammatical subject is the speaker
   ("I", "we", "my …", "our …") — the words a person uses to say something about their
   life — with at least :data:`MIN_CONTENT_WORDS` content words. Left out: questions,
   sentences about the listener ("you", "your") or asking them ("please …"), greetings,
   thanks and other reactions (:data:`_REACTION`: a sentence that only reacts carries no
   fact), requests and invitations, the verb first ("Check out my painting",
   :data:`_IMPERATIVE`), and hedged talk (:data:`_HEDGE`: "I think", "I guess" —
   opinions about what the other said — or a condition: "If I …"). An opening "just so
   you know", "FYI" or "for the record" is no talk about the listener.
3. **Rewritten** in the third person, from the speaker's name: "I went there yesterday"
   said by Caroline on 8 May 2023 becomes "Caroline went there on 7 May 2023" — "I"/"we"
   become the name (the verb agreeing: "I live" → "Caroline lives", "I'm" → "Caroline
   is", "I wanna" → "Caroline wants to", and a verb joined to it: "… wakes up at 7 am
   and goes to bed", a verb's base form by lemminflect's lexicon: :func:`_joined_verb`),
   "my"/"our" the name's possessive, "me"/"us" the
   name (not inside a hyphenated word, "me-time", nor the country, "the US", nor one
   capitalised past a sentence's opening, a title's: "The Last of Us", nor any word in
   double quotes: "How I Built This"); relative
   time is resolved from the turn's own time (:func:`projections.relative_time.resolve`).
   A sentence said without its "I" ("Lost my job yesterday", "Finally switched to neovim",
   with no first-person word at all: "Started monday at a hospital") gets it back first;
   a fenced block (code, a log) is no sentence. A
   speaker with no name ("user") is written "the user" ("The user" where it opens a
   sentence).

Deterministic and instant: the same turn always gives the same statements. Each statement
rests on its one turn, so a memory's refs name exactly where it came from.
"""
from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from functools import cache

from events import clock
from projections.kin import PETS, RELATIVES
from projections.passages import sentences as split_sentences
from projections.readable import CLAUSE_MARK, TITLES
from projections.relative_time import MONTH_NAME, resolve
from projections.tense import IRREGULAR_PAST, PAST_IN_EED, SAME_AS_BASE, is_participle, is_past

from .chunks import Turn
from .text import GENERIC_SPEAKERS, content_words, folded

MIN_CONTENT_WORDS = 2
MAX_CHARS = 280
# an image caption, "[a photo of …]": three words or more in brackets ("[secret]" stays)
CAPTION = re.compile(r"\[[^\]\s]+(?:\s+[^\]\s]+){2,}\]")
# a fenced block (code, a log, a config pasted in), to its closing fence or the end: no
# sentence of the speaker's
_FENCED = re.compile(r"```.*?(?:```|$)", re.DOTALL)
# an emoji between words ends what comes before it, in chat as a full stop would: "I'm up
# early anyway 🙄 the cat has no respect for sleep"
_EMOJI_END = re.compile(r"(?<=[\U0001F300-\U0001FAFF\u2600-\u27BF])\s+(?=[^\W\d_])")
_TITLE_END = re.compile(rf"\b(?:{'|'.join(TITLES)})\.$")   # "Dr. Patel": no sentence end
_LEAD = re.compile(r"^(?:(?:and|but|so(?! far\b)|also|anyway|oh|well|plus|still|btw"
                   r"|by the way|yup|yep|yeah|yes|ok|okay|wow|woah|whoa|omg|hey|hi|ah|aw+|hmm+|um+"
                   r"|haha+|lol|sure|totally|honestly|actually|fyi|just so you know"
                   r"|for (?:the record|your information|context|what it's worth)"
                   r")(?:[,!:]|\s*[-–—])?\s+"
                   r"|guess what(?:[,!:]|\s*[-–—])\s+)+",   # not "Guess what I do now: …"
                   re.IGNORECASE)
_ENUMERATED = re.compile(r"^(?:\d{1,3}[.)]|[-*•#]+)\s+")   # a list item's mark
# the speaker as a sentence's subject, or whose thing it is (casefolded text)
FIRST_PERSON = re.compile(r"\b(?:i|i'm|i've|i'd|i'll|we|we're|we've|we'd|we'll|my|our)\b")
# talk to the listener: "you", and a request ("please list the dates")
_TO_LISTENER = re.compile(r"\b(?:you|your|you're|you've|yours|u|please)\b")
_REACTION = re.compile(
    r"^(?:hi|hey|hello|thanks|thank you|thx|wow|aw+|oh|ah|ha(?:ha)*|lol|omg|yay|yeah|yes"
    r"|no|nope|ok|okay|cool|great|nice|awesome|sure|totally|absolutely|congrats"
    r"|congratulations|good luck|bye|see you|take care|sounds|that's|that sounds"
    r"|glad|sorry|i'm glad|i'm sorry|i'm so glad|i'm so sorry|i hope|i bet|i know|i see"
    r"|i agree|i understand|i can imagine|i can't wait to see|i'd love to see|got it"
    r"|i love that|i love it|i love this|i appreciate|i'm happy for"
    r"|let's|let us)\b")   # "let's …": a suggestion, no fact
# hedged, or a condition rather than a fact ("If I would like to play 2 matches a day, …")
_HEDGE = re.compile(r"^(?:i think|i guess|i feel like|i believe|i wonder|i mean|maybe|if"
                    r"|unless)\b")
# a request or an invitation to the listener, whose "I"/"my" is no disclosure ("Check out my
# painting", "Let me know …", "Give me the steps …"): the sentence opens with a verb in the
# imperative, no subject before it
_IMPERATIVE = re.compile(r"^(?:(?:now|great|perfect|love it|thanks)[,!.]? (?:now,? )?)?"
                         r"(?:check|give|join|take|keep|let|make|tell|show|meet|remember"
                         r"|imagine|try|come|follow|listen|send|help|share|stop|wish (?:me|us)"
                         # what a person asks an assistant to do: "Write me the title tag
                         # for …", "Now write a paragraph about my services"
                         r"|write|rewrite|create|generate|draft|compose|summari[sz]e|translate"
                         r"|explain|describe|suggest|recommend|provide|list)\b")
_REQUEST_COLON = re.compile(r"^[^:]{3,80}:\s+(?=\S)")


# the conversation itself as the time of what is said ("Since we last talked, I've started
# …", "Crazy stuff's been happening since we last chatted."): the words name no time of the
# speaker's and leave out what only says news is coming
_SINCE_WE_TALKED = re.compile(
    r"\s*[,;:–—-]?\s*\bsince (?:(?:we|i) (?:last )?(?:talked|spoke|chatted|chat|caught up"
    r"|saw each other)(?: (?:to|with) you)?(?: last)?|(?:our|the) last (?:chat|talk"
    r"|conversation)|(?:the )?last time we (?:talked|spoke|chatted))\b\s*[,;:–—-]?",
    re.IGNORECASE)


def _without_since_we_talked(sentence: str) -> str:
    """``sentence`` without the conversation as its time (:data:`_SINCE_WE_TALKED`): what
    follows it, where something does ("Since we last spoke, I went to a workshop.", "A
    lot's happened since our last chat - I joined a group." → "I went to a workshop.", "I
    joined a group."), else what comes before ("Crazy stuff's been happening.")."""
    found = _SINCE_WE_TALKED.search(sentence)
    if found is None:
        return sentence
    after = sentence[found.end():].strip(" ,;:–—-")
    cut = after if len(after.split()) >= 2 else sentence[:found.start()].rstrip() + after
    return cut[:1].upper() + cut[1:]


# where a sentence's first clause ends and another begins ("…, and I was wondering if you
# could …", "…, so let me know …", "… - hope you are too")
_NEXT_CLAUSE = re.compile(r",\s+(?:so|and|but)\s+|;\s+|\s[-–—]\s")


def _before_talk(sentence: str, min_words: int) -> str:
    """The first clause of ``sentence`` when only what follows it is talk to the listener
    (:func:`_tells_nothing`), and it says at least a word more than ``min_words``: "I've
    been into Ticket to Ride lately, and I'm wondering if you have any suggestions" → "I've
    been into Ticket to Ride lately."; else ``sentence``."""
    for cut in reversed(list(_NEXT_CLAUSE.finditer(sentence))):   # the last talk first:
        # "… Carcassonne, and Settlers of Catan lately, and I'm wondering if you …"
        if _tells_nothing(_LEAD.sub("", folded(sentence[cut.end():]))):
            head = sentence[:cut.start()].rstrip(" ,") + "."
            # a word more than a whole sentence needs: what politeness says before its
            # offer ("I love to help, so just shoot me a question") says no more
            if is_disclosure(head, min_words + 1):
                return head
    return sentence


def _after_request(sentence: str) -> str:
    """What follows the colon of a request that opens ``sentence`` ("Let me start with the
    new additions: my sister-in-law just had a baby" → "my sister-in-law just had a baby"):
    the request is no disclosure, what it introduces may be."""
    opening = _REQUEST_COLON.match(sentence)
    if opening and _IMPERATIVE.match(_LEAD.sub("", sentence.casefold())):
        return sentence[opening.end():]
    return sentence


# a disclosure said without its "I" ("Lost my job as a banker yesterday", "Wish I was that
# resilient"): a verb in the past tense, or "wish", opens it
_NO_SUBJECT = "wish"
# "we" that takes in the listener ("we both need a break", "we all have our paths", "we
# should all join forces", which would read "Maria should all join forces") or is
# a group whose members act on each other ("we push each other to improve", which would
# read "John pushes each other"): a sentence about the two of them, everyone or a group
# together is no disclosure about the speaker
_SHARED = re.compile(r"\b(?:we|us|our) (?:both|all|each)\b|\b(?:both|all|each) of us\b"
                     r"|\bwe(?:['’]\w+| (?:should|can|could|will|would|must|might|have|had|are"
                     r"|were))+ (?:both|all|each)\b(?! (?:the|of|that|this|these|those|my|our"
                     r"|your|his|her|their|day|night|week|weekend|year|morning|evening)\b)"
                     r"|\bwe\b(?:['’]\w+)?[^.!?;]*\b(?:each other|one another)\b")
# an answer that leans on the question it answers ("I love to.", "I do- Oscar, my …"), or
# what mends the speaker's last words ("From a distance I mean, since I'm allergic."): what
# it says is in the turn before, which is not repeated
_ELLIPSIS = re.compile(r"\b(?:i|we) (?:do|did|am|was|have|had|will|would|can|could"
                       r"|(?:love|like|want|need|have|used) to)\s*(?:[-–—.!;:]|$)"
                       r"|\bi mean\s*(?:[-–—,.!;:]|$)")


_OWNED = re.compile(r"^the ([a-z]+) (?=(?:is|was|has|had|got|gets|now|just|finally)\b)")


@dataclass(frozen=True)
class Statement:
    """``owned``: a sentence about "the <thing>" rather than about the speaker ("The cat has
    been renamed Mochi."), written as the speaker's thing: it is kept only if it sets an
    attribute (:func:`.attributes.with_attributes`), the one case where such a sentence is
    surely about the speaker's own."""

    text: str         # third person, relative time resolved
    said: str         # the sentence as said
    turn: Turn
    owned: bool = False


def sentences(text: str) -> list[str]:
    """``text``'s sentences (:func:`projections.passages.sentences`: a line is one too; a
    period inside "Chewy.com" or "3.50" ends none, nor one after a title: "Dr. Patel"),
    captions, fenced blocks and list marks left out; an emoji between words ends one."""
    bare = CAPTION.sub(" ", _FENCED.sub("\n", text))
    found = [_ENUMERATED.sub("", " ".join(part.split())) for s in split_sentences(bare)
             for part in _EMOJI_END.split(s)]
    joined: list[str] = []
    for piece in (s for s in found if s):
        if joined and _TITLE_END.search(joined[-1]):
            joined[-1] = f"{joined[-1]} {piece}"
        else:
            joined.append(piece)
    return [re.sub(r"\s+([.!?,;:])", r"\1", s) for s in joined]



def is_disclosure(sentence: str, min_words: int = MIN_CONTENT_WORDS) -> bool:
    """Whether a sentence tells something about its speaker (see the module doc); a lead
    of interjections ("Oh wow, yeah I moved …") does not count."""
    low = _LEAD.sub("", folded(sentence))
    if sentence.rstrip().endswith("?") or not FIRST_PERSON.search(low):
        return False
    if _tells_nothing(low) or _ELLIPSIS.search(low):
        return False
    return len(content_words(sentence)) >= min_words


def _tells_nothing(low: str) -> bool:
    """Whether a sentence (casefolded) is talk to or about the listener, a reaction, hedged,
    a request, or about a "we" that is not the speaker: no fact of its own, on its own or
    going on with the one before."""
    return bool(_TO_LISTENER.search(low) or _REACTION.match(low) or _HEDGE.match(low)
                or _IMPERATIVE.match(low) or _SHARED.search(low))


_BE = {"am": "is", "'m": "is", "was": "was", "have": "has", "'ve": "has", "do": "does",
       "don't": "doesn't", "go": "goes", "'d": "would", "'ll": "will", "are": "is",
       "were": "was", "'re": "is", "haven't": "hasn't", "aren't": "isn't",
       "wanna": "wants to", "gotta": "has to"}
_ADVERBS = frozenset("""also just really still always never often usually recently finally
already even only actually totally definitely sometimes both all kind sort now
then once last first ever soon""".split())
_MODALS = frozenset("""can could will would should shall must might may did didn't can't
couldn't won't wouldn't shouldn't wasn't weren't""".split())
# words after "I" that stay as they are; a verb whose past is its base form ("I quit
# the hospital") may be either, and stays as said rather than be made present
_KEEP = _MODALS | _ADVERBS | SAME_AS_BASE
# verbs whose base form ends in "-ing" like a participle ("sometimes I bring work home")
_ING_VERBS = frozenset("bring cling fling ring sing sling spring sting string swing wring"
                       .split())
_WORD = re.compile(r"[A-Za-z][A-Za-z'’]*|[^A-Za-z\s]+|\s+")


def _third_singular(verb: str) -> str:
    if verb.isupper() and len(verb) > 1:
        return _third_singular(verb.lower()).upper()
    low = verb.lower()
    if low in _BE:
        return _BE[low]
    if low in _KEEP or low in IRREGULAR_PAST or low.endswith("n't") \
            or (low.endswith("ing") and low not in _ING_VERBS) \
            or (low.endswith("ed") and not low.endswith("eed")) or low in PAST_IN_EED:
        return verb
    if low.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if low.endswith("y") and len(low) > 1 and low[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


_CONTRACTED = {"i'm": "is", "we're": "is", "i've": "has", "we've": "has", "i'd": "would",
               "we'd": "would", "i'll": "will", "we'll": "will"}
_OBJECT = {"my": "possessive", "our": "possessive", "mine": "possessive",
           "ours": "possessive", "me": "name", "us": "name", "myself": "themselves",
           "ourselves": "themselves"}


_USER = "The user"


def display_name(speaker: str) -> str:
    return _USER if speaker.strip().casefold() in GENERIC_SPEAKERS else speaker.strip()


def _in_quotes(marks: str, quoted: bool) -> bool:
    """Whether what follows ``marks`` (a run of punctuation) is inside double quotes,
    given whether what came before them was."""
    for mark in marks:
        if mark in '"“”':
            quoted = mark == "“" or (mark == '"' and not quoted)
    return quoted


def _opens(tokens: list[str], i: int) -> bool:
    """Whether ``tokens[i]`` opens a sentence, a quote or what follows a colon."""
    before = next((t for t in reversed(tokens[:i]) if not t.isspace()), "")
    return not before or before[-1] in '.!?:"“(' or before == "'"


def _possessive(name: str) -> str:
    return name + ("'" if name.endswith("s") else "'s")


def third_person(sentence: str, speaker: str) -> str:
    """``sentence`` said by ``speaker``, written about them (see the module doc)."""
    name = display_name(speaker)
    if name == _USER:
        name = "the user"    # capitalised below where it opens the sentence
    possessive = _possessive(name)
    tokens = _WORD.findall(sentence.replace("’", "'"))
    out: list[str] = []
    agree = False        # the next verb follows "I"/"we" and must agree with the name
    agreed = ""          # the verb just made to agree, till the next word ("… and train")
    verb = ""            # … till its clause ends (:func:`_joined_verb`: "… and fill up …")
    within = False       # "I"/"we" opened a clause within another ("… what I believe …")
    words: list[str] = []    # the words so far, as said, and the marks between them
    quoted = False       # inside double quotes: a title or someone's words, as said
    for i, token in enumerate(tokens):
        low = token.lower()
        joined, verb = _going_on(verb, tokens, i, words[-1] if words else "")
        if token.isspace() or not token[0].isalpha():
            out.append(token)
            quoted = _in_quotes(token, quoted)
            if not token.isspace():
                words.append(token)
                agreed = ""
            continue
        words.append(token)
        if (agreed and low in ("and", "or")) or joined:   # "I practice and train": both
            out.append(token)     # verbs agree; "I usually do my shopping and fill up …"
            agree, agreed = True, ""
            continue
        agreed = ""
        # a word in double quotes stays as said (a title, someone's words), and so do a
        # hyphenated word ("me-time", "US-based"), the country, and a first-person word
        # capitalised past a sentence's opening ("The Last of Us", "My Chemical Romance")
        if quoted or token == "US" or _hyphenated(tokens, i) or (
                token[0].isupper() and not _opens(tokens, i) and not low.startswith("i")
                and (low in _OBJECT or low in _CONTRACTED or low == "we")):
            out.append(token)
            agree = False
            continue
        if low in ("i", "we"):
            out.append(name)
            # "What can I say": after a modal the verb stays as it is
            agree = not _compound(words[:-1]) and not (
                len(words) > 1 and words[-2].lower() in _MODALS | {"do", "does"})
            # "… what I believe in and reach out …": a clause within, whose verb no later
            # verb joins
            within = len(words) > 1 and words[-2].lower() in _WITHIN
            continue
        if low in _CONTRACTED:
            out += [name, " ", _CONTRACTED[low]]
            continue
        if low in _OBJECT:
            out.append({"name": name, "possessive": possessive}.get(_OBJECT[low], _OBJECT[low]))
            continue
        if agree:
            if low in _ADVERBS or (low.endswith("ly") and len(low) > 4):
                out.append(token)
                continue
            agreeing = _third_singular(token)
            out.append(agreeing)
            # a verb joined to it agrees too, unless it was left as said ("read" may be
            # past) or a modal came first ("… can shift how I think and help me learn")
            joins = agreeing != token and not any(w.lower() in _MODALS for w in words[:-2])
            agree, agreed = False, (low if joins else "")
            verb = "" if within or low in _DO else agreed   # "… doesn't rely on it and forget"
            continue
        out.append(token)
    text = "".join(out).strip()
    return text[0].upper() + text[1:] if text else text


# what follows a verb and no noun: its particle, its object's determiner or pronoun, "to"
# ("… and fill up their tank", "… and want to try", "… and walk the dog"; not "… rice and
# chicken with …")
_COMPLEMENT = frozenset("""up out off down back away over around the a an my our their his
her its your some it them him me us to""".split())
# words that end a verb's clause: another subject, a modal, a subordinator, an infinitive's
# "to" ("I think my sister will come and see it", "I love it when the kids play and …", "I
# want to get stronger and improve …")
_WITHIN = frozenset("""who which that what when if because since as than until unless
whether where""".split())
_NEW_CLAUSE = _WITHIN | frozenset("he she they you it's so but to i we".split()) | _MODALS
_DO = frozenset({"don't"})
# a verb's helpers, after which a past form is still the same subject's ("I have used …")
_AUXILIARIES = frozenset("have has had been be being get got is am are was were".split())


@cache
def _base_verb(word: str) -> bool:
    """Whether ``word`` is a verb's base form (lemminflect's English lexicon): "fill", "go",
    "want"; not "pizza", "dogs", "went"."""
    from lemminflect import getAllLemmas

    return word in getAllLemmas(word, upos="VERB").get("VERB", ())


def _going_on(verb: str, tokens: list[str], i: int, before: str) -> tuple[bool, str]:
    """For the word ``tokens[i]`` (after the word ``before``) following ``verb``, the verb
    made to agree in this clause (or none): whether it is an "and" that joins a verb to it
    (:func:`_joined_verb`), and the verb the clause still has (none once the word ends it:
    :func:`_ends_its_clause`)."""
    low = tokens[i].lower()
    if not verb:
        return False, ""
    if low == "and" and _joined_verb(tokens, i):
        return True, ""
    if low.isspace() or (not low[0].isalnum() and low[0] not in "'’"):
        return False, verb if low.isspace() else ""     # a mark ends it; "7 am and go …"
    return False, "" if _ends_its_clause(low, before) else verb


def _joined_verb(tokens: list[str], i: int) -> bool:
    """Whether the "and" at ``tokens[i]`` joins a verb to the one made to agree before it,
    so that it agrees too: the next word (past adverbs) is a verb's base form followed by a
    complement (:data:`_COMPLEMENT`): "I usually wake up at 7 am and go to bed"."""
    after = [t for t in tokens[i + 1:i + 12] if not t.isspace()]
    while after and after[0].lower() in _ADVERBS:
        after = after[1:]
    return (len(after) >= 2 and after[0].isalpha() and after[0].islower()
            and _base_verb(after[0]) and after[1].lower() in _COMPLEMENT)


def _ends_its_clause(low: str, before: str) -> bool:
    """Whether a word (after the word ``before``) begins another clause than the agreed
    verb's (:data:`_NEW_CLAUSE`) or is another subject's verb: one with "-s" ("… my sister
    wants to …"), or past, not after a helper ("… my sister went and got …"; "I have used
    it and want …" goes on)."""
    if low in _NEW_CLAUSE:
        return True
    if low.endswith("s") and not low.endswith("ss") and not _base_verb(low) \
            and (_base_verb(low[:-1]) or _base_verb(low[:-2])):
        return True
    return is_past(low) and before.lower() not in _AUXILIARIES


def _hyphenated(tokens: list[str], i: int) -> bool:
    """Whether ``tokens[i]`` is part of a hyphenated word (no space either side)."""
    return (i > 0 and tokens[i - 1] == "-") or (i + 1 < len(tokens) and tokens[i + 1] == "-")


def _compound(before: list[str]) -> bool:
    """Whether "I" after these words (and marks) is part of a compound subject, whose verb
    stays plural: "Sam and I split up", "my wife and I have" — not "I go running and I
    watch films", nor "… all my notes, and I sync it"."""
    if len(before) < 2 or before[-1].lower() != "and":
        return False
    return before[-2][0].isupper() or (len(before) >= 3 and before[-3].lower() in ("my", "our"))


# a sentence that shows a photo ("Here's a picture of me speaking at a charity event"):
# the picture is in the chat, not in the words
_SHOWS = re.compile(r"^(?:here'?s|here is|here are|this is|these are|look at)\s+"
                    r"(?:[\w'’-]+\s+){0,2}(?:pics?|pictures?|photos?|snaps?|snapshots?|shots?"
                    r"|selfies?|videos?)\b")


def _follows(sentence: str) -> bool:
    """Whether a sentence that is no disclosure itself goes on with the one before ("We
    renamed the cat. Everyone calls him Miso now."): a statement, not a question, a
    reaction, talk about the listener or about a "we" that is not the speaker."""
    low = folded(sentence)
    return not (sentence.endswith("?") or _tells_nothing(low)) \
        and len(content_words(sentence)) >= MIN_CONTENT_WORDS


def _vocative(names: Collection[str]) -> re.Pattern[str] | None:
    """A sentence's opening address to someone by name ("Joanna, I'm glad …", "Hey Nate,
    my …", after the interjections :data:`_LEAD` takes), which its third-person form would
    read as its subject."""
    names = sorted({n for n in names if n.strip()}, key=len, reverse=True)
    if not names:
        return None
    return re.compile(rf"^(?:{'|'.join(map(re.escape, names))})[,!]\s+", re.IGNORECASE)


def statements(turn: Turn, names: Collection[str] = (),
               min_words: int = MIN_CONTENT_WORDS) -> list[Statement]:
    """The disclosures of a source turn, in the third person, dated; a sentence that goes
    on with a disclosure (:func:`_follows`) joins it; one that shows a photo
    (:data:`_SHOWS`), and what goes on about the photo, joins nothing and states nothing
    ("… causes I believe in. Here's a picture of me at a charity event. The crowd was
    huge."). ``names``: the conversation's
    speakers, whom a sentence may open by addressing (left out); ``min_words``: the
    content words a disclosure has at least (one, for what a speaker asked to keep: "I'm
    diabetic")."""
    if not turn.source:
        return []
    at = clock.from_iso(turn.at)
    vocative = _vocative(names)
    groups: list[list[str]] = []
    owned: set[int] = set()     # groups that start with "the <thing>"
    joined = False       # the last sentence was a disclosure or joined one
    showing = False      # … or showed a photo, or went on about one
    for said in sentences(turn.text):
        sentence = said
        if vocative and vocative.match(bare := _LEAD.sub("", said)):
            sentence = vocative.sub("", bare)
        sentence = _without_since_we_talked(_after_request(sentence))
        sentence = sentence[:1].upper() + sentence[1:]
        if not is_disclosure(sentence, min_words) and is_disclosure(
                implied := _with_subject(_LEAD.sub("", sentence)), min_words):
            sentence = implied     # "Started monday doing IT support at a hospital"
        if not is_disclosure(sentence, min_words):
            sentence = _before_talk(sentence, min_words)
        if is_disclosure(sentence, min_words):
            groups.append([sentence])
            joined, showing = True, False
        elif _SHOWS.match(_LEAD.sub("", folded(sentence))):
            joined, showing = False, True
        elif joined and _follows(sentence):
            groups[-1].append(sentence)
        elif not showing and _follows(sentence) \
                and _OWNED.match(_LEAD.sub("", sentence).casefold()):
            owned.add(len(groups))
            groups.append([sentence])
            joined = True
        else:
            joined = False
    out: list[Statement] = []
    for index, group in enumerate(groups):
        said = " ".join(group)
        parts = [third_person(_with_subject(_LEAD.sub("", s)), turn.speaker).rstrip(" .!,;")
                 for s in group]
        if index in owned:
            parts[0] = _possessive(display_name(turn.speaker)) + parts[0][3:]
        text = resolve(". ".join(parts), at)
        text = text[0].upper() + text[1:] + "."
        out.append(Statement(text[:MAX_CHARS], said, turn, index in owned))
    return out




def _with_subject(sentence: str) -> str:
    """``sentence`` with the "I" it was said without (see :data:`_NO_SUBJECT`), past an
    adverb that may open it: "Lost my job as a banker" → "I lost my job as a banker",
    "Finally switched to neovim" → "I finally switched to neovim"."""
    words = sentence.split(" ", 3)
    at = 1 if len(words) > 1 and words[0].casefold() in _OPENING_ADVERBS else 0
    first = words[at].casefold().rstrip(",")
    then = words[at + 1].casefold().strip(",.!") if len(words) > at + 1 else ""
    if first == _NO_SUBJECT or (is_past(first) and first not in SAME_AS_BASE
                                and "-" not in first and then not in _NOT_AFTER_I):
        return "I " + sentence[:1].lower() + sentence[1:]
    return sentence


# an adverb before a verb whose subject went unsaid; not a habit's ("Never saw this coming"
# is no habit of the speaker's) nor one of time ("Then went home")
_OPENING_ADVERBS = _ADVERBS - frozenset("""always never often usually sometimes both all kind
sort now then once last first ever soon""".split())
# after a verb whose subject went unsaid, an object that says it was no "I": "Really made
# me think" (it did), not "I really made me think"
_NOT_AFTER_I = frozenset("me us myself ourselves".split())


_DATED = re.compile(rf"\b\d{{1,2}} {MONTH_NAME} \d{{4}}\b|\bin (?:19|20)\d{{2}}\b")
_LOOK = 6             # words is_event reads for the first verb, more in a long subject
_IN_A_SUBJECT = frozenset([*RELATIVES, *PETS, *"""the a an and or both user best friend friends
new little older younger""".split()])


def _of_a_subject(word: str) -> bool:
    """Whether ``word`` (as said) can be part of a statement's subject: an article,
    "and", a relative, a possessive, a name, or an adverb in "-ly" before its verb."""
    low = word.casefold()
    return low in _IN_A_SUBJECT or low.endswith(("'s", "ly")) or word[:1].isupper()
_PERFECT = frozenset("has have had is are 's been".split())
# a perfect that tells of one happening: "recently" or "just" in its clause
_JUST = re.compile(rf"^(?:(?!{CLAUSE_MARK}).)*\b(?:recently|just)\b", re.IGNORECASE)


def _just_done(statement: str, after: list[str]) -> bool:
    """Whether a first verb "has"/"have", followed by the words ``after`` it (casefolded),
    is a perfect of something done just now, a happening: its participle (past adverbs,
    not "been": "… has been playing a lot recently" goes on) with "recently" or "just" in
    the first clause ("… has recently adopted a puppy", "… has had a great experience
    volunteering at the charity walk recently"); a perfect is otherwise a state ("… has
    worked as a nurse for years")."""
    verb = next((word for word in after if word not in _ADVERBS), "")
    return is_participle(verb) and bool(_JUST.search(statement))


def is_event(statement: str) -> bool:
    """Whether a statement tells of something that happened (a day's journal keeps it)
    rather than a state that lasts: it has a date ("on 7 May 2023", "in 2022"), or its
    first verb is in the past tense ("Melanie took the kids to the museum"; "Melanie has
    got two kids" and "Maya is married" are states), or it is a perfect of something just
    done (:func:`_just_done`: "… has recently adopted a puppy"). The first verb is looked
    for in the first :data:`_LOOK` words, and past them while every word before can be part
    of a subject (:func:`_of_a_subject`: "The user's parents and brother unanimously
    agreed")."""
    if _DATED.search(statement):
        return True
    said = re.findall(r"[A-Za-z']+", statement)
    words = [word.casefold() for word in said]
    subject = True       # every word so far can be part of the subject
    for i, word in enumerate(words):
        if i >= _LOOK and not subject:
            return False
        if word in ("has", "have"):
            return _just_done(statement, words[i + 1:])
        if word in ("is", "are", "does", "do", "can", "will", "would"):
            return False
        if word in PAST_IN_EED or is_past(word, words[i - 1] if i else ""):
            return not (i and words[i - 1] in _PERFECT)
        subject = subject and _of_a_subject(said[i])
    return False

"""Whether a written statement reads on its own, without the conversation it came from —
the rule for the lines of the files a person reads (MEMORY.md, a day's journal): a mined
statement whose first clause points at something it does not name ("Tim is a huge fan of
this genre", "Melanie loves it") is left out of them; the log, the memories and recall
keep it. And a statement's first sentence and its main clause, the part of a mined line
MEMORY.md keeps."""
from __future__ import annotations

import re
from functools import cache

from .kin import KIN_WORDS
from .relative_time import DAY_NAME, MONTH_NAME

# What a statement can point at only through the turns around it: a demonstrative ("this
# app", "these poses", "like that"; "this week" is a time, not a pointer), a pronoun it
# opens with ("He's even …"), "another" with no noun, "… of it", "got one", "here's",
# "how it", or a pronoun with no noun before it to stand for ("Melanie loves it", "named
# her Tilly"; "finds it hard to", "it's" are no pointers). A mined statement names its
# speaker, so a pronoun left is someone else. Only the first clause counts (after a short
# opening: "Guess what -"): a later one may point back into it ("… a dog, she is Bo").
_TIME_NOUN = (r"(?:year|week|month|morning|afternoon|evening|night|weekend|summer|winter"
              r"|spring|autumn|fall|time|season|semester|term|past|coming)")
_POINTER = re.compile(rf"\b(?:this|these|those)\b(?! {_TIME_NOUN}\b)|^(?:that|this)\b"
                      r"|\b(?:like that|that (?:world|one|place|stuff|thing))\b"
                      r"|^(?:he|she|they|it|his|her|their|its|him|them)\b"
                      r"|(?<!one )\banother\b(?=[,.!?]|$| (?:one|at|in|on|from|for|of|to|and"
                      r"|with)\b)|\bof (?:it|them)\b(?!['’])"
                      r"|\b(?:got|bought|ordered|found|picked up) one\b(?! of\b)"
                      r"|^here(?:'s|’s| is| are)\b|\bhow (?:it|they)\b",
                      re.IGNORECASE)
_PRONOUN = re.compile(r"\bit\b(?!['’]| (?:is|was|has|had|would|will)\b"
                      r"| \w+ (?:to|that|how|when|being|for)\b)"
                      r"|\b(?:them|they)\b(?!['’]| (?:is|was|has|had|would|will)\b)"
                      r"|\b[Hh]er\b(?= [A-Z]|[,.!?]|$| (?:at|in|on|to|for|with|from|up|out|off"
                      r"|back|again|around)\b)")
# (and "her" before an article: an object, "… gave her a home")
_PRONOUN_MINED = re.compile(rf"{_PRONOUN.pattern}|\b(?:him|his|their)\b"
                            r"|\bher\b(?= (?:a|an|the|some)\b)")
# what a mined statement's "him", "his" or object "her" may stand for: someone named,
# someone's someone ("Nate's brother", "the user's dog"), a relative or pet, or a person by
# role ("a friend"); not any thing ("… research on how to socialize him with other dogs",
# "Maria feels blessed to give her a home": the puppy is in the conversation, not here)
_PERSONAL = frozenset({"him", "his", "her"})
_DETERMINER = r"a|an|the|some|his|her|their|its|my|our|your|every|each|any|two|three|several|many"
_SOMEONE = re.compile(rf"\b[A-Z]\w+|\b\w+['’]s\s+\w|\b(?:{_DETERMINER})\s+(?:[\w-]+\s+)?"
                      rf"(?:{KIN_WORDS}|friends?|boss|coach"
                      r"|teachers?|instructors?|trainers?|doctors?|neighbou?rs?|colleagues?"
                      r"|co-?workers?|classmates?|roommates?|mentors?|students?|clients?"
                      r"|guys?|man|men|woman|women|boys?|girls?|baby|babies|lady|person"
                      r"|people|author|artist|singer|writer|players?)\b")
_NOUN_PHRASE = re.compile(rf"\b(?:{_DETERMINER})\s+\w|\b\w+['’]s\s+\w|\b[A-Z]\w+")
# a mark that ends a clause: a comma, a semicolon, a colon, a full stop, "!" or "?"; not the
# colon of a time ("wakes up at 7:30 every day") nor a number's point ("runs 2.5 miles")
CLAUSE_MARK = r"[,;!?]|(?<!\d)[:.]|[:.](?!\d)"
_FIRST_CLAUSE = re.compile(rf"{CLAUSE_MARK}|\s[-–—]\s|-\s|\s(?:and|but|so|because|while|though"
                           r"|since)\s")
# An aspect of a thing the statement does not name ("Joanna loves the color and texture",
# "… likes the idea and the acting": of what?): a like whose object is only such nouns —
# relational ones, each of something — after "the", with no "of …" to say whose
_ASPECT = frozenset("""acting atmosphere ambiance ambience cast characters color colors colour
colours composition concept design designs detail details effects ending energy feel
flavor flavors flavour idea ideas layout lighting look looks lyrics message name pattern
patterns plot price quality result results setting shape smell sound sounds story
storyline style taste texture textures theme themes title vibe vibes view views
visuals""".split())
_ASPECTS = "|".join(sorted(_ASPECT))
# … or as the statement's subject, or "that" one after a preposition ("The name helps
# Joanna remember …", "… a dog with that name"; not "furniture that looks great")
_ASPECT_POINTER = re.compile(rf"^(?i:the) (?:[a-z]+ )?(?:{_ASPECTS})\b(?! (?:of|in|at|from|on"
                             rf"|for|with|behind)\b)|\b(?:with|of|in|for|about|like|from|by"
                             rf"|on|at) (?i:that) (?:{_ASPECTS})\b")
_LIKE_THE = re.compile(r"\b(?:loves?|likes?|enjoys?|adores?)\s+the\s+(?P<object>[^.;:!?]+)",
                       re.IGNORECASE)
_OBJECT_END = re.compile(r"\s[-–—]\s|,\s+(?:but|so|because|which|as|it|that|this|they|he|she"
                         r"|we|I|and (?:it|that|the user|I|[A-Z]))\b"
                         r"|\s(?:so|because|when|that|which|as|but)\s")
# whose the aspects are: "of …", "in …" or a name ("the Jungle Adventure theme")
_ANCHORED = re.compile(r"\b(?:of|from|in|at|on|for|by|about|with|behind)\b|\b[A-Z]")
# a short opening before a comma, a dash or a colon ("Guess what -", "On another note,"):
# the clause that counts is the one after it
_OPENING = re.compile(r"^(?:[\w'’]+\s+){0,2}[\w'’]+\s*(?:,|:|\s[-–—])\s+(?=\S)")
_QUOTED = re.compile(r'"[^"]*"|“[^”]*”')
LIST_MARK = re.compile(r"^(?:[-–—•*]\s+)+")   # a line copied with its list mark


# a title before a name, whose full stop ends no sentence ("My doctor is Dr. Patel")
TITLES = ("Mr", "Mrs", "Ms", "Dr", "Prof", "St", "Jr", "Sr")
_SENTENCE_END = re.compile("".join(rf"(?<!\b{word})" for word in (*TITLES, "vs", "No"))
                           + r"[.!?]+(?=\s+[\"“'‘(A-Z0-9])")


def without_opening(statement: str) -> str:
    """``statement`` without a short opening before a comma, a dash or a colon ("As for
    dates, the user is looking …" → "The user is looking …")."""
    cut = _OPENING.sub("", statement, count=1)
    return cut[:1].upper() + cut[1:] if cut else statement


def first_sentence(statement: str) -> str:
    """A statement's first sentence ("Tim loves traveling too. That picture is awesome." →
    "Tim loves traveling too."): where a sentence ends before a capital, a digit or a quote,
    not after a title ("Dr.", "St.")."""
    found = _SENTENCE_END.search(statement)
    return statement[:found.end()].strip() if found else statement.strip()


# A later sentence that only comments on what the one before said: it opens with "it",
# "that", "this" or "there", judges or tells the effect on the person ("It's an awesome
# way to connect", "It keeps Jon motivated", "There's so much adrenaline flowing"), or
# judges with no subject ("Challenging but fun", "Feels good"), and names nothing new
# ("It's a Trek", "Her name's Coco", "It's a golden retriever" say a value)
_JUDGING = r"awesome|great|amazing|fun|cool|nice|exciting"   # both kinds of comment say
_COMMENT = re.compile(r"^(?:it|that|this|there)(?:'s|’s| is| was| has been| keeps| makes)\b"
                      rf"(?=.*\b(?:{_JUDGING}|wonderful|incredible|intense|lovely|so|such"
                      r"|really|motivated|happy)\b|\s+(?:keeps|makes)\b)"
                      # … or said with no subject at all: "Challenging but fun", "Feels good"
                      rf"|^(?:feels|felt|(?:so |super |really |pretty )?(?:{_JUDGING}"
                      r"|challenging|hard|tough|rewarding))\b", re.IGNORECASE)


def without_comments(statement: str) -> str:
    """``statement`` up to its first later sentence that only comments (see
    :data:`_COMMENT`): "John loves climbing. It's an awesome way to connect." → "John
    loves climbing." """
    kept, rest = "", statement.strip()
    while rest:
        sentence = first_sentence(rest)
        named = [w for w in re.findall(r"\b[A-Z][\w'’-]*|\d+", sentence[1:]) if w not in kept]
        if kept and _COMMENT.match(sentence) and not named:
            break
        kept, rest = f"{kept} {sentence}".strip(), rest[len(sentence):].strip()
    return kept


# A discourse marker opening a statement says nothing of the fact ("Unfortunately, Joanna
# can't have dairy", "As the user mentioned earlier, the user …", "Speaking of running, …",
# which names the topic the turn came from): a closed class of words, not an opening that
# dates or places it ("Last week, …", "In Paris, …")
_DISCOURSE = re.compile(r"^(?:unfortunately|fortunately|luckily|sadly|honestly|actually|also"
                        r"|additionally|in addition|moreover|furthermore|however|of course"
                        r"|anyway|anyways|well|oh|so|plus|besides|by the way|btw|on (?:another"
                        r"|a (?:different|side|related)) note|(?:speaking of|as for)"
                        r" [^,.!?]{1,40}"
                        r"|as (?:the user"
                        r"|i|[A-Z][\w'’-]*) (?:mentioned|said)(?: (?:earlier|before))?)\s*,\s+"
                        r"(?=\S)", re.IGNORECASE)
# What follows a statement's main clause and adds no fact to it: a consequence, a reason, a
# comment or a relative clause after a comma (", so that's a plus", ", which has given …",
# ", where the user's partner hits …", ", as the user often works on the go", ", because …"),
# and the speaker's own wish, need, doubt or comment on it (", and the user would like to …",
# ", and the user needs some advice …", ", but the user is not sure …", ", and it's been
# helping …", ", by the way"), a request to the listener or a precaution (", remind the
# user to …", ", in case …"), or a comment after a dash ("… pottery - the creativity and
# skill is awesome", "… - check out this pic"). ", but" alone stays: "Jon loves all dances,
# but contemporary is Jon's top pick"
_SUBJECT = r"(?:the user|I|he|she|they|[A-Z][\w'’-]*)"
_ASIDE = (rf",?\s+(?:and|but) {_SUBJECT} (?:(?:also|really|still|just) )*(?:would like|'d like"
          r"|’d like|wants? to|needs? (?:some|a|an|to|help|advice)\b|thinks?|wonders?|hopes? to"
          r"|(?:is|was) (?:not sure|wondering|looking|interested|excited|hoping|trying to"
          r" (?:decide|figure))|has been meaning)\b"
          # a question put to the other side, its subject left out ("… in June and was
          # wondering what the weather is like")
          r"|,?\s+and (?:(?:also|really|just) )*(?:(?:is|was) wondering|wonders?"
          r"|would like to know|wants? to know)\b"
          r"|,\s+(?:and )?(?:it|that)(?:'s|’s| has) been\b|,\s+by the way\b"
          # a request to the listener ("…, remind the user to get her a gift") and a
          # precaution ("…, in case it ever matters")
          rf"|,\s+(?:so |and )?(?:please )?(?:remind|tell|let|help|show|send) {_SUBJECT}\b"
          r"|,\s+(?:just )?in case\b"
          # chatter that goes on after an interjection ("…, and yeah, it's spring right now",
          # "…, haha")
          r"|,\s+(?:and |but )?(?:yeah|oh|haha|lol|anyway|anyways|btw)\b(?!-)"
          r"|\s[-–—]\s+(?:it|it's|it’s|that's|that’s|this|these|check|so|such|the(?! user)|what"
          r"|how)\b")
_NOT_SO = r"(?! (?:well|far|much|many|long|soon|to)\b)"
_VALUE_TAIL = re.compile(rf",\s+so\b{_NOT_SO}|{_ASIDE}")
# a comment spliced on with a comma ("… aerial yoga, it's a great way to switch off", "…
# yellow leaves, it looks so cozy", "… carries their EpiPen, but it's still nerve-wracking"):
# no value's line loses it ("… a hybrid bike, it's a Trek")
_SPLICED = r",\s+(?:but\s+)?(?:it|that|they)(?:'s|’s|'re|’re|\s)"
_TAIL = re.compile(rf",\s+(?:so|which|who|whose|where|as|because)\b{_NOT_SO}|{_ASIDE}"
                   rf"|{_SPLICED}")


# … nor does an opening about the conversation itself ("Let the user start with the new
# additions: …", "The user just realized the user didn't mention that …", "Maya forgot to
# mention that …"); "Maya realized that she loves jazz" is a fact
_TOLD = r"(?:mention|say|add|tell you)(?: that)?\s+"
_META = re.compile(rf"^(?:let (?:me|the user|[A-Z][\w'’-]*) (?:start|begin) with [^:.!?]{{1,60}}:"
                   rf"\s+|{_SUBJECT} (?:just |also )?(?:realized|remembered)(?: that)? {_SUBJECT}"
                   rf" (?:didn't|did not|never|forgot to) {_TOLD}|{_SUBJECT} (?:just |also )?"
                   rf"(?:forgot to|wanted to|should) {_TOLD})(?=\S)", re.IGNORECASE)


# a short headline before a colon, then the statement ("Career change done: Aisha got …",
# "Big news: the user moved …"); not "Guess what Maya does now: pottery", where the value
# follows the colon; a quote stays ("Tim: I …")
LEAD_IN = re.compile(r"^(?:[\w'’]+\s){1,3}[\w'’]+:\s+(?=[A-Z]|the user\b)(?!I\b)")


def without_lead_in(text: str) -> str:
    """``text`` without its headline (:data:`LEAD_IN`), opening with a capital."""
    bare = LEAD_IN.sub("", text, count=1)
    return bare[:1].upper() + bare[1:] if bare != text else text


def without_discourse(text: str) -> str:
    """``text`` without a discourse marker that opens it ("Additionally, …", "Speaking of
    running, …") or an opening about the conversation ("Let the user start with …:")."""
    text = _META.sub("", _DISCOURSE.sub("", text.strip(), count=1), count=1)
    return text[:1].upper() + text[1:]


def as_said(statement: str) -> str:
    """A mined statement as a line shows it whole (the memory block's head: profile,
    project facts): on one line, without a headline (:func:`without_lead_in`) or an opening
    about the conversation (:func:`without_discourse`), "their" for its person after an
    opening "The user" or name (:func:`referring_back`) — as its line in MEMORY.md says it:
    "The user just realized the user didn't mention that the user recently celebrated the
    user's 3-year anniversary …" → "The user recently celebrated their 3-year anniversary
    …"."""
    return referring_back(without_discourse(without_lead_in(" ".join(statement.split()))))


def main_clause(sentence: str, *, value: bool = False) -> str:
    """A sentence without a discourse marker before it and without what follows its main
    clause (see :data:`_TAIL`): "Unfortunately, Joanna can't have dairy, so no ice cream
    for Joanna." → "Joanna can't have dairy." ``value``: the sentence sets a current value,
    which a reason or a relative clause may be the one to say ("… had to stick to chips,
    because Maya is allergic to shellfish", "… a dog, which Maya named Rex"): only a
    consequence (", so …") and a wish, doubt or comment are cut."""
    text = without_discourse(sentence)
    found = (_VALUE_TAIL if value else _TAIL).search(text)
    if found and len(text[:found.start()].split()) >= 3:
        text = text[:found.start()].rstrip() + "."
    return text


# a word of a clause that may point back to what the clause before it said: "… husband's
# name is Michael, and he was born on August 12th", "… has a cat, and the user named her
# Luna", "… and the user loves it there"
_POINTS_BACK = re.compile(r"\b(?:he|she|it|they|him|her|his|its|them|there|one|ones)\b",
                          re.IGNORECASE)


def another_statement(line: str) -> int | None:
    """Where a line goes on, after ", and", with another statement of its person, one
    that opens with them ("The user is currently living in the San Francisco Bay Area,
    and the user is flexible with their travel dates"; "…, and their trip is planned for
    early May") and has no word that may point back to what the line said before
    (:data:`_POINTS_BACK`); else None."""
    who = line.split(maxsplit=1)[0] if line.split() else ""
    own = "the user|their" if who.casefold() == "the" else re.escape(re.sub(r"['’]s$", "", who))
    found = re.search(rf",\s+and\s+(?:{own})(?:['’]s)?\b", line, re.IGNORECASE)
    if found is None or len(line[:found.start()].split()) < 3 \
            or _POINTS_BACK.search(line[found.end():]):
        return None
    return found.start()


# Words that lean on what was said before them ("The user also loves …", "… has actually
# been …", "… already has …", "Tim loves traveling too.", "… allergic to cockroaches as
# well", "… their gas mileage too, and …", a clause's last "though": "… Alex is vegan
# though"): a line of MEMORY.md is read without that conversation. An "also" after a
# "but" and its clause's subject stays: it adds to what the sentence said before it ("not
# only … but also", "… loves coconut milk, but Nate also enjoys chocolate"); so do "too"
# before a word ("too busy"), "as well as" and "even though".
_LEANING = re.compile(r"\s+(?:also|actually|already)\b(?=\s)"
                      r"|,?\s+(?:too|as well|though)\b(?=\s*(?:[.!;,]|$))", re.IGNORECASE)
_BUT_BEFORE = re.compile(r"\bbut(?:\s+[\w'’-]+){0,3}$", re.IGNORECASE)


def without_leaning(line: str) -> str:
    """``line`` without the words that lean on an earlier turn (see :data:`_LEANING`):
    "Tim also loves traveling too." → "Tim loves traveling."."""
    def drop(found: re.Match[str]) -> str:
        word = found.group().split()[-1].casefold()
        if word == "also" and _BUT_BEFORE.search(line[:found.start()]):
            return found.group()
        return ""

    return _LEANING.sub(drop, line)


# Once a line has opened with its person as the subject, a later "the user's" (or "Maya's")
# reads "their" and "the user" (or "Maya") after a preposition "them" ("The user always
# carries their EpiPen with them", "Gina can expand their clothing store"): mining names
# its speaker wherever they said "my" or "me", and a name said three times in a line reads
# as a machine's. Not in a line about someone of theirs ("The user's sister loves the user's
# dog": "their" would be hers), nor after a word that may open a clause ("before the user
# goes"). A name, whose line may tell of another person, only till a word that may be
# someone else — a third-person pronoun, another capitalised word outside quotes, not a
# month's or a day's name ("Caroline let them know they're not alone by sharing Caroline's
# story" stays) — and within its first sentence; a new sentence names them again.
_PERSON_SUBJECT = re.compile(r"([Tt]he user|[A-Z][a-z]+(?:-[A-Z][a-z]+)?)\b(?!['’]|-)")
# … or after a short opening phrase that names no one else: "On 5 October 2022, ", "In the
# meantime, ", "For the user's writing challenge, "
_OPENING_PHRASE = re.compile(r"[^,]{1,60},\s+")
_PREPOSITION = r"(about|at|by|for|from|into|of|on|to|with|without)"
_PERSONAL_PRONOUN = re.compile(r"(?i:\b(?:he|she|him|her|his|hers|they|them|their|theirs)\b)")
_SOMEONE_ELSE = re.compile(rf"{_PERSONAL_PRONOUN.pattern}"
                           rf"|\b(?!(?:{MONTH_NAME}|{DAY_NAME})\b)[A-Z][a-z][\w'’-]*")


@cache
def _forms_of(who: str) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """``who``'s possessive, and ``who`` after a preposition."""
    return (re.compile(rf"\b{re.escape(who)}['’]s\b"),
            re.compile(rf"\b{_PREPOSITION} {re.escape(who)}\b(?!['’])"))


def _referred_to(text: str, who: str) -> str:
    """``text`` with ``who``'s possessive "their" and ``who`` after a preposition "them"."""
    possessive, after_preposition = _forms_of(who)
    return after_preposition.sub(r"\1 them", possessive.sub("their", text))


def referring_back(line: str) -> str:
    """``line`` with "their" and "them" for its person after its opening "The user" or
    name (:data:`_PERSON_SUBJECT`), or after a short opening phrase that names no one else
    (:data:`_OPENING_PHRASE`): "The user has been tracking the user's food intake" → "…
    their food intake"; "On 5 October 2022, Joanna tried Joanna's newest recipe" → "…
    their newest recipe"."""
    opening = _OPENING_PHRASE.match(line)
    for start in (0, opening.end()) if opening else (0,):
        found = _PERSON_SUBJECT.match(line, start)
        if found is None or (start and _someone_else(line[:start], found.group(1)) is not None):
            continue
        who = found.group(1)
        if who.casefold() == "the user":
            return line[:found.end()] + _referred_to(line[found.end():], "the user")
        if not any(form.search(line, found.end()) for form in _forms_of(who)):
            continue          # not this subject's line: "On …" names no "On's"
        end = (m.end() if (m := _SENTENCE_END.search(line, found.end())) else len(line))
        scope = _QUOTED.sub(lambda q: "_" * len(q.group()), line[:end])
        other = _someone_else(scope, who, found.end())
        end = other if other is not None else end
        return line[:found.end()] + _referred_to(line[found.end():end], who) + line[end:]
    return line


def _someone_else(text: str, who: str, start: int = 0) -> int | None:
    """Where ``text`` (from ``start``) has a word that may be someone other than ``who``
    (:data:`_SOMEONE_ELSE`), or None; a phrase's first word is capitalised, so there only a
    pronoun counts ("They've been there through everything, Caroline …")."""
    for other in _SOMEONE_ELSE.finditer(text, start):
        word = other.group()
        if word == who or word.startswith((who + "'", who + "’")) or (
                other.start() == 0 and not _PERSONAL_PRONOUN.fullmatch(word)):
            continue
        return other.start()
    return None


# where a sentence goes on to a clause with a subject of its own: "and" or "but" after a
# comma before a subject ("…, and the user just got …", "…, but Jon …"), or without the
# comma before a subject and its verb ("… lately and the user is having some trouble …",
# "The team has been really nice and John is having fun"; not "… with Maria and Jon")
NEXT_CLAUSE = re.compile(r",\s+(?:and|but)\s+(?:the user|I|he|she|they|it|[A-Z][\w'’-]*)\b"
                         r"|\s+(?:and|but)\s+(?:the user|I|he|she|they|it|[A-Z][\w-]*)\s+"
                         r"(?=(?:is|was|has|had|does|did|can|will|would|gets?|got|loves?|likes?"
                         r"|also|really|just|still|often|usually)\b)")


def self_contained(statement: str, *, mined: bool = False) -> bool:
    """Whether a statement reads on its own, without the conversation it came from: its
    first clause points at nothing it does not name, and its like no aspect of something
    unnamed (see the comments above). Of LoCoMo's 1,210 dev observations, statements
    written to stand alone, 5 are judged otherwise. ``mined``: a statement mining wrote,
    which names its speaker wherever they said "I", "me" or "my", so a "him", "his" or
    "their" with no noun before it is someone else ("Maria talked to him afterwards", "Nate
    loves his humour"), and a "him", "his" or object "her" stands for someone
    (:data:`_SOMEONE`), not a thing; an observation's is mostly its own subject's ("Nate's
    pets cheer him up"), so only a mined statement is checked for them."""
    text = without_opening(LIST_MARK.sub("", _QUOTED.sub('""', statement)))
    first = _FIRST_CLAUSE.split(text, maxsplit=1)[0]
    if _POINTER.search(first) or _ASPECT_POINTER.search(first) \
            or _of_what(first_sentence(text)):
        return False
    found = (_PRONOUN_MINED if mined else _PRONOUN).search(first)
    if found is None:
        return True
    before = first[:found.start()].split()
    # the name it opens with stands for no thing; "Nate's brother" does, for a possessive
    # ("… loves his car"), not for an object, which would be "himself"
    possessive = found.group().casefold() in ("his", "their")
    if before and not (possessive and re.search(r"['’]s?$", before[0])):
        before = before[1:]
    if mined and found.group().casefold() in _PERSONAL:
        return bool(_SOMEONE.search(" ".join(before)))
    return bool(_NOUN_PHRASE.search(" ".join(before)))


def _of_what(sentence: str) -> bool:
    """Whether ``sentence`` likes aspects of something it does not name (see
    :data:`_ASPECT`)."""
    found = _LIKE_THE.search(sentence)
    if found is None:
        return False
    thing = _OBJECT_END.split(found.group("object"), maxsplit=1)[0]
    if _ANCHORED.search(thing):
        return False
    heads = [part.split()[-1].casefold() for part in re.split(r",\s*(?:and\s+)?|\s+and\s+",
                                                            thing) if part.split()]
    return bool(heads) and all(head in _ASPECT for head in heads)


# Past a line's first clause, which :func:`self_contained` reads, what MEMORY.md shows of a
# statement may still point out of it:
# - "this" or "these" before a noun the line has not named ("… the awesome food of this
#   city", "… some of these recommendations"; not a time, "this week", nor a thing come
#   upon, "met this amazing woman"), and "that" so used (:data:`_THAT`);
# - "this" as an object ("… decided to include this at the beginning"; as a subject, "…
#   how this impacts neighborhoods", it is the line's own);
# - an "it" that is the subject of a relative clause on the line's object, with nothing
#   named before that object ("Maria loves the freedom and connection it brings": the
#   freedom is not what "it" stands for).
_DEMONSTRATIVE = re.compile(rf"\b(?P<word>this|these)\b(?! (?:{_TIME_NOUN}|day)s?\b)"
                            r"(?:\s+(?P<next>[\w'’-]+))?", re.IGNORECASE)
# "that" after a preposition or "having" is a demonstrative ("… reminds Joanna of that
# trip", "Having that picture on Joanna's cork board …"), unless a relative clause says
# which ("… from that charity yoga event the user did in April")
_THAT = re.compile(r"\b(?:of|in|on|at|from|with|about|having|for|into|during|like) that"
                   r"\s+(?P<next>[\w'’-]+)(?P<rest>(?:\s+\S+){0,5})", re.IGNORECASE)
_NOT_A_NOUN = frozenset("is was has had will would can could and or but which who one".split())
_RELATIVE = re.compile(r"\s(?:the user|[A-Z][\w-]*)\s+(?!(?:in|on|at|to|for|with|and|or|of"
                       r"|from|by)\b)[a-z]")
_COME_UPON = re.compile(r"\b(?:met|meet|found|find|discovered|came across|ran into|went to"
                        r"|go to|saw|heard)\s+(?:(?:all|some of)\s+)?$", re.IGNORECASE)
_SUBJECT_NEXT = re.compile(r"(?:[a-z]+(?<!s)(?<!u)(?<!i)s|[a-z]+ed|is|was|has|had|will|would"
                           r"|can|could|might|may|must|should|does|did|seems|means)$")
_IT_RELATIVE = re.compile(r"\bthe\s+(?:(?!and\b)[\w'’-]+,?\s+){1,4}?"
                          r"(?:and\s+(?:[\w'’-]+\s+){1,2})?"
                          r"(?<!,\s)it\s+(?!(?:is|was|has|does)\b)[a-z]{2,}(?<!s)s\b",
                          re.IGNORECASE)
_OPENING_SUBJECT = re.compile(r"^(?:the user|[A-Z][\w’'-]*)(?:['’]s\s+[\w'’-]+)?\s+",
                              re.IGNORECASE)


def points_out(line: str) -> bool:
    """Whether a line, past its first clause, points at something it does not name (see
    the comments above): "John loves the energy, diversity, and awesome food of this
    city." """
    text = _QUOTED.sub('""', line)
    for found in _DEMONSTRATIVE.finditer(text):
        before, following = text[:found.start()], (found.group("next") or "").casefold()
        if _COME_UPON.search(before):
            continue
        if found.group("word").casefold() == "this" and _SUBJECT_NEXT.match(following):
            continue
        if not following or following[:4] not in before.casefold():
            return True
    for found in _THAT.finditer(text):
        following = found.group("next").casefold()
        if following not in _NOT_A_NOUN and following[:4] not in text[:found.start()].casefold() \
                and not _RELATIVE.search(found.group("rest")):
            return True
    relative = _IT_RELATIVE.search(text)
    if relative is None:
        return False
    words = _OPENING_SUBJECT.sub("", text[:relative.start()], count=1).split()
    return len(words) <= 2 and _NOUN_PHRASE.search(" ".join(words)) is None

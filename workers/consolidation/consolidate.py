"""Consolidation: the journals since the last consolidation, and the current MEMORY.md,
merged into a new MEMORY.md (``LongTermRewritten``).

- **What is reviewed.** Journal entries after the watermark — the log position the last
  ``LongTermRewritten`` recorded as ``reviewed_upto`` — and the current MEMORY.md. Lines of
  MEMORY.md that say what a superseded or archived memory said are dropped (the newer fact
  replaced it; it must not be injected any more), and so are those that no longer join
  (:func:`section_for`, by the log's own time: a plan whose day is gone by, a passing
  phase long unsaid).
- **The deterministic merge** (always first): MEMORY.md is a ``# Memory`` file with one
  ``##`` section per kind of memory (:data:`ORDER`: Profile, People, Preferences, Projects,
  Tools, Workflows, Plans, and Notes for journal lines that are not typed memories; other
  sections a person wrote are kept). A new entry joins its section as a bullet unless the
  section already says it (same normal form); a routine said again takes the place of its
  activity's earlier line in Workflows (:func:`_add`); a line another line of its person
  says all of, and more, goes ("Joanna is lactose intolerant" beside "Since Joanna is
  lactose intolerant Joanna is trying out dairy-free options …": :func:`_without_subsumed`).
  Over :data:`TARGET` characters (under the 12,288 cap) the oldest bullet of the longest
  section goes first, until it fits.
- **Themes**, after Profile, are written anew each time from all active mined statements:
  what each speaker keeps coming back to (:func:`theme_lines`, :mod:`.themes`), each a
  statement no other section has.
- **Family**: People's first lines are written anew each time too: each speaker's
  relatives and pets, as their statements name them in passing, or their own short turns
  by name (:func:`own_turns`; :mod:`.family`: "Melanie's family: kids, a cat (Bailey)."). The
  model never rewrites them.
- **The model** (when one is configured) then rewrites each section the merge changed —
  "merge bullets that say the same thing, keep every distinct fact" — when the section fits
  its context window. Its bullets are kept only if each shares content words with the
  section's input and none is empty; otherwise the merge's version stands and
  ``ConsolidationFailed`` records why. Every bullet sent has been through
  :func:`projections.secrets.scrub`.
- **When nothing warrants a change** — no entries after the watermark, and no stale line —
  or the result equals the current file, nothing is appended (and no model is called).

Every earlier MEMORY.md stays in the log: :func:`workers.consolidation.history.versions`.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TypeGuard

from events import EventLog, Home, NewEvent, clock, streams
from events.clock import from_iso
from events.config import LLMConfig, load_config
from events.memory_types import MEMORY_TYPES, PREFERENCE, PROFILE, TOOL_USE, WORKFLOW
from events.types import ConsolidationFailed, LongTermRewritten
from projections import ProjectionStore, open_store
from projections.kin import KIN_WORDS
from projections.long_term import CAP, FAMILY_LINE, TITLE, read_long_term, without_since
from projections.memories import NOT_MINED, Memory, get_memory, list_memories
from projections.mining import imported_sessions
from projections.passages import sentences
from projections.readable import (
    CLAUSE_MARK,
    LIST_MARK,
    NEXT_CLAUSE,
    another_statement,
    first_sentence,
    main_clause,
    points_out,
    referring_back,
    self_contained,
    without_comments,
    without_discourse,
    without_lead_in,
    without_leaning,
)
from projections.recall import long_turns
from projections.relative_time import DAY_NAME, MONTH_NAME, annotate, day_text
from projections.secrets import scrub
from projections.speakers import person_name
from projections.tokens import estimate
from projections.turns import cited_turns, turns_saying
from projections.when import from_said, last_day, periods, yearly

from ..dreaming.dream import log_now
from ..llm.lenient_json import decode_lenient
from ..mining.attributes import attribute_of, is_taste
from ..mining.candidates import HEURISTIC
from ..mining.chunks import is_source, speaker, strip_injected
from ..mining.extract import MinerSpec, backend_for
from ..mining.statements import CAPTION, display_name, is_event, is_past
from ..mining.text import content_words, grounded, names_something, normal, zipf
from ..mining.values import (
    INTENDS,
    NEEDS,
    SO_FAR,
    WHO,
    first_word,
    says_a_change,
    speaker_names,
    states_a_value,
)
from ..pass_lock import pass_lock
from ..sync.progress import ProgressFactory, no_progress
from .family import KIN_PHRASES, Family
from .themes import Said, theme_statements

TARGET = CAP - 512                   # room under the cap for the model's rewording
SECTIONS = {t.name: t.section for t in MEMORY_TYPES}
PEOPLE, PLANS, NOTES, THEMES = "People", "Plans", "Notes", "Themes"
# MEMORY.md's sections in order: the profile, the themes, people, preferences, the other
# types' sections in registry order, plans, notes
ORDER = [PROFILE.section, THEMES, PEOPLE, PREFERENCE.section,
         *(t.section for t in MEMORY_TYPES if t not in (PROFILE, PREFERENCE)), PLANS, NOTES]


# words that say a present that passes, not a lasting taste: "… has been really into vinyl
# collecting lately", "is currently participating in …", "… these days". Not "recently",
# which dates a past event ("recently got a puppy"), nor "now", which says a change ("is
# now part of the fire-fighting brigade").
PHASE = re.compile(r"\b(?:currently|lately|these days|right now|at the moment|at present"
                   r"|for now|for the time being)\b", re.IGNORECASE)
PHASE_DAYS = 90.0     # DreamingConfig.half_life_days' default
# what lies in a line's first clause: before its first mark or " - "
_IN_FIRST_CLAUSE = rf"^(?:(?!{CLAUSE_MARK}|\s[-–—]\s).)*?"
# … and in any section, what its first clause says is about to happen, undated ("The
# user is moving to Melbourne soon", "… has an upcoming show"; not "Jon is working on Jon's
# business - rehearsing for an upcoming show", whose work goes on): it has happened, or
# not, since
IMPENDING = re.compile(_IN_FIRST_CLAUSE + r"\b(?:soon|upcoming|coming up(?! with))\b",
                       re.IGNORECASE)
_PASSING_OR_IMPENDING = re.compile(f"{PHASE.pattern}|{IMPENDING.pattern}", re.IGNORECASE)
# … and what a first clause says its person keeps doing: how often ("… has dance classes
# every Saturday morning", "… goes to Zumba twice a week", "… meal preps on Sundays"), or,
# said in the perfect, for how long ("… has been taking Japanese cooking classes since
# April", "… has been playing electric guitar for a while now"): a routine, Workflows', as
# long as it is said again within the half-life (a phase's rule); not a trip's length ("…
# is staying in Tokyo for a week": no perfect), nor "a daily time limit" (an adjective)
_PERIOD = r"day|morning|afternoon|evening|night|week|weekend|month"
_HOW_OFTEN = (rf"every (?:single |other )?(?:{_PERIOD}"
              rf"|{DAY_NAME}(?: (?:morning|afternoon|evening|night))?)"
              r"|(?:once|twice|three times|four times|\d+ times) a (?:day|week|month)"
              rf"|on (?:{DAY_NAME}s|weekends)"
              r"|(?:regularly|daily|weekly|nightly)(?!\s+[a-z])")
_HOW_LONG = (r"for (?:about |over |almost |nearly |around |more than |the (?:past|last) )?"
             r"(?:a|an|one|two|three|four|five|six|seven|eight|nine|ten|a few|a couple of"
             r"|several|many|\d+) (?:weeks?|months?|years?)"
             r"|for (?:a (?:long |good )?while|ages|years)"
             rf"|since (?:the (?:beginning|start) of |early |late |last )?(?:{MONTH_NAME}"
             r"|\d{4}|the (?:spring|summer|fall|autumn|winter)|(?:high )?school|college)")
KEPT_UP = re.compile(
    _IN_FIRST_CLAUSE + rf"(?:\b(?:{_HOW_OFTEN})\b|\bha(?:s|ve) (?:\w+ )?(?:been \w+ing|\w+ed"
    rf"|had|kept|done)\b.*?\b(?:{_HOW_LONG})\b)", re.IGNORECASE)
_HOW_OFTEN_OR_LONG = re.compile(rf"\b(?:{_HOW_OFTEN}|{_HOW_LONG})\b", re.IGNORECASE)


# … and what a first clause says has held a while already, counted from the day it was
# said ("… has been teaching for over 10 years", "… have been together for a while",
# "… has always liked turtles"): "(since …)" would read as its beginning
_HELD_FOR = re.compile(
    _IN_FIRST_CLAUSE + r"\b(?:always|ever since|all (?:my|his|her|their) life"
    r"|for (?:a (?:long |good )?while|ages|years|decades|(?:(?:over|more than|about|around"
    r"|almost|nearly|the (?:past|last)) )?(?:a|an|one|two|three|four|five|six|seven|eight"
    r"|nine|ten|a few|a couple of|several|many|\d+) (?:years?|months?|weeks?|decades?)))\b",
    re.IGNORECASE)


def section_for(memory: Memory, names: frozenset[str] = frozenset(),
                offered: Callable[[Memory], str] | None = None,
                today: dt.date | None = None, phase_days: float = PHASE_DAYS, *,
                unattested: Callable[[str], bool] | None = None) -> str | None:
    """The section a memory joins (:func:`_section_for`), or None — also when a mined
    preference says a passing phase (:func:`phase_over`: "Nate is currently participating
    in the video game tournament again"), or any mined line what is about to happen
    (:data:`IMPENDING`: "… rehearsing hard for an upcoming show"), last said more than
    ``phase_days`` (the fading half-life, ``dreaming.half_life_days``) before ``today``. A
    routine fades so too, but not a taste's current value kept on a schedule (it holds till
    a newer value replaces it: "Guess what Jonas does on weekends now: chess")."""
    section = _section_for(memory, names, offered, today, unattested)
    if section is None or today is None or memory.source in NOT_MINED:
        return section
    routine = memory.type == PREFERENCE.name and section == WORKFLOW.section
    value = routine and bool(memory.subject) and states_a_value(memory, names)
    if phase_over(memory, today, phase_days, IMPENDING) or (
            (section == PREFERENCE.section or value) and phase_over(memory, today, phase_days)
    ) or (routine and not value and phase_over(memory, today, phase_days, KEPT_UP)):
        return None
    return section


def phase_over(memory: Memory, today: dt.date, days: float = PHASE_DAYS,
               phase: re.Pattern[str] = PHASE) -> bool:
    """Whether a memory's line (:func:`statement_of`) says a passing phase (:data:`PHASE`,
    or ``phase``) and it was last said (``last_seen``, else when it was first) more than
    ``days`` before ``today``: its journal and recall keep it; MEMORY.md says what is
    current."""
    if not phase.search(statement_of(memory)):
        return False
    try:
        said = from_iso(memory.last_seen or memory.created_at).date()
    except ValueError:
        return False
    return said + dt.timedelta(days=days) < today


MIN_LINE_WORDS = 2   # content words a mined line says at least ("Tim loves traveling.")


def _section_for(memory: Memory, names: frozenset[str] = frozenset(),
                 offered: Callable[[Memory], str] | None = None,
                 today: dt.date | None = None,
                 unattested: Callable[[str], bool] | None = None) -> str | None:
    """The section a memory joins, or None when it is not for MEMORY.md: a mined
    statement of what happened one day (its journal keeps it). A person's own notes and
    typed work memories always join; a mined life statement joins only when it is a
    current value (it has a subject key), or says a like, a relationship (not what someone
    close feels or will do: :data:`_PASSING`), a dated plan of the person it names or a
    routine they keep up (:func:`_keeps_up`: Workflows), and is no event
    (:func:`..mining.statements.is_event`: dated, or told in the past tense), read past an
    opening marker (:func:`projections.readable.without_discourse`).
    ``names``: the home's speakers (casefolded); when given, such a statement must begin
    with one of them; a current value must say one
    (:func:`..mining.values.states_a_value`: it names its person and is no intention —
    "Maria is off to bake some cakes", a plan, kept as one when dated —, need, guess,
    tally "so far" nor, of a taste, one happening), else it is taken as any other
    statement. A mined statement that does not read on its own
    (:func:`projections.readable.self_contained`: "Tim is a huge fan of this genre"; nor,
    past its first clause, its line: :func:`projections.readable.points_out`) joins no
    section: its journal and recall keep it beside its turn; nor does a like of what
    the other side had just offered (:func:`answers_an_offer`; ``offered`` gives the turn
    before a memory's, by someone else) or thanks for it, nor a like of how something is
    (:func:`_of_an_aspect`: "… loves how art lets Melanie get her emotions out"), nor a
    plan — nor any line but a value's of a day still to come when said (:func:`_to_come`:
    "… is starting at the new school on Monday") — whose day is gone by ``today`` (the
    log's own time: its journal keeps it, MEMORY.md says what is current). Nor does a
    statement about a relative the person's family line leaves out as maybe everyone's
    (``unattested``: :meth:`.family.Family.unattested`: "Maria's kids are Maria's future",
    from "Our kids are our future")."""
    mined = memory.source not in NOT_MINED
    if mined and (not self_contained(memory.content, mined=True)
                  or points_out(line := statement_of(memory))
                  or len(content_words(line)) < MIN_LINE_WORDS):
        return None       # … or its line says next to nothing ("7 to 3.")
    if mined and today is not None and INTENDS.match(without_lead_in(memory.content)) \
            and _gone_by(memory, today):
        return None       # a plan of any kind ("… to shop at Publix in the week of …")
    if memory.type != PREFERENCE.name:
        return SECTIONS.get(memory.type, NOTES)
    if not mined:
        return _own_section(memory, today)
    if _LIKED.search(memory.content) and (_THANKS.search(first_sentence(memory.content)) or (
            offered is not None and answers_an_offer(statement_of(memory), offered(memory)))):
        return None       # a reaction: "… loves the list, thanks", "… likes the ideas"
    if memory.subject and states_a_value(memory, names):
        return value_section(memory.subject, memory.content)
    text = without_discourse(memory.content)   # "Also, …", "Let the user start with …:"
    if is_event(text) or (names and first_word(text) not in names) or NEEDS.match(text):
        return None
    if today is not None and _to_come(day := _named_day(memory), memory) \
            and day + PLAN_GRACE < today:
        return None       # what was to come and is gone by: "… is starting school on Monday"
    if _LIKES.match(text):
        return None if _of_an_aspect(text) else PREFERENCE.section
    if _KIN.match(text) and not _PASSING.match(text):
        return None if unattested is not None and unattested(text) else PEOPLE
    if INTENDS.match(text) and plan_when(statement_of(memory)):
        return PLANS      # its when in what the line shows, not a later sentence or clause
    return WORKFLOW.section if _keeps_up(text, statement_of(memory)) else None


def _keeps_up(text: str, line: str) -> bool:
    """Whether a mined statement (``text``, shown as ``line``) says an activity its person
    keeps up (:data:`KEPT_UP`) — no intention, feeling or wish — and, before how often or
    how long, what it is: two content words past its person ("Tim has been playing for
    about four months now", "… has been going every Thursday evening at the gym" do not
    say what he plays, what she goes to)."""
    if not KEPT_UP.search(line) or INTENDS.match(text) or _FEELS.match(text):
        return False
    return len(content_words(_done(line))) >= 2


def _done(line: str) -> str:
    """What a routine's ``line`` says is done: its first clause past its person, up to how
    often or how long ("… has been taking Japanese cooking classes since April" → "has been
    taking Japanese cooking classes")."""
    clause = re.sub(WHO, "", _CLAUSE_END_OR_AND.split(line, maxsplit=1)[0], count=1)
    return _HOW_OFTEN_OR_LONG.split(clause, maxsplit=1)[0]


# what a routine's line says is done, in its uncommon words (Zipf ≤ :data:`_RARE`) before
# how often or how long: the first word's "-ing" is the doing ("attending yoga classes"),
# and a lesson, a session or a workout is any activity's
_RARE = 4.5
_ANY_ACTIVITY = frozenset({"lesson", "lessons", "session", "sessions", "workout", "workouts",
                           "routine", "schedule", "practice"})


def routine_of(line: str) -> frozenset[str]:
    """The words that tell which activity a routine's ``line`` (:func:`_keeps_up`) is of:
    "zumba" for "… has been going to Zumba on Tuesdays and Thursdays" and for "… has been
    attending Zumba classes at the local community center for the past 3 months"; none of
    "guitar lessons" and "piano lessons" are the same."""
    words = content_words(_done(line))
    if words and words[0].endswith("ing"):
        words = words[1:]
    return frozenset(w for w in words if w not in _ANY_ACTIVITY and zipf(w) <= _RARE)


def _same_routine(bullets: list[str], line: str) -> int | None:
    """The index of a bullet among ``bullets`` that is a routine of the same person and
    activity as ``line`` (:func:`routine_of` shares a word, or what one says is done is all
    in what the other says: "… has been trying to get to bed earlier so the user can wake
    up at 6:30 am on Fridays" and "… trying to get to bed earlier to wake up at a specific
    time on Fridays"), or None."""
    if not KEPT_UP.search(line):
        return None
    words, done = routine_of(line), frozenset(content_words(_done(line)))
    who = first_word(line)
    for i, bullet in enumerate(bullets):
        text = bare(bullet)
        if first_word(text) != who or not KEPT_UP.search(text):
            continue
        other = frozenset(content_words(_done(text)))
        if words & routine_of(text) or (done and other and (done <= other or other <= done)):
            return i
    return None


def _own_section(memory: Memory, today: dt.date | None = None) -> str | None:
    """The section of a person's own note of the preference type (a ``/remember``, or what
    they asked to remember: "I'm allergic to penicillin, please remember that"): where a
    mined statement saying as much goes — a value's section, People, Plans — else
    Preferences. A note of a day to come ("… has a dentist appointment on Friday") is a
    plan until a week past that day (:func:`_gone_by`: by ``today``, the log's time), then
    its journal keeps it; one that tells of a day gone by, and of no value or relative, is
    a note (Notes: "… went to Paris on 3 May 2024"; "… has lived in Leeds since 2019" is a
    value). A day that comes back every year is neither ("… wife's birthday is on 3 May":
    People)."""
    text = without_discourse(memory.content)
    day = _named_day(memory)
    if _to_come(day, memory):
        return None if today is not None and day + PLAN_GRACE < today else PLANS
    if memory.subject:
        return value_section(memory.subject, memory.content)
    if _KIN.match(text) and not _PASSING.match(text):
        return PEOPLE
    if day is not None:
        return NOTES
    if INTENDS.match(text) and plan_when(statement_of(memory)):
        return PLANS
    return PREFERENCE.section


def value_section(subject: str, line: str) -> str:
    """The section of a current value, by its subject key ("who|label"): a taste
    (:func:`..mining.attributes.is_taste`: a favourite drink, a hobby, "prefers …") is a
    preference; a pet or a partner is one of the person's people, unless its ``line`` is
    about an allergy (the classifier's pet may be an allergy to animals: "… is allergic to
    most reptiles and animals with fur" is health, the profile's); the code editor, the
    programming language and the database someone works with are tools; the rest (home,
    job, employer, allergy, car …) is the person's profile."""
    if is_taste(subject):
        text = without_discourse(line)
        return WORKFLOW.section if _SCHEDULED.search(first_sentence(text)) \
            and not INTENDS.match(text) else PREFERENCE.section
    attribute = attribute_of(subject.rpartition("|")[2])
    if attribute in _KIN_VALUES and not _ALLERGY.search(line):
        return PEOPLE
    return TOOL_USE.section if attribute in _TOOL_VALUES else PROFILE.section


# a taste kept up on a schedule, anywhere in its first sentence, is a routine: "… has been
# taking private tennis lessons with a coach, Rachel, every Thursday evening", "… has been
# taking sculpting classes on Saturdays", "… has been trying to get in at least 3 runs per
# week", "… is carving out some me-time each day" (Workflows; not a wish: "… wants to fit in
# 3 workout sessions per week", nor a taste kept up for a while: "… has been playing guitar
# for three months")
_SCHEDULED = re.compile(rf"\b(?:{_HOW_OFTEN}|each (?:{_PERIOD})|(?:\d+|one|two|three|four"
                        r"|five|six|seven|a few|several) (?:[\w-]+ ){0,2}per (?:day|week"
                        r"|month))(?![\w-])", re.IGNORECASE)
_KIN_VALUES = frozenset({"pet", "partner"})
_TOOL_VALUES = frozenset({"editor", "language", "database"})
_ALLERGY = re.compile(r"\ballerg", re.IGNORECASE)


# A like whose object is a definite phrase that names what the other side had just shown
# or said ("Nate loves the way the frosting turned out", after "[a photo of a cake with
# white frosting …]"; "The user loves the Jungle Adventure theme", "… likes the hybrid
# approach", "… loves the ideas", after an assistant's suggestions) answers an offer: a
# reaction in that conversation, not a taste the person brings to the next one. Shown: a
# word of it in a caption; said: most of its words in what the turn told, not asked
# ("Which theme did you choose?", "Is it the challenging sequences …?"). A taste said in the
# same words as the topic stays ("… is a big fan of street food": no definite object), and
# so does one the other side did not name ("… loves the outdoors"), or named only in passing
# in a long reply ("… loves the smell of the pages and the sound of the paper").
# (a mined like's verb agrees with its one person: "feels like the user …" is none)
_LIKED = re.compile(r"\b(?:loves|likes|enjoys|prefers|adores|is (?:a (?:big |huge )?fan"
                    r" of|into))\s+(?P<object>.+)", re.IGNORECASE)
# thanks in a like's own sentence: it answers what the other side gave
_THANKS = re.compile(r"\b(?:thanks|thank you)\b", re.IGNORECASE)
_DEFINITE = re.compile(r"^(?:(?:all|both)(?: of)? )?(?:the|that|this|these|those|your)\b",
                       re.IGNORECASE)


# what a like of "how …" or "the way …" is of: an aspect of something in the conversation,
# not a taste the person brings to the next one ("Melanie loves how art lets Melanie get
# Melanie's emotions out", "The user loves how Prada plays with mixing patterns", "… loves
# how the user can control the lighting from the user's phone": the lamp goes unnamed)
_ASPECT = re.compile(r"(?:how|the way)\b", re.IGNORECASE)
# … and so is a like whose object, up to its clause's end, only points: two content words
# or more, every phrase of it definite and unnamed (no capitalised word past its first):
# "… loves the smell of the pages and the sound of the paper", "Tim likes the structure of
# the language", "… likes the objective part of the questions" (which book, language,
# questions: the conversation told). One word is a place or thing of its own ("John loves
# the ocean", "… loves the outdoors"); a phrase that names ("the sense of community at
# pride events", "the Harry Potter books") stays. LoCoMo's own observations (1,210 facts
# people wrote) have no such like.
_LINK = re.compile(r"\s*\b(?:and|or|of|to|in|at|on|with|for|from|about)\b\s*", re.IGNORECASE)


def _of_an_aspect(statement: str) -> bool:
    """Whether a like (its first sentence) is of how something is or does (:data:`_ASPECT`)
    or of what only definite phrases point at (:func:`_only_points`)."""
    found = _LIKED.search(first_sentence(statement))
    return found is not None and (bool(_ASPECT.match(found.group("object")))
                                  or _only_points(found.group("object")))


def _only_points(thing: str) -> bool:
    """Whether a like's object (``thing``) only points (see :data:`_LINK`'s comment)."""
    thing = _CLAUSE_END.split(thing, maxsplit=1)[0]
    phrases = [p for p in _LINK.split(thing) if p]
    return len(content_words(thing)) >= 2 and all(
        _DEFINITE.match(p) and not any(w[:1].isupper() for w in p.split()[1:])
        for p in phrases)


def answers_an_offer(statement: str, offered: str) -> bool:
    """Whether a like (``statement``) is of something ``offered`` — the turn before it, by
    the other side — had just shown or named: its object, up to the first clause's end, is
    a definite phrase with a word in a caption of ``offered``, or with more than half of
    its words in the sentences of ``offered`` that ask nothing."""
    found = _LIKED.search(first_sentence(statement))
    if found is None or not offered:
        return False
    thing = _CLAUSE_END.split(found.group("object"), maxsplit=1)[0]
    words = _stems(thing)
    if not _DEFINITE.match(thing) or not words:
        return False
    shown = _stems(" ".join(CAPTION.findall(offered)))
    told = _stems(" ".join(s for s in sentences(CAPTION.sub(" ", offered))
                           if not s.endswith("?")))
    return not words.isdisjoint(shown) or 2 * len(words & told) > len(words)


def _stems(text: str) -> set[str]:
    """``text``'s content words, a plural's "s" dropped ("ideas", "the idea"); not
    :func:`..mining.text.stems`, whose "-ing"/"-ed"/"-es" cuts match a long reply's words
    too freely: with them, LongMemEval's "The user loves the smell of the pages and the
    sound of the paper as the user turns them" was left out as a reaction."""
    return {w[:-1] if len(w) > 3 and w.endswith("s") else w for w in content_words(text)}


_CLAUSE_END = re.compile(rf"{CLAUSE_MARK}|\s[-–—]\s")
_CLAUSE_END_OR_AND = re.compile(_CLAUSE_END.pattern + r"|\s(?:and|but|so|because)\s")


def offers(store: ProjectionStore, memories: Iterable[Memory]) -> Callable[[Memory], str]:
    """For each mined like among ``memories``, the text of the turn said just before the
    first turn it cites, in that session, by someone else ("" when there is none): one
    read of the turns for all of them."""
    cited = {m.id: m.refs[0] for m in memories
             if m.source not in NOT_MINED and m.refs and _LIKED.search(m.content)}
    found: dict[str, str] = {}
    for key, turn in cited_turns(store.db, cited.values()).items():
        before = store.db.execute("SELECT text FROM turns WHERE session = ? AND seq < ?"
                                  " AND name <> ? ORDER BY seq DESC LIMIT 1",
                                  (turn.session, turn.seq, turn.name)).fetchone()
        found[key] = before[0] if before else ""
    return lambda memory: found.get(cited.get(memory.id, ""), "")


PLAN_GRACE = dt.timedelta(days=7)   # "on May 22nd and 29th" names only the 22nd it reads


def _gone_by(plan: Memory, today: dt.date) -> bool:
    """Whether the last day ``plan`` names (:func:`_day_of`) is more than
    :data:`PLAN_GRACE` before ``today``."""
    day = _day_of(plan)
    return day is not None and day + PLAN_GRACE < today


def _named_day(memory: Memory) -> dt.date | None:
    """The day ``memory`` names (:func:`_day_of`), unless one that comes back every year
    (:func:`projections.when.yearly`: a birthday)."""
    return None if yearly(without_discourse(memory.content)) else _day_of(memory)


def _to_come(day: dt.date | None, memory: Memory) -> TypeGuard[dt.date]:
    """Whether ``day`` (:func:`_named_day`) was still to come when ``memory`` was said ("…
    is starting at the new school on Monday")."""
    return day is not None and day >= from_iso(memory.created_at).date()


def _day_of(memory: Memory) -> dt.date | None:
    """The last day ``memory`` names (:func:`projections.when.last_day`, from the day it was
    said), or None. A weekday it names is read as its date
    (:func:`projections.relative_time.annotate`: "… the Vinyasa Flow class on Tuesday",
    said on Saturday 27 May, is on 30 May), which mining leaves as said in a plan."""
    try:
        said = from_iso(memory.created_at).date()
    except ValueError:
        return None
    return last_day(annotate(memory.content, said), said)


# A mined statement joins MEMORY.md when it *says* a like, a relationship or a dated plan
# of the person it names — the verb right after the subject — not when such a word is
# anywhere in it ("… so much love and support …": after a night over a LoCoMo conversation
# that rule put ~75 of its statements in MEMORY.md, most of them a day's feelings).
# Not a like: a reaction to what was just proposed ("The user likes the idea of a content
# calendar", "… loves the sound of that recipe"), the other side's suggestion, not the
# person's own taste ("loves the sound of rain" is one); nor a verdict "so far" ("likes the
# schedule so far"), which lasts only as long as the thing it judges.
_LIKES = re.compile(WHO + rf"(?!.*{SO_FAR.pattern})"
                    r"(?:(?:loves?|likes?|enjoys?|prefers?|hates?|dislikes?|adores?"
                    r"|can't stand|can’t stand)\b(?! (?:the )?(?:(?:idea|thought|suggestion)s?"
                    r" of|(?:sound|look)s? of (?:(?:that|this|these|those|it|your|\w+ing)\b"
                    r"|(?:the )?[A-Z])))"
                    r"|(?:is (?:a (?:big |huge )?fan of|allergic|vegetarian|vegan|into)"
                    r"|favou?rite)\b)")
_KIN = re.compile(WHO + rf"(?:(?:{KIN_WORDS}|best friend)\b|(?:has|got) (?:a|an|two|three"
                  rf"|four|five|\d+) (?:\w+ )?(?:{KIN_WORDS})\b"
                  r"|is (?:married|engaged|dating|divorced)|(?:named|called) )")
# what someone close feels, ought to or will do, rather than who they are to the person
# ("Melanie's kids are so excited about summer break", "… kids should have the best", "…
# brother Michael is going to Japan soon"): it passes. A plan the person shares ("The
# user's partner and the user are planning to move in together") stays.
_CLOSE = r"\w+(?: [A-Z][\w'’-]*)? "    # "kids ", "brother Michael "
# a feeling of the moment, not who someone is
_FEELING = (r"(?:(?:so|really|very|super|a bit|a little|pretty|quite|also|all|feeling|getting)"
            r" )*(?:excited|happy|thrilled|sad|upset|worried|nervous|jealous|proud|tired|bored"
            r"|stressed|anxious|glad|grateful|thankful|scared|afraid|annoyed|angry"
            r"|disappointed|surprised|amazed|overwhelmed|blessed|motivated|inspired|stoked"
            r"|pumped|relieved|lucky|busy|struggling|intrigued|looking forward)\b")
_BE = r"(?:is|are|was|were|feels?|felt|seems?|looks?)"
_PASSING = re.compile(WHO + rf"(?:(?:{_CLOSE})?{_BE} {_FEELING}|{_CLOSE}(?:(?:should|could"
                      r"|would|might|must|will)\b|(?:is|are) (?:going|planning) to\b))")
# the person's own feeling, wish, need or thought of the moment ("Nate has been getting so
# stressed lately", "Joanna wishes Joanna could try it", "… is tempted to try …", "… is
# curious to know more about …", "… is still reflecting on the workshop", "… has been having
# a hard time getting motivated", "John needs way better education", said of everyone's
# "we"), or what they remember ("… remembers feeling a bit stuck to a schedule"): no theme
# of theirs
_FEELS = re.compile(WHO + rf"(?:(?:{_BE}|has been|have been|gets?|got|keeps?) (?:{_FEELING}"
                    r"|feeling\b)|wish(?:es)?\b|needs?\b|remembers\b|recalls\b"
                    r"|(?:is|are) (?:tempted|curious to)\b"
                    r"|(?:is|are|has been|have been) (?:(?:still|also|really) )*(?:reflecting on"
                    r"|having (?:a (?:hard|tough) time|trouble))\b)")
# a preference's subject key, named from the words right after "I prefer …", "my favourite
# … is": its value is in the sentence that says it, the first
_PREFERENCE_KEY = re.compile(r"\|(?:prefers |favourite)")
# a when: "next" only before a time ("next week", not "the user's next track day")
_WHEN = re.compile(rf"\b(?:{MONTH_NAME}|tomorrow|{DAY_NAME}|\d{{4}}|next (?:week|month|year"
                   r"|weekend|summer|winter|spring|autumn|fall))\b")


def plan_when(statement: str) -> bool:
    """Whether ``statement`` says when: a day, month, year or "next …" that is no past
    event's ("… the writing skills the user learned at a workshop the user attended in
    February 2023", "… the vacuum cleaner the user bought on February 10th": a past verb
    up to three words before it)."""
    for found in _WHEN.finditer(statement):
        words = re.findall(r"[a-z']+", statement[:found.start()].casefold())
        if not any(is_past(words[i], words[i - 1] if i else "")
                   for i in range(max(len(words) - 3, 0), len(words))):
            return True
    return False


def statement_of(memory: Memory) -> str:
    """What a memory's line states: its text; of a mined statement without a headline
    before a colon ("Big news: …") and only its first sentence's main clause
    (:func:`projections.readable.main_clause`: "Tim loves traveling too. That picture is
    awesome." → "Tim loves traveling too."; "The user has a Honda Civic Si, and the user is
    looking to upgrade …" → "The user has a Honda Civic Si."): what follows is mostly the
    turn's chatter. A current value keeps what may say its value: all of its sentences
    when it has more than one ("… gave the hamster a new name. Everyone calls him Pudding
    now."; not a preference, said right after "prefers"), up to one that only comments
    (:func:`projections.readable.without_comments`: "It's an awesome way to connect"), a
    reason or relative clause ("…, because Maya is allergic to shellfish"); where a person
    lives ends before another statement of theirs, once it has named the place
    (:func:`projections.readable.another_statement`: "… living in the San Francisco Bay
    Area, and the user is flexible with their travel dates"). A line that
    points out of itself past its first clause (:func:`projections.readable.points_out`) is
    cut before the clause that does, when what is left reads on its own. Words that lean
    on the conversation go (:func:`projections.readable.without_leaning`: "also", "too").
    A routine (:data:`KEPT_UP`; no value but a taste's, which says itself in its first
    clause; another may say itself later: "… has been tracking food intake for a while now,
    and … noticed that dairy products make the user bloated") ends where a clause with a
    subject of its own begins (:func:`_first_clause`: "… twice a week for a month now, and
    the user has noticed …"; "… taking sculpting classes on Saturdays for a while now, and
    the user has been thinking about …")."""
    if memory.source in NOT_MINED:
        return _plain(memory.content)
    line = without_leaning(_stated(memory))
    if memory.type == PREFERENCE.name and (not memory.subject or is_taste(memory.subject)) \
            and KEPT_UP.search(line):
        return _first_clause(line)   # a routine, without ", and the user has noticed …"
    return line


def _stated(memory: Memory) -> str:
    """A mined memory's line as :func:`statement_of` wrote it before it left out the words
    that lean on the conversation."""
    line = _mined_statement(memory)
    if points_out(line) and not points_out(head := _first_clause(line)):
        line = head       # "Nate is a big fan of Nintendo games, and … play this one …"
    return referring_back(line)


def _mined_statement(memory: Memory) -> str:
    """A mined memory's statement (:func:`statement_of`) as it names its person."""
    text = without_lead_in(_plain(memory.content))   # "Career change done: Aisha got …"
    first = first_sentence(text)
    if memory.subject and first != text and not _PREFERENCE_KEY.search(memory.subject):
        return without_discourse(without_comments(text))
    line = main_clause(first, value=bool(memory.subject))
    if attribute_of(memory.subject.rpartition("|")[2]) == "home" \
            and (cut := another_statement(line)) is not None \
            and names_something(line[:cut], besides=first_word(line).capitalize()):
        return line[:cut].rstrip() + "."     # where they live, not what they do there
    return line


def _plain(content: str) -> str:
    """A memory's text on one line, secrets masked, without a list mark."""
    return LIST_MARK.sub("", " ".join(scrub(content).split()))


# a relative clause after a comma: what it tells of began with something else ("… her new
# cat tower, which the user got from Petco")
_RELATIVE = re.compile(r",\s+(?:which|who|whom|whose|where)\b")


def bullet_of(memory: Memory, names: frozenset[str] = frozenset()) -> str:
    """A memory's line: its statement (:func:`statement_of`), and for the current value of
    an attribute (:func:`..mining.values.states_a_value`; ``names`` as there) a day, unless
    the line names one ("… got a new puppy on February 10th (since 1 November 2023)" would
    read as two beginnings; a day without a year gets the day it was said, as any line
    telling time from it does: :func:`dated`). The day it began, "(since 7 March 2026)",
    the day it was first said, only when the value is known to have begun then: the line
    tells of the change before any relative clause (:func:`..mining.values.says_a_change`: "… moved
    to Leeds", "… switched to green tea"; not "… lounges on her cat tower, which the user
    got from Petco"). Otherwise the value was told in passing, and had held for who knows
    how long: "(said 17 April 2022)", the day it was last said ("Joanna is lactose
    intolerant (since 17 April 2022)" would read as the day it began). So too a value that
    replaced an older one (dreaming's supersede on a conflict) without telling the change:
    it began after the older one was last said, on a day nobody told ("The user is in zip
    code 30309 (since 10 March 2023)" read as the day of a move). So too, whatever the rest,
    any line whose first clause says what is about to happen, undated (:data:`IMPENDING`:
    "The user is moving to Melbourne soon (said 27 May 2023)", not a move made), and a
    value's that says it has held a while (:data:`_HELD_FOR`: "… has been teaching for
    over 10 years (said …)", not the teaching's first day). A statement with a subject key
    that says no value ("… are planning to move in together", a relationship line) gets
    none but :func:`dated`'s."""
    text = statement_of(memory)
    if not memory.created_at or periods(text):
        return dated(text, memory)
    impending = IMPENDING.search(text)
    if not impending and not (memory.subject and states_a_value(memory, names)):
        return dated(text, memory)
    if not impending and not _HELD_FOR.search(text) \
            and says_a_change(_RELATIVE.split(text, maxsplit=1)[0]):
        return with_day(text, "since", from_iso(memory.created_at).date())
    said = from_iso(memory.last_seen or memory.created_at).date()
    return with_day(text, "said", said)


def dated(line: str, memory: Memory) -> str:
    """``line`` (``memory``'s) with the day its words were said, when they tell time from
    it (:func:`projections.when.from_said`): "… a lot of salads lately (said 27 May 2023)",
    "… planning a trip to New York City in June (said 3 March 2023)"; read months later,
    "lately" or "in June" otherwise means another time. A line that names a year dates
    itself ("Maya moved to Plymouth on the weekend of 7 March 2026, Maya lives in Plymouth
    now")."""
    if not memory.created_at or any(p.year is not None for p in periods(line)):
        return line
    said = from_iso(memory.created_at).date()
    if not from_said(line, said):
        return line
    return with_day(line, "said", said)


def with_day(line: str, word: str, day: dt.date) -> str:
    """``line`` ending "(WORD DAY)" instead of its full stop: "… lives in Leeds (since 3 May
    2026)"; :func:`bare` takes it off."""
    return f"{line.rstrip('.')} ({word} {day_text(day)})"


def bare(bullet: str) -> str:
    """A line without its "(since …)" or "(said …)"."""
    return without_since(bullet)
SYSTEM = ("You keep a person's long-term memory file tidy. You get the bullet points of one "
          "section. Merge bullets that say the same thing, drop repeats, keep every distinct "
          'fact, short and in plain words. Reply with only the bullet lines, each starting '
          'with "- ".')
ANSWER_ROOM = 700                     # tokens of the window kept for the answer
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+(.+?)\s*$")


@dataclass
class ConsolidationReport:
    entries: int = 0
    journals: list[str] = field(default_factory=list)
    stale_dropped: int = 0
    added: int = 0
    trimmed: int = 0
    rewritten_sections: list[str] = field(default_factory=list)
    failures: int = 0
    model: str = HEURISTIC
    changed: bool = False
    before_chars: int = 0
    after_chars: int = 0
    dry_run: bool = False
    seconds: float = 0.0
    content: str = ""
    # the refs of the memory each line of the content states, by the line (after "- ")
    refs: dict[str, list[str]] = field(default_factory=dict)


@dataclass
class Section:
    title: str
    bullets: list[str] = field(default_factory=list)
    other: list[str] = field(default_factory=list)   # non-bullet lines a person wrote


def parse(content: str) -> tuple[list[str], list[Section]]:
    """(lines before the first section, the sections in file order)."""
    head: list[str] = []
    sections: list[Section] = []
    for line in content.splitlines():
        if line.startswith("## "):
            sections.append(Section(line[3:].strip()))
            continue
        bullet = _BULLET.match(line)
        target = sections[-1] if sections else None
        if target is None:
            if line.strip() and line.strip() != TITLE:
                head.append(line)
        elif bullet:
            target.bullets.append(bullet.group(1))
        elif line.strip():
            target.other.append(line)
    return head, sections


def render(head: list[str], sections: list[Section]) -> str:
    out = [TITLE, ""] + ([*head, ""] if head else [])
    for section in sections:
        if not section.bullets and not section.other:
            continue
        out += [f"## {section.title}", *section.other, *(f"- {b}" for b in section.bullets), ""]
    return "\n".join(out).rstrip() + "\n"


def _ordered(sections: dict[str, Section]) -> list[Section]:
    known = [sections[t] for t in ORDER if t in sections]
    return known + [s for t, s in sections.items() if t not in ORDER]


def _trim(head: list[str], sections: list[Section], report: ConsolidationReport) -> str:
    text = render(head, sections)
    while len(text) > TARGET:
        longest = max(sections, key=lambda s: (len(s.bullets), -ORDER.index(s.title)
                                               if s.title in ORDER else 0))
        if not longest.bullets:
            break
        longest.bullets.pop(0)
        report.trimmed += 1
        text = render(head, sections)
    return text


def watermark(log: EventLog) -> tuple[int, str | None]:
    """(``reviewed_upto`` of the last rewrite, its event id)."""
    last = log.read(types=[LongTermRewritten], descending=True, limit=1)
    if not last:
        return 0, None
    return last[0].data_as(LongTermRewritten).reviewed_upto, last[0].id


def _new_entries(store: ProjectionStore, after: int) -> list[tuple[int, str, str, str]]:
    """(seq, id, date, content) of journal entries after ``after``, in log order."""
    try:
        return store.db.execute("SELECT seq, id, date, content FROM journal_entries"
                                " WHERE seq > ? ORDER BY seq, n", (after,)).fetchall()
    except Exception:  # the journal projection does not exist yet
        return []


def _stale(names: frozenset[str], active: list[Memory], inactive: list[Memory],
           offered: Callable[[Memory], str], today: dt.date | None,
           phase_days: float = PHASE_DAYS,
           unattested: Callable[[str], bool] | None = None) -> set[str]:
    """What ``inactive`` (superseded and archived) memories said, unless an active one
    says it too (a merged duplicate says what its keeper says); and what an active memory
    says that no longer joins MEMORY.md (:func:`section_for`: a line written before a rule
    left it out goes on the next run, a note's plan a week past its day)."""
    def lines(memories: Iterable[Memory]) -> set[str]:   # a line written whole or cut
        return {normal(form) for m in memories if m.content.strip()
                for form in (*_earlier_forms(m), statement_of(m))}

    gone = lines(inactive) - lines(active)
    left_out = {m.id for m in active
                if section_for(m, names, offered, today, phase_days,
                               unattested=unattested) is None}
    return gone | (lines(m for m in active if m.id in left_out)
                   - lines(m for m in active if m.id not in left_out))


def theme_lines(active: list[Memory], names: frozenset[str],
                offered: Callable[[Memory], str], today: dt.date | None,
                phase_days: float = PHASE_DAYS,
                unattested: Callable[[str], bool] | None = None) -> list[str]:
    """The lines of the Themes section: what each speaker keeps coming back to
    (:mod:`.themes`), from the active mined statements that open with a speaker (not their
    possessive), join no other section, read as a lasting line (:func:`_lasting`) and are
    no passing phase nor what was about to happen, long unsaid (:func:`phase_over`)."""
    said, by_id = [], {}
    for m in active:
        text = without_discourse(m.content)
        if m.source in NOT_MINED or not m.content.strip() or first_word(text) not in names:
            continue
        said.append(Said(m.id, first_word(text), m.session, m.created_at, m.content,
                         theme_line(m)))
        by_id[m.id] = m

    def allowed(s: Said) -> bool:     # not "John's teammates come from all over"
        memory = by_id[s.id]
        return not _POSSESSIVE.match(s.line) and _lasting(memory, names) and section_for(
            memory, names, offered, today, phase_days, unattested=unattested) is None \
            and not (today is not None
                     and phase_over(memory, today, phase_days, _PASSING_OR_IMPENDING))

    return [dated(s.line, by_id[s.id]) for s in theme_statements(said, allowed, skip=names)]


def theme_line(memory: Memory) -> str:
    """A theme statement's line: its line (:func:`statement_of`) up to a clause that goes on
    with a subject of its own ("The user has been making a lot of salads lately, and the user
    just got …" → "The user has been making a lot of salads lately."), when five words or
    more are left."""
    return _first_clause(statement_of(memory))


def _first_clause(line: str) -> str:
    """``line`` up to a clause that goes on with a subject of its own (:data:`NEXT_CLAUSE`),
    when five words or more are left."""
    found = NEXT_CLAUSE.search(line)
    if found and len(line[:found.start()].split()) >= 5:
        return line[:found.start()].rstrip() + "."
    return line


_POSSESSIVE = re.compile(r"^\S+['’]s?\s")


def _lasting(memory: Memory, names: frozenset[str]) -> bool:
    """Whether a mined statement says something lasting of the speaker it opens with: the
    tests of a current value (:func:`..mining.values.states_a_value`: no intention, need,
    guess, tally), no event (nor a date in its line: "… recalls sending 12 messages to an
    influencer on July 15th"), no feeling or wish of the moment (:data:`_FEELS`), no
    reaction to what was offered (a like of the idea, thanks)."""
    text = without_discourse(without_lead_in(memory.content))
    line = statement_of(memory)
    return (states_a_value(memory, names) and not is_event(text) and not periods(line)
            and not points_out(theme_line(memory)) and not _FEELS.match(text)
            and not _THANKS.search(line) and not _LIKED.search(line))


def _earlier_forms(memory: Memory) -> tuple[str, ...]:
    """How earlier versions wrote a memory's line: its whole text, its first sentence, all
    its sentences without a discourse marker (comments too), its statement naming the user
    wherever it does, its first main clause with a headline before "the user" kept, its
    line with the words that lean on the conversation."""
    text = without_lead_in(_plain(memory.content))
    mined = memory.source not in NOT_MINED
    named = _mined_statement(memory) if mined else text
    headline = main_clause(first_sentence(_plain(memory.content)))   # "Big news: the user …"
    stated = _stated(memory) if mined else text
    return (memory.content, text, first_sentence(text), without_discourse(text), named,
            headline, stated, without_leaning(stated) if mined else text)


def _restated(active: list[Memory], names: frozenset[str]
              ) -> tuple[dict[str, str], dict[str, list[str]]]:
    """The line to write now (:func:`bullet_of`) for an active mined memory, by the normal
    form of each way it has been written (:func:`_earlier_forms`): a line an earlier
    version wrote otherwise is restated. And the refs of each active memory by the normal
    form of each line it is written as (its line, its statement, its theme line:
    :func:`line_refs` reads it)."""
    out: dict[str, str] = {}
    refs: dict[str, list[str]] = {}
    for m in active:
        if not m.content.strip():
            continue
        line, stated = bullet_of(m, names), statement_of(m)
        if m.refs:
            for form in (line, stated, _first_clause(stated)):
                refs.setdefault(normal(bare(form)), list(m.refs))
        if m.source in NOT_MINED:
            continue
        for form in (*_earlier_forms(m), stated):
            out.setdefault(normal(form), line)
    return out, refs


def line_refs(content: str, stated: dict[str, list[str]]) -> dict[str, list[str]]:
    """For each line of ``content`` that states an active memory (``stated``, by the normal
    form of its line, as :func:`_restated` gives), the memory's refs, by the line's text:
    what recall gives as the lines' provenance (``LongTermRewritten.refs``)."""
    out: dict[str, list[str]] = {}
    for raw in content.splitlines():
        if raw.startswith("- "):
            line = raw[2:]
            found = stated.get(normal(bare(line)))
            if found:
                out[line] = found
    return out


def merge(store: ProjectionStore, current: str, entries: list[tuple[int, str, str, str]],
          report: ConsolidationReport, today: dt.date | None = None,
          phase_days: float = PHASE_DAYS
          ) -> tuple[list[str], list[Section], set[str], dict[str, list[str]]]:
    """The deterministic merge on ``today`` (the log's own time; ``phase_days`` as in
    :func:`section_for`); returns (head, sections, titles of changed sections, the
    memories' refs by the lines they are written as: :func:`line_refs`)."""
    head, parsed = parse(current)
    sections = {s.title: s for s in parsed}
    names = speaker_names(store)
    active = list_memories(store.db)
    offered = offers(store, active)
    inactive = list_memories(store.db, None, ("superseded", "archived"))
    family = Family(((m.refs[0] if m.refs else m.id, m.content) for m in active
                     if m.source not in NOT_MINED
                     and first_word(without_discourse(m.content)) in names), names,
                    own_turns(store))
    stale = _stale(names, active, inactive, offered, today, phase_days, family.unattested)
    changed: set[str] = set()
    themes = sections.pop(THEMES, Section(THEMES))      # written anew below
    for section in sections.values():
        kept = [b for b in section.bullets if normal(bare(b)) not in stale]
        if len(kept) != len(section.bullets):
            report.stale_dropped += len(section.bullets) - len(kept)
            section.bullets = kept
            changed.add(section.title)
    restated, stated = _restated(active, names)
    for section in sections.values():
        lines = [restated.get(normal(bare(b)), b) for b in section.bullets]
        if lines != section.bullets:
            section.bullets = list(dict.fromkeys(lines))
            changed.add(section.title)
    said = {normal(bare(b)) for s in sections.values() for b in s.bullets}
    for _seq, entry_id, _date, content in entries:
        text = " ".join(scrub(content).split())
        if not text or normal(text) in said or normal(text) in stale:
            continue
        memory = get_memory(store.db, entry_id)
        if memory is not None and memory.status != "active":
            continue
        title = section_for(memory, names, offered, today, phase_days,
                            unattested=family.unattested) if memory else NOTES
        if title is None:
            continue          # an event of a day: its journal keeps it, MEMORY.md does not
        line = bullet_of(memory, names) if memory else text
        if normal(bare(line)) in said:
            continue
        _add(sections.setdefault(title, Section(title)), line)
        said.update({normal(text), normal(bare(line))})
        changed.add(title)
        report.added += 1
    lines = [line for line in theme_lines(active, names, offered, today, phase_days,
                                          family.unattested)
             if normal(bare(line)) not in said]
    if lines != themes.bullets:
        changed.add(THEMES)
    if lines or themes.other:
        sections[THEMES] = Section(THEMES, lines, themes.other)
    pinned = {normal(bare(bullet_of(m, names))) for m in active if m.source in NOT_MINED}
    changed |= _without_subsumed(sections, names, pinned)
    _write_families(sections, family, changed)
    return head, _ordered(sections), changed, stated


# a word that turns a line's meaning round: "… can't have dairy" says no "… has dairy"
_NEGATION = re.compile(r"\b(?:not|no|never|nor|none|nothing|without)\b|n[’']t\b",
                       re.IGNORECASE)


def _person(line: str, names: frozenset[str]) -> str:
    """The speaker a line is about: the first name of one it says ("Since Joanna is …":
    joanna), else "the" for "the user" (as :func:`..mining.values.speaker_names`), else ""."""
    for word in re.findall(r"[\w'’]+", line):
        if (key := first_word(word)) in names and key != "the":
            return key
    return "the" if re.search(r"\bthe user\b", line, re.IGNORECASE) else ""


def _said_by(line: str, other: str, names: frozenset[str]) -> bool:
    """Whether ``other``, a line about the same speaker, says all ``line`` does: each of
    ``line``'s content words, and some more ("Joanna is lactose intolerant" — "Since Joanna
    is lactose intolerant Joanna is trying out dairy-free options …"), neither line
    negated unless both are."""
    return _says_all(_gist(line, names), _gist(other, names))


def _gist(line: str, names: frozenset[str]) -> tuple[str, frozenset[str], bool]:
    """What :func:`_said_by` compares of a line: its person, its content words, whether
    it is negated."""
    return (_person(line, names), frozenset(content_words(bare(line))),
            bool(_NEGATION.search(line)))


def _says_all(line: tuple[str, frozenset[str], bool],
              other: tuple[str, frozenset[str], bool]) -> bool:
    (who, words, negated), (whose, more, denied) = line, other
    return bool(who) and bool(words - {who}) and words < more and who == whose \
        and negated == denied


def _without_subsumed(sections: dict[str, Section], names: frozenset[str],
                      pinned: set[str]) -> set[str]:
    """Drops each line another line of any section says all of (:func:`_said_by`), but a
    note the person asked to keep (``pinned``, by normal form) and a family line (written
    anew: :func:`_write_families`); returns the titles of the sections changed."""
    gists = {b: _gist(b, names) for s in sections.values() for b in s.bullets
             if not FAMILY_LINE.match(b)}
    changed: set[str] = set()
    for section in sections.values():
        kept = [b for b in section.bullets if b not in gists or normal(bare(b)) in pinned
                or not any(_says_all(gists[b], gist) for other, gist in gists.items()
                           if other != b)]
        if len(kept) != len(section.bullets):
            section.bullets = kept
            changed.add(section.title)
    return changed


def own_turns(store: ProjectionStore) -> list[tuple[str, str, str]]:
    """(ref, speaker as statements name them, text) of the turns by a source (mining's
    rule: :func:`..mining.chunks.is_source`) that say a word for kin or a pet, for the family
    lines (:data:`.family._OWN`), without a memory block pasted into them. Not a turn a
    forgotten memory was mined from (what the person asked to forget), nor a long one
    (:func:`projections.recall.long_turns`: "my little sister Stella sang" is a story
    pasted in to be analysed)."""
    imported, person = imported_sessions(store.db), person_name(store.db)
    forgotten = {ref for m in list_memories(store.db, None, ("forgotten",)) for ref in m.refs}
    turns = [turn for turn in turns_saying(store.db, KIN_PHRASES)
             if is_source(turn.role, turn.name or turn.role, imported=turn.session in imported)
             and not {turn.ref, turn.event_id} & forgotten]
    long = long_turns(store.db, [turn.event_id for turn in turns])
    return [(turn.ref or turn.event_id, display_name(speaker(turn.role, turn.name, person)),
             strip_injected(turn.text)) for turn in turns if turn.event_id not in long]


def _add(section: Section, line: str) -> None:
    """``line`` at the end of ``section``; in Workflows, in place of a routine of the same
    person and activity (:func:`_same_routine`): said again, maybe changed, the newer line
    stands."""
    same = _same_routine(section.bullets, line) if section.title == WORKFLOW.section else None
    if same is None:
        section.bullets.append(line)
    else:
        section.bullets[same] = line


def _write_families(sections: dict[str, Section], family: Family, changed: set[str]) -> None:
    """People's first lines written anew (:mod:`.family`): ``family`` is read from the
    active mined statements that open with a speaker (not a pasted text)."""
    lines = [scrub(line) for line in family.lines()]
    people = sections.get(PEOPLE, Section(PEOPLE))
    others = [b for b in people.bullets if not FAMILY_LINE.match(b)]
    if lines + others != people.bullets:
        changed.add(PEOPLE)
        people.bullets = lines + others
    if people.bullets or people.other:
        sections[PEOPLE] = people


def _model_rewrite(spec: MinerSpec, llm: LLMConfig, section: Section,
                   window: int | None) -> tuple[list[str] | None, str, str]:
    """(the model's bullets, or None; the error; the reply) for one section."""
    bullets = "\n".join(f"- {scrub(b)}" for b in section.bullets)
    user = f"Section: {section.title}\nBullets:\n{bullets}\n\nAt most {len(section.bullets)} " \
           "bullets:"
    if estimate(SYSTEM) + estimate(user) + ANSWER_ROOM > (window or 2048):
        return None, "", ""  # too long for the model's window: the merge stands
    backend = backend_for(spec, llm)
    reply = backend.chat([{"role": "system", "content": SYSTEM},
                          {"role": "user", "content": user}], stream=False, temperature=0,
                         max_tokens=min(ANSWER_ROOM, 40 * len(section.bullets) + 40))
    text = reply.text
    found = [m.group(1) for m in map(_BULLET.match, text.splitlines()) if m]
    if not found:
        value = decode_lenient(text)
        if isinstance(value, list):
            found = [str(v) for v in value if isinstance(v, str)]
    found = [" ".join(scrub(b).split()) for b in found if content_words(b)]
    source = " ".join(section.bullets)
    if not found:
        return None, "no bullet lines in the answer", text
    ungrounded = [b for b in found if not grounded(b, source)]
    if ungrounded:
        return None, f"{len(ungrounded)} bullet(s) not found in the section", text
    if len(found) > len(section.bullets):
        return None, "more bullets than it was given", text
    return found, "", text


def consolidate(home: Home, spec: MinerSpec, *, dry_run: bool = False,
                progress: ProgressFactory = no_progress) -> ConsolidationReport:
    """One consolidation (see the module doc)."""
    report = ConsolidationReport(dry_run=dry_run)
    started = time.monotonic()
    with pass_lock(home, "consolidate"), EventLog(home.events_db) as log, \
            open_store(home, log) as store:
        store.catch_up_all()
        upto, previous = watermark(log)
        entries = _new_entries(store, upto)
        current = read_long_term(store.db)
        report.entries, report.before_chars = len(entries), len(current)
        report.journals = sorted({e[2] for e in entries})
        today = log_now(log, clock.now()).date()
        config = load_config(home)
        head, sections, changed, stated = merge(store, current, entries, report, today,
                                                config.dreaming.half_life_days)
        events: list[NewEvent] = []
        if changed and spec.uses_model:
            llm = config.llm
            window = backend_for(spec, llm).context_window()
            report.model = backend_for(spec, llm).model
            with progress(len(changed), "Consolidating") as step:
                for section in sections:
                    # a family line is written anew each time, never by the model
                    families = [b for b in section.bullets if FAMILY_LINE.match(b)]
                    asked = Section(section.title, [b for b in section.bullets
                                                    if b not in families], section.other)
                    if section.title not in changed or len(asked.bullets) < 2:
                        continue
                    bullets, error, reply = _model_rewrite(spec, llm, asked, window)
                    if bullets is not None:
                        section.bullets = families + bullets
                        report.rewritten_sections.append(section.title)
                    elif error:
                        report.failures += 1
                        events.append(NewEvent(stream=streams.MEMORY, data=ConsolidationFailed(
                            section=section.title, model=report.model, error=error,
                            reply=scrub(reply)[:600])))
                    step(1)
        content = _trim(head, sections, report)
        report.content, report.after_chars = content, len(content)
        report.refs = line_refs(content, stated)
        report.changed = bool(changed) and content != current
        if report.changed:
            digest = hashlib.sha256(content.encode()).hexdigest()[:16]
            events.append(NewEvent(
                stream=streams.MEMORY, idempotency_key=f"consolidate:{previous}:{digest}",
                data=LongTermRewritten(content=content, journals=report.journals,
                                       model=report.model, refs=report.refs,
                                       reviewed_upto=max((e[0] for e in entries), default=upto))))
        if events and not dry_run and report.changed:
            log.append_many(events)
            store.catch_up_all()
    report.seconds = time.monotonic() - started
    return report

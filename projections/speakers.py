"""Whose words answer: the speaker a question is about.

A question about a person is mostly answered by what that person said: on the LoCoMo dev
set, when a question names exactly one of the two speakers, 96 % of its evidence turns
(931 of 968) are that speaker's own. Turns addressed *to* them ("Hey Tim, …") and the other
speaker's replies match the name just as well, and crowd the budget. So recall weighs a
turn by whether its speaker is the one the question names (:func:`speaker_factors`), and
shows a hit with its reply only when the reply is that speaker's
(:func:`projections.recall`).

A speaker is named when a word of the question is the speaker's first name (case
ignored), or, capitalised and not the question's first word, the start of it ("Mel" for
Melanie, "Jo" for Joanna). Only the speakers of the candidate turns are looked at: no scan
of the log. Pure functions of the query and the candidates.
"""
from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from . import weights
from .turns import speakers_starting

MIN_PREFIX = 2          # "Jo" for Joanna

_WORD = re.compile(r"[^\W\d_]+")


def speaker_of(content: str) -> str:
    """The speaker of a turn item's content (``Speaker: text``)."""
    head, sep, _ = content.partition(": ")
    return head.strip() if sep else ""


def _first_name(speaker: str) -> str:
    return speaker.split()[0].casefold() if speaker.split() else ""


def _naming(query: str, speakers: Iterable[str]) -> dict[str, str]:
    """Each of ``speakers`` the query names, with the word of the query that names it."""
    words = _WORD.findall(query)
    capitalised = {w for w in words[1:] if w[0].isupper() and len(w) >= MIN_PREFIX}
    named: dict[str, str] = {}
    for speaker in sorted(set(speakers)):
        first = _first_name(speaker)
        if not first:
            continue
        word = next((w for w in words if w.casefold() == first), None) or next(
            (w for w in sorted(capitalised) if first.startswith(w.casefold())), None)
        if word:
            named[speaker] = word
    return named


@dataclass(frozen=True)
class Naming:
    """The speakers of a home that a query names, and the query without their names (what
    the semantic half embeds: with a name in it, a question is nearest to the turns that
    address that person — "Hey Tim, …" — not to what they said)."""

    speakers: frozenset[str]
    query: str


def naming(db: sqlite3.Connection, query: str) -> Naming:
    """Look the query's words up among the speakers' names of the home (an index seek a
    word; see :func:`projections.turns.speakers_starting`)."""
    found: set[str] = set()
    for word in dict.fromkeys(w for w in _WORD.findall(query) if len(w) >= MIN_PREFIX):
        found.update(speakers_starting(db, word))
    named = _naming(query, found)
    if not named:
        return Naming(frozenset(), query)
    stripped = query
    for word in set(named.values()):
        stripped = re.sub(rf"\b{re.escape(word)}(?:['’]s)?\b", " ", stripped)
    stripped = re.sub(r"\s+", " ", stripped).strip()
    return Naming(frozenset(named), stripped or query)


def speaker_factors(named: Iterable[str], speakers: Sequence[str]) -> list[float]:
    """A weight per candidate (its speaker, '' for what is not a turn): when the query names
    some of the candidates' speakers (``named``) but not all, turns by others get
    :data:`weights.OTHER_WEIGHT`."""
    chosen = set(named)
    if not chosen or {s for s in speakers if s} <= chosen:
        return [1.0] * len(speakers)
    return [1.0 if not s else weights.NAMED_WEIGHT if s in chosen else weights.OTHER_WEIGHT
            for s in speakers]


# A turn under one of these names in an imported transcript is a model's reply, not a
# person's words (LongMemEval's "assistant"; LoCoMo's speakers are people).
GENERIC_SPEAKERS = frozenset({"assistant", "ai", "model", "bot", "chatbot", "gpt", "system"})


def chat_sessions(db: sqlite3.Connection, sessions: Iterable[str]) -> set[str]:
    """The sessions among ``sessions`` that are diarist chats (every turn there that is not
    the user's is the model's reply, recorded under the model's name)."""
    wanted = sorted(set(sessions))
    if not wanted:
        return set()
    try:
        return {r[0] for r in db.execute(
            "SELECT session FROM mining_sessions WHERE backend NOT IN ('', 'import')"
            f" AND session IN ({','.join('?' * len(wanted))})", wanted)}
    except sqlite3.OperationalError:  # no manifest table in this database
        return set()


# what an export calls the person when it does not name them
NO_PERSON = frozenset({"user", "human", "me", "you"})


def person_name(db: sqlite3.Connection) -> str:
    """The name of the person whose memory this is, as their own turns give it: the one
    name the user's turns carry besides "user" (an imported export that names them:
    "Maya"), or "" when they carry none or several. diarist's chat and proxy record the
    person's turns as "user"; mining writes those in that name, so "I live in Leeds now"
    said in a chat replaces what the person's imported chats said of "Maya"."""
    try:
        rows = db.execute("SELECT DISTINCT name FROM turns WHERE role = 'user'").fetchall()
    except sqlite3.OperationalError:  # the projection does not exist yet
        return ""
    names = {name.strip() for (name,) in rows if name.strip()
             and name.strip().casefold() not in GENERIC_SPEAKERS | NO_PERSON}
    return min(names) if len({name.casefold() for name in names}) == 1 else ""


def is_model(speaker: str, session: str, chats: set[str]) -> bool:
    """Whether a turn by ``speaker`` in ``session`` is a model's reply (see
    :data:`GENERIC_SPEAKERS`, :func:`chat_sessions`)."""
    name = speaker.strip().casefold()
    return name in GENERIC_SPEAKERS or (session in chats and name != "user")

"""LongMemEval's JSON as published (xiaowu0162/LongMemEval: ``longmemeval_s``, ``_m``,
``_oracle``): one JSON list, each element a question with its own haystack.

Fields used: ``question_id`` (an ``_abs`` suffix marks an abstention question, whose answer
was never said), ``question_type`` (the category), ``question``, ``answer`` (a string or a
number), ``question_date`` ("2023/05/30 (Tue) 23:42"), ``haystack_sessions`` (sessions, each
a list of turns ``{"role", "content"}``, the turns that hold the answer with
``"has_answer": true``), ``haystack_session_ids`` and ``haystack_dates`` (one per session),
``answer_session_ids``.

One conversation (one home) per question. Session ``<question>/<session id>`` (a repeated id
gets ``#2``, ``#3``…), turn i of a session at the session's date + 30 s × i (UTC; the dates
are kept as the turns' times, so recency means what it did), ref ``<session>:<i>``, names
``user`` / ``assistant``; turns with no text are left out. Evidence = the ``has_answer`` turns;
``answer_session_ids`` give the evidence sessions (session-level recall counts them even where
no turn is marked). Abstention questions are kept but marked not answerable, so recall skips
them.

**Memory.** The file is read one question at a time (:mod:`.json_stream`): each element is
parsed for its question, its evidence refs and its turn count, and dropped; a
conversation's turns are parsed again from the element's byte offset when they are used
(building its home, the recent-history baseline), the last two kept. So ``longmemeval_m``
(2.7 GB, ~500 sessions a question) needs memory for a question or two, not for the file —
``_s`` and ``_oracle`` (only the evidence sessions) are read the same way.
"""
from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, overload

from .dataset import Conversation, Dataset, DatasetError, Question, turn
from .json_stream import iter_objects, read_object

TURN_SPACING = dt.timedelta(seconds=30)
ABSTENTION_SUFFIX = "_abs"
_DATE = re.compile(r"(\d{4})/(\d{1,2})/(\d{1,2})\s*(?:\([^)]*\))?\s*(\d{1,2}):(\d{2})")


def parse_date(text: str) -> dt.datetime:
    """"2023/05/30 (Tue) 23:42" → 2023-05-30T23:42Z."""
    match = _DATE.search(str(text))
    if not match:
        raise DatasetError(f"LongMemEval date {text!r} is not like '2023/05/30 (Tue) 23:42'",
                           hint="Is this LongMemEval's JSON, unchanged?")
    year, month, day, hour, minute = (int(g) for g in match.groups())
    return dt.datetime(year, month, day, hour, minute, tzinfo=dt.UTC)


def _iso(moment: dt.datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _check(item: Any, index: int) -> str:
    if not isinstance(item, dict):
        raise DatasetError(f"LongMemEval element {index}: expected a question object")
    qid = str(item.get("question_id") or f"question-{index}")
    for key in ("question", "haystack_sessions", "haystack_dates"):
        if key not in item:
            raise DatasetError(f"LongMemEval question {qid}: missing {key!r}")
    sessions, dates = item["haystack_sessions"], item["haystack_dates"]
    if not isinstance(sessions, list) or not isinstance(dates, list) or \
            len(sessions) != len(dates):
        raise DatasetError(f"LongMemEval question {qid}: haystack_sessions and haystack_dates "
                           "must be lists of the same length")
    return qid


def _turns_and_question(item: dict[str, Any], qid: str
                        ) -> tuple[list[dict[str, str]], Question]:
    ids = item.get("haystack_session_ids") or [f"s{i}" for i in range(len(item["haystack_dates"]))]
    names: dict[str, str] = {}   # haystack session id → our session name (first occurrence)
    used: dict[str, int] = {}
    turns: list[dict[str, str]] = []
    evidence: list[str] = []
    for sid, date, session in zip(ids, item["haystack_dates"], item["haystack_sessions"],
                                  strict=False):
        used[str(sid)] = used.get(str(sid), 0) + 1
        name = f"{qid}/{sid}" + (f"#{used[str(sid)]}" if used[str(sid)] > 1 else "")
        names.setdefault(str(sid), name)
        start = parse_date(date)
        for i, message in enumerate(session or []):
            text = str(message.get("content") or "").strip()
            role = message.get("role")
            if not text or role not in ("user", "assistant"):
                continue
            ref = f"{name}:{i}"
            turns.append(turn(name, _iso(start + i * TURN_SPACING), role, role, text, ref))
            if message.get("has_answer"):
                evidence.append(ref)
    sessions = tuple(names[str(s)] for s in item.get("answer_session_ids") or []
                     if str(s) in names)
    question = Question(
        qid, str(item["question"]), str(item.get("answer", "")),
        str(item.get("question_type") or "unknown"), tuple(evidence),
        answerable=not qid.endswith(ABSTENTION_SUFFIX), evidence_sessions=sessions,
        at=_iso(parse_date(item["question_date"])) if item.get("question_date") else None)
    return turns, question


@lru_cache(maxsize=2)
def _haystack(path: Path, offset: int, index: int) -> tuple[dict[str, str], ...]:
    item = read_object(path, offset)
    return tuple(_turns_and_question(item, _check(item, index))[0])


class HaystackTurns(Sequence[dict[str, str]]):
    """One question's turns, parsed from the file (at ``offset``) when they are used."""

    def __init__(self, path: Path, offset: int, index: int, count: int) -> None:
        self.path, self.offset, self.position, self.size = path, offset, index, count

    def _turns(self) -> tuple[dict[str, str], ...]:
        return _haystack(self.path, self.offset, self.position)

    def __len__(self) -> int:
        return self.size

    @overload
    def __getitem__(self, i: int) -> dict[str, str]: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[dict[str, str]]: ...

    def __getitem__(self, i: int | slice) -> dict[str, str] | Sequence[dict[str, str]]:
        return self._turns()[i]

    def __iter__(self) -> Iterator[dict[str, str]]:
        return iter(self._turns())


class HaystackSessions(Mapping[str, str]):
    """ref → session without a table: a ref is ``<session>:<i>`` (see the module doc)."""

    def __init__(self, sessions: frozenset[str], turns: HaystackTurns) -> None:
        self.sessions, self.turns = sessions, turns

    def __getitem__(self, ref: str) -> str:
        session = ref.rpartition(":")[0]
        if session not in self.sessions:
            raise KeyError(ref)
        return session

    def __iter__(self) -> Iterator[str]:
        return (t["ref"] for t in self.turns)

    def __len__(self) -> int:
        return len(self.turns)


def looks_like_element(item: Any) -> bool:
    return isinstance(item, dict) and "haystack_sessions" in item


def load_file(path: Path, name: str) -> Dataset:
    """The dataset of a LongMemEval file, read one question at a time (see the module doc)."""
    conversations = []
    seen: set[str] = set()
    for index, (offset, item) in enumerate(iter_objects(path)):
        qid = _check(item, index)
        if qid in seen:
            raise DatasetError(f"LongMemEval question {qid}: duplicate question_id")
        seen.add(qid)
        turns, question = _turns_and_question(item, qid)
        lazy = HaystackTurns(path, offset, index, len(turns))
        sessions = frozenset(t["session"] for t in turns)
        conversations.append(Conversation(qid, lazy, (question,),
                                          session_of=HaystackSessions(sessions, lazy)))
    if not conversations:
        raise DatasetError(f"{path}: an empty list of LongMemEval questions")
    empty = sum(1 for c in conversations if not c.turns)
    if empty:
        raise DatasetError(f"{empty} LongMemEval question(s) have an empty haystack")
    return Dataset(name, "longmemeval", tuple(conversations))

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
"""
from __future__ import annotations

import datetime as dt
import re
from typing import Any

from .dataset import Conversation, Dataset, DatasetError, Question, turn

TURN_SPACING = dt.timedelta(seconds=30)
ABSTENTION_SUFFIX = "_abs"
_DATE = re.compile(r"(\d{4})/(\d{1,2})/(\d{1,2})\s*(?:\([^)]*\))?\s*(\d{1,2}):(\d{2})")


def looks_like(data: Any) -> bool:
    return (isinstance(data, list) and bool(data) and isinstance(data[0], dict)
            and "haystack_sessions" in data[0])


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


def _conversation(item: dict[str, Any], qid: str) -> Conversation:
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
    return Conversation(qid, tuple(turns), (question,))


def load(data: list[Any], name: str) -> Dataset:
    conversations = []
    seen: set[str] = set()
    for index, item in enumerate(data):
        qid = _check(item, index)
        if qid in seen:
            raise DatasetError(f"LongMemEval question {qid}: duplicate question_id")
        seen.add(qid)
        conversations.append(_conversation(item, qid))
    empty = sum(1 for c in conversations if not c.turns)
    if empty:
        raise DatasetError(f"{empty} LongMemEval question(s) have an empty haystack")
    return Dataset(name, "longmemeval", tuple(conversations))

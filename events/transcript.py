"""Transcript JSONL import and export.

One turn a line: ``{"session", "at", "role", "name", "text", "ref"}`` (docs/architecture.md).
An import is validated whole before anything is appended, then appended in one transaction:
all or nothing. Each turn's idempotency key is its ``ref``, each session's start and end are keyed
by the session id, so importing the same file twice appends nothing the second time.
"""
from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from . import clock
from .errors import ImportFailed
from .ids import new_ulid
from .jsonl import decode_lines
from .log import EventLog, NewEvent, RecordedEvent
from .types import AssistantTurn, SessionEnded, SessionStarted, UserTurn

FIELDS = ("session", "at", "role", "name", "text", "ref")
REQUIRED = ("session", "at", "role", "text", "ref")
ROLES: dict[str, type[UserTurn | AssistantTurn]] = {"user": UserTurn, "assistant": AssistantTurn}
IMPORT_BACKEND = "import"
MAX_REPORTED = 10


@dataclass(frozen=True)
class Turn:
    session: str
    at: dt.datetime
    role: str
    name: str
    text: str
    ref: str
    line: int


@dataclass(frozen=True)
class ImportResult:
    turns: int
    sessions: int
    appended: int
    skipped: int


def _line_error(where: str, obj: Any) -> str | None:
    """What is wrong with one parsed line, or None."""
    if not isinstance(obj, dict):
        return "expected a JSON object"
    missing = [k for k in REQUIRED if k not in obj]
    if missing:
        return f"missing field {', '.join(repr(k) for k in missing)}"
    unknown = sorted(set(obj) - set(FIELDS))
    if unknown:
        return f"unknown field {', '.join(repr(k) for k in unknown)} (allowed: {', '.join(FIELDS)})"
    for key in FIELDS:
        if key in obj and not isinstance(obj[key], str):
            return f"field {key!r} must be a string, got {type(obj[key]).__name__}"
    if obj["role"] not in ROLES:
        return f"unknown role {obj['role']!r} (expected 'user' or 'assistant')"
    for key in ("session", "ref"):
        if not obj[key].strip():
            return f"empty {key!r}"
    if not obj["text"].strip():
        return "empty 'text'"
    try:
        at = dt.datetime.fromisoformat(obj["at"])
    except ValueError:
        return f"'at' {obj['at']!r} is not an ISO-8601 time"
    if at.tzinfo is None or at.utcoffset() is None:
        return f"'at' {obj['at']!r} has no UTC offset (add 'Z' or '+hh:mm')"
    return None


def parse(stream: IO[str], name: str) -> list[Turn]:
    """Parse and validate a whole transcript; raise :class:`ImportFailed` naming every bad
    line (up to ten) as ``file:line: what is wrong``."""
    turns: list[Turn] = []
    errors: list[str] = []
    refs: dict[str, int] = {}
    for line in decode_lines(stream):
        number, obj = line.number, line.value
        if line.error:
            errors.append(f"{name}:{number}: {line.error}")
            continue
        problem = _line_error(name, obj)
        if problem is None and obj["ref"] in refs:
            problem = f"duplicate ref {obj['ref']!r} (first on line {refs[obj['ref']]})"
        if problem:
            errors.append(f"{name}:{number}: {problem}")
        else:
            refs[obj["ref"]] = number
            turns.append(Turn(obj["session"], clock.from_iso(obj["at"]), obj["role"],
                              obj.get("name", ""), obj["text"], obj["ref"], number))
        if len(errors) >= MAX_REPORTED:
            errors.append(f"{name}: stopped after {MAX_REPORTED} errors")
            break
    if errors:
        raise ImportFailed("\n".join(errors))
    if not turns:
        raise ImportFailed(f"{name}: no turns found", hint="A transcript has one JSON turn a line.")
    return turns


def to_events(turns: list[Turn]) -> list[NewEvent]:
    """SessionStarted, the turns, SessionEnded, per session in order of first appearance."""
    by_session: dict[str, list[Turn]] = {}
    for turn in turns:
        by_session.setdefault(turn.session, []).append(turn)
    correlation = new_ulid()
    out: list[NewEvent] = []
    for session, its_turns in by_session.items():
        out.append(NewEvent(
            stream=session, data=SessionStarted(session=session, backend=IMPORT_BACKEND),
            occurred_at=its_turns[0].at, correlation_id=correlation,
            idempotency_key=f"import:{session}:started",
        ))
        for turn in its_turns:
            out.append(NewEvent(
                stream=session,
                data=ROLES[turn.role](session=session, text=turn.text, name=turn.name),
                occurred_at=turn.at, ref=turn.ref, correlation_id=correlation,
                idempotency_key=f"ref:{turn.ref}",
            ))
        out.append(NewEvent(
            stream=session, data=SessionEnded(session=session, turns=len(its_turns)),
            occurred_at=its_turns[-1].at, correlation_id=correlation,
            idempotency_key=f"import:{session}:ended",
        ))
    return out


def import_file(log: EventLog, path: Path) -> ImportResult:
    try:
        with path.open(encoding="utf-8") as handle:
            turns = parse(handle, str(path))
    except FileNotFoundError:
        raise ImportFailed(f"{path}: no such file") from None
    except UnicodeDecodeError as exc:
        raise ImportFailed(f"{path}: not UTF-8 text ({exc.reason})") from None
    batch = to_events(turns)
    recorded = log.append_many(batch)
    return ImportResult(
        turns=len(turns), sessions=len({t.session for t in turns}),
        appended=recorded.new, skipped=len(recorded) - recorded.new,
    )


def export_lines(log: EventLog, unreadable: list[RecordedEvent] | None = None) -> Iterator[str]:
    """Every turn in the log, in log order, as transcript lines (times in UTC).

    A row this code cannot read (``RecordedEvent.problem``) of a turn type or of a type it
    does not know (a newer diarist's turn, maybe) is written as it is stored, marked —
    ``{"unreadable": {the row}, "problem": "why"}`` — so nothing is left out silently (an
    import of the file refuses that line); each is also appended to ``unreadable``."""
    for event in log.iter_all():
        if event.problem:
            if event.type in ROLES_BY_TYPE or not log.registry.knows(event.type):
                if unreadable is not None:
                    unreadable.append(event)
                row = event.to_json()
                yield json.dumps({"unreadable": row, "problem": row.pop("problem")},
                                 ensure_ascii=False)
            continue
        if event.type not in ROLES_BY_TYPE:
            continue
        payload = event.payload
        line = {
            "session": payload["session"],
            "at": clock.to_display(clock.from_iso(event.occurred_at)),
            "role": ROLES_BY_TYPE[event.type],
            "name": payload.get("name", ""),
            "text": payload["text"],
            "ref": event.ref or event.id,
        }
        yield json.dumps(line, ensure_ascii=False)


ROLES_BY_TYPE = {cls.type_name(): role for role, cls in ROLES.items()}

"""Transcript JSONL import and export.

One turn a line: ``{"session", "at", "role", "name", "text", "ref"}`` (docs/architecture.md).
An import is validated whole before anything is appended, then appended in one transaction:
all or nothing. Each turn's idempotency key is its ``ref``, each session's start is keyed by
the session id, so importing the same file twice appends nothing the second time. A session's
end is keyed by its last new turn's ref: a later file that continues a session already in the
log appends the new turns and a new end after them (nothing new: no end). A ref names one
turn: a ref already in the log for a *different* turn (other text, session, role, name or
time) fails the import — checked under the write lock, so two imports racing cannot slip one
past the other (a chat export, whose message ids diarist cannot change, keeps the first
import's turn instead: ``changed="keep"``). Every line is checked and every problem counted;
the first :data:`events.problems.SHOWN` are shown. ``-`` reads the transcript from standard
input. The chat exports diarist also reads (ChatGPT, Claude, Open WebUI) are turned into
:class:`Turn` lists by ``workers/imports/`` and appended here too.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import json
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal

from . import clock
from .errors import ConcurrencyError, ImportFailed
from .ids import new_ulid
from .jsonl import Source, decode_lines
from .log import EventLog, NewEvent, RecordedEvent
from .problems import Problems
from .text import text_problem
from .types import AssistantTurn, SessionEnded, SessionStarted, UserTurn

FIELDS = ("session", "at", "role", "name", "text", "ref")
REQUIRED = ("session", "at", "role", "text", "ref")
ROLES: dict[str, type[UserTurn | AssistantTurn]] = {"user": UserTurn, "assistant": AssistantTurn}
IMPORT_BACKEND = "import"
STDIN = "-"
FILE_HINT = "Check the path (or pass - to read standard input); nothing was imported."


@dataclass(frozen=True)
class Turn:
    session: str
    at: dt.datetime
    role: str
    name: str
    text: str
    ref: str
    line: int
    origin: str = ""   # where it is in a file without lines (a chat export), for messages

    def where(self, name: str) -> str:
        """``file:line``, or ``file: conversation 3, message 'id'`` for an export's turn."""
        return f"{name}: {self.origin}" if self.origin else f"{name}:{self.line}"


@dataclass(frozen=True)
class ImportResult:
    turns: int
    sessions: int
    appended: int
    skipped: int
    # turns whose ref the log already holds for a different turn, kept as first imported
    # (``changed="keep"``): "where: ref 'x' ... its text differs", one each
    kept: tuple[str, ...] = ()
    # of those, how many differ in their session alone: the same message in a copied chat
    # (``changed="keep"``; not in ``kept``)
    copies: int = 0


Changed = Literal["refuse", "keep"]
ATTEMPTS = 5  # plans of one import (a plan is redone when another import got in first)


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
    for key in FIELDS:  # ids and names are printed on one line: no control characters
        problem = text_problem(obj[key], controls=key != "text") if key in obj else None
        if problem:
            return f"{key!r} {problem}"
    return _time_error(obj["at"])


def _time_error(text: str) -> str | None:
    """What is wrong with a turn's ``at``, or None."""
    shown = text if len(text) <= 40 else text[:40] + "…"
    try:
        at = dt.datetime.fromisoformat(text)
    except ValueError:
        return f"'at' {shown!r} is not an ISO-8601 time (e.g. 2024-05-01T09:30:00Z)"
    if at.tzinfo is None or at.utcoffset() is None:
        return f"'at' {shown!r} has no UTC offset (add 'Z' or '+hh:mm')"
    try:
        at.astimezone(clock.UTC)
    except OverflowError:
        return f"'at' {shown!r} is out of range once converted to UTC (years 1 to 9999)"
    return None


def parse(stream: Source, name: str) -> list[Turn]:
    """Parse and validate a whole transcript; raise :class:`ImportFailed` naming the bad
    lines as ``file:line: what is wrong`` (the first few, and how many more)."""
    turns: list[Turn] = []
    problems = Problems()
    refs: dict[str, int] = {}
    for line in decode_lines(stream):
        number, obj = line.number, line.value
        problem = line.error or _line_error(name, obj)
        if problem is None and obj["ref"] in refs:
            problem = f"duplicate ref {obj['ref']!r} (first on line {refs[obj['ref']]})"
        if problem:
            problems.add(f"{name}:{number}: {problem}")
            continue
        refs[obj["ref"]] = number
        turns.append(Turn(obj["session"], clock.from_iso(obj["at"]), obj["role"],
                          obj.get("name", ""), obj["text"], obj["ref"], number))
    if problems:
        raise ImportFailed(problems.render())
    if not turns:
        raise ImportFailed(f"{name}: no turns found (the file is empty)",
                           hint="A transcript has one JSON turn a line; nothing was imported.")
    return turns


def to_events(turns: list[Turn], titles: dict[str, str] | None = None,
              known: dict[str, RecordedEvent] | None = None,
              correlation: str | None = None) -> list[NewEvent]:
    """SessionStarted (with its title from ``titles``), the turns, SessionEnded, per session
    in order of first appearance.

    ``known``: the turns the log already holds, by ref (what :func:`_in_log` found). A
    session with new turns ends after them, keyed ``import:<session>:ended:<its last new
    turn's ref>``: a session a later file continues (a newer export of a conversation, a
    longer transcript) ends again after its new turns, and the mining manifest and the
    schedule see it end when its new last turn was said. A session with nothing new gets no
    end (its end is in the log already)."""
    known = known or {}
    titles = titles or {}
    by_session: dict[str, list[Turn]] = {}
    for turn in turns:
        by_session.setdefault(turn.session, []).append(turn)
    correlation = correlation or new_ulid()
    out: list[NewEvent] = []
    for session, its_turns in by_session.items():
        out.append(NewEvent(
            stream=session,
            data=SessionStarted(session=session, backend=IMPORT_BACKEND,
                                title=titles.get(session, "")),
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
        new = [t for t in its_turns if t.ref not in known]
        if new:
            out.append(NewEvent(
                stream=session, data=SessionEnded(session=session, turns=len(its_turns)),
                occurred_at=its_turns[-1].at, correlation_id=correlation,
                idempotency_key=f"import:{session}:ended:{new[-1].ref}",
            ))
    return out


@contextlib.contextmanager
def opened(path: Path) -> Iterator[tuple[IO[bytes], str]]:
    """The transcript's bytes and the name its errors use (``-``: standard input)."""
    if str(path) == STDIN:
        yield sys.stdin.buffer, "<stdin>"
        return
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        raise ImportFailed(f"{path}: no such file", hint=FILE_HINT) from None
    except IsADirectoryError:
        raise ImportFailed(f"{path}: is a directory, not a transcript file",
                           hint=FILE_HINT) from None
    except OSError as exc:
        raise ImportFailed(f"{path}: cannot be read ({exc.strerror})", hint=FILE_HINT) from None
    with handle:
        yield handle, str(path)


def _in_log(log: EventLog, turns: Sequence[Turn]) -> dict[str, RecordedEvent]:
    """The turns of ``turns`` the log already holds, by ref."""
    found: dict[str, RecordedEvent] = {}
    for start in range(0, len(turns), 500):
        chunk = turns[start:start + 500]
        keys = log.by_idempotency_keys([f"ref:{t.ref}" for t in chunk])
        found.update((key.removeprefix("ref:"), event) for key, event in keys.items())
    return found


def _ref_conflicts(turns: Sequence[Turn], known: dict[str, RecordedEvent], name: str,
                   changed: Changed) -> tuple[list[str], int]:
    """Each turn whose ref the log holds for a different turn: refused (``changed`` is
    "refuse": :class:`ImportFailed` naming them) or kept as first imported — listed, or
    counted when only its session differs (a copied chat's message)."""
    problems = Problems()
    kept: list[str] = []
    copies = 0
    for turn in turns:
        existing = known.get(turn.ref)
        differs = _differences(turn, existing) if existing else []
        if differs == ["session"] and changed == "keep":
            copies += 1
        elif differs:
            message = (f"{turn.where(name)}: ref {turn.ref!r} is already in the log "
                       f"(seq {existing.seq if existing else 0}) for a different turn: "
                       f"its {' and '.join(differs)} "
                       f"{'differs' if len(differs) == 1 else 'differ'}")
            problems.add(message)
            kept.append(message)
    if problems and changed == "refuse":
        raise ImportFailed(
            problems.render(),
            hint="A ref names one turn for good: give a changed turn a new ref (or leave the "
                 "line out) and import again.")
    return kept, copies


class _Moved(Exception):
    """The turns the log holds changed between planning an import and appending it."""

    def __init__(self, known: dict[str, RecordedEvent]) -> None:
        super().__init__("the log changed")
        self.known = known


def _differences(turn: Turn, event: RecordedEvent) -> list[str]:
    payload = event.payload
    fields = {
        "role": ROLES_BY_TYPE.get(event.type) == turn.role,
        "session": payload.get("session") == turn.session,
        "text": payload.get("text") == turn.text,
        "name": payload.get("name", "") == turn.name,
        "time": clock.from_iso(event.occurred_at) == turn.at,
    }
    return [key for key, same in fields.items() if not same]


def read_turns(path: Path) -> tuple[list[Turn], str]:
    """The checked turns of the transcript at ``path`` (``-``: standard input) and the name
    its errors use; :class:`ImportFailed` names what is wrong."""
    with opened(path) as (handle, name):
        return parse(handle, name), name


def import_file(log: EventLog, path: Path) -> ImportResult:
    """Validate the whole transcript at ``path`` (``-``: standard input), then append it in
    one transaction; :class:`ImportFailed` (nothing appended) names what is wrong."""
    return import_turns(log, *read_turns(path))


def import_turns(log: EventLog, turns: list[Turn], name: str, *,
                 titles: dict[str, str] | None = None,
                 changed: Changed = "refuse") -> ImportResult:
    """Append checked turns in one transaction, each session's start with its title from
    ``titles``. A ref already in the log for a different turn refuses them all, or with
    ``changed="keep"`` that turn alone is kept as the log has it (and listed in
    :attr:`ImportResult.kept`).

    The events depend on which turns the log already holds (a continued session ends
    again, :func:`to_events`); the plan assumes none at first (a first import reads the
    refs once) and is redone when the check — under the write lock — finds others."""
    correlation = new_ulid()
    known: dict[str, RecordedEvent] = {}
    kept: list[str] = []
    copies = [0]

    def check() -> None:
        found = _in_log(log, turns)
        kept[:], copies[0] = _ref_conflicts(turns, found, name, changed)
        if found.keys() != known.keys():
            raise _Moved(found)

    for _ in range(ATTEMPTS):
        batch = to_events(turns, titles, known, correlation)
        try:
            recorded = log.append_many(batch, check=check)
        except _Moved as moved:
            known = moved.known
            continue
        sessions = len({t.session for t in turns})
        # skipped: what the log holds already — a session with nothing new has its start,
        # its turns and its end there (its end is not planned again)
        return ImportResult(
            turns=len(turns), sessions=sessions, appended=recorded.new,
            skipped=len(turns) + 2 * sessions - recorded.new, kept=tuple(kept),
            copies=copies[0],
        )
    raise ConcurrencyError(f"{name}: other imports kept appending the same turns; nothing "
                           "was imported", hint="Run the import again.")


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

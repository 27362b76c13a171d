"""The mining manifest: which sessions there are, how far each has been mined, what failed.

One row per session (chat or imported): its backend, how many turns it has and the log
position of the last one, whether it ended, and ``mined_upto`` — the log position of the
last turn a ``MemoriesMined`` chunk covered. A session is waiting to be mined while it has
turns after ``mined_upto``; a session that gains turns later (a longer re-import) waits
again for the new ones only. ``MiningFailed`` events are listed per chunk.
"""
from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from events import RecordedEvent
from events.transcript import IMPORT_BACKEND
from events.types import (
    TURNS,
    AssistantTurn,
    MemoriesMined,
    MiningFailed,
    SessionEnded,
    SessionStarted,
    UserTurn,
)

from .engine import Projector
from .schema import create_table


class MiningProjector(Projector):
    name = "mining"
    handles = frozenset({*TURNS, SessionStarted, SessionEnded, MemoriesMined, MiningFailed})
    version = 1

    def create(self, db: sqlite3.Connection) -> None:
        columns = {"session": str, "backend": str, "started_at": str, "ended": int,
                   "ended_at": str, "turns": int, "last_turn_seq": int, "last_turn_at": str,
                   "mined_upto": int, "chunks": int, "memories": int, "failures": int,
                   "model": str}
        create_table(db, "mining_sessions", columns, "session", defaults={
            c: "" if t is str else 0 for c, t in columns.items() if c != "session"})
        db.execute("CREATE INDEX IF NOT EXISTS mining_waiting"   # on an expression: SQL
                   " ON mining_sessions (last_turn_seq - mined_upto)")
        create_table(db, "mining_failures", {
            "seq": int, "session": str, "first_seq": int, "last_seq": int, "model": str,
            "error": str, "at": str}, "seq")

    def drop(self, db: sqlite3.Connection) -> None:
        db.execute("DROP TABLE IF EXISTS mining_sessions")
        db.execute("DROP TABLE IF EXISTS mining_failures")

    def apply(self, db: sqlite3.Connection, event: RecordedEvent) -> None:
        data = event.data
        if not isinstance(data, UserTurn | AssistantTurn | SessionStarted | SessionEnded
                          | MemoriesMined | MiningFailed) or not data.session:
            return
        session = data.session
        db.execute("INSERT OR IGNORE INTO mining_sessions (session) VALUES (?)", (session,))
        match data:
            case SessionStarted(backend=backend):
                db.execute("UPDATE mining_sessions SET backend = ?, started_at = ?"
                           " WHERE session = ?", (backend, event.occurred_at, session))
            case UserTurn() | AssistantTurn():
                db.execute("UPDATE mining_sessions SET turns = turns + 1, last_turn_seq = ?,"
                           " last_turn_at = ? WHERE session = ?",
                           (event.seq, event.occurred_at, session))
            case SessionEnded():
                db.execute("UPDATE mining_sessions SET ended = 1, ended_at = ? WHERE session = ?",
                           (event.occurred_at, session))
            case MemoriesMined() as mined:
                if mined.last_seq <= 0:
                    return  # not a chunk of this session's turns (written by hand or by a test)
                db.execute("UPDATE mining_sessions SET mined_upto = MAX(mined_upto, ?),"
                           " chunks = chunks + 1, memories = memories + ?, model = ?"
                           " WHERE session = ?",
                           (mined.last_seq, len(mined.memories), mined.model, session))
            case MiningFailed() as failed:
                db.execute("UPDATE mining_sessions SET failures = failures + 1"
                           " WHERE session = ?", (session,))
                db.execute("INSERT OR IGNORE INTO mining_failures"
                           " (seq, session, first_seq, last_seq, model, error, at)"
                           " VALUES (?, ?, ?, ?, ?, ?, ?)",
                           (event.seq, session, failed.first_seq, failed.last_seq, failed.model,
                            failed.error, event.occurred_at))

    def canonical_rows(self, db: sqlite3.Connection) -> Iterable[Sequence[Any]]:
        yield from db.execute("SELECT * FROM mining_sessions ORDER BY session")
        yield from db.execute("SELECT * FROM mining_failures ORDER BY seq")


@dataclass(frozen=True)
class SessionState:
    session: str
    backend: str
    ended: bool
    turns: int
    last_turn_seq: int
    last_turn_at: str
    mined_upto: int
    ended_at: str = ""


_STATE = "session, backend, ended, turns, last_turn_seq, last_turn_at, mined_upto, ended_at"


def _state(r: Sequence[Any]) -> SessionState:
    return SessionState(r[0], r[1], bool(r[2]), r[3], r[4], r[5], r[6], r[7])


def waiting_sessions(db: sqlite3.Connection) -> list[SessionState]:
    """Sessions with turns not mined yet (ended or not: the caller decides), oldest first."""
    try:
        rows = db.execute(
            f"SELECT {_STATE} FROM mining_sessions WHERE last_turn_seq > mined_upto"
            " ORDER BY last_turn_seq").fetchall()
    except sqlite3.OperationalError:  # not projected yet
        return []
    return [_state(r) for r in rows]


def open_chats(db: sqlite3.Connection, since: str) -> list[str]:
    """Chat sessions (not imports) that have not ended and had a turn at or after ``since``:
    someone may be typing."""
    try:
        return [r[0] for r in db.execute(
            "SELECT session FROM mining_sessions WHERE ended = 0 AND backend != 'import'"
            " AND last_turn_at >= ? ORDER BY session", (since,))]
    except sqlite3.OperationalError:
        return []


def session_state(db: sqlite3.Connection, session: str) -> SessionState | None:
    try:
        r = db.execute(f"SELECT {_STATE} FROM mining_sessions WHERE session = ?",
                       (session,)).fetchone()
    except sqlite3.OperationalError:
        return None
    return _state(r) if r else None


def imported_sessions(db: sqlite3.Connection) -> frozenset[str]:
    """The sessions of an imported transcript (every named speaker in them a person)."""
    return frozenset(r[0] for r in db.execute(
        "SELECT session FROM mining_sessions WHERE backend = ?", (IMPORT_BACKEND,)))


def mining_totals(db: sqlite3.Connection) -> dict[str, int]:
    """Sessions, sessions waiting, chunks mined, memories mined, failures."""
    try:
        row = db.execute(
            "SELECT COUNT(*), COALESCE(SUM(last_turn_seq > mined_upto), 0),"
            " COALESCE(SUM(chunks), 0), COALESCE(SUM(memories), 0), COALESCE(SUM(failures), 0)"
            " FROM mining_sessions WHERE turns > 0").fetchone()
    except sqlite3.OperationalError:
        row = (0, 0, 0, 0, 0)
    return dict(zip(("sessions", "waiting", "chunks", "memories", "failures"), row, strict=True))

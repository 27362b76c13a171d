"""The turns projection: every user and assistant turn, with an FTS5 index over its text.

Each row keeps the turn's event id, session, speaker, role, time and ``ref`` so that a
search hit traces back to the event (and the transcript line) it came from.
"""
from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from events import RecordedEvent
from events.transcript import ROLES_BY_TYPE
from events.types import TURNS, AssistantTurn, MemoryForgotten, UserTurn

from .engine import Projector
from .fts import match_any
from .items import forget_keys, scrubbed_passages


class TurnsProjector(Projector):
    """Turn text is scrubbed of secrets; a ``MemoryForgotten`` naming a turn's event id or
    ref removes it."""

    name = "turns"
    handles = frozenset({*TURNS, MemoryForgotten})
    version = 3  # 3: the speakers' names are indexed (recall looks names up)

    def create(self, db: sqlite3.Connection) -> None:
        db.execute(
            "CREATE TABLE IF NOT EXISTS turns ("
            " seq INTEGER PRIMARY KEY, event_id TEXT NOT NULL UNIQUE, session TEXT NOT NULL,"
            " role TEXT NOT NULL, name TEXT NOT NULL, text TEXT NOT NULL, at TEXT NOT NULL,"
            " ref TEXT)"
        )
        db.execute("CREATE INDEX IF NOT EXISTS turns_name ON turns (name COLLATE NOCASE)")
        db.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS turns_fts USING fts5("
            " text, name, content='turns', content_rowid='seq', tokenize='porter unicode61')"
        )

    def drop(self, db: sqlite3.Connection) -> None:
        db.execute("DROP TABLE IF EXISTS turns_fts")
        db.execute("DROP TABLE IF EXISTS turns")

    def apply(self, db: sqlite3.Connection, event: RecordedEvent) -> None:
        match event.data:
            case MemoryForgotten() as forgotten:
                self._forget(db, forget_keys(forgotten))
            case UserTurn() | AssistantTurn() as turn:
                self._add(db, event, turn)

    def _add(self, db: sqlite3.Connection, event: RecordedEvent,
             turn: UserTurn | AssistantTurn) -> None:
        text, _ = scrubbed_passages(turn.text)   # cached: the search and vector indexes ask next
        row = (event.seq, event.id, turn.session, ROLES_BY_TYPE[event.type], turn.name,
               text, event.occurred_at, event.ref)
        inserted = db.execute(
            "INSERT OR IGNORE INTO turns (seq, event_id, session, role, name, text, at, ref)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)", row,
        ).rowcount
        if inserted:  # a duplicate is already done
            db.execute("INSERT INTO turns_fts (rowid, text, name) VALUES (?, ?, ?)",
                       (event.seq, row[5], row[4]))

    def _forget(self, db: sqlite3.Connection, ids: list[str]) -> None:
        if not ids:
            return
        marks = ",".join("?" * len(ids))
        rows = db.execute(f"SELECT seq, text, name FROM turns WHERE event_id IN ({marks})"
                          f" OR ref IN ({marks})", ids + ids).fetchall()
        for seq, text, name in rows:
            db.execute("INSERT INTO turns_fts (turns_fts, rowid, text, name)"
                       " VALUES ('delete', ?, ?, ?)", (seq, text, name))
            db.execute("DELETE FROM turns WHERE seq = ?", (seq,))
        if rows:
            db.execute("INSERT INTO turns_fts (turns_fts) VALUES ('optimize')")

    def canonical_rows(self, db: sqlite3.Connection) -> Iterable[Sequence[Any]]:
        return db.execute(
            "SELECT seq, event_id, session, role, name, text, at, ref FROM turns ORDER BY seq"
        )

    def check(self, db: sqlite3.Connection) -> None:
        # rank = 1 also compares the index with the external content table (the plain form
        # only checks the index's own structure and misses a doubled or missing entry).
        db.execute("INSERT INTO turns_fts (turns_fts, rank) VALUES ('integrity-check', 1)")


@dataclass(frozen=True)
class Turn:
    """A row of the turns projection."""
    seq: int
    event_id: str
    session: str
    role: str
    name: str
    text: str
    at: str
    ref: str | None


@dataclass(frozen=True)
class TurnHit(Turn):
    score: float


def search_turns(db: sqlite3.Connection, query: str, k: int = 10) -> list[TurnHit]:
    """BM25-ranked turns for a free-text query (any characters are safe)."""
    expression = match_any(query)
    if expression is None:
        return []
    rows = db.execute(
        "SELECT t.seq, t.event_id, t.session, t.role, t.name, t.text, t.at, t.ref,"
        " -bm25(turns_fts) FROM turns_fts JOIN turns t ON t.seq = turns_fts.rowid"
        " WHERE turns_fts MATCH ? ORDER BY bm25(turns_fts) LIMIT ?",
        (expression, k),
    ).fetchall()
    return [TurnHit(*row) for row in rows]


def recent_user_text(db: sqlite3.Connection, *, turns: int = 3, excluding: str = "") -> str:
    """The last ``turns`` user turns of the most recent session other than ``excluding``,
    oldest first: what a new chat session most likely picks up again. '' when there are
    none."""
    try:
        row = db.execute("SELECT session FROM turns WHERE role = 'user' AND session != ?"
                         " ORDER BY seq DESC LIMIT 1", (excluding,)).fetchone()
        if row is None:
            return ""
        texts = [r[0] for r in db.execute(
            "SELECT text FROM turns WHERE session = ? AND role = 'user' ORDER BY seq DESC"
            " LIMIT ?", (row[0], turns))]
    except sqlite3.OperationalError:  # the projection does not exist yet
        return ""
    return "\n".join(reversed(texts))


def speakers_starting(db: sqlite3.Connection, prefix: str, limit: int = 8) -> list[str]:
    """The speakers' names that start with ``prefix`` (ASCII case ignored), at most
    ``limit``: one index seek per name, however many turns each has."""
    found: list[str] = []
    bound, op = prefix, ">="
    try:
        while len(found) < limit:
            row = db.execute(f"SELECT name FROM turns WHERE name {op} ? COLLATE NOCASE"
                             " ORDER BY name COLLATE NOCASE LIMIT 1", (bound,)).fetchone()
            if row is None or not row[0][:len(prefix)].lower() == prefix.lower():
                break
            found.append(row[0])
            bound, op = row[0], ">"
    except sqlite3.OperationalError:  # the projection does not exist yet
        return []
    return found


def turns_saying(db: sqlite3.Connection, words: Iterable[str]) -> list[Turn]:
    """The turns whose text says one of ``words`` (each a word or a phrase, matched as the
    index stems it: "dogs" finds "dog"), in log order."""
    terms = " OR ".join(f'"{w.replace(chr(34), "")}"' for w in sorted(set(words)) if w.strip())
    if not terms:
        return []
    return [Turn(*row) for row in db.execute(
        "SELECT t.seq, t.event_id, t.session, t.role, t.name, t.text, t.at, t.ref"
        " FROM turns_fts JOIN turns t ON t.seq = turns_fts.rowid"
        " WHERE turns_fts MATCH ? ORDER BY t.seq", (f"text : ({terms})",))]


def cited_turns(db: sqlite3.Connection, refs: Iterable[str]) -> dict[str, Turn]:
    """The turns ``refs`` name (each a turn's ref or event id), by that name; 400 names a
    query, within SQLite's bound on parameters."""
    wanted = sorted(set(refs))
    found: dict[str, Turn] = {}
    for start in range(0, len(wanted), 400):
        chunk = wanted[start:start + 400]
        marks = ",".join("?" * len(chunk))
        for row in db.execute("SELECT seq, event_id, session, role, name, text, at, ref"
                              f" FROM turns WHERE ref IN ({marks}) OR event_id IN ({marks})",
                              chunk + chunk):
            turn = Turn(*row)
            for key in (turn.ref, turn.event_id):
                if key in chunk:
                    found.setdefault(key, turn)
    return found

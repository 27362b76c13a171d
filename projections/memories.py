"""The memories projection: typed memory records with their life cycle.

Types: workspace_profile, project_fact, tool_use, workflow, user_preference. Each record
has content, kind (pitfall / workaround / recommendation / pattern), action, confidence,
relevancy, tags, status (active / superseded / forgotten / archived), supersedes,
created_at, session and refs (the transcript refs it derives from).

- ``MemorySuperseded`` / ``MemoriesMerged``: the named records become ``superseded``; the new
  record lists them in ``supersedes``.
- ``MemoryFlagged``: confidence −0.1; at 0.2 or below the record is ``archived``.
- ``MemoryForgotten``: the record becomes ``forgotten`` and its content is erased (the row
  stays, so the id can still be explained: forgotten, when, why).
"""
from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from events import RecordedEvent

from .engine import Projector
from .items import Item, forget_keys, memory_items

FLAG_STEP = 0.1
ARCHIVE_AT = 0.2
STATUSES = ("active", "superseded", "forgotten", "archived")


class MemoriesProjector(Projector):
    name = "memories"
    handles = frozenset({"Remembered", "MemoriesMined", "ProfileSet", "ProjectFactsDetected",
                         "MemorySuperseded", "MemoriesMerged", "MemoryFlagged",
                         "MemoryForgotten", "UserTurn", "AssistantTurn"})
    version = 1

    def create(self, db: sqlite3.Connection) -> None:
        db.execute(
            "CREATE TABLE IF NOT EXISTS memories ("
            " id TEXT PRIMARY KEY, type TEXT NOT NULL, content TEXT NOT NULL,"
            " kind TEXT NOT NULL DEFAULT '', action TEXT NOT NULL DEFAULT '',"
            " confidence REAL NOT NULL DEFAULT 1.0, relevancy REAL NOT NULL DEFAULT 1.0,"
            " tags TEXT NOT NULL DEFAULT '[]', status TEXT NOT NULL DEFAULT 'active',"
            " supersedes TEXT NOT NULL DEFAULT '[]', created_at TEXT NOT NULL,"
            " updated_at TEXT NOT NULL, session TEXT NOT NULL DEFAULT '',"
            " refs TEXT NOT NULL DEFAULT '[]', source TEXT NOT NULL DEFAULT '',"
            " reason TEXT NOT NULL DEFAULT '', seq INTEGER NOT NULL)")
        db.execute("CREATE INDEX IF NOT EXISTS memories_type ON memories (type, status)")
        # turn event id → ref, so that forgetting a turn by its id also finds what cites its ref
        db.execute("CREATE TABLE IF NOT EXISTS memory_turn_refs (event_id TEXT PRIMARY KEY,"
                   " ref TEXT NOT NULL)")

    def drop(self, db: sqlite3.Connection) -> None:
        db.execute("DROP TABLE IF EXISTS memories")
        db.execute("DROP TABLE IF EXISTS memory_turn_refs")

    def apply(self, db: sqlite3.Connection, event: RecordedEvent) -> None:
        p = event.payload
        if event.type in ("UserTurn", "AssistantTurn"):
            if event.ref:
                db.execute("INSERT OR IGNORE INTO memory_turn_refs VALUES (?, ?)",
                           (event.id, event.ref))
        elif event.type in ("MemorySuperseded", "MemoriesMerged"):
            into = p["by"] if event.type == "MemorySuperseded" else p["into"]
            self._supersede(db, event, [str(i) for i in p["ids"]], str(into), p.get("reason", ""))
        elif event.type == "MemoryFlagged":
            for memory_id in p["ids"]:
                self._flag(db, event, str(memory_id), p.get("reason", ""))
        elif event.type == "MemoryForgotten":
            self._forget(db, event, forget_keys(event), p.get("reason", ""))
        else:
            for item in memory_items(event):
                self._upsert(db, event, item)

    def _upsert(self, db: sqlite3.Connection, event: RecordedEvent, item: Item) -> None:
        x = item.extra
        existing = db.execute("SELECT created_at, status FROM memories WHERE id = ?",
                              (item.id,)).fetchone()
        if existing and existing[1] == "forgotten":
            return  # a forgotten id stays forgotten
        db.execute(
            "INSERT OR REPLACE INTO memories (id, type, content, kind, action, confidence,"
            " relevancy, tags, status, supersedes, created_at, updated_at, session, refs, source,"
            " reason, seq) VALUES (?, ?, ?, ?, ?, ?, 1.0, ?, 'active',"
            " COALESCE((SELECT supersedes FROM memories WHERE id = ?), '[]'),"
            " ?, ?, ?, ?, ?, '', ?)",
            (item.id, item.type, item.content, str(x.get("kind", "")), str(x.get("action", "")),
             _clamp(float(x.get("confidence", 1.0))), json.dumps(list(x.get("tags", []))),
             item.id, existing[0] if existing else item.at, item.at, item.session,
             json.dumps(list(item.refs)), str(x.get("source", "")), event.seq))

    def _supersede(self, db: sqlite3.Connection, event: RecordedEvent, ids: list[str],
                   into: str, reason: str) -> None:
        for memory_id in ids:
            if memory_id == into:
                continue
            db.execute("UPDATE memories SET status = 'superseded', reason = ?, updated_at = ?"
                       " WHERE id = ? AND status = 'active'",
                       (reason, event.occurred_at, memory_id))
        row = db.execute("SELECT supersedes FROM memories WHERE id = ?", (into,)).fetchone()
        if row:
            merged = sorted(set(json.loads(row[0])) | (set(ids) - {into}))
            db.execute("UPDATE memories SET supersedes = ? WHERE id = ?",
                       (json.dumps(merged), into))

    def _flag(self, db: sqlite3.Connection, event: RecordedEvent, memory_id: str,
              reason: str) -> None:
        row = db.execute("SELECT confidence, status FROM memories WHERE id = ?",
                         (memory_id,)).fetchone()
        if row is None or row[1] != "active":
            return
        confidence = _clamp(round(row[0] - FLAG_STEP, 4))
        status = "archived" if confidence <= ARCHIVE_AT + 1e-9 else "active"
        db.execute("UPDATE memories SET confidence = ?, status = ?, reason = ?, updated_at = ?"
                   " WHERE id = ?", (confidence, status, reason, event.occurred_at, memory_id))

    def _forget(self, db: sqlite3.Connection, event: RecordedEvent, ids: list[str],
                reason: str) -> None:
        if not ids:
            return
        refs = ids + [r[0] for r in db.execute(
            "SELECT ref FROM memory_turn_refs"
            f" WHERE event_id IN ({','.join('?' * len(ids))})", ids)]
        marks_ids, marks_refs = ",".join("?" * len(ids)), ",".join("?" * len(refs))
        db.execute(
            "UPDATE memories SET status = 'forgotten', content = '', tags = '[]', reason = ?,"
            f" updated_at = ? WHERE id IN ({marks_ids})"
            f" OR EXISTS (SELECT 1 FROM json_each(refs) WHERE value IN ({marks_refs}))",
            [reason, event.occurred_at] + ids + refs)

    def canonical_rows(self, db: sqlite3.Connection) -> Iterable[Sequence[Any]]:
        yield from db.execute("SELECT * FROM memories ORDER BY id")
        yield from db.execute("SELECT * FROM memory_turn_refs ORDER BY event_id")


def _clamp(value: float) -> float:
    return max(0.0, min(1.0, value))


@dataclass(frozen=True)
class Memory:
    id: str
    type: str
    content: str
    kind: str
    action: str
    confidence: float
    relevancy: float
    tags: list[str]
    status: str
    supersedes: list[str]
    created_at: str
    updated_at: str
    session: str
    refs: list[str]
    source: str
    reason: str


_COLUMNS = ("id, type, content, kind, action, confidence, relevancy, tags, status, supersedes,"
            " created_at, updated_at, session, refs, source, reason")


def _memory(row: Sequence[Any]) -> Memory:
    values = list(row)
    for i in (7, 9, 13):
        values[i] = json.loads(values[i])
    return Memory(*values)


def list_memories(db: sqlite3.Connection, type_: str | None = None,
                  statuses: Sequence[str] = ("active",)) -> list[Memory]:
    where, args = [f"status IN ({','.join('?' * len(statuses))})"], list(statuses)
    if type_:
        where.append("type = ?")
        args.append(type_)
    try:
        rows = db.execute(f"SELECT {_COLUMNS} FROM memories WHERE {' AND '.join(where)}"
                          " ORDER BY created_at, id", args).fetchall()
    except sqlite3.OperationalError:
        return []
    return [_memory(r) for r in rows]


def get_memory(db: sqlite3.Connection, memory_id: str) -> Memory | None:
    try:
        row = db.execute(f"SELECT {_COLUMNS} FROM memories WHERE id = ?", (memory_id,)).fetchone()
    except sqlite3.OperationalError:
        return None
    return _memory(row) if row else None


def memory_states(db: sqlite3.Connection, ids: Sequence[str]) -> dict[str, tuple[str, float]]:
    """id → (status, confidence), for recall's filtering and weighting."""
    if not ids:
        return {}
    rows = db.execute(f"SELECT id, status, confidence FROM memories WHERE id IN"
                      f" ({','.join('?' * len(ids))})", list(ids)).fetchall()
    return {r[0]: (r[1], r[2]) for r in rows}


def memory_counts(db: sqlite3.Connection) -> list[tuple[str, str, int]]:
    """(type, status, count) of every memory, sorted; empty before the projection exists."""
    try:
        rows = db.execute("SELECT type, status, COUNT(*) FROM memories GROUP BY 1, 2"
                          " ORDER BY 1, 2").fetchall()
    except sqlite3.OperationalError:
        return []
    return [(r[0], r[1], r[2]) for r in rows]

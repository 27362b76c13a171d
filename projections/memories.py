"""The memories projection: typed memory records with their life cycle.

Types: workspace_profile, project_fact, tool_use, workflow, user_preference. Each record
has content, kind (pitfall / workaround / recommendation / pattern), action, confidence,
relevancy, tags, status (active / superseded / forgotten / archived), supersedes,
created_at, session and refs (the transcript refs it derives from).

- ``MemorySuperseded`` / ``MemoriesMerged``: the named records become ``superseded``; the new
  record lists them in ``supersedes``.
- ``MemoriesMerged`` also gives the kept record the refs of every merged one (their
  provenance), the highest confidence and the latest ``last_seen``.
- ``MemoryFlagged``: confidence −0.1; at 0.2 or below the record is ``archived``.
- ``MemoryForgotten``: the record becomes ``forgotten`` and its content is erased (the row
  stays, so the id can still be explained: forgotten, when, why).
- ``MemoriesMined``: new records (``source`` = the model, or ``heuristic``; ``user`` for
  what its speaker asked to keep), and the
  ``reinforced`` ones said again: their ``last_seen`` moves to the chunk's time, their
  relevancy back to 1 and their refs gain the new turns.
- ``RelevancyDecayed``: relevancy = 0.5 ** (days from ``last_seen`` to the event's ``at`` /
  the type's half-life), rounded to 6 places, for memories a model or an agent wrote (the
  user's own notes and detected profile/project facts keep theirs); the ``archived`` ids
  become ``archived``. The time comes from the event, never from the clock.
"""
from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from events import RecordedEvent
from events.clock import from_iso
from events.types import (
    AssistantTurn,
    MemoriesMerged,
    MemoriesMined,
    MemoryFlagged,
    MemoryForgotten,
    MemorySuperseded,
    ProfileSet,
    ProjectFactsDetected,
    RelevancyDecayed,
    Remembered,
    UserTurn,
)

from .engine import Projector
from .items import Item, forget_keys, memory_items
from .readable import self_contained
from .schema import create_table

FLAG_STEP = 0.1
ARCHIVE_AT = 0.2
STATUSES = ("active", "superseded", "forgotten", "archived")
# the source of the user's own notes: a /remember, or what they asked a chat to remember
USER = "user"
NOT_MINED = ("", USER, "agent")   # detected facts, the user's and the agent's own notes


class MemoriesProjector(Projector):
    name = "memories"
    handles = frozenset({Remembered, MemoriesMined, ProfileSet, ProjectFactsDetected,
                         MemorySuperseded, MemoriesMerged, MemoryFlagged, MemoryForgotten,
                         UserTurn, AssistantTurn, RelevancyDecayed})
    version = 2

    def create(self, db: sqlite3.Connection) -> None:
        create_table(db, "memories", {
            "id": str, "type": str, "content": str, "kind": str, "action": str,
            "confidence": float, "relevancy": float, "tags": str, "status": str,
            "supersedes": str, "created_at": str, "updated_at": str, "session": str,
            "refs": str, "source": str, "reason": str, "seq": int, "subject": str,
            "last_seen": str}, "id", defaults={
                "kind": "", "action": "", "confidence": 1.0, "relevancy": 1.0, "tags": "[]",
                "status": "active", "supersedes": "[]", "session": "", "refs": "[]",
                "source": "", "reason": "", "subject": "", "last_seen": ""},
            indexes=[("memories_type", ("type", "status"))])
        # turn event id → ref, so that forgetting a turn by its id also finds what cites its ref
        create_table(db, "memory_turn_refs", {"event_id": str, "ref": str}, "event_id")

    def drop(self, db: sqlite3.Connection) -> None:
        db.execute("DROP TABLE IF EXISTS memories")
        db.execute("DROP TABLE IF EXISTS memory_turn_refs")

    def apply(self, db: sqlite3.Connection, event: RecordedEvent) -> None:
        match event.data:
            case UserTurn() | AssistantTurn():
                if event.ref:
                    db.execute("INSERT OR IGNORE INTO memory_turn_refs VALUES (?, ?)",
                               (event.id, event.ref))
            case MemorySuperseded() as superseded:
                self._supersede(db, event, [str(i) for i in superseded.ids], str(superseded.by),
                                superseded.reason)
            case MemoriesMerged() as merged:
                self._supersede(db, event, [str(i) for i in merged.ids], str(merged.into),
                                merged.reason)
            case MemoryFlagged() as flagged:
                self._flag(db, event, [str(i) for i in flagged.ids], flagged.reason)
            case MemoryForgotten() as forgotten:
                self._forget(db, event, forget_keys(forgotten), forgotten.reason)
            case RelevancyDecayed() as decayed:
                self._decay(db, decayed)
            case MemoriesMined() as mined:
                self._mined(db, event, mined)
            case _:
                for item in memory_items(event):
                    self._upsert(db, event, item)

    def _mined(self, db: sqlite3.Connection, event: RecordedEvent, mined: MemoriesMined) -> None:
        raw = {str(m["id"]): m for m in mined.memories}
        for item in memory_items(event):
            memory = raw.get(item.id, {})
            source = str(memory.get("source") or mined.model or "model") if memory else None
            self._upsert(db, event, item, str(memory.get("subject", "")), source)
        for again in mined.reinforced:
            self._reinforce(db, event, str(again["id"]), list(again.get("refs", [])))

    def _upsert(self, db: sqlite3.Connection, event: RecordedEvent, item: Item,
                subject: str = "", source: str | None = None) -> None:
        x = item.extra
        existing = db.execute("SELECT created_at, status FROM memories WHERE id = ?",
                              (item.id,)).fetchone()
        if existing and existing[1] == "forgotten":
            return  # a forgotten id stays forgotten
        db.execute(
            "INSERT OR REPLACE INTO memories (id, type, content, kind, action, confidence,"
            " relevancy, tags, status, supersedes, created_at, updated_at, session, refs, source,"
            " reason, seq, subject, last_seen) VALUES (?, ?, ?, ?, ?, ?, 1.0, ?, 'active',"
            " COALESCE((SELECT supersedes FROM memories WHERE id = ?), '[]'),"
            " ?, ?, ?, ?, ?, '', ?, ?, ?)",
            (item.id, item.type, item.content, str(x.get("kind", "")), str(x.get("action", "")),
             _clamp(float(x.get("confidence", 1.0))), json.dumps(list(x.get("tags", []))),
             item.id, existing[0] if existing else item.at, item.at, item.session,
             json.dumps(list(item.refs)),
             source if source is not None else str(x.get("source", "")), event.seq,
             subject, item.at))

    def _reinforce(self, db: sqlite3.Connection, event: RecordedEvent, memory_id: str,
                   refs: list[str]) -> None:
        row = db.execute("SELECT refs, last_seen FROM memories WHERE id = ? AND status = 'active'",
                         (memory_id,)).fetchone()
        if row is None:
            return
        merged = _union(json.loads(row[0]), refs)
        db.execute("UPDATE memories SET refs = ?, last_seen = ?, relevancy = 1.0 WHERE id = ?",
                   (json.dumps(merged), max(row[1], event.occurred_at), memory_id))

    def _decay(self, db: sqlite3.Connection, decayed: RelevancyDecayed) -> None:
        at = from_iso(decayed.at)
        for type_, half_life in sorted(decayed.half_lives.items()):
            rows = db.execute("SELECT id, last_seen FROM memories WHERE status = 'active'"
                              " AND type = ? AND source NOT IN ('', 'user')",
                              (type_,)).fetchall()
            db.executemany("UPDATE memories SET relevancy = ? WHERE id = ?",
                           [(faded(last_seen, at, float(half_life)), memory_id)
                            for memory_id, last_seen in rows])
        archived = [str(i) for i in decayed.archived]
        for start in range(0, len(archived), 500):
            part = archived[start:start + 500]
            db.execute("UPDATE memories SET status = 'archived', reason = ?, updated_at = ?"
                       f" WHERE status = 'active' AND id IN ({','.join('?' * len(part))})",
                       [f"relevancy below {decayed.floor} on {decayed.at[:10]}", decayed.at,
                        *part])

    def _supersede(self, db: sqlite3.Connection, event: RecordedEvent, ids: list[str],
                   into: str, reason: str) -> None:
        merging = isinstance(event.data, MemoriesMerged)
        kept = db.execute("SELECT supersedes, refs, confidence, last_seen FROM memories"
                          " WHERE id = ?", (into,)).fetchone()
        refs = json.loads(kept[1]) if kept else []
        confidence, last_seen = (kept[2], kept[3]) if kept else (0.0, "")
        for memory_id in ids:
            if memory_id == into:
                continue
            row = db.execute("SELECT refs, confidence, last_seen FROM memories"
                             " WHERE id = ? AND status = 'active'", (memory_id,)).fetchone()
            if row is None:
                continue
            db.execute("UPDATE memories SET status = 'superseded', reason = ?, updated_at = ?"
                       " WHERE id = ?", (reason, event.occurred_at, memory_id))
            if merging:
                refs = _union(refs, json.loads(row[0]))
                confidence, last_seen = max(confidence, row[1]), max(last_seen, row[2])
        if kept:
            supersedes = sorted(set(json.loads(kept[0])) | (set(ids) - {into}))
            db.execute("UPDATE memories SET supersedes = ?, refs = ?, confidence = ?,"
                       " last_seen = ? WHERE id = ?",
                       (json.dumps(supersedes), json.dumps(refs), confidence, last_seen, into))

    def _flag(self, db: sqlite3.Connection, event: RecordedEvent, ids: list[str],
              reason: str) -> None:
        for memory_id in ids:
            row = db.execute("SELECT confidence, status FROM memories WHERE id = ?",
                             (memory_id,)).fetchone()
            if row is None or row[1] != "active":
                continue
            confidence = _clamp(round(row[0] - FLAG_STEP, 4))
            status = "archived" if confidence <= ARCHIVE_AT + 1e-9 else "active"
            db.execute("UPDATE memories SET confidence = ?, status = ?, reason = ?,"
                       " updated_at = ? WHERE id = ?",
                       (confidence, status, reason, event.occurred_at, memory_id))

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


def _union(first: list[str], more: list[str]) -> list[str]:
    """``first`` then the items of ``more`` it lacks, in order."""
    out, seen = list(first), set(first)
    for ref in more:
        if ref not in seen:
            seen.add(ref)
            out.append(ref)
    return out


def faded(last_seen: str, at: Any, half_life_days: float) -> float:
    """Relevancy at ``at`` (a datetime) of a memory last said at ``last_seen``: halves every
    ``half_life_days``; 1.0 when it was said at or after ``at``."""
    if not last_seen or half_life_days <= 0:
        return 1.0
    days = (at - from_iso(last_seen)).total_seconds() / 86400
    return round(0.5 ** (max(days, 0.0) / half_life_days), 6)


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
    subject: str = ""
    last_seen: str = ""


_COLUMNS = ("id, type, content, kind, action, confidence, relevancy, tags, status, supersedes,"
            " created_at, updated_at, session, refs, source, reason, subject, last_seen")


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


def newest_memories(db: sqlite3.Connection, sources: Sequence[str],
                    other_than: Sequence[str] = (), limit: int = 64) -> list[Memory]:
    """The newest active memories from ``sources`` whose type is not in ``other_than``,
    newest first, at most ``limit`` (chosen by SQLite: nothing else is read)."""
    where = (f"status = 'active' AND source IN ({','.join('?' * len(sources))})"
             + (f" AND type NOT IN ({','.join('?' * len(other_than))})" if other_than else ""))
    try:
        rows = db.execute(f"SELECT {_COLUMNS} FROM memories WHERE {where}"
                          " ORDER BY created_at DESC, id DESC LIMIT ?",
                          [*sources, *other_than, limit]).fetchall()
    except sqlite3.OperationalError:
        return []
    return [_memory(r) for r in rows]


def replaced_refs(db: sqlite3.Connection) -> set[str]:
    """The refs of the turns whose facts a newer one replaced: cited by a superseded memory
    and by no active one (a merge hands its refs to the memory kept, so they stay)."""
    try:
        return {r[0] for r in db.execute(
            "SELECT j.value FROM memories m, json_each(m.refs) j WHERE m.status = 'superseded'"
            " EXCEPT SELECT j.value FROM memories m, json_each(m.refs) j"
            " WHERE m.status = 'active'")}
    except sqlite3.OperationalError:
        return set()


def get_memory(db: sqlite3.Connection, memory_id: str) -> Memory | None:
    try:
        row = db.execute(f"SELECT {_COLUMNS} FROM memories WHERE id = ?", (memory_id,)).fetchone()
    except sqlite3.OperationalError:
        return None
    return _memory(row) if row else None


def reads_alone(source: str, content: str) -> bool:
    """Whether a memory reads on its own, without the turn it came from: a mined statement
    that points at what only its turn names (:func:`.readable.self_contained`: "Nate named
    her Tilly") does not; notes and detected facts always do: they are a person's own
    words. Recall shows none that does not, scored or in the head."""
    return source in NOT_MINED or self_contained(content or "", mined=True)


def memory_states(db: sqlite3.Connection,
                  ids: Sequence[str]) -> dict[str, tuple[str, float, float, bool]]:
    """id → (status, confidence, relevancy, whether it reads on its own: :func:`reads_alone`;
    its turn, which recall also finds, does), for recall's filtering and weighting."""
    if not ids:
        return {}
    rows = db.execute(f"SELECT id, status, confidence, relevancy, source, content FROM memories"
                      f" WHERE id IN ({','.join('?' * len(ids))})", list(ids)).fetchall()
    return {r[0]: (r[1], r[2], r[3], reads_alone(r[4], r[5])) for r in rows}


def memory_counts(db: sqlite3.Connection) -> list[tuple[str, str, int]]:
    """(type, status, count) of every memory, sorted; empty before the projection exists."""
    try:
        rows = db.execute("SELECT type, status, COUNT(*) FROM memories GROUP BY 1, 2"
                          " ORDER BY 1, 2").fetchall()
    except sqlite3.OperationalError:
        return []
    return [(r[0], r[1], r[2]) for r in rows]

"""The shared shape of the search and vectors projections: an index of items.

Both handle the same events the same way (add the items an event carries, replace MEMORY.md's
sections on a rewrite, drop what a ``MemoryForgotten`` names) and differ only in what they
store per item, which subclasses supply with :meth:`store` and :meth:`unstore`.
"""
from __future__ import annotations

import json
import sqlite3
from abc import abstractmethod
from collections.abc import Iterable

from events import Event, RecordedEvent
from events.types import (
    AssistantTurn,
    FactsExtracted,
    LongTermRewritten,
    MemoriesMined,
    MemoryForgotten,
    ProfileSet,
    ProjectFactsDetected,
    Remembered,
    UserTurn,
)

from .engine import Projector
from .items import LONG_TERM, Item, forget_keys, items_from, long_term_sections
from .long_term import ForgetMarks, render, without_forgotten
from .schema import create_table

ITEM_EVENTS: frozenset[type[Event]] = frozenset({
    UserTurn, AssistantTurn, Remembered, FactsExtracted, MemoriesMined, ProfileSet,
    ProjectFactsDetected, LongTermRewritten, MemoryForgotten,
})


class ItemIndexProjector(Projector):
    handles = ITEM_EVENTS
    table: str  # the per-item table: key, source, id, refs, at, session, type, hash

    @property
    def marks(self) -> ForgetMarks:
        return ForgetMarks(f"{self.table}_forgotten")

    def create_items_table(self, db: sqlite3.Connection) -> None:
        self.marks.create(db)
        db.execute(f"CREATE TABLE IF NOT EXISTS {self.table}_long_term ("
                   " id INTEGER PRIMARY KEY CHECK (id = 1), content TEXT NOT NULL)")
        create_table(db, self.table, {
            "key": str, "source": str, "id": str, "refs": str, "at": str, "session": str,
            "type": str, "content_hash": str, "seq": int}, "key", indexes=[
                (f"{self.table}_id", ("id",)), (f"{self.table}_source", ("source",)),
                # a turn's neighbours in its session (recall shows a turn with its reply)
                (f"{self.table}_session", ("session", "source", "seq"))])

    @abstractmethod
    def store(self, db: sqlite3.Connection, rowid: int, item: Item) -> None:
        """Store what this index keeps for a new item (``rowid`` of its items row)."""

    @abstractmethod
    def unstore(self, db: sqlite3.Connection, rowid: int, key: str) -> None:
        """Remove what :meth:`store` kept for an item that is going away."""

    def drop_items_table(self, db: sqlite3.Connection) -> None:
        self.marks.drop(db)
        db.execute(f"DROP TABLE IF EXISTS {self.table}_long_term")
        db.execute(f"DROP TABLE IF EXISTS {self.table}")

    def apply(self, db: sqlite3.Connection, event: RecordedEvent) -> None:
        match event.data:
            case MemoryForgotten() as forgotten:
                self.remove(db, self.forgotten(db, forget_keys(forgotten)))
                marks = self.marks.add(db, forgotten)
                row = db.execute(f"SELECT content FROM {self.table}_long_term").fetchone()
                if marks and row and without_forgotten(row[0], marks) != row[0]:
                    self.replace_long_term(db, event, without_forgotten(row[0], marks))
            case LongTermRewritten() as rewritten:
                content = render(rewritten.content, self.marks.all(db))
                self.replace_long_term(db, event, content)
            case _:
                self.add(db, event, items_from(event))

    def replace_long_term(self, db: sqlite3.Connection, event: RecordedEvent, content: str) -> None:
        old = [row[0] for row in db.execute(
            f"SELECT key FROM {self.table} WHERE source = ?", (LONG_TERM,))]
        self.remove(db, old)
        db.execute(f"INSERT OR REPLACE INTO {self.table}_long_term (id, content) VALUES (1, ?)",
                   (content,))
        self.add(db, event, long_term_sections(event, content))

    def add(self, db: sqlite3.Connection, event: RecordedEvent, items: Iterable[Item]) -> None:
        for item in items:
            cursor = db.execute(
                f"INSERT OR IGNORE INTO {self.table}"
                " (key, source, id, refs, at, session, type, content_hash, seq)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (item.key, item.source, item.id, json.dumps(list(item.refs)), item.at,
                 item.session, item.type, item.content_hash, event.seq),
            )
            if cursor.rowcount and cursor.lastrowid is not None:
                self.store(db, cursor.lastrowid, item)

    def forgotten(self, db: sqlite3.Connection, ids: list[str]) -> list[str]:
        """Keys of the items the ids name, and of every item derived from a named turn."""
        if not ids:
            return []
        marks = ",".join("?" * len(ids))
        direct = db.execute(
            f"SELECT key, source, refs FROM {self.table} WHERE id IN ({marks})"
            f" OR EXISTS (SELECT 1 FROM json_each(refs) WHERE value IN ({marks}))",
            ids + ids,
        ).fetchall()
        keys = {row[0] for row in direct}
        turn_refs = sorted({ref for _, source, refs in direct if source == "turn"
                            for ref in json.loads(refs)})
        if turn_refs:
            marks = ",".join("?" * len(turn_refs))
            keys |= {row[0] for row in db.execute(
                f"SELECT key FROM {self.table}"
                f" WHERE EXISTS (SELECT 1 FROM json_each(refs) WHERE value IN ({marks}))",
                turn_refs)}
        return sorted(keys)

    def remove(self, db: sqlite3.Connection, keys: list[str]) -> None:
        for key in keys:
            row = db.execute(f"SELECT rowid FROM {self.table} WHERE key = ?", (key,)).fetchone()
            if row:
                self.unstore(db, row[0], key)
                db.execute(f"DELETE FROM {self.table} WHERE key = ?", (key,))

"""The journal projection: ``var/memory/YYYY-MM-DD.md``, one file per UTC day of
``occurred_at``, from ``Remembered`` notes and ``FactsExtracted`` facts.

A day's file lists its entries in log order, one a line: time, source, content. Only names
of the form ``YYYY-MM-DD.md`` are this projection's; anything else in the folder is never
touched. Forgetting removes the entry (and entries derived from a forgotten turn) and
rewrites that day's file.
"""
from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

from events import RecordedEvent

from .engine import Projector, mark_dirty
from .items import forget_keys, journal_items

FILE_NAME = re.compile(r"^\d{4}-\d{2}-\d{2}\.md$")


class JournalProjector(Projector):
    name = "journal"
    handles = frozenset({"Remembered", "FactsExtracted", "MemoryForgotten"})
    version = 1

    def create(self, db: sqlite3.Connection) -> None:
        db.execute(
            "CREATE TABLE IF NOT EXISTS journal_entries ("
            " id TEXT PRIMARY KEY, date TEXT NOT NULL, at TEXT NOT NULL, source TEXT NOT NULL,"
            " content TEXT NOT NULL, refs TEXT NOT NULL, derived_from TEXT NOT NULL,"
            " seq INTEGER NOT NULL, n INTEGER NOT NULL)")
        db.execute("CREATE INDEX IF NOT EXISTS journal_entries_date"
                   " ON journal_entries (date, seq, n)")

    def drop(self, db: sqlite3.Connection) -> None:
        db.execute("DROP TABLE IF EXISTS journal_entries")

    def apply(self, db: sqlite3.Connection, event: RecordedEvent) -> None:
        if event.type == "MemoryForgotten":
            self._forget(db, forget_keys(event))
            return
        derived = list(event.payload.get("from_events", []))
        for n, item in enumerate(journal_items(event)):
            date = item.at[:10]
            db.execute(
                "INSERT OR IGNORE INTO journal_entries"
                " (id, date, at, source, content, refs, derived_from, seq, n)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (item.id, date, item.at, item.extra.get("source", ""), item.content,
                 json.dumps(list(item.refs)), json.dumps(derived), event.seq, n))
            mark_dirty(db, self, f"{date}.md")

    def _forget(self, db: sqlite3.Connection, ids: list[str]) -> None:
        if not ids:
            return
        marks = ",".join("?" * len(ids))
        rows = db.execute(
            f"SELECT id, date FROM journal_entries WHERE id IN ({marks})"
            f" OR EXISTS (SELECT 1 FROM json_each(refs) WHERE value IN ({marks}))"
            f" OR EXISTS (SELECT 1 FROM json_each(derived_from) WHERE value IN ({marks}))",
            ids * 3).fetchall()
        for entry_id, date in rows:
            db.execute("DELETE FROM journal_entries WHERE id = ?", (entry_id,))
            mark_dirty(db, self, f"{date}.md")

    def canonical_rows(self, db: sqlite3.Connection) -> Iterable[Sequence[Any]]:
        return db.execute("SELECT id, date, at, source, content, refs, derived_from, seq, n"
                          " FROM journal_entries ORDER BY seq, n")

    def owns_file(self, name: str) -> bool:
        return bool(FILE_NAME.match(name))

    def file_content(self, db: sqlite3.Connection, name: str) -> str | None:
        return render_day(db, name[:-3])


def entries_for(db: sqlite3.Connection, date: str) -> list[tuple[str, str, str, str]]:
    """(id, at, source, content) of a day's entries in log order."""
    try:
        return db.execute("SELECT id, at, source, content FROM journal_entries WHERE date = ?"
                          " ORDER BY seq, n", (date,)).fetchall()
    except sqlite3.OperationalError:  # not projected yet
        return []


def render_day(db: sqlite3.Connection, date: str) -> str | None:
    entries = entries_for(db, date)
    if not entries:
        return None
    lines = [f"# Journal {date}", ""]
    for _id, at, source, content in entries:
        lines.append(f"- {at[11:19]} [{source}] {' '.join(content.split())}")
    return "\n".join(lines) + "\n"

"""The journal projection: ``var/memory/YYYY-MM-DD.md``, one file per UTC day of
``occurred_at``, from ``Remembered`` notes, ``FactsExtracted`` facts and the memories of
``MemoriesMined`` (dated by the turns they were mined from, so an imported history gets
the journals of its own days).

A day's file lists its entries in log order, one a line: time, source, content. Only names
of the form ``YYYY-MM-DD.md`` (and ``archive/YYYY-MM-DD.md``) are this projection's;
anything else in the folder is never touched. Forgetting removes the entry (and entries
derived from a forgotten turn) and rewrites that day's file. ``JournalArchived`` moves a
day's file to ``archive/``; entries that arrive for an archived day go there too.
"""
from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

from events import RecordedEvent
from events.types import (
    FactsExtracted,
    JournalArchived,
    MemoriesMined,
    MemoryForgotten,
    Remembered,
)

from .engine import Projector, mark_dirty
from .items import forget_keys, journal_items
from .readable import referring_back, self_contained
from .schema import create_table
from .secrets import scrub

FILE_NAME = re.compile(r"^\d{4}-\d{2}-\d{2}\.md$")
ARCHIVE = "archive"
ARCHIVED_NAME = re.compile(r"^archive/\d{4}-\d{2}-\d{2}\.md$")


class JournalProjector(Projector):
    name = "journal"
    handles = frozenset({Remembered, FactsExtracted, MemoryForgotten, MemoriesMined,
                         JournalArchived})
    version = 7

    def create(self, db: sqlite3.Connection) -> None:
        create_table(db, "journal_entries", {
            "id": str, "date": str, "at": str, "source": str, "content": str, "refs": str,
            "derived_from": str, "seq": int, "n": int}, "id",
            indexes=[("journal_entries_date", ("date", "seq", "n"))])
        create_table(db, "journal_archived", {"date": str, "at": str}, "date")

    def drop(self, db: sqlite3.Connection) -> None:
        db.execute("DROP TABLE IF EXISTS journal_entries")
        db.execute("DROP TABLE IF EXISTS journal_archived")

    def apply(self, db: sqlite3.Connection, event: RecordedEvent) -> None:
        match event.data:
            case MemoryForgotten() as forgotten:
                self._forget(db, forget_keys(forgotten))
            case JournalArchived(date=date, at=at):
                db.execute("INSERT OR IGNORE INTO journal_archived (date, at) VALUES (?, ?)",
                           (date, at or event.occurred_at))
                mark_dirty(db, self, f"{date}.md")
                mark_dirty(db, self, f"{ARCHIVE}/{date}.md")
            case _:
                self._add(db, event)

    def _add(self, db: sqlite3.Connection, event: RecordedEvent) -> None:
        for n, (entry_id, at, source, content, refs, derived) in enumerate(_entries(event)):
            date = at[:10]
            db.execute(
                "INSERT OR IGNORE INTO journal_entries"
                " (id, date, at, source, content, refs, derived_from, seq, n)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (entry_id, date, at, source, content, json.dumps(refs), json.dumps(derived),
                 event.seq, n))
            mark_dirty(db, self, file_name(db, date))

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
            mark_dirty(db, self, file_name(db, date))

    def canonical_rows(self, db: sqlite3.Connection) -> Iterable[Sequence[Any]]:
        yield from db.execute("SELECT id, date, at, source, content, refs, derived_from, seq, n"
                              " FROM journal_entries ORDER BY seq, n")
        yield from db.execute("SELECT date, at FROM journal_archived ORDER BY date")

    def owns_file(self, name: str) -> bool:
        return bool(FILE_NAME.match(name) or ARCHIVED_NAME.match(name))

    def expected_files(self, db: sqlite3.Connection) -> Iterable[str]:
        return [f"{ARCHIVE}/{date}.md" if archived else f"{date}.md"
                for date, _n, archived in journal_days(db)]

    def file_content(self, db: sqlite3.Connection, name: str) -> str | None:
        date = name[-13:-3]
        if file_name(db, date) != name:
            return None  # the day lives in the other folder
        return render_day(db, date)


_Entry = tuple[str, str, str, str, list[str], list[str]]  # id, at, source, content, refs, from


def _entries(event: RecordedEvent) -> list[_Entry]:
    """The journal lines an event adds: notes and extracted facts (the search index's journal
    items), and each mined memory that reads on its own (:func:`.readable.self_contained`;
    "It's gonna be Nate's 4th one" says nothing without its turn, which recall keeps), at
    the time of the turns it was mined from."""
    data = event.data
    if isinstance(data, MemoriesMined):
        return [(str(m["id"]), str(m.get("at") or event.occurred_at),
                 data.model or "model", scrub(str(m["content"])),
                 [str(r) for r in m.get("refs") or ()],
                 [str(e) for e in m.get("events") or ()])
                for m in data.memories
                if str(m.get("content", "")).strip()
                and self_contained(str(m["content"]), mined=True)]
    derived = [str(e) for e in data.from_events] if isinstance(data, FactsExtracted) else []
    return [(item.id, item.at, str(item.extra.get("source", "")), item.content, list(item.refs),
             derived) for item in journal_items(event)]


def is_archived(db: sqlite3.Connection, date: str) -> bool:
    try:
        return db.execute("SELECT 1 FROM journal_archived WHERE date = ?",
                          (date,)).fetchone() is not None
    except sqlite3.OperationalError:  # not projected yet
        return False


def file_name(db: sqlite3.Connection, date: str) -> str:
    """Where the journal of ``date`` lives, relative to the memory folder."""
    return f"{ARCHIVE}/{date}.md" if is_archived(db, date) else f"{date}.md"


def journal_days(db: sqlite3.Connection) -> list[tuple[str, int, bool]]:
    """(date, entries, archived) of every day with entries, oldest first."""
    try:
        return [(r[0], r[1], bool(r[2])) for r in db.execute(
            "SELECT e.date, COUNT(*), a.date IS NOT NULL FROM journal_entries e"
            " LEFT JOIN journal_archived a ON a.date = e.date GROUP BY e.date ORDER BY e.date")]
    except sqlite3.OperationalError:
        return []


def entries_for(db: sqlite3.Connection, date: str) -> list[tuple[str, str, str, str]]:
    """(id, at, source, content) of a day's entries in the order they happened (an import
    mines a day's sessions in the order it found them), then in log order."""
    try:
        return db.execute("SELECT id, at, source, content FROM journal_entries WHERE date = ?"
                          " ORDER BY at, seq, n", (date,)).fetchall()
    except sqlite3.OperationalError:  # not projected yet
        return []


def render_day(db: sqlite3.Connection, date: str) -> str | None:
    entries = entries_for(db, date)
    if not entries:
        return None
    lines = [f"# Journal {date}", ""]
    for _id, at, source, content in entries:  # "Tim … their …", as MEMORY.md says it
        lines.append(f"- {at[11:19]} [{source}] {referring_back(' '.join(content.split()))}")
    return "\n".join(lines) + "\n"

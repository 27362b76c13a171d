"""What an id names across the projections: for ``diarist memory forget``, which must say
what it is about to forget (and refuse an id that names nothing)."""
from __future__ import annotations

import sqlite3

from .memories import get_memory

_BY_ID = (
    ("SELECT content FROM journal_entries WHERE id = ?", 1),
    ("SELECT text FROM turns WHERE event_id = ? OR ref = ?", 2),
    ("SELECT f.content FROM search_items i JOIN search_fts f ON f.rowid = i.rowid"
     " WHERE i.id = ?", 1),
)


def texts_named_by(db: sqlite3.Connection, key: str) -> list[str]:
    """The contents ``key`` names — a memory id, a journal entry id, a turn's event id or
    ref, a search item's id — sorted and distinct; empty when it names nothing."""
    texts: list[str] = []
    found = get_memory(db, key)
    if found and found.status != "forgotten":
        texts.append(found.content)
    for sql, placeholders in _BY_ID:
        try:
            texts += [row[0] for row in db.execute(sql, (key,) * placeholders)]
        except sqlite3.OperationalError:  # a projection not built yet has nothing to find
            continue
    return sorted({t for t in texts if t.strip()})

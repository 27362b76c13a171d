"""The search projection: one FTS5 index over turns, journal entries, memories and
MEMORY.md sections (see :mod:`projections.item_index` for what goes in and out)."""
from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from events import RecordedEvent
from events.types import MemoryForgotten

from . import weights
from .fts import query_terms, quoted_any
from .item_index import ItemIndexProjector
from .items import Item
from .vector_cache import missing_table


class SearchProjector(ItemIndexProjector):
    name = "search"
    version = 3  # 3: long turns are indexed as passages
    table = "search_items"

    def create(self, db: sqlite3.Connection) -> None:
        self.create_items_table(db)
        db.execute("CREATE VIRTUAL TABLE IF NOT EXISTS search_fts USING fts5("
                   " content, tokenize='porter unicode61')")

    def drop(self, db: sqlite3.Connection) -> None:
        db.execute("DROP TABLE IF EXISTS search_fts")
        self.drop_items_table(db)

    def store(self, db: sqlite3.Connection, rowid: int, item: Item) -> None:
        db.execute("INSERT INTO search_fts (rowid, content) VALUES (?, ?)", (rowid, item.content))

    def unstore(self, db: sqlite3.Connection, rowid: int, key: str) -> None:
        db.execute("DELETE FROM search_fts WHERE rowid = ?", (rowid,))

    def apply(self, db: sqlite3.Connection, event: RecordedEvent) -> None:
        super().apply(db, event)
        if isinstance(event.data, MemoryForgotten):
            # merge the index so no segment keeps the forgotten terms (secure_delete zeroes
            # the freed pages)
            db.execute("INSERT INTO search_fts (search_fts) VALUES ('optimize')")

    def canonical_rows(self, db: sqlite3.Connection) -> Iterable[Sequence[Any]]:
        return db.execute(
            "SELECT i.key, i.refs, i.at, i.session, i.type, i.content_hash, i.seq, f.content"
            " FROM search_items i JOIN search_fts f ON f.rowid = i.rowid ORDER BY i.key")

    def check(self, db: sqlite3.Connection) -> None:
        db.execute("INSERT INTO search_fts (search_fts) VALUES ('integrity-check')")
        orphans = db.execute(
            "SELECT (SELECT COUNT(*) FROM search_items) - (SELECT COUNT(*) FROM search_fts)"
        ).fetchone()[0]
        if orphans:
            raise sqlite3.DatabaseError(f"search index and items differ by {orphans} rows")


@dataclass(frozen=True)
class Hit:
    key: str
    source: str
    id: str
    content: str
    at: str
    refs_json: str  # as stored; decoded on first use (recall reads hundreds of hits, shows ~10)
    session: str
    type: str
    content_hash: str
    seq: int     # the log position of the event the item came from
    score: float

    @cached_property
    def refs(self) -> list[str]:
        refs: list[str] = json.loads(self.refs_json)
        return refs


# What a Hit is read from (``search_items i`` and ``search_fts f``), its score after them
HIT_COLUMNS = ("i.key, i.source, i.id, f.content, i.at, i.refs, i.session, i.type,"
               " i.content_hash, i.seq")


def slot_sql(slots: dict[str, int] | None) -> tuple[str, str]:
    """The last column and the join that read each item ``i``'s slot in the vector matrix
    file with it — where the slot holds the item's content, else NULL — when ``slots`` is
    given; nothing otherwise. :func:`take_slots` then splits the column off."""
    if slots is None:
        return "", ""
    return (", s.slot",
            " LEFT JOIN vector_slots s ON s.key = i.key AND s.content_hash = i.content_hash")


def take_slots(rows: list[Any], slots: dict[str, int] | None, key_at: int) -> list[Any]:
    """``rows`` read with :func:`slot_sql`'s column, without it: each slot found goes into
    ``slots`` under the key in column ``key_at``."""
    if slots is None:
        return rows
    slots.update((row[key_at], row[-1]) for row in rows if row[-1] is not None)
    return [row[:-1] for row in rows]


def _selective_terms(db: sqlite3.Connection, query: str, common: bool = True,
                     total: int | None = None) -> list[str]:
    """The query's terms that say something: those in at most ``weights.COMMON_TERM_SHARE`` of the
    items; when no such term is in any item, the rarest common one (``common=False``: none —
    with cosine results beside it, a list ranked by one common word only adds noise, yet
    its best hit would score as high as any exact match). ``total``: the items indexed,
    when the caller read it (:func:`indexed_items`)."""
    terms = query_terms(query)
    if len(terms) < 2:
        return terms
    if total is None:
        total = indexed_items(db)
    limit = max(weights.COMMON_TERM_SHARE * total, 50)
    # counted up to just past the limit: whether a term is rare is all that is asked, and
    # counting every item a common word is in ("what": a fifth of them) was the slow part
    capped = {t: _items_with(db, t, int(limit) + 1) for t in terms}
    found = [t for t in terms if capped[t]]  # a term in no item finds nothing
    rare = [t for t in found if capped[t] <= limit]
    if rare or not common or not found:
        return rare
    frequency = {t: _items_with(db, t) for t in found}
    return [min(found, key=lambda t: frequency[t])]


def indexed_items(db: sqlite3.Connection) -> int:
    """How many items the index holds. FTS5 keeps that count for BM25 in its "averages"
    record — row 1 of ``search_fts_data``: the row count as an SQLite varint, then each
    column's token total (SQLite's ``fts5_index.c``) — written whenever a change commits; it
    is read there, since counting the items took ~0.7 ms of each recall at 100,000. Inside
    a transaction (FTS5 may not have written it yet) or without the record: counted. A home
    whose index was never built holds none."""
    try:
        if not db.in_transaction:
            row = db.execute("SELECT block FROM search_fts_data WHERE id = 1").fetchone()
            if row is not None and isinstance(row[0], bytes) and row[0]:
                count = _varint(row[0])
                if count is not None:
                    return count
        return int(db.execute("SELECT COUNT(*) FROM search_items").fetchone()[0])
    except sqlite3.OperationalError as exc:
        if missing_table(exc):
            return 0
        raise


def _varint(data: bytes) -> int | None:
    """The SQLite varint at the start of ``data`` (big-endian, 7 bits a byte while the high
    bit is set, all 8 bits of a ninth byte); None when it is cut short."""
    value = 0
    for position, byte in enumerate(data[:9]):
        if position == 8:
            return (value << 8) | byte
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            return value
    return None


def _items_with(db: sqlite3.Connection, term: str, cap: int = -1) -> int:
    """How many items have ``term`` (at most ``cap``; -1: no cap)."""
    return int(db.execute("SELECT COUNT(*) FROM (SELECT 1 FROM search_fts"
                          " WHERE search_fts MATCH ? LIMIT ?)", (f'"{term}"', cap)).fetchone()[0])


def search(db: sqlite3.Connection, query: str, k: int = 20,
           sources: Sequence[str] | None = None, *, common: bool = True,
           total: int | None = None, slots: dict[str, int] | None = None) -> list[Hit]:
    """BM25-ranked items (best first; ``score`` is -bm25, higher is better). ``common``,
    ``total``: see :func:`_selective_terms`. ``slots`` (without ``sources``), when given, is
    filled with the vector matrix slot of each hit whose slot holds the hit's content, read
    with it (its cosine then needs no lookup: ``vector_search``'s ``slots``)."""
    try:
        expression = quoted_any(_selective_terms(db, query, common, total))
    except sqlite3.OperationalError as exc:
        if missing_table(exc):
            return []
        raise
    if expression is None:
        return []
    if not sources:
        return _best(db, expression, k, slots)
    where = f"search_fts MATCH ? AND i.source IN ({','.join('?' * len(sources))})"
    args = [expression, *sources]
    try:
        rows = db.execute(
            f"SELECT {HIT_COLUMNS}, -bm25(search_fts) FROM search_fts f"
            " JOIN search_items i ON i.rowid = f.rowid"
            f" WHERE {where} ORDER BY bm25(search_fts) LIMIT ?", args + [k]).fetchall()
    except sqlite3.OperationalError as exc:
        if missing_table(exc):
            return []
        raise
    return [Hit(*r) for r in rows]


def _best(db: sqlite3.Connection, expression: str, k: int,
          slots: dict[str, int] | None = None) -> list[Hit]:
    """The ``k`` best matches in two steps: rank the index alone, then read the items of the
    best ``k``. One joined query (the ``sources`` path) reads every column of every match
    into its sorter before the LIMIT — the text of thousands of items at 100,000 — and took
    twice as long (docs/benchmarks.md, "Recall latency"). Same order: the same
    scan of the index feeds the same sort (ties in index order); every index row has its
    item (:meth:`SearchProjector.check`)."""
    try:
        top = db.execute("SELECT rowid, -bm25(search_fts) FROM search_fts WHERE search_fts MATCH ?"
                         " ORDER BY bm25(search_fts) LIMIT ?", (expression, k)).fetchall()
        if not top:
            return []
        column, join = slot_sql(slots)
        rows = db.execute(
            f"SELECT i.rowid, {HIT_COLUMNS}{column} FROM search_items i JOIN search_fts f"
            f" ON f.rowid = i.rowid{join} WHERE i.rowid IN ({','.join('?' * len(top))})",
            [rowid for rowid, _ in top]).fetchall()
    except sqlite3.OperationalError as exc:
        if missing_table(exc):
            return []
        raise
    rows = take_slots(rows, slots, 1)
    found = {r[0]: r for r in rows}
    return [Hit(*(*r[1:], score)) for rowid, score in top
            if (r := found.get(rowid)) is not None]


def items_by_key(db: sqlite3.Connection, keys: Sequence[str]) -> dict[str, Hit]:
    if not keys:
        return {}
    rows = db.execute(
        f"SELECT {HIT_COLUMNS}, 0.0 FROM search_items i JOIN search_fts f ON f.rowid = i.rowid"
        f" WHERE i.key IN ({','.join('?' * len(keys))})", list(keys)).fetchall()
    return {r[0]: Hit(*r) for r in rows}


def turns_by_ref(db: sqlite3.Connection, refs: Sequence[str]) -> list[Hit]:
    """The indexed turns whose refs include any of ``refs``, in log order."""
    if not refs:
        return []
    rows = db.execute(
        f"SELECT {HIT_COLUMNS}, 0.0 FROM search_items i JOIN search_fts f ON f.rowid = i.rowid"
        " WHERE i.source = 'turn' AND EXISTS (SELECT 1 FROM json_each(i.refs) r"
        f" WHERE r.value IN ({','.join('?' * len(refs))})) ORDER BY i.seq", list(refs)).fetchall()
    return [Hit(*r) for r in rows]

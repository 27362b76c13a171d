"""The vectors projection: which searchable item has which content, under which model.

Items go in and out exactly as in the search projection (:mod:`projections.item_index`),
each with its ``content_hash``, plus the model the last ``EmbeddingModelChosen`` named
(``vector_model``). Pure, replayable, digested — the floats are not: they depend on when the
embedder ran, not on the log. The rest of the vector side, by idea:

- :mod:`projections.vector_cache` — the embeddings cache (kept across rebuilds), the
  generation counter, the active model;
- :mod:`projections.vector_embed` — embedding what is pending;
- :mod:`projections.vector_matrix` — the memory-mapped matrix file and its refresh;
- :mod:`projections.vector_search` — cosine search over it.
"""
from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

from events import RecordedEvent
from events.types import EmbeddingModelChosen

from .item_index import ITEM_EVENTS, ItemIndexProjector
from .items import Item
from .vector_cache import (
    active_key,
    active_model,
    bump,
    create_cache,
    drop_other_schemes,
    forget_vectors,
)


class VectorsProjector(ItemIndexProjector):
    name = "vectors"
    version = 3  # 2: long turns are indexed as passages; 3: turns embedded without speaker
    table = "vector_items"
    handles = ITEM_EVENTS | {EmbeddingModelChosen}

    def __init__(self) -> None:
        self._removed: set[str] = set()

    def create(self, db: sqlite3.Connection) -> None:
        self.create_items_table(db)
        db.execute("CREATE INDEX IF NOT EXISTS vector_items_hash ON vector_items (content_hash)")
        db.execute("CREATE TABLE IF NOT EXISTS vector_model ("
                   " id INTEGER PRIMARY KEY CHECK (id = 1), model TEXT NOT NULL,"
                   " dimension INTEGER NOT NULL, checksum TEXT NOT NULL, seq INTEGER NOT NULL)")
        create_cache(db)
        drop_other_schemes(db)
        bump(db)  # the projection was (re)created: the matrix must be re-checked

    def drop(self, db: sqlite3.Connection) -> None:
        # The embeddings cache, the matrix and the generation counter survive: a rebuild
        # re-embeds nothing that was embedded before.
        db.execute("DROP TABLE IF EXISTS vector_model")
        self.drop_items_table(db)

    def apply(self, db: sqlite3.Connection, event: RecordedEvent) -> None:
        chosen = event.data
        if isinstance(chosen, EmbeddingModelChosen):
            db.execute("INSERT OR REPLACE INTO vector_model (id, model, dimension, checksum, seq)"
                       " VALUES (1, ?, ?, ?, ?)",
                       (chosen.model, int(chosen.dimension), chosen.checksum, event.seq))
            bump(db)
            return
        self._removed = set()
        super().apply(db, event)
        if self._removed:
            # After the whole event (a MEMORY.md rewrite removes its old sections before it
            # adds the new ones, many unchanged): vectors of content no item has any more.
            forget_vectors(db, self._removed)
            self._removed = set()

    def store(self, db: sqlite3.Connection, rowid: int, item: Item) -> None:
        active = active_key(db)
        if active and db.execute("SELECT 1 FROM embeddings WHERE content_hash = ? AND model = ?",
                                 (item.content_hash, active)).fetchone():
            bump(db)  # already embedded (a replay, or the same text again): joins the matrix

    def unstore(self, db: sqlite3.Connection, rowid: int, key: str) -> None:
        row = db.execute("SELECT content_hash FROM vector_items WHERE rowid = ?",
                         (rowid,)).fetchone()
        if row:
            self._removed.add(row[0])
        bump(db)

    def canonical_rows(self, db: sqlite3.Connection) -> Iterable[Sequence[Any]]:
        yield from db.execute("SELECT 'model', model, dimension, checksum, seq FROM vector_model")
        yield from db.execute(
            "SELECT key, refs, at, session, type, content_hash, seq FROM vector_items ORDER BY key")

    def check(self, db: sqlite3.Connection) -> None:
        active = active_model(db)
        if active is None:
            return
        bad = db.execute("SELECT COUNT(*) FROM embeddings WHERE model = ? AND length(vector) != ?",
                         (active.key, 4 * active.dimension)).fetchone()[0]
        if bad:
            raise sqlite3.DatabaseError(f"{bad} cached vectors of {active.key} have the wrong size")

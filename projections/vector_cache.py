"""The embeddings cache and what the vectors projection says about it.

- ``embeddings(content_hash, model, vector)``: one float32 vector per distinct content and
  model key (:attr:`ActiveModel.key`). The projection's ``drop()`` leaves it alone, so a
  replay re-embeds nothing that was embedded before. It only ever holds vectors of content
  some item still has: when an event removes the last item with a content hash (a
  ``MemoryForgotten``, a MEMORY.md rewrite), :func:`forget_vectors` deletes its vectors in the
  same transaction.
- ``vector_generation`` counts changes of what the matrix file should hold (an item with a
  cached vector added or removed, a model chosen, vectors embedded); the matrix records the
  generation it was built for, so "stale" is one integer comparison
  (:mod:`projections.vector_matrix`).
- The active model: the last ``EmbeddingModelChosen`` the vectors projection applied.
"""
from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from events.db import connect_readonly, write_transaction

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

DbLike = Any  # ProjectionStore | sqlite3.Connection


@dataclass(frozen=True)
class ActiveModel:
    """The model the last ``EmbeddingModelChosen`` projected into the vectors projection.

    ``key`` names its vectors in the cache: the model id and the first 16 hex digits of the
    checksum, so vectors of two different files of one model id never mix."""

    model: str
    dimension: int
    checksum: str

    @property
    def key(self) -> str:
        return model_key(self.model, self.checksum)


# What texts the vectors are of (projections.items.embedding_text): "t2" = turns without their
# speaker. Part of the model key, so vectors of an earlier scheme are never mixed in: they
# are dropped when the vectors projection is rebuilt (VectorsProjector.create) and the
# texts embedded again.
TEXT_SCHEME = "t2"


def model_key(model: str, checksum: str) -> str:
    return f"{model}@{checksum[:16]}+{TEXT_SCHEME}"


def drop_other_schemes(db: sqlite3.Connection) -> int:
    """Delete the vectors of an earlier text scheme (no key of today names them)."""
    return db.execute("DELETE FROM embeddings WHERE model NOT LIKE ?",
                      (f"%+{TEXT_SCHEME}",)).rowcount


def create_cache(db: sqlite3.Connection) -> None:
    db.execute("CREATE TABLE IF NOT EXISTS embeddings ("
               " content_hash TEXT NOT NULL, model TEXT NOT NULL, vector BLOB NOT NULL,"
               " PRIMARY KEY (content_hash, model))")
    db.execute("CREATE TABLE IF NOT EXISTS vector_generation ("
               " id INTEGER PRIMARY KEY CHECK (id = 1), value INTEGER NOT NULL)")
    db.execute("INSERT OR IGNORE INTO vector_generation (id, value) VALUES (1, 0)")
    db.execute("CREATE TABLE IF NOT EXISTS vector_matrix ("
               " id INTEGER PRIMARY KEY CHECK (id = 1), model TEXT NOT NULL, file TEXT NOT NULL,"
               " dimension INTEGER NOT NULL, count INTEGER NOT NULL, dead INTEGER NOT NULL,"
               " generation INTEGER NOT NULL)")
    db.execute("CREATE TABLE IF NOT EXISTS vector_slots ("
               " slot INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE, content_hash TEXT NOT NULL)")


def salvage_cache(broken: Path, db: sqlite3.Connection) -> int:
    """Copy the cached vectors that can still be read from a damaged projections database
    into ``db`` (a new one), so a replay does not have to embed them again; returns how many.
    Rows in damaged pages are lost: the next embedding run recomputes them."""
    create_cache(db)
    copied = 0
    try:
        source = connect_readonly(broken)
    except sqlite3.DatabaseError:
        return 0
    try:
        cursor = source.execute("SELECT content_hash, model, vector FROM embeddings")
        while True:
            rows = cursor.fetchmany(1000)
            if not rows:
                break
            db.executemany("INSERT OR IGNORE INTO embeddings (content_hash, model, vector)"
                           " VALUES (?, ?, ?)", rows)
            copied += len(rows)
    except sqlite3.DatabaseError:
        pass  # what was read before the damaged page is kept
    finally:
        source.close()
    return copied


def bump(db: sqlite3.Connection) -> None:
    db.execute("UPDATE vector_generation SET value = value + 1 WHERE id = 1")


def generation(db: sqlite3.Connection) -> int:
    row = db.execute("SELECT value FROM vector_generation WHERE id = 1").fetchone()
    return row[0] if row else 0


def forget_vectors(db: sqlite3.Connection, hashes: Iterable[str]) -> int:
    """Delete the cached vectors (every model) of content no item has any more."""
    gone = 0
    for content_hash in sorted(hashes):
        if not db.execute("SELECT 1 FROM vector_items WHERE content_hash = ? LIMIT 1",
                          (content_hash,)).fetchone():
            gone += db.execute("DELETE FROM embeddings WHERE content_hash = ?",
                               (content_hash,)).rowcount
    return gone


def drop_orphan_vectors(db: sqlite3.Connection) -> int:
    """Delete the cached vectors of content no item has (what a rebuild from a rewritten log
    — ``diarist redact`` — leaves behind), in one transaction; returns how many."""
    try:
        with write_transaction(db):
            gone = db.execute("DELETE FROM embeddings WHERE content_hash NOT IN"
                              " (SELECT content_hash FROM vector_items)").rowcount
            if gone:
                bump(db)
    except sqlite3.OperationalError as exc:
        if missing_table(exc):
            return 0
        raise
    return gone


def db_of(store_or_db: DbLike) -> sqlite3.Connection:
    return store_or_db if isinstance(store_or_db, sqlite3.Connection) else store_or_db.db


def missing_table(exc: sqlite3.OperationalError) -> bool:
    return "no such table" in str(exc)


def active_model(store_or_db: DbLike) -> ActiveModel | None:
    """The model the vectors projection has active (the last ``EmbeddingModelChosen`` it
    applied), or None when none has been chosen (or the projection does not exist yet)."""
    try:
        row = db_of(store_or_db).execute(
            "SELECT model, dimension, checksum FROM vector_model WHERE id = 1").fetchone()
    except sqlite3.OperationalError as exc:
        if missing_table(exc):
            return None
        raise
    return ActiveModel(row[0], row[1], row[2]) if row else None


def active_key(db: sqlite3.Connection) -> str | None:
    active = active_model(db)
    return active.key if active else None


def pending_count(store_or_db: DbLike) -> int:
    """Distinct contents that have items but no vector under the active model."""
    db = db_of(store_or_db)
    active = active_model(db)
    if active is None:
        return 0
    return db.execute(
        "SELECT COUNT(DISTINCT v.content_hash) FROM vector_items v WHERE NOT EXISTS ("
        " SELECT 1 FROM embeddings e WHERE e.content_hash = v.content_hash AND e.model = ?)",
        (active.key,)).fetchone()[0]


def matrix_of(blobs: Sequence[bytes], dimension: int) -> np.ndarray:
    import numpy as np

    return np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), dimension)


def cached_vectors(db: sqlite3.Connection, active: ActiveModel,
                   content_hashes: Sequence[str]) -> dict[str, np.ndarray]:
    """The cached vectors of these contents under the active model (those embedded)."""
    import numpy as np

    wanted = sorted(set(content_hashes))
    out: dict[str, np.ndarray] = {}
    for start in range(0, len(wanted), 500):
        chunk = wanted[start:start + 500]
        for content_hash, blob in db.execute(
                "SELECT content_hash, vector FROM embeddings WHERE model = ?"
                f" AND content_hash IN ({','.join('?' * len(chunk))})", [active.key, *chunk]):
            out[content_hash] = np.frombuffer(blob, dtype=np.float32)
    return out

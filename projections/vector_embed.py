"""Embedding what is pending: every content that has items but no vector under the active
model, with the text read from the search projection (the one place the items' text lives,
so the vectors projection stores no text of its own and forgetting has one copy to scrub)
— a turn's without its speaker (:func:`projections.items.embedding_text`)."""
from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from events.db import write_transaction

from .items import embedding_text
from .vector_cache import ActiveModel, active_model, bump, missing_table
from .vector_matrix import refresh_vectors

if TYPE_CHECKING:  # pragma: no cover
    from .embedding import OnnxEmbedder
    from .engine import ProjectionStore

REFRESH_EVERY_S = 10.0  # embed_pending refreshes the matrix at least this often


def _pending(db: sqlite3.Connection, model: str) -> list[tuple[str, str]]:
    """(content_hash, one item key with it) of everything not embedded, newest first."""
    return db.execute(
        "SELECT content_hash, MIN(key) FROM vector_items v WHERE NOT EXISTS ("
        " SELECT 1 FROM embeddings e WHERE e.content_hash = v.content_hash AND e.model = ?)"
        " GROUP BY content_hash ORDER BY MAX(seq) DESC, content_hash", (model,)).fetchall()


def _texts(db: sqlite3.Connection, wanted: Sequence[tuple[str, str]]) -> dict[str, str]:
    """Text by content hash, read from the search projection (the items' one copy of it).
    Items search has not projected yet (or has already forgotten) are left out."""
    if not wanted:
        return {}
    keys = [key for _, key in wanted]
    try:
        rows = db.execute(
            "SELECT s.content_hash, s.source, f.content FROM search_items s"
            " JOIN search_fts f ON f.rowid = s.rowid"
            f" WHERE s.key IN ({','.join('?' * len(keys))})", keys).fetchall()
    except sqlite3.OperationalError as exc:
        if missing_table(exc):
            return {}
        raise
    hashes = {h for h, _ in wanted}
    return {h: embedding_text(source, text) for h, source, text in rows if h in hashes}


def embed_pending(store: ProjectionStore, embedder: OnnxEmbedder, batch_size: int = 64, *,
                  progress: Callable[[int], None] | None = None, refresh: bool = True) -> int:
    """Embed every content that has items but no vector under the active model, newest
    first, ``batch_size`` texts at a time; each batch's vectors are written in one
    transaction (and only for content some item still has: a forget may have run while the
    batch was embedding). Then brings the matrix file up to date (``refresh``). Returns how
    many texts were embedded. With no model chosen it does nothing and returns 0."""
    db = store.db
    active = active_model(db)
    if active is None:
        if refresh:
            refresh_vectors(store)
        return 0
    if embedder.model_id != active.key:
        raise ValueError(f"the embedder is for {embedder.model_id}, "
                         f"the active model is {active.key}")
    pending = _pending(db, active.key)
    done = 0
    last_refresh = time.monotonic()
    for start in range(0, len(pending), batch_size):
        texts = _texts(db, pending[start:start + batch_size])
        if not texts:
            continue
        _store_vectors(db, active, texts, embedder)
        done += len(texts)
        if progress:
            progress(len(texts))
        if refresh and time.monotonic() - last_refresh > REFRESH_EVERY_S:
            refresh_vectors(store)  # a long backlog: make what is done searchable quickly
            last_refresh = time.monotonic()
    if refresh:
        refresh_vectors(store)
    return done


def _store_vectors(db: sqlite3.Connection, active: ActiveModel, texts: dict[str, str],
                   embedder: OnnxEmbedder) -> None:
    """Embed one batch (content hash → text) outside any transaction, then write the vectors
    in one, only for content some item still has."""
    import numpy as np

    hashes = sorted(texts)
    vectors = np.ascontiguousarray(embedder.embed([texts[h] for h in hashes]), dtype=np.float32)
    if vectors.shape != (len(hashes), active.dimension):
        raise ValueError(f"the embedder gave {vectors.shape}, expected "
                         f"({len(hashes)}, {active.dimension})")
    with write_transaction(db):
        written = 0
        for content_hash, vector in zip(hashes, vectors, strict=True):
            written += db.execute(
                "INSERT OR IGNORE INTO embeddings (content_hash, model, vector)"
                " SELECT ?, ?, ? WHERE EXISTS ("
                "  SELECT 1 FROM vector_items WHERE content_hash = ?)",
                (content_hash, active.key, vector.tobytes(), content_hash)).rowcount
        if written:
            bump(db)

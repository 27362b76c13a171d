"""Vector search: the items nearest a query vector, from the matrix file when it is usable,
else straight from the embeddings cache; every hit checked against the projection."""
from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from events import Home

from .vector_cache import ActiveModel, DbLike, active_model, db_of, generation, matrix_of
from .vector_matrix import Matrix, matrix_state, open_matrix, single_threaded_blas

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np


def vector_search(store_or_db: DbLike, home: Home | None, query_vec: Any, k: int,
                  keys_filter: Iterable[str] | None = None) -> list[tuple[str, float]]:
    """The ``k`` items nearest to ``query_vec`` (a unit vector from the active model's
    embedder) by cosine, best first, as ``(item key, cosine)``; ties by key. ``keys_filter``
    restricts the search to those item keys (scored exactly from the cache). Items not
    embedded yet are not found; with no model chosen the result is ``[]``.

    Reads one consistent snapshot of the projection db (unless the caller already has a
    transaction open). ``home`` locates the matrix file (default: the store's)."""
    import numpy as np

    if k <= 0:
        return []
    db = db_of(store_or_db)
    if home is None:
        home = getattr(store_or_db, "home", None)
    query = np.ascontiguousarray(np.asarray(query_vec, dtype=np.float32).reshape(-1))
    own = not db.in_transaction
    if own:
        db.execute("BEGIN")
    try:
        active = active_model(db)
        if active is None:
            return []
        if query.shape[0] != active.dimension:
            raise ValueError(f"query has {query.shape[0]} dimensions, {active.key} has "
                             f"{active.dimension}")
        if keys_filter is not None:
            return _exact(db, active, query, k, keys=sorted(set(keys_filter)))
        state = matrix_state(db)
        matrix = None
        if (home is not None and state is not None and state.model == active.key
                and state.dimension == active.dimension):
            matrix = open_matrix(home, state.file, state.dimension, state.count)
        if matrix is None or state is None:
            return _exact(db, active, query, k)
        hits = _from_matrix(db, active, matrix, state.count, query, k)
        if state.generation != generation(db):
            # embedded (or re-added) since the last refresh: not in the file yet
            extra = _exact(db, active, query, k, unslotted=True)
            if extra:
                merged = hits + extra
                hits = _top([h[0] for h in merged],
                            np.array([h[1] for h in merged], dtype=np.float32), k)
        return hits
    finally:
        if own:
            db.execute("COMMIT")


def _top(keys: Sequence[str], scores: np.ndarray, k: int) -> list[tuple[str, float]]:
    """Best ``k`` (score desc, key asc), one entry per key."""
    import numpy as np

    if not len(keys):
        return []
    if len(keys) > k:
        cut = np.argpartition(-scores, k - 1)[:k]
        threshold = scores[cut].min()
        keep = np.nonzero(scores >= threshold)[0]  # keep ties at the edge, sort them by key
    else:
        keep = np.arange(len(keys))
    ranked = sorted((-float(scores[i]), keys[int(i)]) for i in keep)
    out: list[tuple[str, float]] = []
    seen: set[str] = set()
    for negative, key in ranked:
        if key not in seen:
            seen.add(key)
            out.append((key, -negative))
        if len(out) == k:
            break
    return out


def _exact(db: sqlite3.Connection, active: ActiveModel, query: np.ndarray, k: int, *,
           keys: Sequence[str] | None = None, unslotted: bool = False) -> list[tuple[str, float]]:
    """Score straight from the cache: the fallback without a usable matrix file, the
    ``keys_filter`` path, and (``unslotted``) items the file does not have yet."""
    rows: list[tuple[str, bytes]] = []
    if keys is not None:
        for start in range(0, len(keys), 500):
            chunk = list(keys[start:start + 500])
            rows += db.execute(
                "SELECT v.key, e.vector FROM vector_items v JOIN embeddings e"
                " ON e.content_hash = v.content_hash AND e.model = ?"
                f" WHERE v.key IN ({','.join('?' * len(chunk))})", [active.key] + chunk).fetchall()
    else:
        sql = ("SELECT v.key, e.vector FROM vector_items v JOIN embeddings e"
               " ON e.content_hash = v.content_hash AND e.model = ?")
        if unslotted:
            sql += (" WHERE NOT EXISTS (SELECT 1 FROM vector_slots s"
                    " WHERE s.key = v.key AND s.content_hash = v.content_hash)")
        rows = db.execute(sql, (active.key,)).fetchall()
    if not rows:
        return []
    vectors = matrix_of([r[1] for r in rows], active.dimension)
    return _top([r[0] for r in rows], vectors @ query, k)


def _from_matrix(db: sqlite3.Connection, active: ActiveModel, matrix: Matrix, count: int,
                 query: np.ndarray, k: int) -> list[tuple[str, float]]:
    """Candidates from the file's scan, each checked against the projection (item still
    there, same content) and re-scored from the cache; widens the candidate set while too
    few survive the check."""
    import numpy as np

    if not count:
        return []
    single_threaded_blas()
    scores = matrix.scores(query, count)
    want = min(count, max(4 * k, k + 32))
    while True:
        if want >= count:
            candidates = np.arange(count)
        else:
            candidates = np.argpartition(scores, count - want)[count - want:]
        rows: list[tuple[str, bytes]] = []
        slots = sorted(int(s) for s in candidates)
        for start in range(0, len(slots), 500):
            chunk = slots[start:start + 500]
            rows += db.execute(
                "SELECT s.key, e.vector FROM vector_slots s"
                " JOIN vector_items v ON v.key = s.key AND v.content_hash = s.content_hash"
                " JOIN embeddings e ON e.content_hash = s.content_hash AND e.model = ?"
                f" WHERE s.slot IN ({','.join('?' * len(chunk))})",
                [active.key, *chunk]).fetchall()
        if len(rows) >= k or want >= count:
            break
        want = min(count, want * 4)
    if not rows:
        return []
    vectors = matrix_of([r[1] for r in rows], active.dimension)
    return _top([r[0] for r in rows], vectors @ query, k)

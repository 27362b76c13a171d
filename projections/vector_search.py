"""Vector search: the items nearest a query vector, from the matrix file when it is usable,
else straight from the embeddings cache; every hit checked against the projection."""
from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from events import Home

from .vector_cache import ActiveModel, DbLike, active_model, db_of, generation, matrix_of
from .vector_matrix import (
    Matrix,
    MatrixState,
    Scoring,
    matrix_state,
    open_matrix,
    single_threaded_blas,
)

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np


def vector_search(store_or_db: DbLike, home: Home | None, query_vec: Any, k: int,
                  keys_filter: Iterable[str] | Mapping[str, str] | None = None,
                  prescanned: Prescan | None = None,
                  slots: Mapping[str, int] | None = None) -> list[tuple[str, float]]:
    """The ``k`` items nearest to ``query_vec`` (a unit vector from the active model's
    embedder) by cosine, best first, as ``(item key, cosine)``; ties by key. ``keys_filter``
    restricts the search to those item keys; given as a mapping, key → the content hash the
    caller read for it, an item whose vector in the file is of that content is not looked
    up again in the projection. Items not embedded yet are not found; with no model chosen
    the result is ``[]``.

    Reads one consistent snapshot of the projection db (unless the caller already has a
    transaction open). ``home`` locates the matrix file (default: the store's).
    ``prescanned``: :func:`prescan` of this same query, done beforehand (on another thread);
    used when it was of the file and slot count this snapshot has. ``slots``: with a
    ``keys_filter`` mapping, the matrix slot of some of its keys whose ``vector_slots`` row
    has the content hash given for the key, read by the caller in the transaction it has
    open (ignored otherwise): those are not looked up again."""
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
        state = matrix_state(db)
        matrix = _usable_matrix(home, state, active)
        if matrix is None or state is None:
            return _exact(db, active, query, k, keys=None if keys_filter is None
                          else sorted(set(keys_filter)))
        # Every change of what the file should hold bumps the generation (an item added or
        # removed, vectors embedded), in the transaction that makes it, and a refresh frees
        # the slot of every item gone: at the file's generation each slot is a live item.
        settled = state.generation == generation(db)
        if keys_filter is not None:
            expected = keys_filter if isinstance(keys_filter, Mapping) else None
            return _of_keys(db, active, matrix, state.count, query, k, sorted(set(keys_filter)),
                            expected, settled,
                            slots if expected is not None and not own else None)
        ready = (prescanned if prescanned is not None and prescanned.file == state.file
                 and prescanned.count == state.count else None)
        hits = _from_matrix(db, active, matrix, state.count, query, k, ready, settled)
        if not settled:
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


def _usable_matrix(home: Home | None, state: MatrixState | None,
                   active: ActiveModel) -> Matrix | None:
    if (home is None or state is None or state.model != active.key
            or state.dimension != active.dimension):
        return None
    return open_matrix(home, state.file, state.dimension, state.count)


def _top(keys: Sequence[str], scores: np.ndarray, k: int) -> list[tuple[str, float]]:
    """Best ``k`` (score desc, key asc), one entry per key."""
    import numpy as np

    if not len(keys):
        return []
    if len(keys) > k:
        cut = np.argpartition(-scores, k - 1)[:k]
        threshold = scores[cut].min()
        keep = np.nonzero(scores >= threshold)[0].tolist()  # ties at the edge: by key
        ranked = sorted(zip((-scores[keep]).tolist(), [keys[i] for i in keep], strict=True))
    else:
        ranked = sorted(zip((-np.asarray(scores)).tolist(), keys, strict=True))
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
    """Score straight from the cache: the fallback without a usable matrix file, items of
    ``keys`` the file cannot give, and (``unslotted``) items the file does not have yet."""
    sql = ("SELECT v.key, e.vector FROM vector_items v JOIN embeddings e"
           " ON e.content_hash = v.content_hash AND e.model = ?")
    if keys is not None:
        rows = _in_chunks(db, sql + " WHERE v.key IN", keys, [active.key])
    else:
        if unslotted:
            sql += (" WHERE NOT EXISTS (SELECT 1 FROM vector_slots s"
                    " WHERE s.key = v.key AND s.content_hash = v.content_hash)")
        rows = db.execute(sql, (active.key,)).fetchall()
    if not rows:
        return []
    vectors = matrix_of([r[1] for r in rows], active.dimension)
    return _top([r[0] for r in rows], vectors @ query, k)


# Slots the sign-code pre-scan passes on to exact scoring (Matrix.nearest); a home of at most
# this many items is scored exactly. Over 69,227 real MiniLM vectors of the dev sets' texts
# and their 1,019 questions (benchmarks/bench_prescan.py), the top 10 came out as a full
# scan's for 0.986 of the questions with 1,024, 0.998 with 2,048, every one with 4,096 (top
# 50: 0.571, 0.841, 0.964; 99.9 % of the full scan's top 50 found), in 2.8 ms p50 against
# 36 ms for scoring every row.
PRESCAN_KEEP = 4096


def _want(k: int, count: int) -> int:
    """Slots checked against the projection for the best ``k``: the scores are exact, so a
    margin for dead slots only."""
    return min(count, k + max(16, k // 2))


@dataclass(frozen=True)
class Prescan:
    """The best slots of a matrix file for one query, with exact scores (:func:`prescan`)."""

    file: str
    count: int
    want: int
    slots: np.ndarray
    scores: np.ndarray


def prescan(home: Home, state: MatrixState, active: ActiveModel, query_vec: Any,
            k: int, share: Callable[[Scoring], None] | None = None) -> Prescan | None:
    """The file's part of :func:`vector_search` for the best ``k``, which reads no database:
    recall runs it on the thread that embedded the query, while its own thread is still in
    FTS5 (on the questions where FTS5 takes longer than the embedding — the slowest ones —
    the vector search is then done when it returns). ``state`` and ``active`` are read by
    the caller. ``share`` is handed the exact scoring of the candidates before it starts,
    so another thread can take part of it (:class:`~projections.vector_matrix.Scoring`).
    None when the file cannot be used."""
    import numpy as np

    matrix = _usable_matrix(home, state, active)
    if matrix is None or not state.count:
        return None
    query = np.ascontiguousarray(np.asarray(query_vec, dtype=np.float32).reshape(-1))
    want = _want(k, state.count)
    slots, scores = _best_slots(matrix, state.count, query, want, share)
    return Prescan(state.file, state.count, want, slots, scores)


def _best_slots(matrix: Matrix, count: int, query: np.ndarray, want: int,
                share: Callable[[Scoring], None] | None = None) -> tuple[np.ndarray, np.ndarray]:
    import numpy as np

    single_threaded_blas()
    scoring = Scoring(matrix, matrix.candidates(query, count, max(PRESCAN_KEEP, want)), query)
    if share is not None:
        share(scoring)
    slots, scores = scoring.result()
    if len(slots) > want:
        best = np.argpartition(scores, len(slots) - want)[len(slots) - want:]
        slots, scores = slots[best], scores[best]
    return slots, scores


def _from_matrix(db: sqlite3.Connection, active: ActiveModel, matrix: Matrix, count: int,
                 query: np.ndarray, k: int, ready: Prescan | None = None,
                 settled: bool = False) -> list[tuple[str, float]]:
    """The best candidates of the file's scan (:meth:`Matrix.nearest`; ``ready`` when done
    already), each checked against the projection (item still there, same content; only
    their keys read when ``settled``: the file is at the projection's generation); widens
    the candidate set while too few survive the check."""
    if not count:
        return []
    want = _want(k, count)
    while True:
        if ready is not None and ready.want >= want:
            slots, scores = ready.slots, ready.scores
        else:
            slots, scores = _best_slots(matrix, count, query, want)
        ready = None
        live = _live_slots(db, slots.tolist(), settled)
        hits = [(live[slot], score) for slot, score in zip(slots.tolist(), scores.tolist(),
                                                            strict=True) if slot in live]
        if len(hits) >= k or want >= count:
            break
        want = min(count, want * 4)
    return _rescored_zeros(db, active, matrix, query, k, hits,
                           {key: slot for slot, key in live.items()})


def _of_keys(db: sqlite3.Connection, active: ActiveModel, matrix: Matrix, count: int,
             query: np.ndarray, k: int, keys: Sequence[str],
             expected: Mapping[str, str] | None, settled: bool,
             known: Mapping[str, int] | None = None) -> list[tuple[str, float]]:
    """The ``keys_filter`` search: the vectors of items in the file read from it, of the
    others (embedded since the last refresh, or of other content than ``expected``) from the
    cache. ``known``: slots the caller read with the expected content (vector_search's
    ``slots``); the others are looked up."""
    import numpy as np

    slot_of = ({key: slot for key in keys if (slot := known.get(key)) is not None
                and slot < count} if known else {})
    unknown = [key for key in keys if key not in slot_of]
    slotted = _in_chunks(db, "SELECT slot, key, content_hash FROM vector_slots"
                              " WHERE slot < ? AND key IN", unknown, [count])
    if expected is None:
        slot_of.update((key, slot) for slot, key in _checked(db, slotted, settled).items())
    else:
        slot_of.update((key, slot) for slot, key, content_hash in slotted
                       if expected.get(key) == content_hash)
    hits: list[tuple[str, float]] = []
    if slot_of:
        found = sorted(slot_of)
        single_threaded_blas()
        scores = matrix.vectors(np.array([slot_of[key] for key in found])) @ query
        hits = list(zip(found, scores.tolist(), strict=True))
    rest = [key for key in keys if key not in slot_of]
    if rest:
        hits += _exact(db, active, query, len(rest), keys=rest)
    return _rescored_zeros(db, active, matrix, query, k, hits, slot_of)


def _live_slots(db: sqlite3.Connection, slots: Sequence[int], settled: bool) -> dict[int, str]:
    """Of these slots, those whose item is still there with the same content: slot → key."""
    return _checked(db, _in_chunks(
        db, "SELECT slot, key, content_hash FROM vector_slots WHERE slot IN", sorted(slots)),
        settled)


def _checked(db: sqlite3.Connection, slotted: list[tuple[int, str, str]],
             settled: bool) -> dict[int, str]:
    """slot → key of the ``(slot, key, content hash)`` rows whose item is still there with
    that content: all of them when ``settled`` (the file at the projection's generation),
    else those the projection has. (Two plain lookups: one joined statement took twice as
    long.)"""
    if settled:
        return {slot: key for slot, key, _ in slotted}
    current = dict(_in_chunks(db, "SELECT key, content_hash FROM vector_items WHERE key IN",
                              [key for _, key, _ in slotted]))
    return {slot: key for slot, key, content_hash in slotted
            if current.get(key) == content_hash}


def _in_chunks(db: sqlite3.Connection, sql: str, values: Sequence[Any],
               before: Sequence[Any] = ()) -> list[Any]:
    """``sql`` ending in ``IN`` with the list of ``values`` (500 at a time), after the
    parameters ``before``."""
    rows: list[Any] = []
    for start in range(0, len(values), 500):
        chunk = list(values[start:start + 500])
        rows += db.execute(f"{sql} ({','.join('?' * len(chunk))})", [*before, *chunk]).fetchall()
    return rows


def _rescored_zeros(db: sqlite3.Connection, active: ActiveModel, matrix: Matrix,
                    query: np.ndarray, k: int, hits: list[tuple[str, float]],
                    slot_of: Mapping[str, int]) -> list[tuple[str, float]]:
    """The best ``k`` of ``hits`` (``slot_of``: the file's slot of each read from it),
    after re-scoring from the cache any whose slot holds zeros. The file's rows are the
    cache's vectors, written and synced before their slots were committed; zeros are the one
    thing a crash can leave behind a committed slot (a refresh that zeroed a gone item's
    slot, then died before it freed the slot, and the item came back with the same content).
    A zero row scores exactly 0, so only those are read again."""
    import numpy as np

    in_file = [key for key, score in hits if score == 0.0 and key in slot_of]
    if in_file:
        empty = ~matrix.vectors(np.array([slot_of[key] for key in in_file])).any(axis=1)
        zero = {in_file[int(i)] for i in np.nonzero(empty)[0]}
        if zero:
            hits = [h for h in hits if h[0] not in zero]
            hits += _exact(db, active, query, len(zero), keys=sorted(zero))
    if not hits:
        return []
    return _top([h[0] for h in hits], np.array([h[1] for h in hits], dtype=np.float32), k)

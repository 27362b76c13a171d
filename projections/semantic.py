"""The semantic half of recall: embed the query with the active model, search the vectors."""
from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from events import Home

if TYPE_CHECKING:  # pragma: no cover
    from concurrent.futures import Future, ThreadPoolExecutor

    from .engine import ProjectionStore
    from .vector_cache import ActiveModel
    from .vector_matrix import MatrixState, Scoring
    from .vector_search import Prescan

_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    """One thread for the process's query embeddings (made on first use)."""
    global _POOL
    from concurrent.futures import ThreadPoolExecutor

    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(1, thread_name_prefix="diarist-query")
        return _POOL


@dataclass
class _Prefetch:
    """A query being embedded and searched on the query thread (:meth:`SemanticSearch.prefetch`):
    each part is handed over as soon as it is ready."""

    query: str
    active: ActiveModel
    vector: Future[Any]               # the query's vector (None: the model cannot be loaded)
    scoring: Future[Scoring | None]   # the scan's exact scoring, when it starts (or None)
    scan: Future[Prescan | None] | None = None  # the file's best k


def _embed_query(home: Home, state: MatrixState | None, k: int, job: _Prefetch) -> Prescan | None:
    """Embed ``job``'s query and hand its vector over at once, then (``k`` > 0, a matrix
    file in ``state``) find the file's best ``k`` for it, handing its exact scoring over
    when it starts so that the caller's thread can take a share. No database is read on
    this thread."""
    from .embedding import ModelUnavailable, load_embedder
    from .vector_search import prescan

    try:
        try:
            embedder = load_embedder(home, job.active)
        except ModelUnavailable:  # as active_embedder: recall is then lexical only
            job.vector.set_result(None)
            return None
        vector = embedder.embed([job.query])[0]
        job.vector.set_result(vector)
        return (prescan(home, state, job.active, vector, k, job.scoring.set_result)
                if k > 0 and state is not None else None)
    except BaseException as exc:
        if not job.vector.done():
            job.vector.set_exception(exc)
        raise
    finally:
        if not job.scoring.done():
            job.scoring.set_result(None)


class SemanticSearch:
    """Cosine search for recall. The embedder loads on first use; the last query's vector
    is kept, so ``nearest`` and ``cosines`` of one recall embed it once. :meth:`prefetch`
    embeds a query on another thread while the caller does something else."""

    def __init__(self, home: Home, store: ProjectionStore) -> None:
        self.home, self.store = home, store
        self._last: tuple[str, Any] | None = None
        self._pending: _Prefetch | None = None

    def prefetch(self, query: str, k: int = 0) -> None:
        """Start embedding ``query`` (and loading the model, the first time) on another
        thread, and then (``k`` > 0) the matrix file's part of :meth:`nearest` for the best
        ``k``: recall runs its lexical search meanwhile — onnxruntime, numpy and SQLite let
        go of the GIL, and a machine has two cores. The model and the file are chosen here:
        the projection database is only read on the caller's thread."""
        from concurrent.futures import Future

        from .vector_cache import active_model
        from .vector_matrix import matrix_state

        if (not query.strip() or (self._last and self._last[0] == query)
                or (self._pending and self._pending.query == query)):
            return
        active = active_model(self.store)
        if active is not None:
            state = matrix_state(self.store.db) if k > 0 else None
            job = _Prefetch(query, active, Future(), Future())
            job.scan = _pool().submit(_embed_query, self.home, state, k, job)
            self._pending = job

    def embedding(self) -> bool:
        """Whether the query thread is still at the part of a prefetch this thread cannot
        help with: embedding the query and choosing the rows to score."""
        job = self._pending
        return job is not None and not job.scoring.done()

    def _vector(self, query: str) -> Any | None:
        """The query's vector: the prefetch's when it is of this query and model (its scan
        is left for :meth:`nearest`), else embedded here."""
        from .embedding import active_embedder
        from .vector_cache import active_model

        if self._last and self._last[0] == query:
            return self._last[1]
        job = self._pending
        if job and job.query == query and job.active == active_model(self.store):
            vector = job.vector.result()  # the scan may still be running
            if vector is None:
                self._pending = None
                return None
        else:
            self._pending = None
            embedder = active_embedder(self.home, self.store)
            if embedder is None or not query.strip():
                return None
            vector = embedder.embed([query])[0]
        self._last = (query, vector)
        return vector

    def nearest(self, query: str, k: int) -> list[tuple[str, float]]:
        """The ``k`` nearest items as (item key, cosine), best first."""
        from .vector_search import vector_search

        vector = self._vector(query)
        job, self._pending = self._pending, None
        prescanned = None
        if job is not None and job.query == query and job.scan is not None:
            scoring = job.scoring.result()
            if scoring is not None:  # this thread has nothing else to do: take a share
                scoring.run()
            prescanned = job.scan.result()
        return [] if vector is None else vector_search(self.store, self.home, vector, k,
                                                       prescanned=prescanned)

    def cosines(self, query: str, keys: Mapping[str, str],
                slots: Mapping[str, int] | None = None) -> dict[str, float]:
        """Exact cosines of the given items, key → the content hash read for it (those not
        embedded yet are absent); ``slots``: matrix slots read with some of them in the
        caller's transaction (:func:`~projections.vector_search.vector_search`)."""
        from .vector_search import vector_search

        vector = self._vector(query)
        if vector is None or not keys:
            return {}
        return dict(vector_search(self.store, self.home, vector, len(keys), keys_filter=keys,
                                  slots=slots))


    def neighbours(self, content_hash: str, k: int) -> list[tuple[str, float]]:
        """The ``k`` items nearest to an item's content, as (item key, cosine)."""
        from .vector_cache import active_model, cached_vectors
        from .vector_search import vector_search

        active = active_model(self.store)
        if active is None:
            return []
        vector = cached_vectors(self.store.db, active, [content_hash]).get(content_hash)
        return [] if vector is None else vector_search(self.store, self.home, vector, k)

    def similarity(self, content_hashes: Sequence[str]) -> list[list[float]]:
        """Cosine between every pair of the given contents (0 where a vector is missing)."""
        import numpy as np

        from .vector_cache import active_model, cached_vectors

        active = active_model(self.store)
        n = len(content_hashes)
        if active is None or not n:
            return [[0.0] * n for _ in range(n)]
        found = cached_vectors(self.store.db, active, content_hashes)
        matrix = np.zeros((n, active.dimension), dtype=np.float32)
        for i, content_hash in enumerate(content_hashes):
            if content_hash in found:
                matrix[i] = found[content_hash]
        return (matrix @ matrix.T).tolist()


def semantic_searcher(home: Home, store: ProjectionStore) -> SemanticSearch | None:
    """None when no embedding model is active (recall is then lexical only)."""
    from .vector_cache import active_model

    return SemanticSearch(home, store) if active_model(store) is not None else None

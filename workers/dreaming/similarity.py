"""Pairs of vectors at or above a cosine, without comparing every pair.

All pairs of 100,000 vectors is 5·10⁹ dot products — minutes on two cores. Near duplicates
(cosine ≥ 0.9) are close to the same centre, so the vectors are split into buckets first:
``n / BUCKET`` centres are picked deterministically (evenly spaced rows, then one k-means
step), each vector joins the buckets of its :data:`PROBES` nearest centres, and only vectors
sharing a bucket are compared (exactly). With two probes a pair at cosine ≥ 0.9 is all but
certain to share one; the few it could miss stay separate memories (a duplicate costs
budget, never a wrong fact). Small sets (≤ :data:`EXACT_UPTO`) are compared exhaustively.
Deterministic: the same vectors give the same pairs.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

BUCKET = 400        # vectors per centre, on average
PROBES = 4          # buckets each vector is compared in (it is kept in its nearest)
EXACT_UPTO = 4096   # below this many vectors, compare all pairs
BLOCK = 2048        # rows per matrix product


def _pairs_between(matrix: np.ndarray, queries: np.ndarray, stored: np.ndarray,
                   threshold: float, out: dict[tuple[int, int], float]) -> None:
    """Every pair (a query row, a stored row) at or above ``threshold``."""
    import numpy as np

    target = matrix[stored]
    for start in range(0, len(queries), BLOCK):
        block = queries[start:start + BLOCK]
        scores = matrix[block] @ target.T
        hits_i, hits_j = np.nonzero(scores >= threshold)
        for i, j in zip(hits_i.tolist(), hits_j.tolist(), strict=True):
            a, b = int(block[i]), int(stored[j])
            if a != b:
                out[(min(a, b), max(a, b))] = float(scores[i, j])


def _pairs_within(matrix: np.ndarray, rows: np.ndarray, threshold: float,
                  out: dict[tuple[int, int], float]) -> None:
    """Every pair among ``rows`` (indices into ``matrix``) at or above ``threshold``."""
    import numpy as np

    sub = matrix[rows]
    for start in range(0, len(rows), BLOCK):
        scores = sub[start:start + BLOCK] @ sub[start:].T
        hits_i, hits_j = np.nonzero(scores >= threshold)
        for i, j in zip(hits_i.tolist(), hits_j.tolist(), strict=True):
            a, b = int(rows[start + i]), int(rows[start + j])
            if a < b:
                out[(a, b)] = float(scores[i, j])
            elif b < a:
                out[(b, a)] = float(scores[i, j])


def _centres(matrix: np.ndarray, count: int) -> np.ndarray:
    import numpy as np

    centres = matrix[np.linspace(0, len(matrix) - 1, count).astype(np.int64)].copy()
    nearest = _nearest(matrix, centres, 1)[:, 0]
    for c in range(count):  # one k-means step: each centre moves to its members' mean
        members = matrix[nearest == c]
        if len(members):
            mean = members.sum(axis=0)
            norm = float(np.linalg.norm(mean))
            if norm > 0:
                centres[c] = mean / norm
    return centres


def _nearest(matrix: np.ndarray, centres: np.ndarray, probes: int) -> np.ndarray:
    import numpy as np

    out = np.empty((len(matrix), probes), dtype=np.int64)
    for start in range(0, len(matrix), BLOCK * 4):
        scores = matrix[start:start + BLOCK * 4] @ centres.T
        if probes >= scores.shape[1]:
            out[start:start + len(scores)] = np.argsort(-scores, axis=1)[:, :probes]
            continue
        top = np.argpartition(-scores, probes, axis=1)[:, :probes]
        out[start:start + len(scores)] = top
    return out


def near_pairs(matrix: np.ndarray, threshold: float) -> dict[tuple[int, int], float]:
    """{(i, j): cosine} for rows i < j of an L2-normalised float32 matrix whose cosine is
    at least ``threshold`` (see the module doc for the bucketing)."""
    import numpy as np
    from threadpoolctl import threadpool_limits

    out: dict[tuple[int, int], float] = {}
    n = len(matrix)
    if n < 2:
        return out
    with threadpool_limits(limits=None):
        if n <= EXACT_UPTO:
            _pairs_within(matrix, np.arange(n), threshold, out)
            return out
        centres = _centres(matrix, max(2, n // BUCKET))
        nearest = _nearest(matrix, centres, PROBES)
        home = nearest[:, 0]
        home_order = np.argsort(home, kind="stable")
        home_bounds = np.searchsorted(home[home_order], np.arange(len(centres) + 1))
        probe_order = np.argsort(nearest.ravel(), kind="stable")
        probers = np.repeat(np.arange(n), PROBES)[probe_order]
        probe_bounds = np.searchsorted(nearest.ravel()[probe_order], np.arange(len(centres) + 1))
        for c in range(len(centres)):
            stored = home_order[home_bounds[c]:home_bounds[c + 1]]
            queries = probers[probe_bounds[c]:probe_bounds[c + 1]]
            if len(stored) and len(queries) > 1:
                _pairs_between(matrix, queries, stored, threshold, out)
    return out

"""The cached embeddings of active memories (read side, for mining's and dreaming's
near-duplicate checks): the vectors the worker or ``diarist sync`` already computed."""
from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

from .items import MEMORY
from .vector_cache import active_key, matrix_of

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np


def memory_vectors(db: sqlite3.Connection,
                   ids: list[str] | None = None) -> tuple[list[str], np.ndarray | None]:
    """(memory ids, their vectors as rows) for active memories that have a cached vector
    under the active model — only ``ids`` when given; ``([], None)`` with no model."""
    key = active_key(db)
    if key is None:
        return [], None
    rows = db.execute(
        "SELECT m.id, e.vector FROM memories m"
        " JOIN vector_items v ON v.key = ? || ':' || m.id"
        " JOIN embeddings e ON e.content_hash = v.content_hash AND e.model = ?"
        " WHERE m.status = 'active' ORDER BY m.id", (MEMORY, key)).fetchall()
    if ids is not None:
        wanted = set(ids)
        rows = [r for r in rows if r[0] in wanted]
    if not rows:
        return [], None
    dimension = len(rows[0][1]) // 4
    return [r[0] for r in rows], matrix_of([r[1] for r in rows], dimension)

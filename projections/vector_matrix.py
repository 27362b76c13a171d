"""The matrix file: every live item's vector laid out for a fast scan, and its refresh.

``var/vectors/<model key>.<id>.f32`` (:class:`Matrix`), plus ``vector_slots`` (column → item
key) and ``vector_matrix`` (which file, how many columns, at which generation). It is derived
from the vectors projection and the embeddings cache by :func:`refresh_vectors`, and never
trusted blindly: every hit is re-checked (item still there, same content) and re-scored from
the cache (:mod:`projections.vector_search`), so a stale or missing file costs speed, never
correctness.
"""
from __future__ import annotations

import mmap
import os
import secrets
import sqlite3
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from events import Home
from events.db import write_transaction

from .files import fsync_file
from .vector_cache import ActiveModel, active_model, generation, matrix_of, missing_table

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from .engine import ProjectionStore

BLOCK = 4096            # columns per block of the matrix file
HEADER = 64             # bytes before the first block
MAGIC = b"DIARVEC1"
MIN_DEAD_TO_COMPACT = 1024


def vectors_dir(home: Home) -> Path:
    return home.root / "vectors"


class Matrix:
    """A read-only, memory-mapped matrix file.

    Layout: a 64-byte header (``DIARVEC1``, dimension, block size), then blocks of
    ``BLOCK`` columns; each block is ``dimension`` rows of ``BLOCK`` float32 (row j holds
    component j of the block's items). Scoring a block is then one ``q @ block`` over
    contiguous memory — numpy/OpenBLAS's fast, memory-bound gemv — about twice as fast as
    the item-per-row layout (whose gemv kernel is compute-bound here), and blocks let the
    file grow by appending without rewriting it. Unused columns are zero.
    """

    def __init__(self, path: Path, dimension: int) -> None:
        import numpy as np

        self.path = path
        with open(path, "rb") as handle:
            head = handle.read(HEADER)
            if len(head) < HEADER or head[:8] != MAGIC:
                raise ValueError(f"{path} is not a vector matrix file")
            dim, block = struct.unpack_from("<II", head, 8)
            if dim != dimension or block != BLOCK:
                raise ValueError(f"{path} has dimension {dim}, block {block}")
            size = os.fstat(handle.fileno()).st_size
            self.blocks = (size - HEADER) // (dimension * BLOCK * 4)
            # (MAP_POPULATE was measured: no faster for a cold process's first scan)
            self.map = mmap.mmap(handle.fileno(), HEADER + self.blocks * dimension * BLOCK * 4,
                                 prot=mmap.PROT_READ) if self.blocks else None
        self.dimension = dimension
        self.array = (np.frombuffer(self.map, dtype=np.float32, offset=HEADER)
                      .reshape(self.blocks, dimension, BLOCK) if self.map else
                      np.zeros((0, dimension, BLOCK), dtype=np.float32))

    @property
    def capacity(self) -> int:
        return self.blocks * BLOCK

    def scores(self, query: np.ndarray, count: int) -> np.ndarray:
        import numpy as np

        used = -(-count // BLOCK)
        out = np.empty(used * BLOCK, dtype=np.float32)
        for b in range(used):
            np.dot(query, self.array[b], out=out[b * BLOCK:(b + 1) * BLOCK])
        return out[:count]


_MATRICES: dict[str, Matrix] = {}
_BLAS_LIMITED = False


def open_matrix(home: Home, file: str, dimension: int, count: int) -> Matrix | None:
    path = vectors_dir(home) / file
    matrix = _MATRICES.get(str(path))
    if matrix is None or matrix.capacity < count:
        try:
            matrix = Matrix(path, dimension)
        except (OSError, ValueError):
            _MATRICES.pop(str(path), None)
            return None
        for other in [p for p in _MATRICES if Path(p).parent == path.parent and p != str(path)]:
            del _MATRICES[other]  # superseded files (their mappings close with the arrays)
        _MATRICES[str(path)] = matrix
    return matrix if matrix.capacity >= count else None


def single_threaded_blas() -> None:
    """gemv is memory-bound: a second BLAS thread gains nothing on 2 cores and, when the
    cores are busy (the LLM, the worker), spin-waiting threads turned a 8 ms scan into
    200 ms at p95. Limit BLAS to one thread, once per process."""
    global _BLAS_LIMITED
    if _BLAS_LIMITED:
        return
    _BLAS_LIMITED = True
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - comes with the dependencies
        return
    threadpool_limits(1, user_api="blas")


@dataclass(frozen=True)
class MatrixState:
    model: str
    file: str
    dimension: int
    count: int
    dead: int
    generation: int


def matrix_state(db: sqlite3.Connection) -> MatrixState | None:
    row = db.execute("SELECT model, file, dimension, count, dead, generation FROM vector_matrix"
                     " WHERE id = 1").fetchone()
    return MatrixState(*row) if row else None


def _with_array(path: Path, dimension: int, blocks: int, fn: Callable[[np.ndarray], None]) -> None:
    """Map ``path`` writable (grown to ``blocks`` blocks if shorter) and call ``fn`` with its
    blocks as an array of shape (blocks, dimension, BLOCK); flushes before returning."""
    import numpy as np

    block_bytes = dimension * BLOCK * 4
    with open(path, "r+b") as handle:
        size = os.fstat(handle.fileno()).st_size
        if size < HEADER + blocks * block_bytes:
            handle.truncate(HEADER + blocks * block_bytes)
            size = HEADER + blocks * block_bytes
        have = (size - HEADER) // block_bytes
        if not have:
            return
        region = mmap.mmap(handle.fileno(), HEADER + have * block_bytes)
        try:
            fn(np.frombuffer(region, dtype=np.float32, offset=HEADER)
               .reshape(have, dimension, BLOCK))
            region.flush()
        finally:
            region.close()  # fn's views are gone once it returned


def _create_file(path: Path, dimension: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    head = MAGIC + struct.pack("<II", dimension, BLOCK)
    with open(path, "wb") as handle:
        handle.write(head + b"\0" * (HEADER - len(head)))


def _write_columns(path: Path, dimension: int, start: int, vectors: np.ndarray) -> None:
    """Columns ``start …`` of the file get ``vectors`` (one row per item)."""
    if not len(vectors):
        return

    def fill(array: np.ndarray) -> None:
        done = 0
        while done < len(vectors):
            block, column = divmod(start + done, BLOCK)
            take = min(BLOCK - column, len(vectors) - done)
            array[block, :, column:column + take] = vectors[done:done + take].T
            done += take

    _with_array(path, dimension, -(-(start + len(vectors)) // BLOCK), fill)


def _zero_columns(path: Path, dimension: int, slots: Sequence[int]) -> None:
    """Overwrite columns with zeros in place: a forgotten item's vector leaves the file."""
    if not slots or not path.is_file():
        return

    def clear(array: np.ndarray) -> None:
        for slot in slots:
            block, column = divmod(slot, BLOCK)
            if block < len(array):
                array[block, :, column] = 0.0

    _with_array(path, dimension, 0, clear)


def _valid_file(path: Path, dimension: int, count: int) -> bool:
    """The file has our header and room for ``count`` columns."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(HEADER)
            size = os.fstat(handle.fileno()).st_size
    except OSError:
        return False
    return (len(head) == HEADER and head[:8] == MAGIC
            and struct.unpack_from("<II", head, 8) == (dimension, BLOCK)
            and size >= HEADER + -(-count // BLOCK) * dimension * BLOCK * 4)


_LIVE = ("SELECT v.key, v.content_hash, e.vector FROM vector_items v"
         " JOIN embeddings e ON e.content_hash = v.content_hash AND e.model = ?")


def refresh_vectors(store: ProjectionStore) -> int:
    """Bring the matrix file in line with the projection and the cache; returns how many
    columns changed. Cheap when nothing did (one integer comparison). Runs under the
    projection db's write lock, so two processes never write the file at once.

    Columns of items that are gone (forgotten, replaced) are overwritten with zeros in place
    first, whatever follows; new vectors are appended; the file is rewritten (new name) when
    the model changed, when it is missing or unreadable, or when more than a quarter of its
    columns (and at least 1,024) are dead. Files of other models or older rewrites are
    deleted."""
    db = store.db
    try:
        db.execute("SELECT 1 FROM vector_generation").fetchone()
        db.execute("SELECT 1 FROM vector_items LIMIT 1").fetchone()
    except sqlite3.OperationalError as exc:
        if missing_table(exc):
            return 0  # the vectors projection has not run here
        raise
    with write_transaction(db):
        return _refresh(db, store.home)


def _refresh(db: sqlite3.Connection, home: Home) -> int:
    active = active_model(db)
    state = matrix_state(db)
    current = generation(db)
    directory = vectors_dir(home)
    path = directory / state.file if state else None
    if _up_to_date(state, active, path, current):
        # Every change of what the matrix should hold bumps the generation (an item stored
        # with a cached vector, any item removed, a model chosen, vectors embedded): with it
        # unchanged there is nothing gone and nothing new, so skip the scan of every slot.
        return 0
    gone = _zero_gone(db, state, path) if state is not None else []
    if active is None:
        db.execute("DELETE FROM vector_slots")
        db.execute("DELETE FROM vector_matrix")
        _remove_files(directory, keep=None)
        return len(gone)
    if (state is None or path is None or state.model != active.key
            or state.dimension != active.dimension
            or not _valid_file(path, active.dimension, state.count)):
        return len(gone) + _rewrite(db, directory, active, current)
    if state.generation == current and not gone:
        return 0
    added = _append_new(db, state, path, active, current, len(gone))
    if added is None:  # too many dead columns: compact
        return len(gone) + _rewrite(db, directory, active, current)
    _remove_files(directory, keep=state.file)
    return len(gone) + added


def _up_to_date(state: MatrixState | None, active: ActiveModel | None, path: Path | None,
                current: int) -> bool:
    return (state is not None and active is not None and path is not None
            and state.generation == current and state.model == active.key
            and state.dimension == active.dimension
            and _valid_file(path, active.dimension, state.count))


def _zero_gone(db: sqlite3.Connection, state: MatrixState, path: Path | None) -> list[int]:
    """Zero the columns of items that are gone (forgotten, replaced) in place, and free
    their slots; returns the slots."""
    gone = [row[0] for row in db.execute(
        "SELECT slot FROM vector_slots s WHERE NOT EXISTS (SELECT 1 FROM vector_items v"
        " WHERE v.key = s.key AND v.content_hash = s.content_hash) ORDER BY slot")]
    if gone and path is not None:
        _zero_columns(path, state.dimension, gone)
        fsync_file(path)
    for start in range(0, len(gone), 500):
        chunk = gone[start:start + 500]
        db.execute(f"DELETE FROM vector_slots WHERE slot IN ({','.join('?' * len(chunk))})",
                   chunk)
    return gone


def _append_new(db: sqlite3.Connection, state: MatrixState, path: Path, active: ActiveModel,
                current: int, gone: int) -> int | None:
    """Append the vectors of items the file does not have as new columns; returns how many,
    or None when the dead columns would then exceed a third of the live ones (and
    ``MIN_DEAD_TO_COMPACT``) and the file should be rewritten instead."""
    added = db.execute(
        _LIVE + " WHERE NOT EXISTS (SELECT 1 FROM vector_slots s WHERE s.key = v.key)"
        " ORDER BY v.seq, v.key", (active.key,)).fetchall()
    dead = state.dead + gone
    live = state.count - dead + len(added)
    if dead > max(MIN_DEAD_TO_COMPACT, live // 3):
        return None
    if added:
        vectors = matrix_of([row[2] for row in added], active.dimension)
        _write_columns(path, active.dimension, state.count, vectors)
        fsync_file(path)
        db.executemany("INSERT INTO vector_slots (slot, key, content_hash) VALUES (?, ?, ?)",
                       [(state.count + i, row[0], row[1]) for i, row in enumerate(added)])
    db.execute("UPDATE vector_matrix SET count = ?, dead = ?, generation = ? WHERE id = 1",
               (state.count + len(added), dead, current))
    return len(added)


def _rewrite(db: sqlite3.Connection, directory: Path, active: ActiveModel, current: int) -> int:
    """Write the whole file under a new name; returns its column count. Readers still on the
    old file keep their mapping, and every reader checks each hit against the projection."""
    name = f"{active.key}.{secrets.token_hex(4)}.f32"
    new_path = directory / name
    _create_file(new_path, active.dimension)
    db.execute("DELETE FROM vector_slots")
    cursor = db.execute(_LIVE + " ORDER BY v.seq, v.key", (active.key,))
    count = 0
    while rows := cursor.fetchmany(BLOCK):
        _write_columns(new_path, active.dimension, count,
                       matrix_of([r[2] for r in rows], active.dimension))
        db.executemany("INSERT INTO vector_slots (slot, key, content_hash) VALUES (?, ?, ?)",
                       [(count + i, r[0], r[1]) for i, r in enumerate(rows)])
        count += len(rows)
    fsync_file(new_path)
    db.execute("INSERT OR REPLACE INTO vector_matrix (id, model, file, dimension, count, dead,"
               " generation) VALUES (1, ?, ?, ?, ?, 0, ?)",
               (active.key, name, active.dimension, count, current))
    _remove_files(directory, keep=name)
    return count


def _remove_files(directory: Path, keep: str | None) -> None:
    """Delete matrix files other than ``keep`` (older rewrites, other models)."""
    if not directory.is_dir():
        return
    for path in directory.glob("*.f32"):
        if path.name != keep:
            path.unlink(missing_ok=True)
            _MATRICES.pop(str(path), None)

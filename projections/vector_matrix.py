"""The matrix file: every live item's vector laid out for a fast scan, and its refresh.

``var/vectors/<model key>.<id>.f32`` (:class:`Matrix`), plus ``vector_slots`` (slot → item
key and content hash) and ``vector_matrix`` (which file, how many slots, at which generation).
It is derived from the vectors projection and the embeddings cache by
:func:`refresh_vectors`; a reader checks every hit against the projection (item still there,
same content: :mod:`projections.vector_search`), so a stale or missing file costs speed,
never a forgotten or wrong hit.
"""
from __future__ import annotations

import mmap
import os
import secrets
import sqlite3
import struct
import threading
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

BLOCK = 4096            # slots per block of the matrix file
HEADER = 64             # bytes before the first block
MAGIC = b"DIARVEC2"     # 2: rows plus sign bits (1: columns, no bits — rewritten on refresh)
MIN_DEAD_TO_COMPACT = 1024


def vectors_dir(home: Home) -> Path:
    return home.root / "vectors"


def words_of(dimension: int) -> int:
    """64-bit words of one vector's sign code."""
    return -(-dimension // 64)


def block_bytes(dimension: int) -> int:
    return BLOCK * (dimension * 4 + words_of(dimension) * 8)


def sign_codes(vectors: np.ndarray) -> np.ndarray:
    """One bit per component (set when positive), as ``words_of(dimension)`` uint64 words
    per vector; zero bits pad the last word."""
    import numpy as np

    words = words_of(vectors.shape[1])
    packed = np.packbits(vectors > 0, axis=1)
    padded = np.zeros((len(vectors), words * 8), dtype=np.uint8)
    padded[:, :packed.shape[1]] = packed
    return padded.view("<u8")


class Matrix:
    """A read-only, memory-mapped matrix file.

    Layout: a 64-byte header (``DIARVEC2``, dimension, block size), then blocks of
    ``BLOCK`` slots. A block holds its slots' vectors as rows (``BLOCK`` × dimension
    float32), then their sign codes as bit planes: word w of every slot's code
    (:func:`sign_codes`), ``BLOCK`` uint64, then word w + 1, and so on. Search reads the
    planes of every slot (48 bytes a slot for 384 dimensions, against 1,536 for its floats:
    the Hamming distance between sign codes, a popcount over contiguous words) and reads the
    rows of only the few thousand nearest by that distance, which it scores exactly
    (:meth:`nearest`). Blocks let the file grow by appending without rewriting it. Unused
    slots are zero.
    """

    def __init__(self, path: Path, dimension: int) -> None:
        self.path = path
        with open(path, "rb") as handle:
            head = handle.read(HEADER)
            if len(head) < HEADER or head[:8] != MAGIC:
                raise ValueError(f"{path} is not a vector matrix file")
            dim, block = struct.unpack_from("<II", head, 8)
            if dim != dimension or block != BLOCK:
                raise ValueError(f"{path} has dimension {dim}, block {block}")
            size = os.fstat(handle.fileno()).st_size
            self.blocks = (size - HEADER) // block_bytes(dimension)
            # (MAP_POPULATE was measured, with the older layout: no faster for a cold
            # process's first scan)
            self.map = mmap.mmap(handle.fileno(), HEADER + self.blocks * block_bytes(dimension),
                                 prot=mmap.PROT_READ) if self.blocks else None
        self.dimension = dimension
        self.rows, self.planes = _views(self.map or b"", dimension, self.blocks)
        self.flat = _flat_rows(self.map, dimension, self.blocks)

    @property
    def capacity(self) -> int:
        return self.blocks * BLOCK

    def vectors(self, slots: np.ndarray) -> np.ndarray:
        """The vectors in these slots, one row each."""
        import numpy as np

        block, column = np.divmod(slots, BLOCK)
        if self.flat is not None:  # one take from a 2-D view: 1.1 against 1.6 ms for 4,096
            return np.take(self.flat, block * (self.flat.shape[0] // self.blocks) + column,
                           axis=0)
        return self.rows[block, column]

    def nearest(self, query: np.ndarray, count: int, keep: int) -> tuple[np.ndarray, np.ndarray]:
        """Slots among the first ``count`` with their exact cosines: every slot when
        ``count <= keep``, else the ``keep`` nearest by the Hamming distance of sign codes
        (more on a tie at the edge). The exact top few of the result are then those of a full
        scan in nearly every case (``benchmarks/bench_prescan.py``)."""
        return Scoring(self, self.candidates(query, count, keep), query).result()

    def candidates(self, query: np.ndarray, count: int, keep: int) -> np.ndarray:
        """The slots :meth:`nearest` scores exactly, ascending."""
        import numpy as np

        if count <= keep:
            return np.arange(count)
        code = sign_codes(query.reshape(1, -1))[0]
        planes = self.planes[:-(-count // BLOCK)]
        distance = np.bitwise_count(planes[:, 0, :] ^ code[0]).astype(np.uint16)
        for word in range(1, len(code)):
            distance += np.bitwise_count(planes[:, word, :] ^ code[word])
        distance = distance.reshape(-1)[:count]
        enough = np.searchsorted(np.cumsum(np.bincount(distance)), keep)
        return np.nonzero(distance <= enough)[0]


class Scoring:
    """The exact cosines of a query to the vectors in ``slots``, computed in chunks by
    whichever threads call :meth:`run`: recall's own thread, done with its lexical search,
    takes chunks the query's thread has not got to (reading the few thousand rows is most
    of a scan). The scores are bit for bit those of one product over all the rows: chunks
    are whole multiples of :attr:`CHUNK` rows with the remainder in the last one, so BLAS
    meets each row where it would in one call (tests/test_vectors.py)."""

    CHUNK = 512

    def __init__(self, matrix: Matrix, slots: np.ndarray, query: np.ndarray) -> None:
        import threading

        import numpy as np

        self.matrix, self.slots, self.query = matrix, slots, query
        self.scores = np.empty(len(slots), dtype=np.float32)
        starts = list(range(0, len(slots), self.CHUNK))
        if len(starts) > 1 and len(slots) - starts[-1] < self.CHUNK:
            starts.pop()  # the remainder joins the last chunk
        self._chunks = list(zip(starts, [*starts[1:], len(slots)], strict=True))
        self._lock = threading.Lock()
        self._taken = 0
        self._left = len(self._chunks)
        self._failed: BaseException | None = None
        self._done = threading.Event()
        if not self._left:
            self._done.set()

    def run(self) -> None:
        """Score chunks until none is left to take."""
        while True:
            with self._lock:
                if self._taken == len(self._chunks):
                    return
                start, end = self._chunks[self._taken]
                self._taken += 1
            try:
                self.scores[start:end] = self.matrix.vectors(self.slots[start:end]) @ self.query
            except BaseException as exc:
                self._failed = self._failed or exc
                raise
            finally:
                with self._lock:
                    self._left -= 1
                    if not self._left:
                        self._done.set()

    def result(self) -> tuple[np.ndarray, np.ndarray]:
        """Slots and their scores, once every chunk is done (this thread helping)."""
        self.run()
        self._done.wait()
        if self._failed is not None:
            raise self._failed
        return self.slots, self.scores


def _views(buffer: mmap.mmap | bytes, dimension: int, blocks: int) -> tuple[np.ndarray, np.ndarray]:
    """The rows (blocks, BLOCK, dimension) and sign-code planes (blocks, words, BLOCK) of a
    mapped file."""
    import numpy as np

    words, size = words_of(dimension), block_bytes(dimension)
    if not blocks:
        return (np.zeros((0, BLOCK, dimension), dtype=np.float32),
                np.zeros((0, words, BLOCK), dtype=np.uint64))
    rows = np.ndarray((blocks, BLOCK, dimension), dtype=np.float32, buffer=buffer,
                      offset=HEADER, strides=(size, dimension * 4, 4))
    planes = np.ndarray((blocks, words, BLOCK), dtype="<u8", buffer=buffer,
                        offset=HEADER + BLOCK * dimension * 4, strides=(size, BLOCK * 8, 8))
    return rows, planes


def _flat_rows(buffer: mmap.mmap | None, dimension: int, blocks: int) -> np.ndarray | None:
    """The file after its header as one (rows, dimension) float32 array, when a block's
    size is a whole number of rows (384 dimensions: 4,224 rows a block, the last 128 of them
    its sign-code planes); None otherwise. A slot's row is then block × rows a block +
    column."""
    import numpy as np

    size, row = block_bytes(dimension), dimension * 4
    if buffer is None or not blocks or size % row:
        return None
    return np.ndarray((blocks * (size // row), dimension), dtype=np.float32, buffer=buffer,
                      offset=HEADER)


_MATRICES: dict[str, Matrix] = {}
# recall's prefetch thread and its caller may open a matrix at once
_MATRICES_LOCK = threading.Lock()
_BLAS_LIMITED = False


def open_matrix(home: Home, file: str, dimension: int, count: int) -> Matrix | None:
    path = vectors_dir(home) / file
    with _MATRICES_LOCK:
        matrix = _MATRICES.get(str(path))
        if matrix is None or matrix.capacity < count:
            try:
                matrix = Matrix(path, dimension)
            except (OSError, ValueError):
                _MATRICES.pop(str(path), None)
                return None
            for other in [p for p in _MATRICES
                          if Path(p).parent == path.parent and p != str(path)]:
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


def _with_views(path: Path, dimension: int, blocks: int,
                fn: Callable[[np.ndarray, np.ndarray], None]) -> None:
    """Map ``path`` writable (grown to ``blocks`` blocks if shorter) and call ``fn`` with its
    rows and sign-code planes (:func:`_views`); flushes before returning."""
    size_of_block = block_bytes(dimension)
    with open(path, "r+b") as handle:
        size = os.fstat(handle.fileno()).st_size
        if size < HEADER + blocks * size_of_block:
            handle.truncate(HEADER + blocks * size_of_block)
            size = HEADER + blocks * size_of_block
        have = (size - HEADER) // size_of_block
        if not have:
            return
        region = mmap.mmap(handle.fileno(), HEADER + have * size_of_block)
        try:
            fn(*_views(region, dimension, have))
            region.flush()
        finally:
            region.close()  # fn's views are gone once it returned


def _create_file(path: Path, dimension: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    head = MAGIC + struct.pack("<II", dimension, BLOCK)
    with open(path, "wb") as handle:
        handle.write(head + b"\0" * (HEADER - len(head)))


def _write_slots(path: Path, dimension: int, start: int, vectors: np.ndarray) -> None:
    """Slots ``start …`` of the file get ``vectors`` (one row per item) and their codes."""
    if not len(vectors):
        return
    codes = sign_codes(vectors)

    def fill(rows: np.ndarray, planes: np.ndarray) -> None:
        done = 0
        while done < len(vectors):
            block, column = divmod(start + done, BLOCK)
            take = min(BLOCK - column, len(vectors) - done)
            rows[block, column:column + take] = vectors[done:done + take]
            planes[block, :, column:column + take] = codes[done:done + take].T
            done += take

    _with_views(path, dimension, -(-(start + len(vectors)) // BLOCK), fill)


def _zero_slots(path: Path, dimension: int, slots: Sequence[int]) -> None:
    """Overwrite slots with zeros in place: a forgotten item's vector leaves the file."""
    if not slots or not path.is_file():
        return

    def clear(rows: np.ndarray, planes: np.ndarray) -> None:
        for slot in slots:
            block, column = divmod(slot, BLOCK)
            if block < len(rows):
                rows[block, column] = 0.0
                planes[block, :, column] = 0

    _with_views(path, dimension, 0, clear)


def _valid_file(path: Path, dimension: int, count: int) -> bool:
    """The file has our header and room for ``count`` slots."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(HEADER)
            size = os.fstat(handle.fileno()).st_size
    except OSError:
        return False
    return (len(head) == HEADER and head[:8] == MAGIC
            and struct.unpack_from("<II", head, 8) == (dimension, BLOCK)
            and size >= HEADER + -(-count // BLOCK) * block_bytes(dimension))


_LIVE = ("SELECT v.key, v.content_hash, e.vector FROM vector_items v"
         " JOIN embeddings e ON e.content_hash = v.content_hash AND e.model = ?")


def refresh_vectors(store: ProjectionStore) -> int:
    """Bring the matrix file in line with the projection and the cache; returns how many
    slots changed. Cheap when nothing did (one integer comparison). Runs under the
    projection db's write lock, so two processes never write the file at once.

    Slots of items that are gone (forgotten, replaced) are overwritten with zeros in place
    first, whatever follows; new vectors are appended; the file is rewritten (new name) when
    the model changed, when it is missing or unreadable, or when more than a quarter of its
    slots (and at least 1,024) are dead. Files of other models or older rewrites are
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
    if added is None:  # too many dead slots: compact
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
    """Zero the slots of items that are gone (forgotten, replaced) in place, and free
    their slots; returns the slots."""
    gone = [row[0] for row in db.execute(
        "SELECT slot FROM vector_slots s WHERE NOT EXISTS (SELECT 1 FROM vector_items v"
        " WHERE v.key = s.key AND v.content_hash = s.content_hash) ORDER BY slot")]
    if gone and path is not None:
        _zero_slots(path, state.dimension, gone)
        fsync_file(path)
    for start in range(0, len(gone), 500):
        chunk = gone[start:start + 500]
        db.execute(f"DELETE FROM vector_slots WHERE slot IN ({','.join('?' * len(chunk))})",
                   chunk)
    return gone


def _append_new(db: sqlite3.Connection, state: MatrixState, path: Path, active: ActiveModel,
                current: int, gone: int) -> int | None:
    """Append the vectors of items the file does not have in new slots; returns how many,
    or None when the dead slots would then exceed a third of the live ones (and
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
        _write_slots(path, active.dimension, state.count, vectors)
        fsync_file(path)
        db.executemany("INSERT INTO vector_slots (slot, key, content_hash) VALUES (?, ?, ?)",
                       [(state.count + i, row[0], row[1]) for i, row in enumerate(added)])
    db.execute("UPDATE vector_matrix SET count = ?, dead = ?, generation = ? WHERE id = 1",
               (state.count + len(added), dead, current))
    return len(added)


def _rewrite(db: sqlite3.Connection, directory: Path, active: ActiveModel, current: int) -> int:
    """Write the whole file under a new name; returns its slot count. Readers still on the
    old file keep their mapping, and every reader checks each hit against the projection."""
    name = f"{active.key}.{secrets.token_hex(4)}.f32"
    new_path = directory / name
    _create_file(new_path, active.dimension)
    db.execute("DELETE FROM vector_slots")
    cursor = db.execute(_LIVE + " ORDER BY v.seq, v.key", (active.key,))
    count = 0
    while rows := cursor.fetchmany(BLOCK):
        _write_slots(new_path, active.dimension, count,
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

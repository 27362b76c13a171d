"""The vectors projection: which searchable item has which content, under which model — and
the embeddings themselves, kept in a cache that a rebuild does not drop.

Three layers, only the first of which is a projection in the engine's sense:

1. **The projection** (``vector_items`` and the active model in ``vector_model``): items in
   and out exactly as the search projection (:mod:`projections.item_index`), each with its
   ``content_hash``, plus the model the last ``EmbeddingModelChosen`` named. Pure, replayable,
   digested (floats are not: they depend on when the embedder ran, not on the log).
2. **The embeddings cache** (``embeddings(content_hash, model, vector)``): one float32 vector
   per distinct content and model key (:attr:`ActiveModel.key`). ``drop()`` leaves it alone,
   so a replay re-embeds nothing that was embedded before. It only ever holds vectors of
   content some item still has: when a ``MemoryForgotten`` (or a MEMORY.md rewrite) removes
   the last item with a content hash, its vectors go too, in the same transaction.
   :func:`embed_pending` fills it; the text comes from the search projection (the one place
   the items' text lives), so the vectors projection stores no text of its own.
3. **The matrix file** (``var/vectors/<model key>.<id>.f32``): every live item's vector, laid
   out for a fast scan (see :class:`Matrix`), plus ``vector_slots`` (column → item key) and
   ``vector_matrix`` (which file, how many columns, at which generation). It is derived from
   1 and 2 by :func:`refresh_vectors`, which :func:`embed_pending` runs and which the worker
   and ``diarist sync`` run after catching up, and it is never trusted blindly: every hit is
   re-checked (item still there, same content) and re-scored from the cache, so a stale or
   missing file costs speed, never correctness.

``vector_generation`` counts changes of what the matrix should hold (an item with a cached
vector added or removed, a model chosen, vectors embedded); the matrix records the
generation it was built for, so "stale" is one integer comparison.
"""
from __future__ import annotations

import mmap
import os
import secrets
import sqlite3
import struct
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from events import Home, RecordedEvent

from .embedding import ActiveModel
from .engine import fsync_file as _fsync
from .item_index import ITEM_EVENTS, ItemIndexProjector
from .items import Item

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from .embedding import OnnxEmbedder
    from .engine import ProjectionStore

DbLike = Any  # ProjectionStore | sqlite3.Connection

BLOCK = 4096            # columns per block of the matrix file
HEADER = 64             # bytes before the first block
MAGIC = b"DIARVEC1"
MIN_DEAD_TO_COMPACT = 1024
REFRESH_EVERY_S = 10.0  # embed_pending refreshes the matrix at least this often


class VectorsProjector(ItemIndexProjector):
    name = "vectors"
    version = 1
    table = "vector_items"
    handles = ITEM_EVENTS | {"EmbeddingModelChosen"}

    def __init__(self) -> None:
        self._removed: set[str] = set()

    def create(self, db: sqlite3.Connection) -> None:
        self.create_items_table(db)
        db.execute("CREATE INDEX IF NOT EXISTS vector_items_hash ON vector_items (content_hash)")
        db.execute("CREATE TABLE IF NOT EXISTS vector_model ("
                   " id INTEGER PRIMARY KEY CHECK (id = 1), model TEXT NOT NULL,"
                   " dimension INTEGER NOT NULL, checksum TEXT NOT NULL, seq INTEGER NOT NULL)")
        create_cache(db)
        bump(db)  # the projection was (re)created: the matrix must be re-checked

    def drop(self, db: sqlite3.Connection) -> None:
        # The embeddings cache, the matrix and the generation counter survive: a rebuild
        # re-embeds nothing that was embedded before.
        db.execute("DROP TABLE IF EXISTS vector_model")
        self.drop_items_table(db)

    def apply(self, db: sqlite3.Connection, event: RecordedEvent) -> None:
        if event.type == "EmbeddingModelChosen":
            p = event.payload
            db.execute("INSERT OR REPLACE INTO vector_model (id, model, dimension, checksum, seq)"
                       " VALUES (1, ?, ?, ?, ?)",
                       (p["model"], int(p["dimension"]), p["checksum"], event.seq))
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
        active = _active_key(db)
        if active and db.execute("SELECT 1 FROM embeddings WHERE content_hash = ? AND model = ?",
                                 (item.content_hash, active)).fetchone():
            bump(db)  # already embedded (a replay, or the same text again): joins the matrix

    def unstore(self, db: sqlite3.Connection, rowid: int, key: str) -> None:
        row = db.execute("SELECT content_hash FROM vector_items WHERE rowid = ?", (rowid,)).fetchone()
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


# --- the cache and the generation ---------------------------------------------------------------


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


def _db(store_or_db: DbLike) -> sqlite3.Connection:
    return store_or_db if isinstance(store_or_db, sqlite3.Connection) else store_or_db.db


def _missing_table(exc: sqlite3.OperationalError) -> bool:
    return "no such table" in str(exc)


def active_model(store_or_db: DbLike) -> ActiveModel | None:
    """The model the vectors projection has active (the last ``EmbeddingModelChosen`` it
    applied), or None when none has been chosen (or the projection does not exist yet)."""
    try:
        row = _db(store_or_db).execute(
            "SELECT model, dimension, checksum FROM vector_model WHERE id = 1").fetchone()
    except sqlite3.OperationalError as exc:
        if _missing_table(exc):
            return None
        raise
    return ActiveModel(row[0], row[1], row[2]) if row else None


def _active_key(db: sqlite3.Connection) -> str | None:
    active = active_model(db)
    return active.key if active else None


def pending_count(store_or_db: DbLike) -> int:
    """Distinct contents that have items but no vector under the active model."""
    db = _db(store_or_db)
    active = active_model(db)
    if active is None:
        return 0
    return db.execute(
        "SELECT COUNT(DISTINCT v.content_hash) FROM vector_items v WHERE NOT EXISTS ("
        " SELECT 1 FROM embeddings e WHERE e.content_hash = v.content_hash AND e.model = ?)",
        (active.key,)).fetchone()[0]


# --- embedding what is pending --------------------------------------------------------------------


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
            "SELECT s.content_hash, f.content FROM search_items s"
            " JOIN search_fts f ON f.rowid = s.rowid"
            f" WHERE s.key IN ({','.join('?' * len(keys))})", keys).fetchall()
    except sqlite3.OperationalError as exc:
        if _missing_table(exc):
            return {}
        raise
    hashes = {h for h, _ in wanted}
    return {h: text for h, text in rows if h in hashes}


def embed_pending(store: "ProjectionStore", embedder: "OnnxEmbedder", batch_size: int = 64, *,
                  progress: Callable[[int], None] | None = None, refresh: bool = True) -> int:
    """Embed every content that has items but no vector under the active model, newest
    first, ``batch_size`` texts at a time; each batch's vectors are written in one
    transaction (and only for content some item still has: a forget may have run while the
    batch was embedding). Then brings the matrix file up to date (``refresh``). Returns how
    many texts were embedded. With no model chosen it does nothing and returns 0."""
    import numpy as np

    db = store.db
    active = active_model(db)
    if active is None:
        if refresh:
            refresh_vectors(store)
        return 0
    if embedder.model_id != active.key:
        raise ValueError(f"the embedder is for {embedder.model_id}, the active model is {active.key}")
    pending = _pending(db, active.key)
    done = 0
    last_refresh = time.monotonic()
    for start in range(0, len(pending), batch_size):
        texts = _texts(db, pending[start:start + batch_size])
        if not texts:
            continue
        hashes = sorted(texts)
        vectors = np.ascontiguousarray(embedder.embed([texts[h] for h in hashes]), dtype=np.float32)
        if vectors.shape != (len(hashes), active.dimension):
            raise ValueError(f"the embedder gave {vectors.shape}, expected "
                             f"({len(hashes)}, {active.dimension})")
        db.execute("BEGIN IMMEDIATE")
        try:
            written = 0
            for content_hash, vector in zip(hashes, vectors):
                written += db.execute(
                    "INSERT OR IGNORE INTO embeddings (content_hash, model, vector)"
                    " SELECT ?, ?, ? WHERE EXISTS ("
                    "  SELECT 1 FROM vector_items WHERE content_hash = ?)",
                    (content_hash, active.key, vector.tobytes(), content_hash)).rowcount
            if written:
                bump(db)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        done += len(hashes)
        if progress:
            progress(len(hashes))
        if refresh and time.monotonic() - last_refresh > REFRESH_EVERY_S:
            refresh_vectors(store)  # a long backlog: make what is done searchable quickly
            last_refresh = time.monotonic()
    if refresh:
        refresh_vectors(store)
    return done


# --- the matrix file ------------------------------------------------------------------------------


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

    def scores(self, query: "np.ndarray", count: int) -> "np.ndarray":
        import numpy as np

        used = -(-count // BLOCK)
        out = np.empty(used * BLOCK, dtype=np.float32)
        for b in range(used):
            np.dot(query, self.array[b], out=out[b * BLOCK:(b + 1) * BLOCK])
        return out[:count]


_MATRICES: dict[str, Matrix] = {}
_BLAS_LIMITED = False


def _open_matrix(home: Home, file: str, dimension: int, count: int) -> Matrix | None:
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


def _single_threaded_blas() -> None:
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


def _matrix_state(db: sqlite3.Connection) -> MatrixState | None:
    row = db.execute("SELECT model, file, dimension, count, dead, generation FROM vector_matrix"
                     " WHERE id = 1").fetchone()
    return MatrixState(*row) if row else None


def _with_array(path: Path, dimension: int, blocks: int, fn: Callable[["np.ndarray"], None]) -> None:
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
            fn(np.frombuffer(region, dtype=np.float32, offset=HEADER).reshape(have, dimension, BLOCK))
            region.flush()
        finally:
            region.close()  # fn's views are gone once it returned


def _create_file(path: Path, dimension: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    head = MAGIC + struct.pack("<II", dimension, BLOCK)
    with open(path, "wb") as handle:
        handle.write(head + b"\0" * (HEADER - len(head)))


def _write_columns(path: Path, dimension: int, start: int, vectors: "np.ndarray") -> None:
    """Columns ``start …`` of the file get ``vectors`` (one row per item)."""
    if not len(vectors):
        return

    def fill(array: "np.ndarray") -> None:
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

    def clear(array: "np.ndarray") -> None:
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


def refresh_vectors(store: "ProjectionStore") -> int:
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
        if _missing_table(exc):
            return 0  # the vectors projection has not run here
        raise
    db.execute("BEGIN IMMEDIATE")
    try:
        changed = _refresh(db, store.home)
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    return changed


def _refresh(db: sqlite3.Connection, home: Home) -> int:
    active = active_model(db)
    state = _matrix_state(db)
    current_generation = generation(db)
    directory = vectors_dir(home)
    path = directory / state.file if state else None
    if (state is not None and active is not None and path is not None
            and state.generation == current_generation and state.model == active.key
            and state.dimension == active.dimension
            and _valid_file(path, active.dimension, state.count)):
        # Every change of what the matrix should hold bumps the generation (an item stored
        # with a cached vector, any item removed, a model chosen, vectors embedded): with it
        # unchanged there is nothing gone and nothing new, so skip the scan of every slot.
        return 0
    changed = 0
    gone: list[int] = []
    if state is not None:
        gone = [row[0] for row in db.execute(
            "SELECT slot FROM vector_slots s WHERE NOT EXISTS (SELECT 1 FROM vector_items v"
            " WHERE v.key = s.key AND v.content_hash = s.content_hash) ORDER BY slot")]
        if gone and path is not None:
            _zero_columns(path, state.dimension, gone)
            _fsync(path)
        for start in range(0, len(gone), 500):
            chunk = gone[start:start + 500]
            db.execute(f"DELETE FROM vector_slots WHERE slot IN ({','.join('?' * len(chunk))})",
                       chunk)
        changed += len(gone)
    if active is None:
        db.execute("DELETE FROM vector_slots")
        db.execute("DELETE FROM vector_matrix")
        _remove_files(directory, keep=None)
        return changed

    rebuild = (state is None or state.model != active.key or state.dimension != active.dimension
               or path is None or not _valid_file(path, active.dimension, state.count))
    if not rebuild:
        assert state is not None and path is not None
        if state.generation == current_generation and not gone:
            return changed
        added = db.execute(
            _LIVE + " WHERE NOT EXISTS (SELECT 1 FROM vector_slots s WHERE s.key = v.key)"
            " ORDER BY v.seq, v.key", (active.key,)).fetchall()
        dead = state.dead + len(gone)
        live = state.count - dead + len(added)
        if dead > max(MIN_DEAD_TO_COMPACT, live // 3):
            rebuild = True
        else:
            if added:
                vectors = _matrix_of([row[2] for row in added], active.dimension)
                _write_columns(path, active.dimension, state.count, vectors)
                _fsync(path)
                db.executemany("INSERT INTO vector_slots (slot, key, content_hash) VALUES (?, ?, ?)",
                               [(state.count + i, row[0], row[1]) for i, row in enumerate(added)])
            db.execute("UPDATE vector_matrix SET count = ?, dead = ?, generation = ? WHERE id = 1",
                       (state.count + len(added), dead, current_generation))
            _remove_files(directory, keep=state.file)
            return changed + len(added)

    # (Re)write the whole file under a new name; readers still on the old one keep their
    # mapping, and any reader checks every hit against the projection anyway.
    name = f"{active.key}.{secrets.token_hex(4)}.f32"
    new_path = directory / name
    _create_file(new_path, active.dimension)
    db.execute("DELETE FROM vector_slots")
    cursor = db.execute(_LIVE + " ORDER BY v.seq, v.key", (active.key,))
    count = 0
    while True:
        rows = cursor.fetchmany(BLOCK)
        if not rows:
            break
        _write_columns(new_path, active.dimension, count, _matrix_of([r[2] for r in rows],
                                                                     active.dimension))
        db.executemany("INSERT INTO vector_slots (slot, key, content_hash) VALUES (?, ?, ?)",
                       [(count + i, r[0], r[1]) for i, r in enumerate(rows)])
        count += len(rows)
    _fsync(new_path)
    db.execute("INSERT OR REPLACE INTO vector_matrix (id, model, file, dimension, count, dead,"
               " generation) VALUES (1, ?, ?, ?, ?, 0, ?)",
               (active.key, name, active.dimension, count, current_generation))
    _remove_files(directory, keep=name)
    return changed + count


def _matrix_of(blobs: Sequence[bytes], dimension: int) -> "np.ndarray":
    import numpy as np

    return np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), dimension)


def _remove_files(directory: Path, keep: str | None) -> None:
    """Delete matrix files other than ``keep`` (older rewrites, other models)."""
    if not directory.is_dir():
        return
    for path in directory.glob("*.f32"):
        if path.name != keep:
            path.unlink(missing_ok=True)
            _MATRICES.pop(str(path), None)


# --- search -----------------------------------------------------------------------------------------


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
    db = _db(store_or_db)
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
        state = _matrix_state(db)
        matrix = None
        if (home is not None and state is not None and state.model == active.key
                and state.dimension == active.dimension):
            matrix = _open_matrix(home, state.file, state.dimension, state.count)
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


def _top(keys: Sequence[str], scores: "np.ndarray", k: int) -> list[tuple[str, float]]:
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
    ranked = sorted(((-float(scores[i]), keys[i]) for i in keep))
    out: list[tuple[str, float]] = []
    seen: set[str] = set()
    for negative, key in ranked:
        if key not in seen:
            seen.add(key)
            out.append((key, -negative))
        if len(out) == k:
            break
    return out


def _exact(db: sqlite3.Connection, active: ActiveModel, query: "np.ndarray", k: int, *,
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
    vectors = _matrix_of([r[1] for r in rows], active.dimension)
    return _top([r[0] for r in rows], vectors @ query, k)


def _from_matrix(db: sqlite3.Connection, active: ActiveModel, matrix: Matrix, count: int,
                 query: "np.ndarray", k: int) -> list[tuple[str, float]]:
    """Candidates from the file's scan, each checked against the projection (item still
    there, same content) and re-scored from the cache; widens the candidate set while too
    few survive the check."""
    import numpy as np

    if not count:
        return []
    _single_threaded_blas()
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
                [active.key] + chunk).fetchall()
        if len(rows) >= k or want >= count:
            break
        want = min(count, want * 4)
    if not rows:
        return []
    vectors = _matrix_of([r[1] for r in rows], active.dimension)
    return _top([r[0] for r in rows], vectors @ query, k)


__all__ = ["VectorsProjector", "active_model", "embed_pending", "pending_count",
           "refresh_vectors", "vector_search", "vectors_dir"]

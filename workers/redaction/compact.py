"""After ``diarist redact`` rewrote the log: leave no copy of what it masked under the home.

1. Rebuild every projection from the rewritten log (``replay``): journals, MEMORY.md, the
   search index, the turns table; cached vectors of content no item has any more are
   dropped and the vector matrix file is refreshed (its dead columns zeroed).
2. Remove queued tasks and queue entries that hold a masked value (a ``mine.extract`` task
   carries turn text).
3. VACUUM each database (``events.db``, ``projections.db``, ``queue.db``) with temporary
   storage in memory — old pages, free pages and the old rows' bytes are not copied — and
   truncate its WAL (``wal_checkpoint(TRUNCATE)``, retried while another process reads;
   a database whose WAL could not be truncated is reported as busy).
4. Look through every file under the home (``models/`` aside: downloaded weights) for the
   masked values and report any that still holds one (a copy diarist does not manage: a
   backup, an export written into the home).
"""
from __future__ import annotations

import mmap
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from events import EventLog, Home
from events.log import connect
from projections import open_store
from projections.vector_cache import drop_orphan_vectors
from projections.vector_matrix import refresh_vectors

from ..maintenance.queue import drop_containing
from ..queue_port import QueuePort
from ..sync.replay import replay

CHECKPOINT_TRIES = 30     # × (100 ms of busy waiting + 100 ms): give a reader ~6 s to finish
CHECKPOINT_WAIT_S = 0.1


@dataclass
class Compaction:
    vacuumed: list[str] = field(default_factory=list)   # database files compacted
    busy: list[str] = field(default_factory=list)       # WAL not truncated: someone reads
    queue_entries: int = 0                               # queue entries removed
    vectors: int = 0                                     # cached vectors dropped
    leftovers: list[str] = field(default_factory=list)   # files still holding a value


def needles(values: Sequence[str]) -> list[bytes]:
    """The byte forms a value takes in a file: UTF-8, and as JSON escapes it."""
    import json

    out: set[bytes] = set()
    for value in values:
        out.add(value.encode())
        out.add(json.dumps(value, ensure_ascii=False)[1:-1].encode())
        out.add(json.dumps(value)[1:-1].encode())
    return sorted(n for n in out if n)


def compact(home: Home, values: Sequence[str], *, queue: QueuePort) -> Compaction:
    """Steps 1–4 of the module doc (step 2 on ``queue``'s queues); ``values`` (the masked
    texts, in memory only) may be empty when a run only finishes an interrupted one's
    clean-up."""
    done = Compaction()
    replay(home)
    with EventLog(home.events_db) as log, open_store(home, log) as store:
        done.vectors = drop_orphan_vectors(store.db)
        refresh_vectors(store)
    found = needles(values)
    done.queue_entries = _scrub_queue(home, found, queue)
    for path in (home.events_db, home.projections_db, home.queue_db):
        if path.exists():
            if vacuum(path):
                done.vacuumed.append(path.name)
            else:
                done.busy.append(path.name)
    done.leftovers = files_holding(home, found)
    return done


def _scrub_queue(home: Home, found: list[bytes], port: QueuePort) -> int:
    if not found:
        return 0
    removed = 0
    for queue in port.queues(home):  # the mining queue's tasks carry turn text
        try:
            removed += drop_containing(queue, found)
        finally:
            queue.storage.close()
    return removed


def vacuum(path: Path) -> bool:
    """VACUUM ``path`` and truncate its WAL; False when a reader kept the WAL from being
    truncated (the VACUUM itself is done either way)."""
    db = connect(path) if path.name == "events.db" else _plain(path)
    try:
        db.execute("PRAGMA temp_store=MEMORY")  # no temporary copy of the rows on disk
        db.execute("VACUUM")
        # a TRUNCATE checkpoint waits (busy handler) for every reader: wait briefly, retry
        db.execute(f"PRAGMA busy_timeout={int(CHECKPOINT_WAIT_S * 1000)}")
        for _ in range(CHECKPOINT_TRIES):
            busy, _frames, _done = db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            if not busy:
                return True
            time.sleep(CHECKPOINT_WAIT_S)
        return False
    finally:
        db.close()


def _plain(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(str(path), isolation_level=None, timeout=60)
    db.execute("PRAGMA busy_timeout=60000")
    return db


def files_holding(home: Home, found: list[bytes]) -> list[str]:
    """The files under the home (``models/`` aside) whose bytes hold one of ``found``."""
    if not found:
        return []
    out = []
    for path in sorted(home.root.rglob("*")):
        if (not path.is_file() or path.is_symlink()
                or path.relative_to(home.root).parts[0] == home.models_dir.name):
            continue
        if _holds(path, found):
            out.append(path.relative_to(home.root).as_posix())
    return out


def _holds(path: Path, found: list[bytes]) -> bool:
    try:
        with path.open("rb") as handle:
            if path.stat().st_size == 0:
                return False
            with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
                return any(data.find(needle) >= 0 for needle in found)
    except (OSError, ValueError):
        return False

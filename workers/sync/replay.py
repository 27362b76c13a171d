"""``diarist replay``: rebuild every projection from the log, or (``--verify``) rebuild into a
scratch copy and compare digests with the live projections, which are left alone.

The scratch copy lives in the home (``var/scratch/verify-*``), on the same disk and as
private as the data it copies, and is removed when verify ends. A verify that was killed
(``kill -9``, power loss) cannot remove its copy; the next verify does: each copy holds an
``flock`` on its own lock file while it is in use, so a copy whose lock is free is stale.
"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from events import EventLog, Home
from projections import ProjectionStatus, ProjectionStore, open_store
from projections.engine import DEFAULT_BATCH
from projections.vector_matrix import refresh_vectors

from .progress import ProgressFactory, no_progress


def replay(home: Home, *, batch_size: int = DEFAULT_BATCH,
           progress: ProgressFactory = no_progress) -> list[ProjectionStatus]:
    """Drop and rebuild every projection; returns where each one is now."""
    with EventLog(home.events_db) as log, open_store(home, log) as store:
        with progress(log.head() * len(store.projectors), "Replaying") as step:
            for name in store.projectors:
                store.rebuild(name, batch_size=batch_size, progress=step)
        refresh_vectors(store)  # the cached vectors are reused: only the file is checked
        return store.status()


@dataclass(frozen=True)
class Verdict:
    name: str
    position: int
    live: str                 # the live projection's digest
    rebuilt: str              # a fresh rebuild's digest at the same position
    problem: str | None       # what the projection's own consistency check found

    @property
    def same(self) -> bool:
        return self.live == self.rebuilt and self.problem is None


def verify(home: Home, *, batch_size: int = DEFAULT_BATCH) -> list[Verdict]:
    """Rebuild each projection into a scratch directory up to the live one's position and
    compare digests (and run its consistency check)."""
    with EventLog(home.events_db) as log, open_store(home, log) as live:
        return _verify(live, batch_size)


SCRATCH = "scratch"
LOCK = "in-use.lock"


def _held(lock: Path) -> bool:
    """Whether some process holds the flock on ``lock``."""
    try:
        fd = os.open(lock, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return True
        raise
    finally:
        os.close(fd)  # releases the probe's lock, if it got one
    return False


def remove_stale_scratch(home: Home) -> list[Path]:
    """Remove the scratch copies that no running verify holds; returns them."""
    removed = []
    for folder in sorted((home.root / SCRATCH).glob("verify-*")):
        if folder.is_dir() and not _held(folder / LOCK):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


@contextlib.contextmanager
def scratch_home(home: Home) -> Iterator[Home]:
    """A fresh scratch home inside ``home`` for the block, held by this process, removed
    at the end (or by the next verify, when this process is killed)."""
    remove_stale_scratch(home)
    root = home.root / SCRATCH
    root.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="verify-", dir=root))
    fd = os.open(folder / LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield Home(folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        os.close(fd)
        with contextlib.suppress(OSError):
            root.rmdir()  # only when no other verify uses it


def _verify(live: ProjectionStore, batch_size: int) -> list[Verdict]:
    verdicts = []
    with scratch_home(live.home) as scratch_dir:
        scratch = open_store(scratch_dir, live.log)
        try:
            for status in live.status():
                problem = _check(live, status.name)
                scratch.rebuild(status.name, upto=status.position, batch_size=batch_size)
                verdicts.append(Verdict(status.name, status.position, live.digest(status.name),
                                        scratch.digest(status.name), problem))
        finally:
            scratch.close()
    return verdicts


def _check(store: ProjectionStore, name: str) -> str | None:
    """What the projection's own consistency check found wrong (e.g. an FTS index that no
    longer matches its rows), or None."""
    try:
        store.check(name)
    except sqlite3.DatabaseError as exc:
        return f"consistency check failed: {exc}"
    return None

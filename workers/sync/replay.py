"""``diarist replay``: rebuild every projection from the log, or (``--verify``) rebuild into a
scratch copy and compare digests with the live projections, which are left alone.

A replay never leaves the projections half-built. It builds into a fresh database beside
the live one (``var/.replay-<pid>/projections.db``, a copy of the live one so that what a
rebuild keeps — the embeddings cache — is kept), and only a complete build is put in place:
copied over the live database with SQLite's online backup, one transaction that readers and
writers in other processes simply wait for. A replay that fails — an event it cannot
project, a full disk, Ctrl-C, kill -9 — leaves the live projections exactly as they were.
A damaged ``projections.db`` (or none) is not copied: the build starts empty (the embeddings
cache is salvaged when its rows can still be read), the broken file is moved aside as
``projections.db.broken-<time>``, and the new one renamed into its place. The memory folder's
files are rewritten from the installed rows afterwards (their dirty marks travel with the
database, so a crash in between is finished by the next catch-up). A killed replay's folder
is removed by the next replay.

Verify's scratch copy lives in the home (``var/scratch/verify-*``), on the same disk and as
private as the data it copies, and is removed when verify ends (a read-only home's verify
uses a temporary folder outside it instead). A verify that was killed
(``kill -9``, power loss) cannot remove its copy; the next verify does: each copy holds an
``flock`` on its own lock file while it is in use, so a copy whose lock is free is stale.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from events import EventLog, Home, clock
from events.db import fsync_dir
from events.health import MISSING, check_database
from events.log import connect
from projections import ProjectionStatus, ProjectionStore, all_projectors, open_store
from projections.engine import DEFAULT_BATCH
from projections.vector_cache import salvage_cache
from projections.vector_matrix import refresh_vectors

from ..presence import lock_held
from .progress import ProgressFactory, no_progress

SCRATCH_PREFIX = ".replay-"


@dataclass(frozen=True)
class Replayed:
    statuses: list[ProjectionStatus]
    broken: Path | None = None      # where a damaged projections.db was moved
    problem: str | None = None      # what was wrong with it
    salvaged: int | None = None     # cached vectors recovered from it (None: nothing to do)


def replay(home: Home, *, batch_size: int = DEFAULT_BATCH,
           progress: ProgressFactory = no_progress) -> Replayed:
    """Rebuild every projection into a fresh database, then put it in place (see the module
    doc); returns where each projection is now, and what happened to a damaged file."""
    with EventLog(home.events_db) as log:
        remove_stale_replays(home)
        scratch = home.root / f"{SCRATCH_PREFIX}{os.getpid()}"
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir()
        try:
            fresh_path = scratch / "projections.db"
            problem = check_database(home.projections_db)
            salvaged = _seed(home, fresh_path, problem)
            with ProjectionStore(home, log, all_projectors(), path=fresh_path,
                                 defer_files=True) as fresh:
                with progress(log.head() * len(fresh.projectors), "Replaying") as step:
                    for name in fresh.projectors:
                        fresh.reset(name)
                    fresh.catch_up_all(batch_size=batch_size, progress=step)
            broken = _install(home, fresh_path)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        with open_store(home, log) as store:
            for projector in store.projectors.values():
                store.materialize(projector)
            refresh_vectors(store)  # the cached vectors are reused: only the file is checked
            return Replayed(store.status(), broken, problem if broken else None, salvaged)


def _seed(home: Home, fresh_path: Path, problem: str | None) -> int | None:
    """Start the fresh database: a copy of a sound live one (online backup: consistent while
    others write), or, when it is damaged, empty plus the cached vectors that can still be
    read from it. Returns how many vectors were salvaged (None when nothing was damaged)."""
    if problem is None:
        live = connect(home.projections_db, synchronous="NORMAL")
        try:
            fresh = sqlite3.connect(fresh_path, isolation_level=None)
            try:
                live.backup(fresh)
            finally:
                fresh.close()
        finally:
            live.close()
        return None
    if problem == MISSING:
        return None
    fresh = connect(fresh_path, synchronous="NORMAL")
    try:
        return salvage_cache(home.projections_db, fresh)
    finally:
        fresh.close()


def _install(home: Home, fresh_path: Path) -> Path | None:
    """Put the finished build in place of the live database; returns where a damaged live
    file was moved (None when it was sound and overwritten, or missing)."""
    problem = check_database(home.projections_db)  # again: another process may have acted
    if problem is None:
        fresh = connect(fresh_path, synchronous="NORMAL")
        live = connect(home.projections_db, synchronous="NORMAL")
        try:
            fresh.backup(live)  # one write transaction on the live file: all of it, or none
            live.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            live.close()
            fresh.close()
        return None
    broken = None
    if problem != MISSING:
        stamp = clock.now().strftime("%Y%m%dT%H%M%SZ")
        broken = home.root / f"{home.projections_db.name}.broken-{stamp}"
        for suffix in ("", "-wal", "-shm"):
            source = Path(f"{home.projections_db}{suffix}")
            if source.exists():
                os.replace(source, f"{broken}{suffix}")
    for suffix in ("-wal", "-shm"):  # a stray WAL must never be read into the new file
        Path(f"{home.projections_db}{suffix}").unlink(missing_ok=True)
    os.replace(fresh_path, home.projections_db)
    fsync_dir(home.root)
    return broken


def remove_stale_replays(home: Home) -> None:
    """Remove what a killed replay left behind (its process is gone)."""
    for path in home.root.glob(f"{SCRATCH_PREFIX}*"):
        pid = path.name[len(SCRATCH_PREFIX):]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(path, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


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
    compare digests (and run its consistency check). Writes nothing in the home: it works
    on a read-only one."""
    with EventLog.reader(home) as log, open_store(home, log, readonly=log.readonly) as live:
        return _verify(live, batch_size)


SCRATCH = "scratch"
LOCK = "in-use.lock"


def remove_stale_scratch(home: Home) -> list[Path]:
    """Remove the scratch copies that no running verify holds; returns them."""
    removed = []
    for folder in sorted((home.root / SCRATCH).glob("verify-*")):
        if folder.is_dir() and not lock_held(folder / LOCK):
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


@contextlib.contextmanager
def _verify_scratch(live: ProjectionStore) -> Iterator[Home]:
    """Where verify rebuilds: in the home (:func:`scratch_home`), or, when the home is
    read-only, in a temporary folder outside it (verify writes nothing in such a home)."""
    if live.log.readonly:
        with tempfile.TemporaryDirectory(prefix="diarist-verify-") as folder:
            yield Home(Path(folder))
    else:
        with scratch_home(live.home) as home:
            yield home


def _verify(live: ProjectionStore, batch_size: int) -> list[Verdict]:
    verdicts = []
    with _verify_scratch(live) as scratch_dir:
        scratch = open_store(scratch_dir, live.log)
        copy = _copy_for_checks(live, scratch_dir.root / "live-copy.db")
        try:
            for status in live.status():
                problem = _check(live, status.name, copy)
                scratch.rebuild(status.name, upto=status.position, batch_size=batch_size)
                verdicts.append(Verdict(status.name, status.position, live.digest(status.name),
                                        scratch.digest(status.name), problem))
        finally:
            scratch.close()
            if copy is not None:
                copy.close()
    return verdicts


def _copy_for_checks(live: ProjectionStore, path: Path) -> sqlite3.Connection | None:
    """On a read-only home, a copy of the live database for the consistency checks (FTS5's
    integrity-check is an INSERT, which a read-only connection may not run); else None."""
    if not live.readonly:
        return None
    copy = sqlite3.connect(path, isolation_level=None)
    live.db.backup(copy)
    return copy


def _check(store: ProjectionStore, name: str,
           copy: sqlite3.Connection | None = None) -> str | None:
    """What the projection's own consistency check found wrong (e.g. an FTS index that no
    longer matches its rows), or None."""
    try:
        store.check(name, copy)
    except sqlite3.DatabaseError as exc:
        return f"consistency check failed: {exc}"
    return None

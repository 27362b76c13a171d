"""SQLite helpers shared by the log, the projections and the vectors."""
from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


@contextlib.contextmanager
def write_transaction(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """``BEGIN IMMEDIATE`` … ``COMMIT``, or ``ROLLBACK`` on any exception (Ctrl-C included):
    the write lock is taken up front, so the transaction never fails half-way on a busy
    database. The connection must be in autocommit mode (``isolation_level=None``).

    A failed ``COMMIT`` (a full disk) is rolled back too; and SQLite may already have rolled
    the transaction back itself (``SQLITE_FULL``), so the rollback never hides the error."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield db
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise


@contextlib.contextmanager
def read_transaction(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """``BEGIN`` … ``COMMIT`` around reads: one snapshot for all of them, and the read lock
    taken once instead of at every statement. Inside a transaction already: that one."""
    own = not db.in_transaction
    if own:
        db.execute("BEGIN")
    try:
        yield db
    finally:
        if own and db.in_transaction:
            db.execute("COMMIT")


def is_busy(exc: BaseException) -> bool:
    """Whether ``exc`` is SQLite giving up on a lock another process held too long."""
    return isinstance(exc, sqlite3.OperationalError) and (
        "locked" in str(exc) or "busy" in str(exc))


def is_full(exc: BaseException) -> bool:
    """Whether ``exc`` says the disk (or the database's size limit) is full."""
    if isinstance(exc, OSError):
        return exc.errno in (errno.ENOSPC, errno.EDQUOT)
    return isinstance(exc, sqlite3.OperationalError) and "full" in str(exc)


def is_readonly(exc: BaseException) -> bool:
    """Whether ``exc`` says a file or the file system cannot be written."""
    if isinstance(exc, OSError):
        return exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM)
    return isinstance(exc, sqlite3.OperationalError) and "readonly" in str(exc)


def is_io_error(exc: BaseException) -> bool:
    """SQLite's "disk I/O error": a damaged file — or a full disk where it needed room."""
    return isinstance(exc, sqlite3.OperationalError) and "disk I/O error" in str(exc)


def is_corrupt(exc: BaseException) -> bool:
    """Whether ``exc`` is SQLite finding a damaged file (not a lock, not a full disk)."""
    text = str(exc)
    return isinstance(exc, sqlite3.DatabaseError) and any(
        words in text for words in ("malformed", "not a database", "disk I/O error",
                                    "corrupt", "unsupported file format"))


def _wal_frames(path: Path) -> bool:
    """Whether a ``-wal`` file beside ``path`` may hold commits (more than its 32-byte
    header); if not, the main file holds everything."""
    try:
        return Path(f"{path}-wal").stat().st_size > 32
    except FileNotFoundError:
        return False


def connect_readonly(path: Path | str, *, timeout: float = 60.0) -> sqlite3.Connection:
    """A read-only connection that writes nothing at all, even on a read-only file system.

    ``mode=ro`` first. In WAL mode SQLite needs the ``-shm`` file, which it cannot create in a
    read-only folder (or grow on a full disk); when there is no ``-wal`` file with commits
    in it either, everything is in the main file, so ``immutable=1`` (no locks, no WAL)
    reads exactly what is there. (With a ``-wal`` and ``-shm`` left behind ``mode=ro``
    works, and reads them.)"""
    path = Path(path)
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None,
                             timeout=timeout, check_same_thread=False)
        db.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
        return db
    except sqlite3.OperationalError as exc:
        cannot_make_shm = "unable to open" in str(exc) or is_io_error(exc)
        if not cannot_make_shm or _wal_frames(path):
            raise
    db = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True, isolation_level=None,
                         check_same_thread=False)
    db.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
    return db


def online_backup(source: sqlite3.Connection, target: Path) -> None:
    """A consistent copy of ``source``'s database at ``target`` (a new file), taken with
    SQLite's online backup while others may keep writing (WAL: one read snapshot), then made
    a plain single file (rollback journal mode, no ``-wal`` beside it) and flushed to disk.
    A failure leaves no partial ``target``."""
    partial = target.with_name(target.name + ".partial")
    partial.unlink(missing_ok=True)
    try:
        copy = sqlite3.connect(partial, isolation_level=None)
        try:
            source.backup(copy)
            copy.execute("PRAGMA journal_mode=DELETE")
        finally:
            copy.close()
        with open(partial, "rb") as handle:
            os.fsync(handle.fileno())
        os.replace(partial, target)
        fsync_dir(target.parent)
    finally:
        partial.unlink(missing_ok=True)
        Path(f"{partial}-journal").unlink(missing_ok=True)


def fsync_dir(folder: Path) -> None:
    """Make a rename or a new file in ``folder`` durable."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
def retry_busy(action: Callable[[], T], *, timeout: float, first_wait: float = 0.005,
               max_wait: float = 0.25) -> T:
    """``action()``, again while SQLite says the database is busy — waiting 5 ms, then twice
    as long each time up to ``max_wait`` — until ``timeout`` seconds have passed; then the
    last error is raised. Every connection already waits ``busy_timeout`` on its own (SQLite's
    busy handler); this is for the few places SQLite answers "locked" at once without
    calling it, such as switching a fresh file to WAL while another process opens it."""
    deadline = time.monotonic() + timeout
    wait = first_wait
    while True:
        try:
            return action()
        except sqlite3.OperationalError as exc:
            if not is_busy(exc) or time.monotonic() + wait > deadline:
                raise
        time.sleep(wait)
        wait = min(wait * 2, max_wait)

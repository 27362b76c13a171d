"""SQLite helpers shared by the log, the projections and the vectors."""
from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

T = TypeVar("T")


@contextlib.contextmanager
def write_transaction(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """``BEGIN IMMEDIATE`` … ``COMMIT``, or ``ROLLBACK`` on any exception (Ctrl-C included):
    the write lock is taken up front, so the transaction never fails half-way on a busy
    database. The connection must be in autocommit mode (``isolation_level=None``)."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield db
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def is_busy(exc: BaseException) -> bool:
    """Whether ``exc`` is SQLite giving up on a lock another process held too long."""
    return isinstance(exc, sqlite3.OperationalError) and (
        "locked" in str(exc) or "busy" in str(exc))


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

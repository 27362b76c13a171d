"""Is a home's storage sound? Damaged SQLite files, a read-only home, a full disk: found,
named, and turned into errors that say what to do.

Every check here only reads (:func:`events.db.connect_readonly`), so it is safe on a
damaged file and on a read-only home.
"""
from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from .db import connect_readonly, is_full, is_io_error, is_readonly
from .errors import DamagedDatabase, DiaristError, DiskFull, ReadOnlyHome
from .home import Home

SQLITE_HEADER = b"SQLite format 3\x00"
MISSING = "missing"
FULL_BELOW = 256 * 1024  # bytes free under which a disk I/O error is a full disk


def check_database(path: Path, *, full: bool = False) -> str | None:
    """What is wrong with the SQLite file at ``path`` — ``"missing"``, not a database,
    damaged (what ``PRAGMA quick_check`` found, or ``integrity_check`` with ``full``) — or
    None when it is sound. ``quick_check`` reads every page and checks the b-trees'
    structure (not that indexes match their tables); its cost grows with the file
    (docs/reliability.md has the figures)."""
    try:
        with path.open("rb") as handle:
            head = handle.read(len(SQLITE_HEADER))
    except FileNotFoundError:
        return MISSING
    except OSError as exc:
        return f"unreadable ({exc.strerror})"
    if head and head != SQLITE_HEADER:
        return "not an SQLite database (its first bytes are wrong)"
    if out_of_space(path):  # nothing can be checked for sure (SQLite needs room to read WAL)
        return None
    pragma = "integrity_check" if full else "quick_check"
    try:
        db = connect_readonly(path)
        try:
            rows = db.execute(f"PRAGMA {pragma}(5)").fetchall()
        finally:
            db.close()
    except sqlite3.DatabaseError as exc:
        return f"damaged ({exc})"
    problems = [str(row[0]) for row in rows if row[0] != "ok"]
    if problems:
        return "damaged (" + "; ".join(problems)[:300] + ")"
    return None


def out_of_space(path: Path) -> bool:
    """Whether the disk under ``path`` (or its nearest existing parent) has (almost) no room
    left: SQLite reports a full disk as a "disk I/O error" when it cannot grow its ``-shm``
    file, which must not be taken for a damaged database."""
    while not path.exists() and path != path.parent:
        path = path.parent
    try:
        stats = os.statvfs(path)
    except OSError:
        return False
    return stats.f_bavail * stats.f_frsize < FULL_BELOW


def writable(home: Home, files: list[Path] | None = None) -> bool:
    """Whether diarist can write the home: its folder, and those of its database files
    (default: the log and the projections) that exist. ``os.access`` also says no on a
    read-only mount, even to root."""
    if not home.root.exists():
        parent = home.root.parent
        while not parent.exists() and parent != parent.parent:
            parent = parent.parent
        return os.access(parent, os.W_OK)
    if files is None:
        files = [home.events_db, home.projections_db]
    return os.access(home.root, os.W_OK) and all(
        os.access(path, os.W_OK) for path in files if path.exists())


def read_only(home: Home, what: str, cause: object = "") -> ReadOnlyHome:
    detail = f" ({cause})" if str(cause) else ""
    return ReadOnlyHome(f"the home {home.root} is read-only: cannot write {what}{detail}; "
                        "nothing was changed")


def disk_full(path: Path, cause: object = "") -> DiskFull:
    detail = f" ({cause})" if str(cause) else ""
    return DiskFull(f"disk full: cannot write {path}{detail}; free space and retry; "
                    "nothing was written")


def damaged(home: Home, path: Path, problem: str) -> DamagedDatabase:
    """The error for a damaged file of ``home``, with the fix that applies to it."""
    if path.name.startswith("projections.db"):
        hint = ("Run `diarist replay`: it rebuilds the projections from the log and keeps the "
                "broken file beside it as projections.db.broken-<time>.")
    elif path.name.startswith("events.db"):
        hint = ("The event log is the only record: restore it from a backup (`diarist backup "
                "DIR` makes one; see docs/reliability.md, \"Backups\"), or recover what is "
                "readable with `sqlite3 events.db .recover`; keep the damaged file.")
    else:
        hint = f"Move {path.name} aside; diarist recreates it."
    if problem == MISSING:
        return DamagedDatabase(f"{path} is missing", hint=hint)
    return DamagedDatabase(f"{path} is {problem}", hint=hint)


def explain(exc: BaseException, home: Home) -> DiaristError | None:
    """The clear error for an unexpected storage failure: a full disk, a read-only home, or
    a damaged database (found by checking the home's databases: which one is it?)."""
    if is_full(exc) or (is_io_error(exc) and out_of_space(home.root)):
        return disk_full(home.root, exc)
    if is_readonly(exc):
        return read_only(home, "to it", exc)
    if not isinstance(exc, sqlite3.DatabaseError) or isinstance(exc, sqlite3.IntegrityError):
        return None  # any other SQLite error may come from a damaged page: look
    for path in (home.events_db, home.projections_db, home.queue_db):
        problem = check_database(path)
        if problem and problem != MISSING:
            return damaged(home, path, problem)
    return None

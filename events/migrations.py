"""Ordered schema migrations, each applied once in its own transaction and recorded.

Modelled on sqlite-utils' ``Migrations``: a fresh database and an old one take the same path.

    m = Migrations("events")

    @m()
    def m001_create(db): ...

A set's **schema version** is the number of its steps; a database's is how many of them it
has applied, also kept in ``PRAGMA user_version``. A database that recorded a step this code
does not have, or whose ``user_version`` is higher, was written by a newer diarist:
:meth:`Migrations.check` refuses it before anything is written. An existing database with
steps pending is handed to ``before`` first (the log takes a backup there).
"""
from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

from . import clock
from .db import write_transaction
from .errors import DiaristError, NewerHome

Migration = Callable[[sqlite3.Connection], None]


class MigrationFailed(DiaristError):
    """A migration step raised: that step was rolled back."""

    hint = "Report this: the home cannot be used by this diarist until it is fixed."


class Migrations:
    def __init__(self, name: str, label: str = "") -> None:
        self.name = name
        self.label = label or f"the {name} database"
        self._steps: list[tuple[str, Migration]] = []

    def __call__(self) -> Callable[[Migration], Migration]:
        def register(fn: Migration) -> Migration:
            self._steps.append((fn.__name__, fn))
            return fn

        return register

    @property
    def version(self) -> int:
        """The schema version this code writes: how many steps it knows."""
        return len(self._steps)

    def applied(self, db: sqlite3.Connection) -> list[str]:
        """The steps the database recorded (read only: no table is created)."""
        try:
            return [row[0] for row in db.execute(
                "SELECT name FROM _migrations WHERE migration_set = ? ORDER BY rowid",
                (self.name,))]
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):
                return []
            raise

    def check(self, db: sqlite3.Connection, path: Path | str) -> int:
        """The database's schema version; :class:`NewerHome` when a newer diarist wrote it
        (reads only, so a refused file is left exactly as it was)."""
        known = {name for name, _ in self._steps}
        applied = self.applied(db)
        unknown = [name for name in applied if name not in known]
        user_version = db.execute("PRAGMA user_version").fetchone()[0]
        found = max(user_version, len(applied))
        if unknown or user_version > self.version:
            raise NewerHome(
                f"this home was written by a newer diarist (schema {found}, this one knows "
                f"{self.version}): upgrade diarist. {path} was not changed"
                + (f" (it has migrations this diarist does not know: {', '.join(unknown)})"
                   if unknown else ""))
        return len(applied)

    def pending(self, db: sqlite3.Connection) -> list[str]:
        self._ensure_table(db)
        done = set(self.applied(db))
        return [name for name, _ in self._steps if name not in done]

    def apply(self, db: sqlite3.Connection,
              before: Callable[[int], None] | None = None) -> list[str]:
        """Apply every pending step; returns the names applied. Safe to race: a step is
        re-checked inside the write transaction before it runs. ``before(version)`` is
        called once, first, when an existing database (one with steps applied) has steps
        pending: the place to take a backup."""
        pending = self.pending(db)
        if not pending:
            self._set_version(db)
            return []
        done = self.version - len(pending)
        if before is not None and done > 0:
            before(done)
        applied = []
        for index, (name, fn) in enumerate(self._steps):
            if name not in pending:
                continue
            try:
                with write_transaction(db):
                    already = db.execute(
                        "SELECT 1 FROM _migrations WHERE migration_set = ? AND name = ?",
                        (self.name, name),
                    ).fetchone()
                    if not already:
                        fn(db)
                        db.execute(
                            "INSERT INTO _migrations (migration_set, name, applied_at)"
                            " VALUES (?, ?, ?)",
                            (self.name, name, clock.now_iso()),
                        )
                        applied.append(name)
            except sqlite3.OperationalError:
                raise  # a full disk, a lock: the caller explains those
            except Exception as exc:
                raise MigrationFailed(
                    f"upgrading {self.label} to schema {index + 1} failed at {name} "
                    f"({type(exc).__name__}: {exc}); {self.label} was not changed by it (it "
                    f"stays at schema {index})") from exc
        self._set_version(db)
        return applied

    def _set_version(self, db: sqlite3.Connection) -> None:
        """Record the schema version in the file's header (homes written before it was kept
        there have 0) — only when it changes, so opening a current home writes nothing."""
        if db.execute("PRAGMA user_version").fetchone()[0] != self.version:
            db.execute(f"PRAGMA user_version = {self.version}")

    @staticmethod
    def _ensure_table(db: sqlite3.Connection) -> None:
        db.execute(
            "CREATE TABLE IF NOT EXISTS _migrations ("
            " migration_set TEXT NOT NULL, name TEXT NOT NULL, applied_at TEXT NOT NULL,"
            " PRIMARY KEY (migration_set, name))"
        )

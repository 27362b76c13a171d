"""Ordered schema migrations, each applied once in its own transaction and recorded.

Modelled on sqlite-utils' ``Migrations``: a fresh database and an old one take the same path.

    m = Migrations("events")

    @m()
    def m001_create(db): ...
"""
from __future__ import annotations

import sqlite3
from collections.abc import Callable

from . import clock
from .db import write_transaction

Migration = Callable[[sqlite3.Connection], None]


class Migrations:
    def __init__(self, name: str) -> None:
        self.name = name
        self._steps: list[tuple[str, Migration]] = []

    def __call__(self) -> Callable[[Migration], Migration]:
        def register(fn: Migration) -> Migration:
            self._steps.append((fn.__name__, fn))
            return fn

        return register

    def pending(self, db: sqlite3.Connection) -> list[str]:
        self._ensure_table(db)
        done = {
            row[0]
            for row in db.execute("SELECT name FROM _migrations WHERE migration_set = ?",
                                  (self.name,))
        }
        return [name for name, _ in self._steps if name not in done]

    def apply(self, db: sqlite3.Connection) -> list[str]:
        """Apply every pending step; returns the names applied. Safe to race: a step is
        re-checked inside the write transaction before it runs."""
        applied = []
        for name, fn in self._steps:
            if name not in self.pending(db):
                continue
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
        return applied

    @staticmethod
    def _ensure_table(db: sqlite3.Connection) -> None:
        db.execute(
            "CREATE TABLE IF NOT EXISTS _migrations ("
            " migration_set TEXT NOT NULL, name TEXT NOT NULL, applied_at TEXT NOT NULL,"
            " PRIMARY KEY (migration_set, name))"
        )

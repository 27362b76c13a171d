"""Creating a projection's tables with sqlite-utils: a table is its columns, its key and the
defaults of the columns that have one; every other column is NOT NULL unless named nullable.

sqlite-utils is imported only here, and only when a projection's tables are (re)built — a
first run, a new projector version, a replay — since its imports take about 0.2 s, more than
a `diarist recall` spends on everything else. Statements join the engine's open
transaction, so a failed build leaves nothing half made. An index on an expression or with
a collation, and the FTS5 tables (their own tokenizer, no content table of sqlite-utils'
shape), stay in SQL beside the call.
"""
from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any


def create_table(db: sqlite3.Connection, name: str, columns: dict[str, type],
                 pk: str | tuple[str, ...], *,
                 defaults: dict[str, Any] | None = None, nullable: Iterable[str] = (),
                 indexes: Sequence[tuple[str, Sequence[str]]] = ()) -> None:
    """``CREATE TABLE IF NOT EXISTS name`` with ``columns`` (name → ``str``, ``int``,
    ``float``) in their order, ``pk`` the primary key (a column or several), and ``indexes``
    as (index name, columns)."""
    import sqlite_utils

    keys = {pk} if isinstance(pk, str) else set()   # a key of several columns: NOT NULL too
    table = sqlite_utils.Database(db, recursive_triggers=False).table(name)
    table.create(columns, pk=pk, not_null=set(columns) - keys - set(nullable),
                 defaults=defaults or {}, if_not_exists=True)
    for index, on in indexes:
        table.create_index(list(on), index_name=index, if_not_exists=True)

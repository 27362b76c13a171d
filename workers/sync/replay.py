"""``diarist replay``: rebuild every projection from the log, or (``--verify``) rebuild into a
scratch copy and compare digests with the live projections, which are left alone."""
from __future__ import annotations

import sqlite3
import tempfile
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


def _verify(live: ProjectionStore, batch_size: int) -> list[Verdict]:
    verdicts = []
    with tempfile.TemporaryDirectory(prefix="diarist-verify-") as scratch_dir:
        scratch = open_store(Home(Path(scratch_dir)), live.log)
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

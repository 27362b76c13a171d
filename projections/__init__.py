"""Projections: pure projectors over the event log, and the read side."""
from __future__ import annotations

from events import EventLog, Home

from .engine import ProjectionStatus, ProjectionStore, Projector
from .journal import JournalProjector
from .long_term import LongTermProjector
from .memories import MemoriesProjector
from .search import SearchProjector
from .turns import TurnsProjector


def all_projectors() -> list[Projector]:
    """Every projector, in catch-up order."""
    from .mining import MiningProjector
    from .stats import StatsProjector
    from .vectors import VectorsProjector

    return [TurnsProjector(), JournalProjector(), LongTermProjector(), MemoriesProjector(),
            SearchProjector(), VectorsProjector(), StatsProjector(), MiningProjector()]


def open_store(home: Home, log: EventLog | None = None, *,
               readonly: bool = False) -> ProjectionStore:
    """The home's projections over ``log`` (opened here when not given); ``readonly``
    writes nothing (a read-only home)."""
    return ProjectionStore(home, log or EventLog(home.events_db, readonly=readonly),
                           all_projectors(), readonly=readonly)


__all__ = ["JournalProjector", "LongTermProjector", "MemoriesProjector", "ProjectionStatus",
           "ProjectionStore", "Projector", "SearchProjector", "TurnsProjector", "all_projectors",
           "open_store"]

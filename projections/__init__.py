"""Projections: pure projectors over the event log, and the read side."""
from __future__ import annotations

from events import EventLog, Home

from .engine import ProjectionStatus, ProjectionStore, Projector
from .turns import TurnsProjector


def all_projectors() -> list[Projector]:
    """Every projector, in catch-up order."""
    return [TurnsProjector()]


def open_store(home: Home, log: EventLog | None = None) -> ProjectionStore:
    return ProjectionStore(home, log or EventLog(home.events_db), all_projectors())


__all__ = ["ProjectionStatus", "ProjectionStore", "Projector", "TurnsProjector", "all_projectors",
           "open_store"]

"""The event log: the only truth in diarist (see docs/architecture.md)."""
from .errors import (
                     ConcurrencyError,
                     ConfigError,
                     DiaristError,
                     ImportFailed,
                     NotFound,
                     UnknownEventType,
)
from .home import Home
from .log import Appended, EventLog, NewEvent, RecordedEvent
from .types import Event, Registry, registry

__all__ = [
    "Appended", "ConcurrencyError", "ConfigError", "DiaristError", "Event", "EventLog", "Home",
    "ImportFailed", "NewEvent", "NotFound", "RecordedEvent", "Registry", "UnknownEventType",
    "registry",
]

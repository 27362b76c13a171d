"""The event log: the only truth in diarist (see docs/architecture.md)."""
from .errors import (
                     ConcurrencyError,
                     ConfigError,
                     DamagedDatabase,
                     DiaristError,
                     DiskFull,
                     ImportFailed,
                     NewerHome,
                     NotFound,
                     ReadOnlyHome,
                     UnknownEventType,
                     UnreadableEvent,
)
from .home import Home
from .log import Appended, EventLog, NewEvent, RecordedEvent
from .types import Event, Registry, registry

__all__ = [
    "Appended", "ConcurrencyError", "ConfigError", "DamagedDatabase", "DiaristError",
    "DiskFull", "Event", "EventLog", "Home", "ImportFailed", "NewEvent", "NewerHome", "NotFound",
    "ReadOnlyHome", "RecordedEvent", "Registry", "UnknownEventType",
    "UnreadableEvent", "registry",
]

"""What a capability may ask of the queue, injected by the edge: it never imports Huey.

The cli and ``workers.tasks`` pass the Huey implementation (:data:`workers.dispatch.QUEUE`);
a library call left without one gets :data:`NO_QUEUE`, which queues nothing, so every
capability takes its in-process path (as with a queue that cannot be reached). Where a
missing queue would be wrong — the chat, the MCP session, status, redaction — the argument
has no default.
"""
from __future__ import annotations

from typing import Any, Protocol

from events import Home
from events.config import load_config

from .mining.distribute import Extractor, LocalExtractor
from .mining.extract import MinerSpec


class QueuePort(Protocol):
    def appended(self, home: Home) -> bool:
        """Queue a catch-up of every projection; False when nothing was queued."""
        ...

    def shadow_journal(self, home: Home, session_id: str, user_event_id: str,
                       assistant_event_id: str, spec: dict[str, str | None]) -> bool:
        """Queue the shadow journal of one exchange; False: the caller does it itself."""
        ...

    def mine_session(self, home: Home, session: str) -> bool:
        """Queue the mining of a session that just ended; False: the caller does it."""
        ...

    def extractor(self, home: Home, spec: MinerSpec) -> Extractor:
        """Where a mining pass started here extracts its chunks."""
        ...

    def queues(self, home: Home) -> list[Any]:
        """The queues bound to ``home`` (Huey instances), to prune or scrub; [] for none."""
        ...

    def describe(self, home: Home) -> str:
        """The queue for ``diarist status`` (may raise: status shows it as unavailable)."""
        ...


class NoQueue:
    """Queues nothing: each capability does the work in this process."""

    def appended(self, home: Home) -> bool:
        return False

    def shadow_journal(self, home: Home, session_id: str, user_event_id: str,
                       assistant_event_id: str, spec: dict[str, str | None]) -> bool:
        return False

    def mine_session(self, home: Home, session: str) -> bool:
        return False

    def extractor(self, home: Home, spec: MinerSpec) -> Extractor:
        config = load_config(home)
        return LocalExtractor(spec, config.llm, config.mining.parallel)

    def queues(self, home: Home) -> list[Any]:
        return []

    def describe(self, home: Home) -> str:
        return "none"


NO_QUEUE: QueuePort = NoQueue()

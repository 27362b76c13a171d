"""The queue the edge hands to capabilities: :data:`QUEUE`, the Huey implementation of
:class:`workers.queue_port.QueuePort` (projection catch-ups after an append, the chat's
shadow journal, a session to mine when it ends, a mining pass's chunks, the queues to prune).

A capability never imports this module, ``app``, ``tasks`` or ``worker``: the cli passes
:data:`QUEUE` in, as the tasks do. The class lives in :mod:`workers.tasks` beside the tasks
it enqueues (a task runs passes that take the port). :data:`QUEUE` here imports it on first
use: Huey and every task take ~0.2 s to import, which a chat or an MCP session would
otherwise pay at start-up, before its first hand-off.
"""
from __future__ import annotations

from typing import Any

from events import Home

from .mining.distribute import Extractor
from .mining.extract import MinerSpec
from .queue_port import QueuePort


class _OnFirstUse:
    """:class:`workers.tasks.HueyQueue`, imported when first asked for something."""

    @staticmethod
    def _queue() -> QueuePort:
        from .tasks import QUEUE

        return QUEUE

    def appended(self, home: Home) -> bool:
        return self._queue().appended(home)

    def shadow_journal(self, home: Home, session_id: str, user_event_id: str,
                       assistant_event_id: str, spec: dict[str, str | None]) -> bool:
        return self._queue().shadow_journal(home, session_id, user_event_id,
                                            assistant_event_id, spec)

    def mine_session(self, home: Home, session: str) -> bool:
        return self._queue().mine_session(home, session)

    def extractor(self, home: Home, spec: MinerSpec) -> Extractor:
        return self._queue().extractor(home, spec)

    def queues(self, home: Home) -> list[Any]:
        return self._queue().queues(home)

    def describe(self, home: Home) -> str:
        return self._queue().describe(home)


QUEUE: QueuePort = _OnFirstUse()

__all__ = ["QUEUE"]

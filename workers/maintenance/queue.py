"""Pruning the queue: tasks nobody will run, duplicates, and keys of finished passes.

A home without a running worker still gets catch-up tasks queued after every append (a
worker might start); ``diarist sync`` then does the work in-process and the tasks would
wait in ``var/queue.db`` for ever. :func:`prune_queue` removes:

- tasks whose name this diarist does not know (queued by an older version: orphans);
- a task queued twice with the same arguments (the later copies);
- on the SQLite queue with no ``diarist worker`` on the home: the projection catch-ups and
  ``embed.pending`` (whoever runs next catches up from the log anyway);
- ``mine.extract`` tasks and ``mine:*`` keys when no mining pass is running (their pass
  has ended; the pass deletes its own, this catches what a killed pass left);
- on the SQLite queue with no worker: task locks a killed worker left (Redis locks expire).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from huey.storage import RedisStorage

CATCH_UP_PREFIXES = ("project.", "embed.")
MINING_PREFIX = "mine:"


@dataclass
class PruneReport:
    dropped: dict[str, int] = field(default_factory=dict)   # task name → how many
    keys: int = 0                                           # kv keys deleted
    pending: int = 0                                        # tasks left

    @property
    def tasks(self) -> int:
        return sum(self.dropped.values())


def _short_name(huey: Any, message: Any) -> str | None:
    """The task's name as registered (``project.turns``), None when it is not registered."""
    task_class = huey._registry._registry.get(message.name)
    return None if task_class is None else str(task_class.__name__)


def _remove(huey: Any, raw: bytes) -> None:
    storage = huey.storage
    if isinstance(storage, RedisStorage):
        storage.conn.lrem(storage.queue_key, 1, raw)
    else:  # SQLite
        storage.sql("delete from task where id = (select id from task"
                    " where queue = ? and data = ? limit 1)",
                    (storage.name, storage.to_blob(raw)), commit=True)


def drop_tasks(huey: Any, predicate: Callable[[str | None, tuple], bool]) -> dict[str, int]:
    """Remove the queued tasks for which ``predicate(name, args)`` holds (name None: not a
    registered task); returns how many of each name."""
    dropped: dict[str, int] = {}
    for raw in list(huey.storage.enqueued_items()):
        try:
            message = huey.serializer.deserialize(raw)
        except Exception:  # not even a message: an orphan by any definition
            message, name = None, None
        else:
            name = _short_name(huey, message)
        args = tuple(message.args or ()) if message is not None else ()
        if predicate(name, args):
            _remove(huey, raw)
            label = name or "(unknown)"
            dropped[label] = dropped.get(label, 0) + 1
    return dropped


def prune_queue(huey: Any, *, worker_running: bool, mining_running: bool) -> PruneReport:
    sqlite = not isinstance(huey.storage, RedisStorage)
    seen: set[tuple[str | None, str]] = set()

    def orphan(name: str | None, args: tuple) -> bool:
        if name is None:
            return True
        if name == "mine.extract" and not mining_running:
            return True
        if sqlite and not worker_running and name.startswith(CATCH_UP_PREFIXES):
            return True
        key = (name, repr(args))
        if key in seen:
            return True
        seen.add(key)
        return False

    report = PruneReport(dropped=drop_tasks(huey, orphan))
    for key in list(huey.storage.result_items()):
        stale_lock = sqlite and not worker_running and ".lock." in key
        if (key.startswith(MINING_PREFIX) and not mining_running) or stale_lock:
            report.keys += bool(huey.storage.delete_data(key))
    report.pending = huey.pending_count()
    return report


def drop_containing(huey: Any, needles: list[bytes]) -> int:
    """Remove every queued or scheduled task and every key-value entry whose stored bytes hold
    one of ``needles`` (``diarist redact``: a queued ``mine.extract`` carries turn text);
    returns how many. Tasks and entries on either queue; scheduled tasks on SQLite only
    (Redis offers no way to remove one — they carry ids, not text)."""
    if not needles:
        return 0

    def holds(raw: bytes | memoryview) -> bool:
        data = bytes(raw)
        return any(needle in data for needle in needles)

    removed = 0
    for raw in list(huey.storage.enqueued_items()):
        if holds(raw):
            _remove(huey, raw)
            removed += 1
    for key, value in list(huey.storage.result_items().items()):
        if holds(value) or holds(str(key).encode()):
            removed += bool(huey.storage.delete_data(key))
    if not isinstance(huey.storage, RedisStorage):
        for raw in huey.storage.scheduled_items():
            if holds(raw):
                huey.storage.sql("delete from schedule where queue = ? and data = ?",
                                 (huey.storage.name, huey.storage.to_blob(bytes(raw))),
                                 commit=True)
                removed += 1
    return removed

"""Huey tasks: thin wrappers over projection code.

One task per projector (``project.<name>``) catches that projector up under a huey lock, so
two workers never do the same catch-up at once (correctness does not rest on the lock: the
engine reads the position inside its write transaction). :func:`enqueue_catch_up` is called
after every append; it skips a projector whose task is already waiting in the queue.
"""
from __future__ import annotations

from collections.abc import Callable

from huey import crontab
from huey.exceptions import TaskLockedException
from huey.storage import RedisStorage

from events import EventLog
from projections import all_projectors, open_store

from .app import bound_home, huey

# A killed worker leaves its lock behind. With Redis the lock expires after LOCK_TTL_S;
# SQLite storage has no expiring keys, and there `diarist worker` flushes stale locks when it
# starts. Either way the engine stays correct meanwhile: the lock only saves duplicate work.
LOCK_TTL_S = 300


def _lock_ttl() -> int | None:
    return LOCK_TTL_S if issubclass(huey.storage_class, RedisStorage) else None


def catch_up(name: str) -> int:
    home = bound_home()
    with EventLog(home.events_db) as log, open_store(home, log) as store:
        return store.catch_up(name)


def _make_task(name: str) -> Callable[..., object]:
    @huey.task(name=f"project.{name}")
    def project() -> int | None:
        try:
            with huey.lock_task(f"project.{name}", ttl=_lock_ttl()):
                return catch_up(name)
        except TaskLockedException:
            return None  # another worker is on it and will see our events too

    return project


PROJECTION_TASKS = {p.name: _make_task(p.name) for p in all_projectors()}


def enqueue_catch_up() -> list[str]:
    """Queue a catch-up for each projector that has none waiting; returns their names."""
    waiting = {task.name for task in huey.pending()}
    queued = []
    for name, task in PROJECTION_TASKS.items():
        if f"project.{name}" not in waiting:
            task()
            queued.append(name)
    return queued


@huey.periodic_task(crontab(minute="*"), name="project.all")
def catch_up_all_periodically() -> None:
    """Safety net: once a minute, queue a catch-up for anything an enqueue missed."""
    enqueue_catch_up()

"""Huey tasks: thin wrappers over projection code.

One task per projector (``project.<name>``) catches that projector up under a huey lock, so
two workers never do the same catch-up at once (correctness does not rest on the lock: the
engine reads the position inside its write transaction). ``embed.pending`` embeds the
items the vectors projection has no vector for yet, with the model the log chose (it never
exports one: that needs torch and is ``diarist sync``'s job), and brings the vector matrix
file up to date. :func:`enqueue_catch_up` is called after every append; it queues the
projection tasks, then ``embed.pending``, skipping any task already waiting in the queue.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import structlog
from huey import crontab
from huey.exceptions import TaskLockedException
from huey.storage import RedisStorage

from events import EventLog
from events.config import load_config
from projections import all_projectors, open_store
from projections.embedding import ModelUnavailable, load_embedder
from projections.vectors import active_model, embed_pending, pending_count, refresh_vectors

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
EMBED_TASK = "embed.pending"


def embed_now() -> int:
    """Embed what is pending with the active model (loaded once per worker process, and only
    when there is something to embed); returns how many texts. With no model chosen (or its
    files unusable: logged) only the matrix file is refreshed, so vectors of forgotten items
    leave it either way."""
    home = bound_home()
    with EventLog(home.events_db) as log, open_store(home, log) as store:
        active = active_model(store)
        if active is not None and pending_count(store):
            try:
                embedder = load_embedder(home, active)
            except ModelUnavailable as exc:
                structlog.get_logger("diarist.worker").warning(
                    "embed.model_unavailable", error=str(exc), hint=exc.hint)
            else:
                return embed_pending(store, embedder)
        refresh_vectors(store)
        return 0


@huey.task(name=EMBED_TASK)
def embed_pending_task() -> int | None:
    try:
        with huey.lock_task(EMBED_TASK, ttl=_lock_ttl()):
            return embed_now()
    except TaskLockedException:
        return None  # another worker is embedding; the next enqueue picks up the rest


def enqueue_catch_up() -> list[str]:
    """Queue a catch-up for each projector that has none waiting, then ``embed.pending``
    (so it runs after them); returns the projector names queued, and ``embed.pending``."""
    waiting = {task.name for task in huey.pending()}
    queued = []
    for name, task in PROJECTION_TASKS.items():
        if f"project.{name}" not in waiting:
            task()
            queued.append(name)
    if EMBED_TASK not in waiting:
        embed_pending_task()
        queued.append(EMBED_TASK)
    return queued


SHADOW_JOURNAL_TASK = "memory.shadow_journal"


@huey.task(name=SHADOW_JOURNAL_TASK, retries=1, retry_delay=30)
def shadow_journal_task(session_id: str, user_event_id: str, assistant_event_id: str,
                        backend_name: str, model: str, base_url: str | None = None,
                        script: str | None = None) -> str | None:
    """Extract the net-new facts of one chat exchange (``workers.extract``), queued by a chat
    that sees a running worker. The backend is rebuilt here from its name, model, server URL
    and (scripted backend) rules file; an API key comes from the worker's environment, never
    through the queue. A retry appends once (idempotency key). Logs what it appended."""
    from .extract import shadow_journal
    from .llm import make_backend

    home = bound_home()
    backend = make_backend(backend_name, model=model, base_url=base_url,
                           script=Path(script) if script else None, llm=load_config(home).llm)
    with EventLog(home.events_db) as log:
        event = shadow_journal(home, log, session_id, user_event_id, assistant_event_id, backend)
    logger = structlog.get_logger("diarist.worker")
    if event is None:
        logger.info("shadow_journal.nothing_new", session=session_id, turn=assistant_event_id)
        return None
    logger.info("shadow_journal.appended", session=session_id, turn=assistant_event_id,
                event_id=event.id, facts=len(event.payload["facts"]), pid=os.getpid())
    enqueue_catch_up()
    return event.id


@huey.periodic_task(crontab(minute="*"), name="project.all")
def catch_up_all_periodically() -> None:
    """Safety net: once a minute, queue a catch-up for anything an enqueue missed."""
    enqueue_catch_up()

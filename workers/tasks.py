"""Huey tasks: thin wrappers over the application layer.

One task per projector (``project.<name>``) catches that projector up under a huey lock, so
two workers never do the same catch-up at once (correctness does not rest on the lock: the
engine reads the position inside its write transaction). ``embed.pending`` embeds the
items the vectors projection has no vector for yet, with the model the log chose (it never
exports one: that needs torch and is ``diarist sync``'s job), and brings the vector matrix
file up to date. :func:`enqueue_catch_up` is called after every append; it queues the
projection tasks, then ``embed.pending``, skipping any task already waiting in the queue.

The night's work (``night.run``: mine, dream, consolidate), ``maintain.run`` and
``mine.session`` are queued by ``schedule.tick`` (every minute) when
:mod:`workers.schedule` says they are due; ``mine.extract`` is one chunk of a mining pass
shared over a Redis queue (:mod:`workers.mining.distribute`).

:class:`HueyQueue` is the queue port (:mod:`workers.queue_port`) over these tasks: it sits
here because a task both enqueues tasks and runs passes that take the port. Outside the
worker it is handed on as :data:`workers.dispatch.QUEUE`. The events are already safe in the
log when it enqueues, so a queue that cannot be reached is a warning, not an error.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from huey import crontab
from huey.exceptions import TaskLockedException
from huey.storage import RedisStorage

from events import Home
from events.config import load_config
from events.logger import get_logger
from projections import all_projectors

from .app import bound_home, configure, huey, mining_queue
from .chat.shadow_journal import journal_exchange
from .mining.distribute import Extractor, LocalExtractor, QueueExtractor, extract_queued
from .mining.extract import MinerSpec, miner_spec
from .mining.mine import mine
from .pass_lock import PassRunning
from .queue_port import QueuePort
from .schedule import maintain_now, run_night, tick
from .sync.catch_up import catch_up_one, embed_available

logger = get_logger("diarist.queue")

# A killed worker leaves its lock behind. With Redis the lock expires after LOCK_TTL_S;
# SQLite storage has no expiring keys, and there `diarist worker` flushes stale locks when it
# starts. Either way the engine stays correct meanwhile: the lock only saves duplicate work.
LOCK_TTL_S = 300


def _lock_ttl() -> int | None:
    return LOCK_TTL_S if issubclass(huey.storage_class, RedisStorage) else None


def _make_task(name: str) -> Callable[..., object]:
    @huey.task(name=f"project.{name}")
    def project() -> int | None:
        try:
            with huey.lock_task(f"project.{name}", ttl=_lock_ttl()):
                return catch_up_one(bound_home(), name)
        except TaskLockedException:
            return None  # another worker is on it and will see our events too

    return project


PROJECTION_TASKS = {p.name: _make_task(p.name) for p in all_projectors()}
EMBED_TASK = "embed.pending"
# Every huey lock a task takes: what a worker killed mid-task leaves behind (see worker.py).
TASK_LOCKS = [f"project.{name}" for name in PROJECTION_TASKS] + [EMBED_TASK]


@huey.task(name=EMBED_TASK)
def embed_pending_task() -> int | None:
    try:
        with huey.lock_task(EMBED_TASK, ttl=_lock_ttl()):
            return embed_available(bound_home())
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
    """The shadow journal of one chat exchange, queued by a chat that sees a running worker
    (:func:`workers.chat.shadow_journal.journal_exchange`). A retry appends once."""
    event = journal_exchange(bound_home(), session_id, user_event_id, assistant_event_id,
                             backend_name=backend_name, model=model, base_url=base_url,
                             script=script)
    if event is None:
        return None
    enqueue_catch_up()
    return event.id


@huey.periodic_task(crontab(minute="*"), name="project.all")
def catch_up_all_periodically() -> None:
    """Safety net: once a minute, queue a catch-up for anything an enqueue missed."""
    enqueue_catch_up()


# --- mining, dreaming, consolidation, maintenance (workers/schedule.py) --------------------

MINE_EXTRACT_TASK = "mine.extract"


@mining_queue.task(name=MINE_EXTRACT_TASK)
def mine_extract_task(pass_id: str, chunk: dict, spec: dict) -> bool:
    """One chunk of a mining pass, for any worker of a shared queue (``diarist worker
    --mining``): stateless — the chunk and the model settings come with the task, an API
    key from this worker's own config."""
    return extract_queued(mining_queue, pass_id, chunk, spec, load_config(bound_home()).llm)


class HueyQueue:
    """The queue port (:class:`workers.queue_port.QueuePort`) over this module's tasks."""

    def appended(self, home: Home) -> bool:
        """Queue a catch-up of every projection for a running ``diarist worker``; False when
        the queue could not be reached."""
        try:
            configure(home)
            queued = enqueue_catch_up()
        except Exception as exc:  # any queue failure is only a warning here
            logger.warning("queue.unavailable", error=str(exc),
                           hint="run `diarist sync` to update the projections")
            return False
        logger.info("queue.enqueued", projections=queued)
        return True

    def shadow_journal(self, home: Home, session_id: str, user_event_id: str,
                       assistant_event_id: str, spec: dict[str, str | None]) -> bool:
        """Queue ``memory.shadow_journal`` for one exchange; False when the queue could not
        be reached (the caller then extracts in-process). ``spec`` rebuilds the backend
        (:func:`workers.chat.handoff.backend_spec`): no API key goes through the queue."""
        try:
            configure(home)
            shadow_journal_task(session_id, user_event_id, assistant_event_id,
                                spec["backend_name"], spec["model"], base_url=spec["base_url"],
                                script=spec["script"])
        except Exception as exc:  # the chat falls back to extracting itself
            logger.info("queue.unavailable", task=SHADOW_JOURNAL_TASK, error=str(exc))
            return False
        logger.info("queue.enqueued", task=SHADOW_JOURNAL_TASK, turn=assistant_event_id)
        return True

    def mine_session(self, home: Home, session: str) -> bool:
        """Queue ``mine.session`` for a running worker; False when the queue is
        unreachable."""
        try:
            configure(home)
            mine_session_task(session)
        except Exception as exc:  # the night's run mines it anyway
            logger.info("queue.unavailable", task="mine.session", error=str(exc))
            return False
        return True

    def extractor(self, home: Home, spec: MinerSpec) -> Extractor:
        """Chunks extracted here (SQLite queue), or shared with the workers of a Redis
        queue."""
        config = load_config(home)
        if not config.redis_url:
            return LocalExtractor(spec, config.llm, config.mining.parallel)
        configure(home)
        return QueueExtractor(mining_queue, spec, mine_extract_task, config.llm)

    def queues(self, home: Home) -> list[Any]:
        """The home's queue and its mining queue (the latter's tasks carry turn text)."""
        configure(home)
        return [huey, mining_queue]

    def describe(self, home: Home) -> str:
        queue = configure(home)
        where = queue.storage_kwargs.get("url") or queue.storage_kwargs.get("filename")
        return f"{queue.storage_class.__name__} at {where}, {queue.pending_count()} pending"


QUEUE: QueuePort = HueyQueue()


@huey.task(name="night.run")
def night_task() -> None:
    """Mine, dream, consolidate (workers/schedule.py), then project what they appended."""
    report = run_night(bound_home(), queue=QUEUE)
    get_logger("diarist.worker").info(
        "night.done", skipped=report.skipped,
        mined=report.mined.new if report.mined else None,
        merged=report.dreamt.merged if report.dreamt else None,
        rewritten=report.consolidated.changed if report.consolidated else None)
    enqueue_catch_up()


@huey.task(name="maintain.run")
def maintenance_task() -> None:
    maintain_now(bound_home(), queue=QUEUE)


@huey.task(name="mine.session")
def mine_session_task(session: str) -> int | None:
    """Mine one session that just ended (another pass running covers it)."""
    home = bound_home()
    spec = miner_spec(load_config(home))
    try:
        report = mine(home, spec, sessions=[session], extractor=QUEUE.extractor(home, spec))
    except PassRunning:
        return None
    enqueue_catch_up()
    return report.new


@huey.periodic_task(crontab(minute="*"), name="schedule.tick")
def schedule_tick() -> None:
    """Every minute: queue the night's run, maintenance, and sessions that just ended."""
    waiting = {(task.name, tuple(task.args)) for task in huey.pending()}
    for due in tick(bound_home()):
        if due == "night" and ("night.run", ()) not in waiting:
            night_task()
        elif due == "maintenance" and ("maintain.run", ()) not in waiting:
            maintenance_task()
        elif due.startswith("session:") and ("mine.session", (due[8:],)) not in waiting:
            mine_session_task(due[8:])

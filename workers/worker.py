"""``diarist worker``: the Huey consumer (the Procfile's process) with its periodic schedule."""
from __future__ import annotations

from collections.abc import Callable

from events import DiaristError, Home

from .app import configure, mining_queue
from .presence import hold_worker_lock, worker_present
from .tasks import TASK_LOCKS, enqueue_catch_up  # importing it registers every task

# An idle consumer polls the queue every POLL_S seconds, so new work starts within ~POLL_S
# (huey's defaults back off to 10 s, far too slow for a chat waiting on its projections).
POLL_S = 0.05


def run_worker(home: Home, threads: int = 1,
               on_start: Callable[[str], None] | None = None, *, mining: bool = False) -> None:
    """``diarist worker``: the consumer with its periodic schedule, until SIGINT/SIGTERM.
    While it runs it holds the worker lock (:mod:`workers.presence`), so a chat on the same
    home hands its work to the queue. ``on_start`` gets a one-line description. With
    ``mining`` it consumes only the mining queue's chunks (:data:`workers.app.mining_queue`):
    no schedule, no projections, no worker lock."""
    if threads < 1:
        raise DiaristError(f"--workers must be at least 1, got {threads}",
                           hint="Give the number of worker threads, e.g. --workers 2.")
    queue = configure(home)
    if mining:
        consumer = mining_queue.create_consumer(
            workers=threads, worker_type="thread", periodic=False, initial_delay=POLL_S,
            backoff=1.0, max_delay=POLL_S)
        if on_start is not None:
            on_start(f"diarist worker --mining: {queue.storage_class.__name__} queue "
                     f"{mining_queue.name}, {threads} thread(s)")
        consumer.run()
        return
    # A worker killed mid-task (kill -9, power loss) leaves its task's lock in the queue;
    # on the SQLite queue it never expires, and that projection would never be caught up by
    # a worker again. Huey's ``flush_locks`` alone only knows locks this process has taken
    # (none yet), so name them all — unless another worker runs here and may hold one.
    stale = "" if worker_present(home) else ",".join(TASK_LOCKS)
    consumer = queue.create_consumer(
        workers=threads, worker_type="thread", periodic=True, initial_delay=POLL_S,
        backoff=1.0, max_delay=POLL_S, scheduler_interval=1, flush_locks=True,
        extra_locks=stale or None,
    )
    with hold_worker_lock(home):
        if on_start is not None:
            on_start(f"diarist worker: {queue.storage_class.__name__} queue, home {home.root}")
        enqueue_catch_up()  # whatever was appended while no worker ran
        consumer.run()

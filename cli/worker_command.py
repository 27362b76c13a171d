"""`diarist worker`: the Huey consumer with its periodic schedule (the Procfile's process)."""
from __future__ import annotations

import click

from .context import current_home, friendly_errors, home_option

# An idle consumer polls the queue every POLL_S seconds, so new work starts within ~POLL_S
# (huey's defaults back off to 10 s, far too slow for a chat waiting on its projections).
POLL_S = 0.05


@click.command()
@click.option("--workers", "-w", default=1, show_default=True, help="Worker threads.")
@home_option
@friendly_errors
def worker(workers: int) -> None:
    """Run the queue consumer: projection catch-up and the chat's shadow journal until Ctrl-C.

    While it runs, a chat on the same home hands its work to the queue instead of doing it
    in-process (presence: a shared lock on var/worker.lock)."""
    from workers import configure
    from workers.presence import hold_worker_lock

    home = current_home()
    huey = configure(home)
    consumer = huey.create_consumer(
        workers=workers, worker_type="thread", periodic=True, initial_delay=POLL_S,
        backoff=1.0, max_delay=POLL_S, scheduler_interval=1, flush_locks=True,
    )
    with hold_worker_lock(home):
        click.echo(f"diarist worker: {huey.storage_class.__name__} queue, home {home.root}",
                   err=True)
        consumer.run()

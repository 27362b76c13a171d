"""`diarist worker`: the Huey consumer with its periodic schedule (the Procfile's process)."""
from __future__ import annotations

import click

from .context import current_home, friendly_errors, home_option


@click.command()
@click.option("--workers", "-w", default=1, show_default=True, help="Worker threads.")
@home_option
@friendly_errors
def worker(workers: int) -> None:
    """Run the queue consumer: projection catch-up and the chat's shadow journal until Ctrl-C.

    While it runs, a chat on the same home hands its work to the queue instead of doing it
    in-process (presence: a shared lock on var/worker.lock)."""
    from workers.worker import run_worker

    run_worker(current_home(), workers, on_start=lambda line: click.echo(line, err=True))

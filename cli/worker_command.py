"""`diarist worker`: the Huey consumer with its periodic schedule (the Procfile's process)."""
from __future__ import annotations

import click

from .context import current_home, friendly_errors, home_option
from .output import echo


@click.command()
@click.option("--workers", "-w", default=1, show_default=True, help="Worker threads.")
@click.option("--mining", is_flag=True,
              help="Only extract chunks of mining passes from a shared (Redis) queue — a "
                   "worker on another machine with its own model server. It needs no access "
                   "to the home's files: its --home only holds its own config.")
@home_option
@friendly_errors
def worker(workers: int, mining: bool) -> None:
    """Run the queue consumer until Ctrl-C: projection catch-up, the chat's shadow journal,
    and on schedule the night's mining, dreaming and consolidation (02:00) and maintenance
    (every 6 h).

    While it runs, a chat on the same home hands its work to the queue instead of doing it
    in-process (presence: a shared lock on var/worker.lock)."""
    from workers.worker import run_worker

    run_worker(current_home(create=True), workers, on_start=lambda line: echo(line, err=True),
               mining=mining)

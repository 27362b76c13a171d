"""Commands over the projections: sync, replay, status."""
from __future__ import annotations

import click

from projections.engine import DEFAULT_BATCH

from .context import current_home, friendly_errors, home_option
from .output import echo
from .progress import terminal_progress


@click.command()
@click.option("--batch-size", type=click.IntRange(1), default=DEFAULT_BATCH,
              show_default=True, help="Events applied per transaction.")
@click.option("--no-embed", is_flag=True, envvar="DIARIST_NO_EMBED", show_envvar=True,
              help="Skip the embeddings: neither export the embedding model nor embed new "
                   "items (recall stays lexical for them until a later sync or the worker "
                   "embeds them). Vectors of forgotten items are still removed.")
@home_option
@friendly_errors
def sync(batch_size: int, no_embed: bool) -> None:
    """Run all pending projection work now, in this process, then exit.

    Then, unless --no-embed: make sure the embedding model is exported under var/models/
    and chosen in the log (the first time this imports torch and takes several seconds),
    and embed every item that has no vector yet."""
    from workers.dispatch import QUEUE
    from workers.sync.catch_up import sync as run_sync

    report = run_sync(current_home(), batch_size=batch_size, embed=not no_embed,
                      progress=terminal_progress, queue=QUEUE)
    for name, position in report.positions.items():
        echo(f"{name}: at {position} (+{report.moved[name]})")
    if report.embedded is not None:
        echo(f"embeddings: {report.embedded} embedded with {report.model}, "
                   f"{report.pending} pending")


@click.command()
@click.option("--verify", is_flag=True,
              help="Rebuild into a scratch copy and compare digests with the live projections "
                   "(the live ones are left alone); exit 1 on any difference.")
@click.option("--batch-size", type=click.IntRange(1), default=DEFAULT_BATCH,
              show_default=True, help="Events applied per transaction.")
@home_option
@friendly_errors
def replay(verify: bool, batch_size: int) -> None:
    """Rebuild every projection from the event log."""
    from workers.sync.replay import replay as run_replay
    from workers.sync.replay import verify as run_verify

    home = current_home()
    if not verify:
        done = run_replay(home, batch_size=batch_size, progress=terminal_progress)
        if done.broken is not None:
            echo(f"{home.projections_db} was {done.problem}: moved it aside to "
                 f"{done.broken} and rebuilt the projections from the log"
                 + (f" ({done.salvaged} cached vectors salvaged)"
                    if done.salvaged is not None else ""), err=True)
        for status in done.statuses:
            echo(f"{status.name}: rebuilt to {status.position}")
        return
    verdicts = run_verify(home, batch_size=batch_size)
    for v in verdicts:
        detail = "" if v.live == v.rebuilt else " vs rebuilt " + v.rebuilt[:16]
        detail += f"; {v.problem}" if v.problem else ""
        echo(f"{v.name}: {'ok' if v.same else 'DIFFERS'} at {v.position} "
                   f"(digest {v.live[:16]}{detail})")
    if not all(v.same for v in verdicts):
        echo("Live projections differ from a rebuild; run `diarist replay` to rebuild them.",
                   err=True)
        raise SystemExit(1)


@click.command()
@home_option
@friendly_errors
def status() -> None:
    """The log's size, each projection's position and lag, memory budget use and advice."""
    from workers.dispatch import QUEUE
    from workers.sync.status import status_lines

    for line in status_lines(current_home(), queue=QUEUE):
        echo(line)

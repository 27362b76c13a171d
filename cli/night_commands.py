"""The night's work, now: mine, dream, consolidate, maintain."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from .context import current_home, friendly_errors, home_option
from .output import echo
from .progress import bar_from

if TYPE_CHECKING:  # pragma: no cover
    from workers.mining.extract import MinerSpec

F = TypeVar("F", bound=Callable[..., Any])


def _model_options(fn: F) -> F:
    for option in reversed([
        click.option("--backend", type=click.Choice(["ollama", "openai", "scripted"]),
                     help="The model's backend (default: llm.backend; none configured: the "
                          "heuristic extractor)."),
        click.option("--model", help="The model (default: llm.mining_model, else llm.model)."),
        click.option("--base-url", help="Its server (default: $DIARIST_MINING_BASE_URL, "
                                        "llm.mining_base_url, else the chat's)."),
        click.option("--script", type=click.Path(dir_okay=False, exists=True, path_type=Path),
                     help="Rules file of the scripted backend."),
        click.option("--heuristic", is_flag=True,
                     help="Use the heuristic extractor even when a model is configured."),
        click.option("--dry-run", is_flag=True,
                     help="Decide and show everything, append nothing."),
    ]):
        fn = option(fn)
    return fn


def _spec(backend: str | None, model: str | None, base_url: str | None, script: Path | None,
          heuristic: bool) -> MinerSpec:
    from workers.night import spec_for

    return spec_for(current_home(), backend=backend, model=model, base_url=base_url,
                    script=str(script.resolve()) if script else None, heuristic=heuristic)


@click.command()
@_model_options
@click.option("--session", "sessions", multiple=True,
              help="Only this session (repeatable; also one that has not ended).")
@home_option
@friendly_errors
def mine(backend: str | None, model: str | None, base_url: str | None, script: Path | None,
         heuristic: bool, dry_run: bool, sessions: tuple[str, ...]) -> None:
    """Mine every ended session not mined yet into typed memories and journal lines.

    Resumable: a killed run goes on where it stopped, and no chunk of turns is ever mined
    twice. Without a model configured the heuristic extractor runs (no LLM needed)."""
    from workers.dispatch import QUEUE
    from workers.night import mine_now

    spec = _spec(backend, model, base_url, script, heuristic)
    report = mine_now(current_home(), spec, sessions=list(sessions) or None, dry_run=dry_run,
                      progress=bar_from(1), queue=QUEUE)
    what = "would be" if dry_run else ""
    echo(f"{'Dry run: ' if dry_run else ''}mined {report.sessions} session(s), "
               f"{report.chunks} chunk(s) of {report.turns} turns with "
               f"{report.model or spec.backend} ({report.calls} model call(s)) in "
               f"{report.seconds:.1f} s")
    echo(f"memories: {report.new} new {what}, {report.reinforced} reinforced "
               f"({report.dropped} already known), {report.chatter} left out as chatter, "
               f"{report.failures} chunk(s) the model "
               "failed (heuristic used)")
    if report.days:
        days = sorted(report.days)
        echo(f"journals: {len(days)} day(s), {days[0]} … {days[-1]}")
    for memory in report.memories[:10 if not dry_run else 50]:
        echo(f"  + {memory['type']:<17} {' '.join(memory['content'].split())[:100]}")
    if len(report.memories) > 10 and not dry_run:
        echo(f"  … and {len(report.memories) - 10} more (`diarist memory list`)")


@click.command()
@click.option("--dry-run", is_flag=True, help="Decide and show everything, append nothing.")
@home_option
@friendly_errors
def dream(dry_run: bool) -> None:
    """Merge duplicate memories, resolve conflicts (the fact said last wins), let relevancy
    fade and archive what fell below the floor."""
    from workers.dispatch import QUEUE
    from workers.night import dream_now

    report = dream_now(current_home(), dry_run=dry_run, progress=bar_from(1), queue=QUEUE)
    echo(f"{'Dry run: ' if dry_run else ''}{report.memories} active memories in "
               f"{report.seconds:.1f} s: {report.merged} merged into {report.merged_groups}, "
               f"{report.superseded} superseded, {report.archived} archived"
               + (f" (relevancy as of {report.decayed_at})" if report.decayed_at else ""))
    for line in report.decisions[:20]:
        echo(f"  {line}")
    if not report.events:
        echo("Nothing to change.")


@click.command()
@_model_options
@home_option
@friendly_errors
def consolidate(backend: str | None, model: str | None, base_url: str | None,
                script: Path | None, heuristic: bool, dry_run: bool) -> None:
    """Merge the journals since the last consolidation into MEMORY.md (within its cap).
    Nothing new: nothing is appended. Earlier versions: `diarist memory history`."""
    from workers.dispatch import QUEUE
    from workers.night import consolidate_now

    spec = _spec(backend, model, base_url, script, heuristic)
    report = consolidate_now(current_home(), spec, dry_run=dry_run, progress=bar_from(1),
                             queue=QUEUE)
    if not report.changed:
        echo(f"Nothing to consolidate ({report.entries} new journal entries).")
        return
    echo(f"{'Dry run: ' if dry_run else ''}MEMORY.md {report.before_chars} → "
               f"{report.after_chars} characters with {report.model}: {report.added} line(s) "
               f"added from {len(report.journals)} journal day(s), {report.stale_dropped} "
               f"outdated or unclear dropped, {report.trimmed} trimmed"
               + (f", sections rewritten: {', '.join(report.rewritten_sections)}"
                  if report.rewritten_sections else "")
               + (f", {report.failures} model failure(s)" if report.failures else ""))
    if dry_run:
        echo(report.content, nl=False)


@click.command()
@click.option("--dry-run", is_flag=True, help="Show what would be archived; change nothing.")
@home_option
@friendly_errors
def maintain(dry_run: bool) -> None:
    """Archive journals older than maintenance.archive_after_days to memory/archive/ and
    prune the queue (what `diarist worker` does every 6 h)."""
    from workers.dispatch import QUEUE
    from workers.night import maintain_now

    report = maintain_now(current_home(), dry_run=dry_run, queue=QUEUE)
    verb = "would archive" if dry_run else "archived"
    echo(f"journals: {verb} {len(report.archived)}"
               + (f" ({report.archived[0]} … {report.archived[-1]})" if report.archived else ""))
    if report.queue is not None:
        dropped = ", ".join(f"{n} {name}" for name, n in sorted(report.queue.dropped.items()))
        echo(f"queue: {report.queue.tasks} task(s) pruned{': ' + dropped if dropped else ''}"
                   f", {report.queue.keys} stale key(s), {report.queue.pending} pending")
    elif report.queue_error:
        echo(f"queue: unreachable ({report.queue_error})")

"""Commands over the event log itself: import, export, events, redact."""
from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import click

from events import EventLog, RecordedEvent

from .context import current_home, friendly_errors, home_option
from .logging_setup import log as logger
from .output import echo


@click.command("import")
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True, path_type=Path))
@home_option
@friendly_errors
def import_(file: Path) -> None:
    """Import a transcript or a chat export into the event log.

    FILE is diarist's transcript (JSONL, one turn a line; `-` reads standard input), a
    ChatGPT data export (its .zip, or the conversations.json in it), a Claude data export
    (conversations.json, or its .zip) or an Open WebUI chat export (.json) — told apart by
    their content. Each conversation becomes a session with its title; only the branch kept
    and the messages shown in the chat are imported (system, tool and hidden ones are left
    out). Idempotent by each turn's ref (an export's message ids): importing the same file
    twice appends nothing, and a newer export appends only what is new. All or nothing: a
    malformed line or conversation fails the whole import, saying what is wrong, and so
    does a transcript's ref already in the log for a different turn.
    """
    from workers.dispatch import QUEUE
    from workers.transcripts import import_transcript

    result = import_transcript(current_home(create=True), file, queue=QUEUE)
    logger.info("import.done", file=str(file), format=result.format, appended=result.appended,
                skipped=result.skipped)
    source = "standard input" if str(file) == "-" else file
    kind = "" if result.format == "transcript" else f" ({result.label})"
    echo(
        f"Imported {source}{kind}: {result.turns} turns in {result.sessions} sessions; "
        f"{result.appended} events appended, {result.skipped} already in the log."
    )
    if result.left_out:
        echo(f"Left out: {'; '.join(result.left_out)}.")
    if result.kept:
        shown = result.kept[:SHOWN_KEPT]
        more = len(result.kept) - len(shown)
        echo(f"Warning: {len(result.kept)} message(s) changed since they were first imported; "
             "the log keeps them as they were (`diarist redact` masks a stored text):\n"
             + "\n".join(shown) + (f"\n… and {more:,} more" if more else ""), err=True)


SHOWN_KEPT = 5  # changed messages named in full after an import


@click.command()
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help="Write to this file instead of standard output.")
@home_option
@friendly_errors
def export(output: Path | None) -> None:
    """Export every turn in the log as transcript JSONL (times in UTC).

    A turn this diarist cannot read (a newer schema_version, a damaged payload, a type it
    does not know) is written as stored, marked `{"unreadable": …, "problem": …}`, and named
    on standard error."""
    from workers.transcripts import export_transcript

    result = export_transcript(
        current_home(), output,
        lambda line: click.echo(line))  # data, byte for byte: not made visible (cli/output.py)
    if output is not None:
        echo(f"Exported {result.turns} turns to {output}.", err=True)
    for event in result.unreadable:
        echo(f"Warning: {event.label()} could not be read ({event.problem}); written "
             "raw as an `unreadable` line, which `diarist import` refuses.", err=True)


@click.command()
@click.argument("folder", type=click.Path(file_okay=False, path_type=Path))
@home_option
@friendly_errors
def backup(folder: Path) -> None:
    """Back up the log and the config into FOLDER (new or empty, outside the home).

    A consistent copy, taken with SQLite's online backup while other processes keep
    writing, checked before it is reported. Everything else is rebuilt from it: to restore,
    copy FOLDER's files into a new home and run `diarist replay` (docs/reliability.md)."""
    from workers.backup import backup as run_backup

    done = run_backup(current_home(), folder)
    echo(f"Backed up {done.events} events (up to seq {done.head}, "
         f"{done.size / 1e6:.1f} MB, integrity ok) to {done.folder}: "
         + ", ".join(p.name for p in done.files) + ".")
    echo("Restore: copy them into a new home, then `diarist --home NEW replay`.")


def _summary(event: dict) -> str:
    payload = event["payload"]
    if event.get("problem"):  # shown raw, marked
        raw = json.dumps(payload, ensure_ascii=False, sort_keys=True)
        return f"[unreadable v{event['schema_version']}: {event['problem']}] {raw}"[:200]
    text = payload.get("text") or payload.get("summary") or payload.get("content") or ""
    if not text:
        text = json.dumps(payload, ensure_ascii=False, sort_keys=True)
    text = " ".join(str(text).split())
    return text if len(text) <= 80 else text[:77] + "..."


def _print_events(events: Iterable[RecordedEvent], as_json: bool) -> None:
    for event in events:
        data = event.to_json()
        if as_json:
            echo(json.dumps(data, ensure_ascii=False, sort_keys=True))
        else:
            ref = f" ref={event.ref}" if event.ref else ""
            echo(f"{event.seq:>7}  {event.occurred_at[:19]}Z  {event.type:<18} "
                       f"{event.stream}#{event.stream_version}{ref}  {_summary(data)}")


F = Callable[..., Any]


def _with_filters(fn: F) -> F:
    """``--type``, ``--stream`` and ``--json``, shared by ``events`` and ``events tail``."""
    for option in reversed([
        click.option("--type", "types", multiple=True, help="Only this event type (repeatable)."),
        click.option("--stream", help="Only this stream (a session id, `memory`, ...)."),
        click.option("--json", "as_json", is_flag=True, help="One JSON object a line."),
    ]):
        fn = option(fn)
    return fn


@click.group(invoke_without_command=True)
@click.pass_context
@click.option("--limit", "-n", type=click.IntRange(1), default=50, show_default=True,
              help="How many of the newest events.")
@click.option("--all", "all_", is_flag=True, help="Every event (no --limit).")
@_with_filters
@home_option
@friendly_errors
def events(ctx: click.Context, limit: int, all_: bool, types: tuple[str, ...],
           stream: str | None, as_json: bool) -> None:
    """List the newest events (oldest first); see `events show` and `events tail`."""
    if ctx.invoked_subcommand is not None:
        return
    with EventLog.reader(current_home()) as log:
        newest = log.read(0, None if all_ else limit, types=types or None, stream=stream,
                          descending=True)
        _print_events(list(reversed(newest)), as_json)


@events.command("show")
@click.argument("key")
@home_option
@friendly_errors
def events_show(key: str) -> None:
    """Show one event in full, by seq, id or ref."""
    with EventLog.reader(current_home()) as log:
        echo(json.dumps(log.get(key).to_json(), ensure_ascii=False, indent=2,
                              sort_keys=True))


@events.command("tail")
@click.option("--follow", "-f", is_flag=True, help="Keep printing new events until Ctrl-C.")
@click.option("--interval", type=click.FloatRange(0.01), default=0.5, show_default=True,
              help="Seconds between polls with -f.")
@click.option("--limit", "-n", type=click.IntRange(0), default=10, show_default=True,
              help="How many events to start with (0: none, only new ones with -f).")
@_with_filters
@home_option
@friendly_errors
def events_tail(follow: bool, interval: float, limit: int, types: tuple[str, ...],
                stream: str | None, as_json: bool) -> None:
    """Print the last events, and with -f every new one as it is appended."""
    with EventLog.reader(current_home()) as log:
        newest = list(reversed(log.read(0, limit, types=types or None, stream=stream,
                                        descending=True)))
        _print_events(newest, as_json)
        position = max([e.seq for e in newest] + [log.head()])
        while follow:
            time.sleep(interval)
            head = log.head()
            _print_events(log.read(position, upto=head, types=types or None, stream=stream),
                          as_json)
            position = head


@click.command()
@click.argument("key", metavar="EVENT_ID|REF")
@click.option("--pattern", help="Mask this text (literally) instead of what the scrubber finds.")
@click.option("--regex", is_flag=True, help="Read --pattern as a Python regular expression.")
@click.option("--reason", default="", help="Why (kept in the `Redacted` event).")
@click.option("--dry-run", is_flag=True, help="Say what would be masked; change nothing.")
@home_option
@friendly_errors
def redact(key: str, pattern: str | None, regex: bool, reason: str, dry_run: bool) -> None:
    """Remove a secret from the log itself: mask it in the event KEY names (seq, id or ref)
    and wherever the log repeats it, record `Redacted` (what and when, never the secret),
    rebuild the projections and compact every database."""
    from workers.dispatch import QUEUE
    from workers.redaction.redact import redact as run_redact

    if regex and pattern is None:
        raise click.UsageError("--regex needs --pattern")
    report = run_redact(current_home(), key, queue=QUEUE, pattern=pattern, regex=regex,
                        reason=reason, dry_run=dry_run)
    named = f"event {report.event.seq} ({report.event.type} {report.event.id})"
    what = f" ({', '.join(report.kinds)})" if report.kinds else ""
    if report.events:
        where = "; ".join(f"{e['seq']} {e['type']}: {', '.join(e['fields'])}"
                          for e in report.events)
        verb = "Would mask" if dry_run else "Masked"
        echo(f"{verb} {report.masked} span(s){what} found by the {report.how} in "
             f"{len(report.events)} event(s): {where}.")
    else:
        echo(f"Nothing left to mask in {named}: redacted before "
             f"({', '.join(t[:19] for t in report.previously)}).")
    if report.redacted is not None:
        echo(f"Recorded Redacted {report.redacted.id}.")
    done = report.compaction
    if done is None:
        return
    echo(f"Projections rebuilt; vacuumed {', '.join(done.vacuumed) or 'nothing'}"
         + (f"; {done.queue_entries} queue entr(ies) removed" if done.queue_entries else "")
         + (f"; {done.vectors} cached vector(s) dropped" if done.vectors else "") + ".")
    if done.busy:
        echo(f"Warning: another process holds {', '.join(done.busy)} open, so old pages stay "
             "in the -wal file until it closes; stop it (`diarist worker`, a chat) and run "
             "this command again.", err=True)
    if done.leftovers:
        echo("Warning: these files under the home still hold the masked text (not diarist's"
             f" to rewrite — delete or redact them yourself): {', '.join(done.leftovers)}",
             err=True)

"""Memory commands: recall, remember, journal, memory list|show|forget|flag|status."""
from __future__ import annotations

import json
from pathlib import Path

import click

from events import NotFound
from events.config import load_config
from events.memory_types import DEFAULT
from projections import ProjectionStore
from projections.items import MEMORY_TYPES
from projections.memories import STATUSES, get_memory, list_memories
from projections.recall import DEFAULT_BUDGET, RecallResult

from .context import current_home, friendly_errors, home_option, opened
from .output import echo


def _print_human(result: RecallResult) -> None:
    if not result.items:
        echo(f"Nothing recalled for {result.query!r}.")
        return
    current = None
    for item in result.items:
        if item.source != current:
            current = item.source
            echo(f"[{current}]")
        text = " ".join(item.content.split())
        refs = f"  refs: {', '.join(item.refs)}" if item.refs else ""
        echo(f"  {item.score:.4f}  {item.id}  {text[:200]}{refs}")
    echo(f"({result.used_tokens} of {result.budget or 'unlimited'} tokens)")


def _warn_if_behind(store: ProjectionStore) -> None:
    from workers.memory.recall import projection_lag

    lag = projection_lag(store)
    if lag and store.readonly:
        echo(f"(projections are {lag} events behind the log; the home is read-only, "
             "so they cannot be caught up here)", err=True)
    elif lag:
        echo(f"(projections are {lag} events behind the log; run `diarist sync` or "
                   "start `diarist worker`)", err=True)


@click.command("recall")
@click.argument("query", required=False)
@click.option("--queries", type=click.Path(dir_okay=False, path_type=Path),
              help="JSONL file of {\"id\", \"query\"} lines (\"at\" too, if known): one JSON "
                   "result per line (with --json).")
@click.option("--k", "k", type=click.IntRange(1), default=None,
              help="Scored items at most, after profile, project facts and MEMORY.md "
                   "(default: memory.top_k).")
@click.option("--budget", type=click.IntRange(0), default=DEFAULT_BUDGET, show_default=True,
              help="Token budget for all items; 0 means no budget.")
@click.option("--at", "at", metavar="TIME",
              help="When the query is asked (ISO-8601 with an offset, or a day YYYY-MM-DD; "
                   "default: now; a --queries line's \"at\" wins): freshness and \"last "
                   "week\" are read from it.")
@click.option("--json", "as_json", is_flag=True, help="Print the stable JSON form.")
@home_option
@friendly_errors
def recall_cmd(query: str | None, queries: Path | None, k: int | None, budget: int,
               at: str | None, as_json: bool) -> None:
    """Recall memory for QUERY within a token budget."""
    from workers.memory.recall import Query, asked_at, check_query, read_queries, recall_each

    if (query is None) == (queries is None):
        raise click.UsageError("give either QUERY or --queries FILE")
    if queries is not None and not as_json:
        raise click.UsageError("--queries writes JSON lines: add --json")
    if query is not None:
        check_query(query)
    when = asked_at(at) if at is not None else None
    home = current_home()
    top_k = k or load_config(home).memory.top_k
    asked: list[Query] = (read_queries(queries) if queries is not None
                          else [(None, query or "", None)])
    with opened(home) as (_log, store):
        for qid, result in recall_each(home, store, asked, budget, top_k, when):
            if queries is not None:
                echo(json.dumps({"id": qid, **result.to_json()}, ensure_ascii=False))
            elif as_json:
                echo(json.dumps(result.to_json(), ensure_ascii=False))
            else:
                _print_human(result)
        _warn_if_behind(store)


@click.command()
@click.argument("text")
@click.option("--type", "type_", type=click.Choice(MEMORY_TYPES), default=DEFAULT.name,
              show_default=True, help="The memory's type.")
@home_option
@friendly_errors
def remember(text: str, type_: str) -> None:
    """Remember TEXT: a note in today's journal and a typed memory."""
    from workers.dispatch import QUEUE
    from workers.memory.remember import remember as run_remember

    done = run_remember(current_home(create=True), text, type_, queue=QUEUE)
    echo(f"Remembered {done.event.id} ({type_}).")
    if done.warning:
        echo(f"Warning: {done.warning}", err=True)


@click.command()
@click.argument("date", default="today")
@home_option
@friendly_errors
def journal(date: str) -> None:
    """Show the journal of DATE (YYYY-MM-DD, today or yesterday; UTC days)."""
    from workers.memory.report import journal_day

    day, text = journal_day(current_home(), date)
    if text is None:
        echo(f"No journal entry for {day}.")
    else:
        echo(text, nl=False)


@click.group()
def memory() -> None:
    """Typed memories: list, show, forget, flag, status, history."""


@memory.command("list")
@click.argument("type_", metavar="[TYPE]", required=False, type=click.Choice(MEMORY_TYPES))
@click.option("--status", "statuses", multiple=True, type=click.Choice(STATUSES),
              help="Only these statuses (repeatable; default: active).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object a line.")
@home_option
@friendly_errors
def memory_list(type_: str | None, statuses: tuple[str, ...], as_json: bool) -> None:
    """List memories, optionally of one TYPE."""
    with opened(current_home()) as (_log, store):
        rows = list_memories(store.db, type_, statuses or ("active",))
    for m in rows:
        if as_json:
            echo(json.dumps(m.__dict__, ensure_ascii=False))
        else:
            text = " ".join(m.content.split())
            echo(f"{m.id}  {m.type:<17} {m.confidence:.2f}  {m.status:<10} {text[:100]}")
    if not rows and not as_json:
        echo("No memories.")


@memory.command("show")
@click.argument("memory_id")
@home_option
@friendly_errors
def memory_show(memory_id: str) -> None:
    """Show one memory in full, with where it came from."""
    with opened(current_home()) as (_log, store):
        found = get_memory(store.db, memory_id)
    if found is None:
        raise NotFound(f"no memory {memory_id!r}", hint="List them with `diarist memory list`.")
    echo(json.dumps(found.__dict__, ensure_ascii=False, indent=2))


@memory.command("forget")
@click.argument("key")
@click.option("--reason", default="", help="Why (kept in the log).")
@home_option
@friendly_errors
def memory_forget(key: str, reason: str) -> None:
    """Forget KEY (a memory id, journal entry id, or a turn's event id or ref) everywhere:
    recall, the search index, vectors, journal files and MEMORY.md."""
    from workers.dispatch import QUEUE
    from workers.memory.forget import forget

    count = forget(current_home(), key, reason, queue=QUEUE)
    echo(f"Forgot {key} ({count} item{'s' if count != 1 else ''}).")


@memory.command("flag")
@click.argument("memory_id")
@click.option("--reason", default="", help="What is wrong with it (kept in the log).")
@home_option
@friendly_errors
def memory_flag(memory_id: str, reason: str) -> None:
    """Flag a memory as doubtful: confidence −0.1; at 0.2 or below it is archived."""
    from workers.dispatch import QUEUE
    from workers.memory.forget import flag

    after = flag(current_home(), memory_id, reason, queue=QUEUE)
    echo(f"Flagged {memory_id}: confidence {after.confidence:.2f}, {after.status}.")


@memory.command("status")
@home_option
@friendly_errors
def memory_status() -> None:
    """Counts of memories by type and status, journal days, MEMORY.md and the budget."""
    from workers.memory.report import memory_report

    home = current_home()
    with opened(home) as (_log, store):
        report = memory_report(home, store)
        for type_, status, count in report.counts:
            echo(f"{type_:<18} {status:<10} {count}")
        if not report.counts:
            echo("No memories yet.")
        days = report.journal_days
        echo(f"journal: {len(days)} day(s)" + (f", latest {days[-1]}" if days else ""))
        echo(f"MEMORY.md: {report.long_term_chars} characters")
        echo(f"{report.budget}\ntop_k {report.top_k}")
        _warn_if_behind(store)


@memory.command("history")
@click.argument("version", required=False)
@home_option
@friendly_errors
def memory_history(version: str | None) -> None:
    """Every MEMORY.md there ever was, newest first; with VERSION (a number from the list,
    or an event id) print that one as it was (secrets masked, forgotten lines dropped)."""
    from workers.consolidation.history import version as one_version
    from workers.consolidation.history import versions

    home = current_home()
    if version is not None:
        echo(one_version(home, version).content, nl=False)
        return
    found = versions(home)
    if not found:
        echo("No MEMORY.md yet (`diarist consolidate` writes one).")
    for v in found:
        days = f", journals {v.journals[0]} … {v.journals[-1]}" if v.journals else ""
        echo(f"{v.number:>4}  {v.at[:19]}  {v.chars:>6} chars  {v.model or '-'}  "
                   f"{v.id}{days}")

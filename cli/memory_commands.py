"""Memory commands: recall, remember, journal, memory list|show|forget|flag|status."""
from __future__ import annotations

import datetime as dt
import json
import sqlite3
from pathlib import Path

import click

from events import EventLog, Home, NotFound, clock
from events.config import load_config
from events.errors import DiaristError
from events.types import MemoryFlagged, MemoryForgotten, Remembered
from projections import ProjectionStore
from projections.items import MEMORY_TYPES
from projections.journal import FILE_NAME
from projections.memories import STATUSES, get_memory, list_memories
from projections.recall import DEFAULT_BUDGET, RecallResult, recall
from projections.stats import budget_line, budget_summary
from projections.vectors import refresh_vectors

from .context import current_home, friendly_errors, home_option, opened
from .queue import after_append

MEMORY_STREAM = "memory"


def _semantic(home: Home, store: ProjectionStore):  # type: ignore[no-untyped-def]
    """Cosine search over the vectors when a model is exported and items are embedded."""
    from projections.semantic import semantic_searcher

    return semantic_searcher(home, store)


def _print_human(result: RecallResult) -> None:
    if not result.items:
        click.echo(f"Nothing recalled for {result.query!r}.")
        return
    current = None
    for item in result.items:
        if item.source != current:
            current = item.source
            click.echo(f"[{current}]")
        text = " ".join(item.content.split())
        refs = f"  refs: {', '.join(item.refs)}" if item.refs else ""
        click.echo(f"  {item.score:.4f}  {item.id}  {text[:200]}{refs}")
    click.echo(f"({result.used_tokens} of {result.budget or 'unlimited'} tokens)")


def _warn_if_behind(store: ProjectionStore) -> None:
    lag = max((s.lag for s in store.status()), default=0)
    if lag:
        click.echo(f"(projections are {lag} events behind the log; run `diarist sync` or "
                   "start `diarist worker`)", err=True)


@click.command("recall")
@click.argument("query", required=False)
@click.option("--queries", type=click.Path(dir_okay=False, path_type=Path),
              help="JSONL file of {\"id\", \"query\"} lines: one JSON result per line (with --json).")
@click.option("--k", "k", type=click.IntRange(1), default=None,
              help="Scored items at most, after profile, project facts and MEMORY.md "
                   "(default: memory.top_k).")
@click.option("--budget", type=click.IntRange(0), default=DEFAULT_BUDGET, show_default=True,
              help="Token budget for all items; 0 means no budget.")
@click.option("--json", "as_json", is_flag=True, help="Print the stable JSON form.")
@home_option
@friendly_errors
def recall_cmd(query: str | None, queries: Path | None, k: int | None, budget: int,
               as_json: bool) -> None:
    """Recall memory for QUERY within a token budget."""
    if (query is None) == (queries is None):
        raise click.UsageError("give either QUERY or --queries FILE")
    if queries is not None and not as_json:
        raise click.UsageError("--queries writes JSON lines: add --json")
    home = current_home()
    top_k = k or load_config(home).memory.top_k
    with opened(home) as (_log, store):
        semantic = _semantic(home, store)
        if queries is None:
            result = recall(store.db, query or "", budget, top_k, semantic)
            if as_json:
                click.echo(json.dumps(result.to_json(), ensure_ascii=False))
            else:
                _print_human(result)
        else:
            for qid, text in _read_queries(queries):
                result = recall(store.db, text, budget, top_k, semantic)
                click.echo(json.dumps({"id": qid, **result.to_json()}, ensure_ascii=False))
        _warn_if_behind(store)


def _read_queries(path: Path) -> list[tuple[object, str]]:
    """All lines validated before any is answered: `file:line: what is wrong`."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise DiaristError(f"{path}: no such file") from None
    out, errors = [], []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            errors.append(f"{path}:{number}: not valid JSON ({exc.msg})")
            continue
        if not isinstance(obj, dict) or "id" not in obj or not isinstance(obj.get("query"), str):
            errors.append(f"{path}:{number}: expected {{\"id\": ..., \"query\": \"text\"}}")
            continue
        out.append((obj["id"], obj["query"]))
    if errors:
        raise DiaristError("\n".join(errors[:10]), hint="Fix those lines; nothing was recalled.")
    return out


def _catch_up_now(home: Home, log: EventLog) -> None:
    """Project a just-appended event in this process (no embedding), so the next read sees
    it even with no worker running; a worker gets the rest."""
    from projections import open_store

    with open_store(home, log) as store:
        store.catch_up_all()
    after_append(home)


@click.command()
@click.argument("text")
@click.option("--type", "type_", type=click.Choice(MEMORY_TYPES), default="user_preference",
              show_default=True, help="The memory's type.")
@home_option
@friendly_errors
def remember(text: str, type_: str) -> None:
    """Remember TEXT: a note in today's journal and a typed memory."""
    if not text.strip():
        raise DiaristError("nothing to remember: TEXT is empty",
                           hint='Give the note in quotes: diarist remember "I prefer tabs"')
    home = current_home()
    with EventLog(home.events_db) as log:
        event = log.append(Remembered(text=text.strip(), type=type_, source="user"),
                           stream=MEMORY_STREAM)
        _catch_up_now(home, log)
    click.echo(f"Remembered {event.id} ({type_}).")


def _parse_day(value: str) -> str:
    today = clock.now().date()
    if value == "today":
        return today.isoformat()
    if value == "yesterday":
        return (today - dt.timedelta(days=1)).isoformat()
    try:
        return dt.date.fromisoformat(value).isoformat()
    except ValueError:
        raise DiaristError(f"not a date: {value!r}",
                           hint="Use YYYY-MM-DD, `today` or `yesterday`.") from None


@click.command()
@click.argument("date", default="today")
@home_option
@friendly_errors
def journal(date: str) -> None:
    """Show the journal of DATE (YYYY-MM-DD, today or yesterday; UTC days)."""
    home = current_home()
    day = _parse_day(date)
    path = home.memory_dir / f"{day}.md"
    if not FILE_NAME.match(path.name) or not path.exists():
        click.echo(f"No journal entry for {day}.")
        return
    click.echo(path.read_text(encoding="utf-8"), nl=False)


@click.group()
def memory() -> None:
    """Typed memories: list, show, forget, flag, status."""


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
            click.echo(json.dumps(m.__dict__, ensure_ascii=False))
        else:
            text = " ".join(m.content.split())
            click.echo(f"{m.id}  {m.type:<17} {m.confidence:.2f}  {m.status:<10} {text[:100]}")
    if not rows and not as_json:
        click.echo("No memories.")


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
    click.echo(json.dumps(found.__dict__, ensure_ascii=False, indent=2))


def _resolve_forgettable(store: ProjectionStore, key: str) -> list[str]:
    """The contents an id names (memory, journal entry, turn by event id or ref); empty
    when it names nothing."""
    db = store.db
    texts: list[str] = []
    found = get_memory(db, key)
    if found and found.status != "forgotten":
        texts.append(found.content)
    for sql in ("SELECT content FROM journal_entries WHERE id = ?",
                "SELECT text FROM turns WHERE event_id = ? OR ref = ?",
                "SELECT f.content FROM search_items i JOIN search_fts f ON f.rowid = i.rowid"
                " WHERE i.id = ?"):
        try:
            args = (key, key) if sql.count("?") == 2 else (key,)
            texts += [row[0] for row in db.execute(sql, args)]
        except sqlite3.OperationalError:  # a projection not built yet has nothing to find
            continue
    return sorted({t for t in texts if t.strip()})


@memory.command("forget")
@click.argument("key")
@click.option("--reason", default="", help="Why (kept in the log).")
@home_option
@friendly_errors
def memory_forget(key: str, reason: str) -> None:
    """Forget KEY (a memory id, journal entry id, or a turn's event id or ref) everywhere:
    recall, the search index, vectors, journal files and MEMORY.md."""
    home = current_home()
    with opened(home) as (log, store):
        store.catch_up_all()
        texts = _resolve_forgettable(store, key)
        if not texts:
            raise NotFound(f"nothing to forget for {key!r}",
                           hint="Use an id from `diarist memory list`, `diarist recall` or "
                                "`diarist events`.")
        log.append(MemoryForgotten(ids=[key], reason=reason, texts=texts), stream=MEMORY_STREAM)
        store.catch_up_all()
        refresh_vectors(store)  # zero the forgotten columns of the vector matrix file now
        store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    after_append(home)
    click.echo(f"Forgot {key} ({len(texts)} item{'s' if len(texts) != 1 else ''}).")


@memory.command("flag")
@click.argument("memory_id")
@click.option("--reason", default="", help="What is wrong with it (kept in the log).")
@home_option
@friendly_errors
def memory_flag(memory_id: str, reason: str) -> None:
    """Flag a memory as doubtful: confidence −0.1; at 0.2 or below it is archived."""
    home = current_home()
    with opened(home) as (log, store):
        store.catch_up_all()
        found = get_memory(store.db, memory_id)
        if found is None or found.status != "active":
            raise NotFound(f"no active memory {memory_id!r}",
                           hint="List them with `diarist memory list`.")
        log.append(MemoryFlagged(ids=[memory_id], reason=reason), stream=MEMORY_STREAM)
        store.catch_up_all()
        after = get_memory(store.db, memory_id)
    after_append(home)
    assert after is not None
    click.echo(f"Flagged {memory_id}: confidence {after.confidence:.2f}, {after.status}.")


@memory.command("status")
@home_option
@friendly_errors
def memory_status() -> None:
    """Counts of memories by type and status, journal days, MEMORY.md and the budget."""
    home = current_home()
    config = load_config(home)
    with opened(home) as (_log, store):
        db = store.db
        try:
            rows = db.execute("SELECT type, status, COUNT(*) FROM memories GROUP BY 1, 2"
                              " ORDER BY 1, 2").fetchall()
        except Exception:  # noqa: BLE001
            rows = []
        for type_, status, count in rows:
            click.echo(f"{type_:<18} {status:<10} {count}")
        if not rows:
            click.echo("No memories yet.")
        days = sorted(p.name for p in home.memory_dir.glob("*.md") if FILE_NAME.match(p.name))
        click.echo(f"journal: {len(days)} day(s)" + (f", latest {days[-1][:-3]}" if days else ""))
        long_term = home.memory_dir / "MEMORY.md"
        size = len(long_term.read_text(encoding="utf-8")) if long_term.exists() else 0
        click.echo(f"MEMORY.md: {size} characters")
        click.echo(budget_line(budget_summary(db, config.memory.budget_pct),
                               config.memory.budget_pct) + f"\ntop_k {config.memory.top_k}")
        _warn_if_behind(store)

"""Commands over the projections: sync, replay, status."""
from __future__ import annotations

import contextlib
import sqlite3
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import click

from events import Home
from projections import ProjectionStore, open_store
from projections.embedding import load_embedder
from projections.engine import DEFAULT_BATCH, Progress
from events.config import load_config
from projections.stats import budget_line, budget_summary
from projections.vectors import active_model, embed_pending, pending_count, refresh_vectors

from .context import current_home, friendly_errors, home_option, opened


@contextlib.contextmanager
def _progress(total: int, label: str) -> Iterator[Progress]:
    """A progress bar on stderr when it is a terminal and the work is long."""
    if total < 5000 or not sys.stderr.isatty():
        yield lambda n: None
        return
    with click.progressbar(length=total, label=label, file=sys.stderr) as bar:
        yield bar.update


def _lag(store: ProjectionStore) -> int:
    return sum(s.lag for s in store.status())


@click.command()
@click.option("--batch-size", default=DEFAULT_BATCH, show_default=True,
              help="Events applied per transaction.")
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
    home = current_home()
    with opened(home) as (log, store):
        with _progress(_lag(store), "Projecting") as progress:
            moved = store.catch_up_all(batch_size=batch_size, progress=progress)
        embedded = None
        if no_embed or "vectors" not in store.projectors:
            refresh_vectors(store)
        else:
            from workers.models import ensure_model

            ensure_model(home, log)  # may append an EmbeddingModelChosen: project it too
            for name, n in store.catch_up_all(batch_size=batch_size).items():
                moved[name] += n
            active = active_model(store)
            assert active is not None
            pending = pending_count(store)
            if pending:  # loading the model costs ~0.3 s: only when there is work
                embedder = load_embedder(home, active)
                with _progress(pending, "Embedding") as progress:
                    embedded = embed_pending(store, embedder, progress=progress)
            else:
                embedded = 0
                refresh_vectors(store)
        for status in store.status():
            click.echo(f"{status.name}: at {status.position} (+{moved[status.name]})")
        if embedded is not None:
            click.echo(f"embeddings: {embedded} embedded with {active.model}, "
                       f"{pending_count(store)} pending")


@click.command()
@click.option("--verify", is_flag=True,
              help="Rebuild into a scratch copy and compare digests with the live projections "
                   "(the live ones are left alone); exit 1 on any difference.")
@click.option("--batch-size", default=DEFAULT_BATCH, show_default=True,
              help="Events applied per transaction.")
@home_option
@friendly_errors
def replay(verify: bool, batch_size: int) -> None:
    """Rebuild every projection from the event log."""
    home = current_home()
    with opened(home) as (log, store):
        if not verify:
            with _progress(log.head() * len(store.projectors), "Replaying") as progress:
                for name in store.projectors:
                    store.rebuild(name, batch_size=batch_size, progress=progress)
            refresh_vectors(store)  # the cached vectors are reused: only the file is checked
            for status in store.status():
                click.echo(f"{status.name}: rebuilt to {status.position}")
            return
        if _verify(home, store, batch_size):
            raise SystemExit(1)


def _verify(home: Home, live: ProjectionStore, batch_size: int) -> bool:
    """True when any projection differs from a fresh rebuild at the same position."""
    differs = False
    with tempfile.TemporaryDirectory(prefix="diarist-verify-") as scratch_dir:
        scratch = open_store(Home(Path(scratch_dir)), live.log)
        try:
            for status in live.status():
                problem = _check(live, status.name)
                scratch.rebuild(status.name, upto=status.position, batch_size=batch_size)
                ours, theirs = live.digest(status.name), scratch.digest(status.name)
                same = ours == theirs and problem is None
                differs |= not same
                detail = "" if ours == theirs else " vs rebuilt " + theirs[:16]
                detail += f"; {problem}" if problem else ""
                click.echo(f"{status.name}: {'ok' if same else 'DIFFERS'} at {status.position} "
                           f"(digest {ours[:16]}{detail})")
        finally:
            scratch.close()
    if differs:
        click.echo("Live projections differ from a rebuild; run `diarist replay` to rebuild them.",
                   err=True)
    return differs


def _check(store: ProjectionStore, name: str) -> str | None:
    """What the projection's own consistency check found wrong (e.g. an FTS index that no
    longer matches its rows), or None."""
    try:
        store.check(name)
    except sqlite3.DatabaseError as exc:
        return f"consistency check failed: {exc}"
    return None


@click.command()
@home_option
@friendly_errors
def status() -> None:
    """The log's size, each projection's position and lag, memory budget use and advice."""
    home = current_home()
    config = load_config(home)
    with opened(home) as (log, store):
        size = sum(p.stat().st_size for p in home.root.glob("events.db*") if p.is_file())
        click.echo(f"home: {home.root}")
        click.echo(f"log: {log.count()} events, head {log.head()}, {size / 1e6:.1f} MB")
        for s in store.status():
            click.echo(f"projection {s.name}: position {s.position}, lag {s.lag}")
        click.echo(budget_line(budget_summary(store.db, config.memory.budget_pct),
                           config.memory.budget_pct))
        active = active_model(store)
        if active is None:
            click.echo("embeddings: no model chosen yet (`diarist sync` exports it); recall is lexical")
        else:
            click.echo(f"embeddings: {active.model}, {pending_count(store)} items waiting")
    click.echo(f"queue: {_queue_line(home)}")
    click.echo(f"worker: {_worker_line(home)}")


def _worker_line(home: Home) -> str:
    from workers.presence import last_worker_pid, worker_present

    if not worker_present(home):
        return "none running here (the chat catches up itself)"
    pid = last_worker_pid(home)
    return "running" + (f" (last started: pid {pid})" if pid else "")


def _queue_line(home: Home) -> str:
    from workers import configure

    try:
        huey = configure(home)
        where = huey.storage_kwargs.get("url") or huey.storage_kwargs.get("filename")
        return f"{huey.storage_class.__name__} at {where}, {huey.pending_count()} pending"
    except Exception as exc:  # noqa: BLE001 - status reports, it does not fail
        return f"unavailable ({exc})"

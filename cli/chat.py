"""`diarist chat`: the terminal chat with a local model that remembers."""
from __future__ import annotations

import shlex
import sys
from pathlib import Path

import click

from events import DiaristError, EventLog
from events.config import load_config
from projections import open_store

from .context import current_home, friendly_errors, home_option
from .queue import after_append

HELP = """Commands:
  /recall QUERY            what memory holds for QUERY
  /remember TEXT           remember a note
  /journal [DATE]          a day's journal (today by default)
  /memory list|show|forget|flag|status|recall ...   the memory commands
  /memory profile [set KEY VALUE]   show the workspace profile, or set one of its fields
  /clear                   start the conversation afresh (memory is injected again)
  /summarize               compress the older turns now
  /status                  backend, model, context use, memory budget and use
  /help                    this list
  /exit                    end the session (also Ctrl-D; Ctrl-C while a reply streams stops it)"""


def _run_cli(args: list[str]) -> None:
    """A slash command runs the matching `diarist` command in this process."""
    from .main import cli

    home = current_home()
    try:
        cli.main(["--home", str(home.root), *args], standalone_mode=False)
    except click.ClickException as exc:
        exc.show()
    except click.exceptions.Exit:
        pass


def _slash(session, line: str) -> bool:  # type: ignore[no-untyped-def]
    """Handle a slash command; False means the session ends."""
    try:
        parts = shlex.split(line[1:])
    except ValueError as exc:
        click.echo(f"Could not read that command ({exc}).")
        return True
    command, args = (parts[0], parts[1:]) if parts else ("help", [])
    if command in ("exit", "quit"):
        return False
    if command == "help":
        click.echo(HELP)
    elif command == "clear":
        session.clear()
        click.echo("History cleared; memory will be injected again on your next message.")
    elif command == "summarize":
        summary = session.compress(force=True)
        click.echo(f"Compressed: {summary}" if summary else "Nothing to compress yet.")
    elif command == "status":
        click.echo(f"backend {session.backend.name}, model {session.backend.model}, context "
                   f"{session.history_tokens()}/{session.window} tokens ({session.context_use():.0%}), "
                   f"memory budget {session.budget}, injected "
                   f"{session.injection.injected_tokens if session.injection else 0}, "
                   f"compressions {session.compressions}")
    elif command == "recall":
        _run_cli(["recall", " ".join(args)])
    elif command == "remember":
        _run_cli(["remember", " ".join(args)])
    elif command == "journal":
        _run_cli(["journal", *args])
    elif command == "memory" and args and args[0] == "profile":
        _profile(session, args[1:])
    elif command == "memory" and args and args[0] == "recall":
        _run_cli(["recall", " ".join(args[1:])])
    elif command == "memory":
        _run_cli(["memory", *(args or ["status"])])
    else:
        click.echo(f"Unknown command /{command}.\n{HELP}")
    return True


def _profile(session, args: list[str]) -> None:  # type: ignore[no-untyped-def]
    """`/memory profile` shows the workspace profile; `/memory profile set KEY VALUE` sets a field."""
    from projections.memories import list_memories
    from workers.onboarding import record_profile

    if args and args[0] == "set":
        if len(args) < 3:
            click.echo("Usage: /memory profile set KEY VALUE")
            return
        record_profile(session.log, {args[1]: " ".join(args[2:])})
        session.store.catch_up_all()
        click.echo(f"Profile: {args[1]} set (used from the next injection; /clear to re-inject now).")
        return
    if args:
        click.echo("Usage: /memory profile [set KEY VALUE]")
        return
    lines = list_memories(session.store.db, "workspace_profile")
    if not lines:
        click.echo("No workspace profile yet. Set a field with /memory profile set KEY VALUE.")
        return
    click.echo("[workspace profile]")
    for memory in lines:
        click.echo(f"  {memory.content}")


def _onboard(home, log, store, force: bool) -> None:  # type: ignore[no-untyped-def]
    """Record the project facts of the current directory; on a workspace without a profile,
    ask the onboarding questions (interactive terminals, or --onboard)."""
    from workers.onboarding import (ONBOARDING_QUESTIONS, needs_onboarding, record_profile,
                                    record_project_facts)

    cwd = Path.cwd().resolve()
    if home.root.resolve().is_relative_to(cwd):  # only the project this workspace lives in
        warnings: list[str] = []
        record_project_facts(log, cwd, warnings)
        for warning in warnings:
            click.echo(f"(project facts: {warning})", err=True)
        store.catch_up_all()
    if needs_onboarding(store) and (force or sys.stdin.isatty()):
        click.echo("Welcome to diarist. A few questions for your profile (Enter skips):")
        answers: dict[str, str] = {}
        for key, question in ONBOARDING_QUESTIONS:
            try:
                answers[key] = click.prompt(question, default="", show_default=False)
            except (EOFError, click.exceptions.Abort, KeyboardInterrupt):
                click.echo()
                break
        if record_profile(log, answers):
            click.echo("Saved. See or change it with /memory profile.")
            store.catch_up_all()


@click.command()
@click.option("--backend", type=click.Choice(["ollama", "openai", "scripted"]), default="ollama",
              show_default=True, help="Where the model runs.")
@click.option("--model", help="The model name (default: the backend's default).")
@click.option("--base-url", help="Server URL (default: $OLLAMA_HOST or $DIARIST_OPENAI_BASE_URL).")
@click.option("--script", type=click.Path(dir_okay=False, path_type=Path),
              help="Rules file for --backend scripted (JSON lines {\"match\", \"reply\"}).")
@click.option("--onboard", is_flag=True,
              help="Ask the profile questions even when stdin is not a terminal (when no profile exists).")
@click.option("--shadow-journal/--no-shadow-journal", default=None,
              help="After each reply, ask the model for new facts for the journal "
                   "(default: memory.shadow_journal in the config, off).")
@home_option
@friendly_errors
def chat(backend: str, model: str | None, base_url: str | None, script: Path | None,
         onboard: bool, shadow_journal: bool | None) -> None:
    """Chat with a local model that starts from the memory that matters."""
    from workers.llm import make_backend
    from workers.session import ChatSession

    home = current_home()
    config = load_config(home)
    llm = make_backend(backend, model=model, base_url=base_url, script=script)
    with EventLog(home.events_db) as log, open_store(home, log) as store:
        store.catch_up_all()
        _onboard(home, log, store, onboard)
        session = ChatSession(home, log, store, llm, config, notify=click.echo)
        session.start()
        click.echo(f"diarist chat — {llm.name} {llm.model}, context {session.window} tokens, "
                   f"memory budget {session.budget}. /help for commands.")
        try:
            shadow = config.memory.shadow_journal if shadow_journal is None else shadow_journal
            _loop(session, store, shadow)
        finally:
            session.end()
            store.catch_up_all()
            after_append(home)
    click.echo(f"Session ended ({session.turns} turns).")


def _shadow_journal(session, store) -> None:  # type: ignore[no-untyped-def]
    """Mine the last exchange for new facts, in this process, after the reply is shown.
    A failure is only a warning: the reply and its turns are already in the log."""
    from workers.extract import shadow_journal

    if session.last_turn is None:
        return
    user_id, assistant_id = session.last_turn
    try:
        event = shadow_journal(session.home, session.log, session.id, user_id, assistant_id,
                               session.backend, store=store)
    except DiaristError as exc:
        click.echo(f"(shadow journal: {exc})", err=True)
        return
    if event is not None:
        store.catch_up_all()
        click.echo(f"  (journal: +{len(event.payload['facts'])} fact(s))", err=True)


def _loop(session, store, shadow: bool = False) -> None:  # type: ignore[no-untyped-def]
    while True:
        try:
            line = click.prompt("you", prompt_suffix="> ", default="", show_default=False)
        except (EOFError, click.exceptions.Abort, KeyboardInterrupt):
            click.echo()
            return
        line = line.strip()
        if not line:
            continue
        if line.startswith("/"):
            if not _slash(session, line):
                return
            continue
        click.echo("assistant> ", nl=False)
        try:
            reply = session.send(line, on_token=lambda piece: click.echo(piece, nl=False))
        except DiaristError as exc:
            click.echo()
            click.echo(f"Error: {exc}" + (f"\nHint: {exc.hint}" if exc.hint else ""))
            continue
        click.echo(" [interrupted]" if reply.interrupted else "")
        stats = reply.stats
        if stats.tokens_per_sec:
            click.echo(f"  ({stats.reply_tokens} tokens, {stats.tokens_per_sec:.1f} tok/s)", err=True)
        store.catch_up_all()  # after the reply is shown: the next turn recalls what was said
        if shadow and not reply.interrupted:
            _shadow_journal(session, store)

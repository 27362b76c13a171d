"""`diarist chat`: the terminal chat with a local model that remembers."""
from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from events import DiaristError, EventLog, Home
from events.config import load_config
from events.memory_types import PROFILE
from projections import ProjectionStore, open_store

from .context import current_home, friendly_errors, home_option
from .output import echo

if TYPE_CHECKING:  # imported when a chat starts: other commands start faster without them
    from workers.chat.handoff import AfterReply
    from workers.chat.session import ChatSession

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
    """A slash command runs the matching `diarist` command in this process (the root
    command of this invocation: nothing imports ``cli.main``)."""
    root = click.get_current_context().find_root().command
    try:
        root.main(["--home", str(current_home().root), *args], standalone_mode=False)
    except click.ClickException as exc:
        exc.show()
    except click.exceptions.Exit:
        pass


def _status(session: ChatSession) -> str:
    injected = session.injection.injected_tokens if session.injection else 0
    return (f"backend {session.backend.name}, model {session.backend.model}, context "
            f"{session.history_tokens()}/{session.window} tokens ({session.context_use():.0%}), "
            f"memory budget {session.budget}, injected {injected}, "
            f"compressions {session.compressions}")


def _clear(session: ChatSession, args: list[str]) -> None:
    session.clear()
    echo("History cleared; memory will be injected again on your next message.")


def _summarize(session: ChatSession, args: list[str]) -> None:
    summary = session.compress(force=True)
    echo(f"Compressed: {summary}" if summary else "Nothing to compress yet.")


def _memory(session: ChatSession, args: list[str]) -> None:
    if args and args[0] == "profile":
        _profile(session, args[1:])
    elif args and args[0] == "recall":
        _run_cli(["recall", " ".join(args[1:])])
    else:
        _run_cli(["memory", *(args or ["status"])])


SLASH: dict[str, Callable[[ChatSession, list[str]], None]] = {
    "help": lambda _s, _a: echo(HELP),
    "clear": _clear,
    "summarize": _summarize,
    "status": lambda s, _a: echo(_status(s)),
    "recall": lambda _s, a: _run_cli(["recall", " ".join(a)]),
    "remember": lambda _s, a: _run_cli(["remember", " ".join(a)]),
    "journal": lambda _s, a: _run_cli(["journal", *a]),
    "memory": _memory,
}


def _slash(session: ChatSession, line: str) -> bool:
    """Handle a slash command; False means the session ends."""
    try:
        parts = shlex.split(line[1:])
    except ValueError as exc:
        echo(f"Could not read that command ({exc}).")
        return True
    command, args = (parts[0], parts[1:]) if parts else ("help", [])
    if command in ("exit", "quit"):
        return False
    handler = SLASH.get(command)
    if handler is None:
        echo(f"Unknown command /{command}.\n{HELP}")
    else:
        handler(session, args)
    return True


def _profile(session: ChatSession, args: list[str]) -> None:
    """`/memory profile` shows the workspace profile; `/memory profile set KEY VALUE` sets
    one field."""
    from projections.memories import list_memories
    from workers.chat.onboarding import set_profile_field

    if args and args[0] == "set":
        if len(args) < 3:
            echo("Usage: /memory profile set KEY VALUE")
            return
        set_profile_field(session.log, session.store, args[1], " ".join(args[2:]))
        echo(f"Profile: {args[1]} set (used from the next injection; "
                   "/clear to re-inject now).")
        return
    if args:
        echo("Usage: /memory profile [set KEY VALUE]")
        return
    lines = list_memories(session.store.db, PROFILE.name)
    if not lines:
        echo("No workspace profile yet. Set a field with /memory profile set KEY VALUE.")
        return
    echo(PROFILE.heading)
    for memory in lines:
        echo(f"  {memory.content}")


def _onboard(home: Home, log: EventLog, store: ProjectionStore, force: bool,
             shown: set[str]) -> None:
    """Record the project facts of the current directory; ask the onboarding questions when
    :func:`workers.chat.onboarding.should_ask` says so."""
    from workers.chat.onboarding import (
        ONBOARDING_QUESTIONS,
        detect_here,
        record_answers,
        should_ask,
    )

    for warning in detect_here(home, log, Path.cwd()):
        echo(f"(project facts: {warning})", err=True)
    _catch_up(store, shown)
    if not should_ask(log, store, force=force, interactive=sys.stdin.isatty()):
        return
    echo("Welcome to diarist. A few questions for your profile (Enter skips):")
    answers: dict[str, str] = {}
    for key, question in ONBOARDING_QUESTIONS:
        try:
            answers[key] = click.prompt(question, default="", show_default=False)
        except (EOFError, click.exceptions.Abort, KeyboardInterrupt):
            echo()
            break
    if record_answers(log, answers):
        echo("Saved. See or change it with /memory profile.")
        _catch_up(store, shown)
    else:
        echo("Skipped; I will not ask again (`diarist chat --onboard` asks; "
                   "/memory profile set KEY VALUE sets one field).")


def _catch_up(store: ProjectionStore, shown: set[str]) -> None:
    """Catch memory up; what stops it is shown (once a session), not fatal: the chat still
    works."""
    from workers.sync.catch_up import catch_up_after_append

    warning = catch_up_after_append(store)
    if warning and warning not in shown:
        shown.add(warning)
        echo(f"(warning: {warning})", err=True)


LABEL_CHARS = 60  # of a tool call's main argument, shown instead of its JSON


def tool_call_label(name: str, arguments: Any) -> str:
    """``[memory_search: "bees"]``: a tool call as one short line for the terminal."""
    args = arguments if isinstance(arguments, dict) else {}
    main = next((args[k] for k in ("query", "content", "date") if isinstance(args.get(k), str)),
                next((v for v in args.values() if isinstance(v, str)), None))
    if main is None:
        return f"[{name}]"
    main = " ".join(main.split())
    if len(main) > LABEL_CHARS:
        main = main[:LABEL_CHARS - 1] + "…"
    return f"[{name}: {json.dumps(main, ensure_ascii=False)}]"


class ToolCallFilter:
    """Streams a reply token by token, except a reply that opens like a text tool call.

    A small model asks for a memory tool by printing a fenced ```json block (or a bare JSON
    object); printed as it streams, that JSON would flash on the terminal before the real
    answer. So when a reply's first non-blank characters open a code fence, a ``{`` or a
    tag, its output is held until the reply ends (:meth:`reply_end`, called after each
    model call of a turn): a tool call is then shown as one line such as
    ``[memory_search: "bees"]``, a copy of the chat template's call tags or a call of no
    tool of ours (:func:`workers.chat.tools.imitates_a_call`: the session then asks again
    without tools; ``tools_on`` tells whether it still has them) not at all, and anything
    else is printed as it came. Every other reply streams untouched.
    """

    def __init__(self, write: Callable[[str], None],
                 tools_on: Callable[[], bool] = lambda: True) -> None:
        self.write = write
        self.tools_on = tools_on   # a copy is dropped only while the session has tools
        self._held = ""
        self._mode = "undecided"  # → "stream" or "hold", until the reply ends

    def token(self, piece: str) -> None:
        if self._mode == "stream":
            self.write(piece)
            return
        self._held += piece
        if self._mode == "hold":
            return
        start = self._held.lstrip()
        if not start or "```".startswith(start):
            return  # blank so far, or a fence's first backticks: not decided yet
        if start.startswith(("```", "{", "<")):
            self._mode = "hold"
            return
        self._mode = "stream"
        held, self._held = self._held, ""
        self.write(held)

    def reply_end(self, reply: Any = None) -> None:
        """One model call is over: show its held text, or its tool calls as short lines."""
        from workers.chat.tools import imitates_a_call, parse_text_tool_calls, structured_call

        held, self._held, self._mode = self._held, "", "undecided"
        calls: list[tuple[str, Any]] = []
        interrupted = bool(getattr(reply, "interrupted", False))
        if not interrupted:
            calls = [(name, args) for _id, name, args in
                     map(structured_call, getattr(reply, "tool_calls", None) or [])]
            if held.strip() and not calls:
                calls = [(c["name"], c["arguments"]) for c in parse_text_tool_calls(held)]
                held = "" if calls or (self.tools_on() and imitates_a_call(held)) else held
        if held:
            self.write(held)
        if calls:
            self.write(("\n" if held else "") +
                       " ".join(tool_call_label(name, args) for name, args in calls) + "\n")


@click.command()
@click.option("--backend", type=click.Choice(["ollama", "openai", "scripted"]),
              help="Where the model runs (default: llm.backend in the config, else ollama).")
@click.option("--model", help="The model name (default: llm.model in the config, else the "
                               "server's first model).")
@click.option("--base-url", help="Server URL (default: $OLLAMA_HOST or $DIARIST_OPENAI_BASE_URL, "
                                  "else llm.base_url in the config).")
@click.option("--script", type=click.Path(dir_okay=False, path_type=Path),
              help="Rules file for --backend scripted (JSON lines {\"match\", \"reply\"}).")
@click.option("--onboard", is_flag=True,
              help="Ask the profile questions (when no profile exists) even when stdin is not a "
                   "terminal or they were all skipped before.")
@click.option("--shadow-journal/--no-shadow-journal", default=None,
              help="After each reply, ask the model for new facts for the journal "
                   "(default: memory.shadow_journal in the config, off).")
@click.option("--tools/--no-tools", default=None,
              help="Let the model call the memory tools remember, memory_search and memory_get "
                   "(default: memory.tools in the config, on).")
@home_option
@friendly_errors
def chat(backend: str | None, model: str | None, base_url: str | None, script: Path | None,
         onboard: bool, shadow_journal: bool | None, tools: bool | None) -> None:
    """Chat with a local model that starts from the memory that matters.

    After each reply, the projection catch-up (and the shadow journal, when on) goes to a
    running `diarist worker` on this home; with none running, the chat does it itself."""
    from workers.chat.handoff import AfterReply
    from workers.chat.session import ChatSession
    from workers.dispatch import QUEUE
    from workers.llm import make_backend

    home = current_home(create=True)
    config = load_config(home)
    llm = make_backend(backend, model=model, base_url=base_url, script=script, llm=config.llm)
    with EventLog(home.events_db) as log, open_store(home, log) as store:
        shown: set[str] = set()  # catch-up warnings already shown this session
        _onboard(home, log, store, onboard, shown)
        line = ReplyLine()
        session = ChatSession(home, log, store, llm, config, notify=line.note,
                              tools=config.memory.tools if tools is None else tools)
        session.start()
        echo(f"diarist chat — {llm.name} {llm.model}, context {session.window} tokens, "
                   f"memory budget {session.budget}. /help for commands.")
        shadow = config.memory.shadow_journal if shadow_journal is None else shadow_journal
        after = AfterReply(home, session, store, shadow=shadow,
                           echo=lambda text: echo(text, err=True), queue=QUEUE, warned=shown)
        try:
            _loop(session, after, line)
        finally:
            session.end()
            after.finish()
    echo(f"Session ended ({session.turns} turns).")


class ReplyLine:
    """The reply line on the terminal: a notice from the session (say, the compression
    notice, which comes before the reply's line is ended) starts on a line of its own; one
    that comes before the reply's first piece (the model asked again) is followed by the
    line's prefix again, for the reply to come."""

    def __init__(self) -> None:
        self.open = False
        self.prefix = ""     # the reply line's prefix while nothing else is on it

    def start(self, prefix: str) -> None:
        self.write(prefix)
        self.prefix = prefix

    def write(self, piece: str) -> None:
        echo(piece, nl=False)
        if piece:
            self.open = not piece.endswith("\n")
            self.prefix = ""

    def note(self, text: str) -> None:
        prefix = self.prefix if self.open else ""
        self.end()
        echo(text)
        if prefix:
            self.start(prefix)

    def end(self, suffix: str = "") -> None:
        if self.open or suffix:
            echo(suffix)
        self.open, self.prefix = False, ""


def _loop(session: ChatSession, after: AfterReply, line_out: ReplyLine | None = None) -> None:
    out = line_out or ReplyLine()
    while True:
        after.report()  # the background shadow journal's news, before the prompt is shown
        try:
            line = click.prompt("you", prompt_suffix="> ", default="", show_default=False)
        except (EOFError, click.exceptions.Abort, KeyboardInterrupt):
            echo()
            return
        line = line.strip()
        if not line:
            continue
        if line.startswith("/"):
            if not _slash(session, line):
                return
            continue
        out.start("assistant> ")
        write = out.write
        shown = ToolCallFilter(write, lambda: session.tools) if session.tools else None
        try:
            reply = session.send(line, on_token=shown.token if shown else write,
                                 on_reply_end=shown.reply_end if shown else None)
        except DiaristError as exc:
            out.end()  # the reply is over: no prefix again after the error
            out.note(f"Error: {exc}" + (f"\nHint: {exc.hint}" if exc.hint else ""))
            continue
        out.end(" [interrupted]" if reply.interrupted else "")
        stats = reply.stats
        if stats.tokens_per_sec:
            echo(f"  ({stats.reply_tokens} tokens, {stats.tokens_per_sec:.1f} tok/s)",
                       err=True)
        after.reply_done(reply)  # after the reply is shown: catch up, or hand it to a worker

"""The `diarist` command: a thin click layer over the library."""
from __future__ import annotations

import os
import sys
from collections.abc import Iterator, MutableMapping
from types import ModuleType

import click

from events.home import UMASK

from .context import home_option
from .logging_setup import setup_logging
from .output import echo

# Each command's module, imported only when that command runs (or when help lists them):
# `diarist recall` then never imports the chat, the model server, eval or the workers'
# tasks — a one-shot command's start-up is mostly imports (docs/benchmarks.md,
# "Recall latency").
COMMANDS = {
    "import": "event_commands:import_", "export": "event_commands:export",
    "sync": "projection_commands:sync", "replay": "projection_commands:replay",
    "events": "event_commands:events", "status": "projection_commands:status",
    "worker": "worker_command:worker", "recall": "memory_commands:recall_cmd",
    "remember": "memory_commands:remember", "journal": "memory_commands:journal",
    "memory": "memory_commands:memory", "chat": "chat:chat",
    "serve-model": "model_command:serve_model", "mine": "night_commands:mine",
    "dream": "night_commands:dream", "consolidate": "night_commands:consolidate",
    "maintain": "night_commands:maintain", "eval": "eval_command:eval_cmd",
    "redact": "event_commands:redact", "backup": "event_commands:backup",
    "proxy": "proxy_command:proxy", "mcp": "mcp_command:mcp",
}


def _module(name: str) -> ModuleType:
    """One module of commands, imported when one of its commands is wanted (plain import
    statements: tests/test_architecture.py sees them)."""
    if name == "chat":
        from . import chat
        return chat
    if name == "eval_command":
        from . import eval_command
        return eval_command
    if name == "event_commands":
        from . import event_commands
        return event_commands
    if name == "memory_commands":
        from . import memory_commands
        return memory_commands
    if name == "model_command":
        from . import model_command
        return model_command
    if name == "mcp_command":
        from . import mcp_command
        return mcp_command
    if name == "night_commands":
        from . import night_commands
        return night_commands
    if name == "projection_commands":
        from . import projection_commands
        return projection_commands
    if name == "proxy_command":
        from . import proxy_command
        return proxy_command
    if name == "worker_command":
        from . import worker_command
        return worker_command
    raise KeyError(name)


class LazyCommands(MutableMapping[str, click.Command]):
    """The group's commands by name, each imported from :data:`COMMANDS` on first use."""

    def __init__(self, where: dict[str, str]) -> None:
        self.where = dict(where)
        self.loaded: dict[str, click.Command] = {}

    def __getitem__(self, name: str) -> click.Command:
        if name not in self.loaded:
            module, _, attr = self.where[name].partition(":")
            command = getattr(_module(module), attr)
            if command.name != name:
                raise RuntimeError(f"{self.where[name]} is `{command.name}`, not `{name}`")
            self.loaded[name] = command
        return self.loaded[name]

    def __setitem__(self, name: str, command: click.Command) -> None:
        self.where.pop(name, None)
        self.loaded[name] = command

    def __delitem__(self, name: str) -> None:
        if name not in self.where and name not in self.loaded:
            raise KeyError(name)
        self.where.pop(name, None)
        self.loaded.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys([*self.where, *self.loaded]))

    def __len__(self) -> int:
        return len(set(self.where) | set(self.loaded))


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@home_option
@click.option("--log-json", is_flag=True, help="Log JSON lines to stderr instead of text.")
@click.option("-v", "--verbose", count=True, help="More logging (-v info, -vv debug).")
@click.version_option(package_name="diarist")
@click.pass_context
def cli(ctx: click.Context, log_json: bool, verbose: int) -> None:
    """diarist: a local memory for LLM agents, kept as an immutable event log."""
    os.umask(UMASK)  # whatever diarist creates is the user's alone
    ctx.ensure_object(dict)
    setup_logging(json_lines=log_json, verbose=verbose)


cli.commands = LazyCommands(COMMANDS)


def main() -> None:
    """Console entry point: no traceback reaches a user (tests see the real exception)."""
    os.umask(UMASK)
    try:
        code = cli.main(prog_name="diarist", standalone_mode=False)
    except click.exceptions.Abort:
        echo("Aborted.", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        if isinstance(exc, click.UsageError):
            exc.show()  # with the usage line; click quotes the values it names
        else:
            echo(f"Error: {exc.format_message()}", err=True)
        sys.exit(exc.exit_code)
    except SystemExit:
        raise
    except KeyboardInterrupt:
        echo("Interrupted.", err=True)
        sys.exit(130)
    except Exception as exc:  # the last resort: no traceback reaches a user
        if os.environ.get("DIARIST_DEBUG"):
            raise
        echo(f"Error: unexpected {type(exc).__name__}: {exc}\n"
                   "Hint: re-run with DIARIST_DEBUG=1 for a traceback, and report it.", err=True)
        sys.exit(1)
    if isinstance(code, int) and code:
        sys.exit(code)


if __name__ == "__main__":  # python -m cli.main
    main()

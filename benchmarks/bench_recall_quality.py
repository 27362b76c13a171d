"""Evidence recall on the LoCoMo dev set, through the CLI contract.

    python benchmarks/bench_recall_quality.py [--convs conv-26,conv-30] [--no-embed] [--json]

For each conversation: a fresh home, `diarist import`, `diarist sync` (which exports the
embedding model and embeds unless --no-embed), then `diarist recall --queries … --json` twice:
top 10 items with no budget, and every item that fits a 512-token budget. Evidence recall of
a question = the share of its evidence refs that the items' `refs` cover; averaged over the
non-adversarial questions. A plain BM25-over-turns baseline (the turns projection's FTS5
index, every query word OR-ed, no stopword removal, no vectors) is computed in the same run.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LOCOMO = REPO.parent / "shared" / "bench" / "locomo"
sys.path.insert(0, str(REPO))

from events import EventLog, Home  # noqa: E402
from projections import open_store  # noqa: E402
from projections.fts import words  # noqa: E402
from projections.tokens import estimate  # noqa: E402

CONVS = ["conv-26", "conv-30", "conv-41", "conv-42", "conv-43"]


def diarist(home: Path, *args: str) -> str:
    env = dict(os.environ, DIARIST_HOME=str(home))
    done = subprocess.run([sys.executable, "-c", "from cli.main import main; main()", *args],
                          env=env, capture_output=True, text=True, cwd=REPO)
    if done.returncode:
        raise SystemExit(f"diarist {' '.join(args)} failed:\n{done.stderr}")
    return done.stdout


def coverage(evidence: list[str], refs: set[str]) -> float:
    return sum(e in refs for e in evidence) / len(evidence)


def plain_bm25(db, query: str, k: int) -> list[tuple[str, str]]:  # type: ignore[no-untyped-def]
    """Plain BM25 over the turns projection's FTS5 index: every query word, OR-ed."""
    terms = list(dict.fromkeys(words(query)))
    if not terms:
        return []
    rows = db.execute(
        "SELECT t.ref, t.name || ': ' || t.text FROM turns_fts"
        " JOIN turns t ON t.seq = turns_fts.rowid"
        " WHERE turns_fts MATCH ? ORDER BY bm25(turns_fts) LIMIT ?",
        (" OR ".join(f'"{w}"' for w in terms), k)).fetchall()
    return rows


def bm25_baseline(home: Path, questions: list[dict]) -> tuple[list[float], list[float]]:
    top10, budget = [], []
    with EventLog(Path(home) / "events.db") as log, open_store(Home(Path(home)), log) as store:
        for q in questions:
            hits = plain_bm25(store.db, q["query"], 50)
            top10.append(coverage(q["evidence"], {ref for ref, _ in hits[:10]}))
            used, refs = 0, set()
            for ref, text in hits:
                cost = estimate(text)
                if used + cost <= 512:
                    used += cost
                    refs.add(ref)
            budget.append(coverage(q["evidence"], refs))
    return top10, budget


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--convs", default=",".join(CONVS))
    parser.add_argument("--no-embed", action="store_true", help="FTS5 only (no vectors).")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--keep", action="store_true", help="Keep the temporary homes.")
    args = parser.parse_args()

    totals: dict[str, list[float]] = defaultdict(list)
    by_category: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    rows = []
    root = Path(tempfile.mkdtemp(prefix="diarist-locomo-"))
    started = time.perf_counter()
    try:
        for conv in args.convs.split(","):
            home = root / conv
            diarist(home, "import", str(LOCOMO / f"{conv}.transcript.jsonl"))
            diarist(home, "sync", *(["--no-embed"] if args.no_embed else []))
            questions = [json.loads(line) for line in
                         (LOCOMO / f"{conv}.questions.jsonl").read_text().splitlines()]
            questions = [q for q in questions if q["category"] != "adversarial" and q["evidence"]]
            qfile = home / "questions.jsonl"
            qfile.write_text("".join(json.dumps({"id": q["id"], "query": q["query"]}) + "\n"
                                     for q in questions))
            top = [json.loads(x) for x in diarist(home, "recall", "--queries", str(qfile), "--json",
                                                  "--k", "10", "--budget", "0").splitlines()]
            fit = [json.loads(x) for x in diarist(home, "recall", "--queries", str(qfile), "--json",
                                                  "--k", "1000", "--budget", "512").splitlines()]
            base_top, base_fit = bm25_baseline(home, questions)
            for q, t, f, bt, bf in zip(questions, top, fit, base_top, base_fit, strict=True):
                assert t["id"] == f["id"] == q["id"]
                scores = {
                    "top10": coverage(q["evidence"], {r for i in t["items"] for r in i["refs"]}),
                    "budget512": coverage(q["evidence"],
                                          {r for i in f["items"] for r in i["refs"]}),
                    "bm25_top10": bt, "bm25_budget512": bf,
                }
                for name, value in scores.items():
                    totals[name].append(value)
                    by_category[q["category"]][name].append(value)
            rows.append((conv, len(questions)))
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    mean = {name: sum(v) / len(v) for name, v in totals.items()}
    result = {"questions": len(totals["top10"]), "conversations": rows, "embed": not args.no_embed,
              "recall": mean, "seconds": round(time.perf_counter() - started, 1),
              "by_category": {c: {n: round(sum(v) / len(v), 3) for n, v in d.items()}
                              for c, d in sorted(by_category.items())}}
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"LoCoMo dev set: {result['questions']} questions in {len(rows)} conversations "
          f"(adversarial excluded), vectors {'on' if result['embed'] else 'off'}, "
          f"{result['seconds']} s")
    print(f"{'':<22}{'top-10':>8}{'512-token budget':>18}")
    print(f"{'diarist recall':<22}{mean['top10']:>8.3f}{mean['budget512']:>18.3f}")
    print(f"{'BM25 over turns':<22}{mean['bm25_top10']:>8.3f}{mean['bm25_budget512']:>18.3f}")
    for category, values in result["by_category"].items():
        print(f"  {category:<20}{values['top10']:>8.3f}{values['budget512']:>18.3f}"
              f"   (BM25 {values['bm25_top10']:.3f} / {values['bm25_budget512']:.3f})")


if __name__ == "__main__":
    main()

"""How well the matrix file's sign-code pre-scan keeps the true nearest items, on real vectors.

Vector search reads the sign codes of every slot and scores exactly only the ``keep``
nearest by Hamming distance (``projections.vector_matrix.Matrix.nearest``). That is
approximate: this measures, on real MiniLM vectors of real text, how often the exact top k
(k = 10, and 50 as recall asks for) comes out the same as a full scan's, and how long the
search takes. The vectors are every distinct one cached in the given homes (the dev
harness's homes — ``benchmarks/recall_dev.py ... --homes DIR`` builds them from
``../shared/bench``); the queries are the dev sets' questions, embedded with the same model.

    python benchmarks/recall_dev.py ../shared/bench/longmemeval/longmemeval_s_dev.json \\
        --homes /tmp/homes/lme        # once: ~69,000 passages of LongMemEval haystacks
    python benchmarks/bench_prescan.py /tmp/homes/lme /tmp/homes/locomo [--keep 512,1024,2048]

Prints, for each ``keep``: the share of queries whose top 10 / top 50 equal the full scan's
(as sets), the mean share of the full scan's top 50 found, and the p50 / p95 milliseconds of
``nearest`` against a full scan of the same file.
"""
from __future__ import annotations

import argparse
import glob
import json
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
BENCH = REPO.parent / "shared" / "bench"


def pooled_vectors(dirs: list[Path]) -> tuple[str, list[bytes]]:
    """Every distinct cached vector of the model most of them use."""
    by_model: dict[str, dict[str, bytes]] = {}
    for directory in dirs:
        for path in sorted(glob.glob(str(directory / "**" / "projections.db"), recursive=True)):
            db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            for content_hash, model, vector in db.execute(
                    "SELECT content_hash, model, vector FROM embeddings"):
                by_model.setdefault(model, {})[content_hash] = vector
            db.close()
    if not by_model:
        raise SystemExit("no cached vectors under those directories: build homes with "
                         "benchmarks/recall_dev.py --homes DIR first")
    model = max(by_model, key=lambda m: len(by_model[m]))
    return model, [by_model[model][h] for h in sorted(by_model[model])]


def questions() -> list[str]:
    out = [json.loads(line)["query"]
           for f in sorted(glob.glob(str(BENCH / "locomo" / "*.questions.jsonl")))
           for line in open(f, encoding="utf-8")]
    for f in sorted(glob.glob(str(BENCH / "longmemeval" / "*.json"))):
        out += [q["question"] for q in json.load(open(f, encoding="utf-8"))]
    return out


def embed_questions(dirs: list[Path], texts: list[str]) -> object:
    from events import EventLog, Home
    from projections import open_store
    from projections.embedding import active_embedder

    for directory in dirs:
        for path in sorted(glob.glob(str(directory / "**" / "events.db"), recursive=True)):
            home = Home(Path(path).parent)
            with EventLog(home.events_db) as log, open_store(home, log) as store:
                embedder = active_embedder(home, store)
                if embedder is not None:
                    return embedder.embed(texts)
    raise SystemExit("no home with an embedding model among those directories")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("homes", type=Path, nargs="+", help="directories of diarist homes")
    parser.add_argument("--keep", default="512,1024,2048,4096",
                        help="pre-scan sizes to try (comma-separated)")
    args = parser.parse_args()

    import numpy as np

    from projections import vector_matrix
    from projections.vector_cache import matrix_of
    from projections.vector_matrix import Matrix, single_threaded_blas

    single_threaded_blas()
    model, blobs = pooled_vectors(args.homes)
    vectors = matrix_of(blobs, len(blobs[0]) // 4)
    count, dimension = vectors.shape
    texts = questions()
    queries = np.asarray(embed_questions(args.homes, texts), dtype=np.float32)
    print(f"{count:,} distinct vectors of {model}; {len(queries)} questions")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.f32"
        vector_matrix._create_file(path, dimension)
        vector_matrix._write_slots(path, dimension, 0, vectors)
        matrix = Matrix(path, dimension)
        truth, full_ms = [], []
        for q in queries:
            started = time.perf_counter()
            slots, scores = matrix.nearest(q, count, count)
            full_ms.append((time.perf_counter() - started) * 1000)
            order = slots[np.argsort(-scores, kind="stable")]
            truth.append((set(order[:10].tolist()), set(order[:50].tolist())))
        print(f"{'keep':>6}  {'top10 same':>10}  {'top50 same':>10}  {'top50 found':>11}"
              f"  {'p50 ms':>7}  {'p95 ms':>7}")
        for keep in [int(v) for v in args.keep.split(",")]:
            same10 = same50 = 0
            found: list[float] = []
            times: list[float] = []
            for q, (top10, top50) in zip(queries, truth, strict=True):
                started = time.perf_counter()
                slots, scores = matrix.nearest(q, count, keep)
                best = slots[np.argsort(-scores, kind="stable")[:50]]
                times.append((time.perf_counter() - started) * 1000)
                same10 += set(best[:10].tolist()) == top10
                same50 += set(best.tolist()) == top50
                found.append(len(set(best.tolist()) & top50) / 50)
            times.sort()
            print(f"{keep:>6}  {same10 / len(queries):>10.3f}  {same50 / len(queries):>10.3f}"
                  f"  {statistics.mean(found):>11.4f}  {times[len(times) // 2]:>7.2f}"
                  f"  {times[int(0.95 * len(times))]:>7.2f}")
        full_ms.sort()
        print(f"{'full':>6}  {'':>10}  {'':>10}  {'':>11}  {full_ms[len(full_ms) // 2]:>7.2f}"
              f"  {full_ms[int(0.95 * len(full_ms))]:>7.2f}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python
"""Benchmark the embeddings and the vector search (issue 3).

1. **Embedding**, each model variant in its own fresh process, ``--rounds`` times
   interleaved (the best round is reported, every round is in the JSON): onnxruntime +
   tokenizers import time, session load time, throughput over 2,000 LoCoMo turn texts
   ("Name: text", as the turns projection words them; embedded in one call, so in
   length-sorted batches of 32), query latency (200 LoCoMo questions, one at a time), peak
   RSS (VmHWM).
2. **Semantic evidence recall@10** on the LoCoMo dev set (5 conversations), per variant: for
   each conversation embed its turns, for each non-adversarial question take the 10 turns
   nearest by cosine; recall = share of the question's evidence refs among them, averaged
   over questions. Vectors only (no lexical search, no recency): it compares models. The
   difference to fp32 comes with its paired standard error (same questions).
3. **Vector search** over 10,000 and 100,000 random unit vectors in a real vectors projection
   (``projections.vector_search.vector_search`` on the matrix file): p50/p95 of k=10 searches warm,
   the same with the query embedding included, a cold process's first search (imports, model
   load, query embedding, search; the budget of a one-shot ``diarist recall``), the matrix
   rebuild, and the incremental refresh after one new embedding (the worker's cost per turn).
4. **Scan layouts**: the same scan over 100,000 vectors laid out item-per-row (float32, int8,
   float16) against diarist's blocks — why the file looks the way it does.

Variants: ``fp32`` and ``int8`` (per-channel dynamic quantisation, what diarist ships), plus
``int8-tensor`` (per-tensor scales, the onnxruntime default) for comparison.

Usage::

    python benchmarks/bench_embed.py [--models DIR] [--texts 2000] [--rounds 2]
                                     [--parts speed,recall,search] [--json]

``--models`` reuses an exported ``all-MiniLM-L6-v2`` folder (default: export into a temp dir,
~10 s). Everything runs in temporary homes; nothing touches ``var/``.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
LOCOMO = REPO.parent / "shared" / "bench" / "locomo"
SEED = 20261122
VARIANT_FILES = {"fp32": "model-fp32.onnx", "int8": "model-int8.onnx",
                 "int8-tensor": "model-int8-tensor.onnx"}


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(round(p / 100 * len(ordered) + 0.5)) - 1))]


def peak_rss_mb() -> float:
    """VmHWM of this process (ru_maxrss would include the parent's RSS at fork time)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def locomo_turns() -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for path in sorted(LOCOMO.glob("*.transcript.jsonl")):
        conv = path.name.split(".")[0]
        out[conv] = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
                     if line.strip()]
    return out


def locomo_questions(conv: str) -> list[dict]:
    path = LOCOMO / f"{conv}.questions.jsonl"
    return [q for q in (json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
                        if line.strip()) if q["category"] != "adversarial"]


def turn_text(turn: dict) -> str:
    return f"{turn['name']}: {turn['text']}"


# --- child: one variant in a fresh process ----------------------------------------------------


def child_speed(model_file: str, tokenizer_file: str, n_texts: int) -> dict[str, Any]:
    t0 = time.perf_counter()
    import onnxruntime  # noqa: F401
    import tokenizers  # noqa: F401
    imported = time.perf_counter() - t0

    from projections.embedding import OnnxEmbedder

    t0 = time.perf_counter()
    model = OnnxEmbedder(model_file, tokenizer_file)
    load = time.perf_counter() - t0
    rss_loaded = peak_rss_mb()

    convs = locomo_turns()
    texts = [turn_text(t) for turns in convs.values() for t in turns][:n_texts]
    model.embed(texts[:32])  # warm-up
    t0 = time.perf_counter()
    model.embed(texts)
    embed_s = time.perf_counter() - t0

    questions = [q["query"] for conv in convs for q in locomo_questions(conv)]
    random.Random(SEED).shuffle(questions)
    latencies = []
    for query in questions[:200]:
        t0 = time.perf_counter()
        model.embed_one(query)
        latencies.append((time.perf_counter() - t0) * 1000)
    return {
        "import_s": imported, "load_s": load, "texts": len(texts), "embed_s": embed_s,
        "items_per_s": len(texts) / embed_s,
        "query_p50_ms": percentile(latencies, 50), "query_p95_ms": percentile(latencies, 95),
        "rss_after_load_mb": rss_loaded, "peak_rss_mb": peak_rss_mb(),
    }


def child_recall(model_file: str, tokenizer_file: str) -> dict[str, Any]:
    """Evidence recall@10 by cosine alone; per question, in a fixed order (for pairing)."""
    import numpy as np

    from projections.embedding import OnnxEmbedder

    model = OnnxEmbedder(model_file, tokenizer_file)
    per_question: list[float] = []
    categories: list[str] = []
    for conv, turns in locomo_turns().items():
        docs = model.embed([turn_text(t) for t in turns])  # batched, as embed_pending does
        refs = [t["ref"] for t in turns]
        for q in locomo_questions(conv):
            evidence = set(q["evidence"])
            if not evidence:
                continue
            scores = docs @ model.embed_one(q["query"])  # one at a time, as recall does
            top = {refs[i] for i in np.argsort(-scores, kind="stable")[:10]}
            per_question.append(len(evidence & top) / len(evidence))
            categories.append(q["category"])
    by_category: dict[str, list[float]] = {}
    for category, r in zip(categories, per_question, strict=True):
        by_category.setdefault(category, []).append(r)
    return {"recall_at_10": statistics.mean(per_question), "questions": len(per_question),
            "per_question": per_question,
            "recall_by_category": {c: statistics.mean(v) for c, v in sorted(by_category.items())}}


def child_cold_search(home: str, query: str) -> dict[str, Any]:
    """A one-shot recall process: everything from imports to the first result."""
    t0 = time.perf_counter()
    from events import EventLog, Home
    from projections import open_store
    from projections.embedding import active_embedder
    from projections.vector_search import vector_search

    h = Home(Path(home))
    imported = time.perf_counter() - t0
    with EventLog(h.events_db) as log, open_store(h, log) as store:
        t1 = time.perf_counter()
        model = active_embedder(h, store)
        loaded = time.perf_counter() - t1
        t2 = time.perf_counter()
        vector = model.embed_one(query)
        embedded = time.perf_counter() - t2
        t3 = time.perf_counter()
        hits = vector_search(store, h, vector, 10)
        searched = time.perf_counter() - t3
    return {"imports_s": imported, "model_load_s": loaded, "embed_s": embedded,
            "search_s": searched, "total_s": time.perf_counter() - t0, "hits": len(hits),
            "peak_rss_mb": peak_rss_mb()}


# --- parent ---------------------------------------------------------------------------------


def run_child(*args: str) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, __file__, "--child", *args], capture_output=True,
                          text=True, env=env, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"child {args} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def export(models_dir: Path) -> Path:
    from workers.models.embedding import export_model

    target = models_dir / "all-MiniLM-L6-v2"
    t0 = time.perf_counter()
    export_model(target)
    say(f"  exported in {time.perf_counter() - t0:.1f} s")
    return target


def per_tensor(folder: Path) -> Path:
    out = folder / VARIANT_FILES["int8-tensor"]
    if not out.exists():
        from onnxruntime.quantization import QuantType, quantize_dynamic

        from workers.models.embedding import _quiet

        with _quiet():
            quantize_dynamic(str(folder / VARIANT_FILES["fp32"]), str(out),
                             weight_type=QuantType.QInt8)
    return out


def build_home(root: Path, folder: Path, variant: str, n: int) -> tuple[Any, dict[str, float]]:
    """A home whose vectors projection holds ``n`` items with random unit vectors under the
    real model (files copied from ``folder``, chosen with ensure_model)."""
    import shutil

    import numpy as np

    from events import EventLog, Home
    from projections import open_store
    from projections.vector_cache import active_model, bump
    from projections.vector_matrix import refresh_vectors
    from workers.models.embedding import ensure_model

    home = Home(root).ensure()
    target = home.models_dir / folder.name
    target.mkdir(parents=True)
    for name in (VARIANT_FILES[variant], "tokenizer.json"):
        shutil.copy2(folder / name, target / name)
    log = EventLog(home.events_db)
    ensure_model(home, log, variant)
    store = open_store(home, log)
    store.catch_up_all()
    active = active_model(store)
    rng = np.random.default_rng(SEED)
    db = store.db
    db.execute("BEGIN IMMEDIATE")
    for start in range(0, n, 10_000):
        m = rng.standard_normal((min(10_000, n - start), 384)).astype(np.float32)
        m /= np.linalg.norm(m, axis=1, keepdims=True)
        rows = []
        for i, vec in enumerate(m):
            h = f"{start + i:064x}"
            rows.append((f"turn:bench{start + i}", h, vec.tobytes()))
        db.executemany("INSERT INTO vector_items (key, source, id, refs, at, session, type,"
                       " content_hash, seq) VALUES (?, 'turn', ?, '[]', '2026-11-22T00:00:00Z',"
                       " 'bench', '', ?, 1)", [(k, k[5:], h) for k, h, _ in rows])
        db.executemany("INSERT INTO embeddings (content_hash, model, vector) VALUES (?, ?, ?)",
                       [(h, active.key, v) for _, h, v in rows])
    bump(db)
    db.execute("COMMIT")
    t0 = time.perf_counter()
    refresh_vectors(store)
    rebuild = time.perf_counter() - t0
    # one more embedded item: the incremental refresh a chat turn costs the worker
    vec = rng.standard_normal(384).astype(np.float32)
    vec /= np.linalg.norm(vec)
    db.execute("BEGIN IMMEDIATE")
    db.execute("INSERT INTO vector_items (key, source, id, refs, at, session, type, content_hash,"
               " seq) VALUES ('turn:extra', 'turn', 'extra', '[]', '2026-11-22T00:00:00Z', 'bench',"
               " '', 'extra', 2)")
    db.execute("INSERT INTO embeddings VALUES ('extra', ?, ?)", (active.key, vec.tobytes()))
    bump(db)
    db.execute("COMMIT")
    t0 = time.perf_counter()
    refresh_vectors(store)
    incremental = time.perf_counter() - t0
    return (home, log, store), {"rebuild_s": rebuild, "refresh_one_s": incremental}


def bench_search(folder: Path, variant: str, n: int, questions: list[str]) -> dict[str, Any]:
    import numpy as np

    from projections.embedding import active_embedder
    from projections.vector_search import vector_search

    with tempfile.TemporaryDirectory(prefix="diarist-bench-embed-") as tmp:
        (home, log, store), build = build_home(Path(tmp) / "home", folder, variant, n)
        rng = np.random.default_rng(SEED + 1)
        queries = rng.standard_normal((200, 384)).astype(np.float32)
        queries /= np.linalg.norm(queries, axis=1, keepdims=True)
        vector_search(store, home, queries[0], 10)  # warm: mapping, page cache
        search_ms = []
        for q in queries:
            t0 = time.perf_counter()
            vector_search(store, home, q, 10)
            search_ms.append((time.perf_counter() - t0) * 1000)
        from projections.vector_matrix import matrix_state, open_matrix
        from projections.vector_search import PRESCAN_KEEP

        state = matrix_state(store.db)
        matrix = open_matrix(home, state.file, state.dimension, state.count)
        scan_ms = []
        for q in queries:  # the file's scan (sign codes, exact scores) and the top-k alone
            t0 = time.perf_counter()
            slots, scores = matrix.nearest(q, state.count, PRESCAN_KEEP)
            np.argpartition(scores, len(scores) - 40)[len(scores) - 40:]
            scan_ms.append((time.perf_counter() - t0) * 1000)
        model = active_embedder(home, store)
        model.embed_one("warm-up")
        both_ms = []
        for text in questions[:200]:
            t0 = time.perf_counter()
            vector_search(store, home, model.embed_one(text), 10)
            both_ms.append((time.perf_counter() - t0) * 1000)
        store.close()
        log.close()
        cold = [run_child("cold", str(home.root), questions[i]) for i in range(3)]
        size = sum(p.stat().st_size for p in (home.root / "vectors").glob("*.f32"))
    return {
        "n": n, "variant": variant, **build, "matrix_mb": size / 1e6,
        "scan_p50_ms": percentile(scan_ms, 50), "scan_p95_ms": percentile(scan_ms, 95),
        "search_p50_ms": percentile(search_ms, 50), "search_p95_ms": percentile(search_ms, 95),
        "with_query_p50_ms": percentile(both_ms, 50), "with_query_p95_ms": percentile(both_ms, 95),
        "cold": cold,
    }


def bench_layouts(n: int = 100_000, d: int = 384) -> dict[str, Any]:
    """A full float scan alone, over the same random unit vectors in several layouts (why
    the matrix file was laid out in blocks of float32 before it got sign codes, DIARVEC1):
    p50 / p95 of 40 scans each, BLAS on one thread. Today's search reads sign codes and a few
    thousand rows instead (``bench_prescan.py``)."""
    import numpy as np

    from projections.vector_matrix import BLOCK, single_threaded_blas

    single_threaded_blas()
    rng = np.random.default_rng(SEED)
    rows = rng.standard_normal((n, d)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    q = rows[7].copy()
    nb = -(-n // BLOCK)
    blocks = np.zeros((nb, d, BLOCK), dtype=np.float32)
    for b in range(nb):
        chunk = rows[b * BLOCK:(b + 1) * BLOCK]
        blocks[b, :, :len(chunk)] = chunk.T
    out = np.empty(nb * BLOCK, dtype=np.float32)

    def block_scan() -> None:
        for b in range(nb):
            np.dot(q, blocks[b], out=out[b * BLOCK:(b + 1) * BLOCK])

    int8 = np.clip(np.round(rows * 127 / np.abs(rows).max()), -127, 127).astype(np.int8)
    q8 = np.clip(np.round(q * 127 / np.abs(q).max()), -127, 127).astype(np.int8)
    half = rows.astype(np.float16)
    cases = {
        "blocks of 4,096, float32 (diarist's DIARVEC1 file)": block_scan,
        "one item per row, float32": lambda: rows @ q,
        "one item per row, int8 (numpy; timing only, it overflows)": lambda: int8 @ q8,
        "one item per row, float16 (numpy)": lambda: half @ q.astype(np.float16),
    }
    result = {}
    for name, fn in cases.items():
        fn()
        times = []
        for _ in range(40 if "float16" not in name else 5):
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1000)
        result[name] = {"p50_ms": percentile(times, 50), "p95_ms": percentile(times, 95)}
    return result


def child_main(child: list[str]) -> None:
    kind, *rest = child
    if kind == "speed":
        result = child_speed(rest[0], rest[1], int(rest[2]))
    elif kind == "recall":
        result = child_recall(rest[0], rest[1])
    else:
        result = child_cold_search(rest[0], rest[1])
    print(json.dumps(result))


def speed_rounds(folder: Path, variants: list[str], n_rounds: int,
                 texts: int) -> dict[str, list[dict[str, Any]]]:
    rounds: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
    for round_ in range(n_rounds):  # interleaved, so a busy moment hits every variant
        for variant in variants:
            say(f"[1] {variant}, round {round_ + 1}: load, throughput, latency, RSS ...")
            rounds[variant].append(run_child("speed", str(folder / VARIANT_FILES[variant]),
                                             str(folder / "tokenizer.json"), str(texts)))
            say(f"    {json.dumps(rounds[variant][-1])}")
    return rounds


def compare_to_fp32(variants: dict[str, dict[str, Any]]) -> None:
    """Paired per-question differences against fp32; then drop the per-question lists."""
    base = variants.get("fp32")
    for variant, data in variants.items():
        if base is None or variant == "fp32":
            continue
        diffs = [a - b for a, b in zip(base["per_question"], data["per_question"], strict=True)]
        data["fp32_minus_this"] = statistics.mean(diffs)
        data["paired_se"] = statistics.stdev(diffs) / len(diffs) ** 0.5
    for data in variants.values():
        del data["per_question"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=Path, help="an exported all-MiniLM-L6-v2 folder")
    parser.add_argument("--texts", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=2,
                        help="speed runs per variant (best reported)")
    parser.add_argument("--parts", default="speed,recall,search,layouts",
                        help="comma-separated: speed, recall, search, layouts")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child_main(args.child)
        return

    started = time.perf_counter()
    report: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d"), "machine": {
            "cores": os.cpu_count(), "python": platform.python_version(),
            "platform": platform.platform(), "load_avg_start": os.getloadavg()}}
    parts = set(args.parts.split(","))
    with tempfile.TemporaryDirectory(prefix="diarist-bench-models-") as tmp:
        folder = args.models
        if folder is None:
            say("[0] exporting the model ...")
            folder = export(Path(tmp))
        per_tensor(folder) if (folder / VARIANT_FILES["fp32"]).exists() else None
        report["files_mb"] = {v: (folder / f).stat().st_size / 1e6
                              for v, f in VARIANT_FILES.items() if (folder / f).exists()}
        report["variants"] = {}
        variants = [v for v, name in VARIANT_FILES.items() if (folder / name).exists()]
        rounds = speed_rounds(folder, variants, args.rounds if "speed" in parts else 0,
                              args.texts)
        for variant in variants if {"speed", "recall"} <= parts else []:
            say(f"[2] {variant}: evidence recall@10 ...")
            recall = run_child("recall", str(folder / VARIANT_FILES[variant]),
                               str(folder / "tokenizer.json"))
            runs = rounds[variant]
            report["variants"][variant] = {
                "rounds": runs,
                "best": {"load_s": min(r["load_s"] for r in runs),
                         "import_s": min(r["import_s"] for r in runs),
                         "items_per_s": max(r["items_per_s"] for r in runs),
                         "query_p50_ms": min(r["query_p50_ms"] for r in runs),
                         "query_p95_ms": min(r["query_p95_ms"] for r in runs),
                         "peak_rss_mb": max(r["peak_rss_mb"] for r in runs)},
                **recall}
            say(f"    recall@10 {recall['recall_at_10']:.4f}")
        compare_to_fp32(report["variants"])
        questions = [q["query"] for conv in locomo_turns() for q in locomo_questions(conv)]
        random.Random(SEED).shuffle(questions)
        report["search"] = []
        from workers.models.embedding import DEFAULT_VARIANT

        for n in (10_000, 100_000) if "search" in parts else ():
            say(f"[3] vector search over {n:,} vectors ({DEFAULT_VARIANT} query embedding) ...")
            result = bench_search(folder, DEFAULT_VARIANT, n, questions)
            report["search"].append(result)
            say(f"    {json.dumps(result)}")
    if "layouts" in parts:
        say("[4] scan layouts over 100,000 vectors ...")
        report["layouts"] = bench_layouts()
    report["load_avg_end"] = os.getloadavg()
    report["total_s"] = time.perf_counter() - started
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_report(report)


def print_report(report: dict[str, Any]) -> None:
    report.setdefault("variants", {})
    report.setdefault("search", [])
    print(f"date {report['date']}, {report['machine']}, load avg at the end "
          f"{report['load_avg_end']}, total {report['total_s']:.0f} s")
    if report["variants"]:
        print("\n| variant | file | import | session load | items/s | query p50 / p95 | peak RSS |"
              " evidence recall@10 |")
        print("|---|---|---|---|---|---|---|---|")
    for variant, r in report["variants"].items():
        b = r["best"]
        delta = (f" ({-r['fp32_minus_this'] * 100:+.1f} ± {r['paired_se'] * 100:.1f} pts vs fp32)"
                 if "paired_se" in r else "")
        print(f"| {variant} | {report['files_mb'][variant]:.1f} MB |"
              f" {b['import_s'] * 1000:.0f} ms | {b['load_s'] * 1000:.0f} ms |"
              f" {b['items_per_s']:.0f} |"
              f" {b['query_p50_ms']:.1f} / {b['query_p95_ms']:.1f} ms | {b['peak_rss_mb']:.0f} MB |"
              f" {r['recall_at_10']:.3f}{delta} |")
    for variant, r in report["variants"].items():
        print(f"{variant}: items/s by round "
              + ", ".join(f"{x['items_per_s']:.0f}" for x in r["rounds"])
              + f"; recall by category ({r['questions']} questions): "
              + ", ".join(f"{c} {v:.3f}" for c, v in r["recall_by_category"].items()))
    if report.get("layouts"):
        print("\n| scan of 100,000 vectors | p50 / p95 |\n|---|---|")
        for name, r in report["layouts"].items():
            print(f"| {name} | {r['p50_ms']:.2f} / {r['p95_ms']:.2f} ms |")
    if report["search"]:
        print("\n| vectors | matrix | rebuild | refresh +1 | scan p50 / p95 | search p50 / p95 |"
              " + query embedding p50 / p95 | cold process total (imports / load / embed /"
              " search) |")
        print("|---|---|---|---|---|---|---|---|")
    for s in report["search"]:
        cold = s["cold"]
        c = min(cold, key=lambda x: x["total_s"])
        totals = ", ".join(f"{x['total_s']:.2f}" for x in cold)
        print(f"| {s['n']:,} | {s['matrix_mb']:.0f} MB | {s['rebuild_s']:.2f} s |"
              f" {s['refresh_one_s'] * 1000:.0f} ms |"
              f" {s['scan_p50_ms']:.2f} / {s['scan_p95_ms']:.2f} ms |"
              f" {s['search_p50_ms']:.2f} / {s['search_p95_ms']:.2f} ms |"
              f" {s['with_query_p50_ms']:.2f} / {s['with_query_p95_ms']:.2f} ms |"
              f" {totals} s (best: {c['imports_s']:.2f} / {c['model_load_s']:.2f} s /"
              f" {c['embed_s'] * 1000:.0f} ms / {c['search_s'] * 1000:.0f} ms; peak RSS"
              f" {c['peak_rss_mb']:.0f} MB) |")


if __name__ == "__main__":
    main()

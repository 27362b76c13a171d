#!/usr/bin/env python
"""The benchmark suite: every speed and size figure of diarist, at 1k / 10k / 100k events,
in one command.

    python benchmarks/suite.py                    # sizes 1000,10000,100000 (~10-15 min)
    python benchmarks/suite.py --quick            # 1000 and 10000, fewer repetitions (~2 min)
    python benchmarks/suite.py --sizes 1000 --parts log,recall --out DIR

Writes ``DIR/suite.json`` (every figure, the machine, the command) and the growth charts
``DIR/growth-latency.png`` and ``DIR/growth-size.png`` (matplotlib), and prints a table.
Every part runs in temporary homes (never a workspace's ``var/``). Run it alone:
``flock /tmp/diarist-bench.lock python benchmarks/suite.py``.

Parts (each the successor of one of the older scripts, whose helpers it uses):

- ``log`` (bench_log.py) — per size: a synthetic transcript imported with ``diarist import``
  (turns/s, peak RSS), ``diarist sync --no-embed`` (events/s, peak RSS), ``diarist replay``
  (s), append latency on that log (p50 / p99), ``var/`` size per 1,000 turns, and a
  ``diarist worker`` on the home: pickup latency and its peak RSS;
- ``recall`` (bench_recall_latency.py) — per size: the real model exported once and chosen,
  a seeded random unit vector per item (the vector search costs about the same whatever
  the values), then warm ``recall()`` p50 / p95 lexical only and hybrid, and the cold
  ``diarist recall QUERY --json`` process (median, peak RSS);
- ``chat`` (bench_session_start.py) — per size: the cold ``diarist chat --backend scripted``
  to its first prompt and to its first reply (with the injection), in a pseudo-terminal;
- ``embed`` (bench_embed.py) — once: embedding throughput (texts/s) and one query's latency;
- ``tokens`` (bench_tokens.py) — once: the token estimator against WordPiece (and the chat
  model's tokenizer when the real model runs);
- ``real`` (bench_real_chat.py) — once, where the real 0.5B model is installed: first-token
  time with and without injected memory;
- ``quality`` (bench_recall_quality.py, now ``diarist eval``) — once: ``diarist eval`` on the
  changed-facts scenario and, unless --quick, on ``../shared/bench/locomo`` when present.
"""
from __future__ import annotations

import argparse
import json
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import bench_log  # noqa: E402
from bench_log import (  # noqa: E402
    _text,
    _wait_position,
    diarist_command,
    home_env,
    latency_summary,
    machine,
    percentile,
    say,
    write_transcript,
)

from events import EventLog, Home  # noqa: E402
from events.types import UserTurn  # noqa: E402

LOCOMO = REPO.parent / "shared" / "bench" / "locomo"
SIZES = (1000, 10_000, 100_000)
QUICK_SIZES = (1000, 10_000)
PARTS = ("log", "recall", "chat", "embed", "tokens", "real", "quality")
QUERIES = ["what did we decide about the staging server", "the trip to Lisbon",
           "why does the nightly backup time out", "sourdough bread recipe",
           "which tests broke after the Python 3.11 upgrade", "invoice from March",
           "garden irrigation timer", "is the Ollama endpoint slow on the Raspberry Pi",
           "what did Anna say about the migration script", "bike repair this week"]


# --- processes --------------------------------------------------------------------------------

# A child forked from this (large) process and exec'd keeps its parent's RSS high-water mark
# in its rusage on Linux, so a peak RSS is measured through a small launcher: it runs the
# command, times it (its own start-up excluded) and reports its child's ru_maxrss.
LAUNCHER = (
    "import resource, subprocess, sys, time\n"
    "t = time.perf_counter()\n"
    "code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode\n"
    "wall = time.perf_counter() - t\n"
    "rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
    "print(f'{wall} {rss}', file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def run_rss(args: list[str], home: Path, env: dict[str, str] | None = None) -> dict[str, Any]:
    """`diarist ARGS` as a process: its wall seconds (process start included) and its own
    peak RSS in MB."""
    done = subprocess.run([sys.executable, "-c", LAUNCHER, *diarist_command(), *args],
                          env=env or home_env(home), stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    if done.returncode:
        raise RuntimeError(f"diarist {' '.join(args)} exited {done.returncode}: {done.stderr}")
    wall, rss = done.stderr.strip().splitlines()[-1].split()
    return {"wall_s": round(float(wall), 4), "peak_rss_mb": round(int(rss) / 1024, 1)}


def run_measured(args: list[str], home: Path) -> float:
    """`diarist ARGS` as a process; wall seconds."""
    started = time.perf_counter()
    subprocess.run(diarist_command() + args, env=home_env(home), check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def dir_bytes(path: Path) -> int:
    """Bytes under a home, without the embedding model's files (``models/``: ~115 MB, the same
    for every home)."""
    return sum(p.stat().st_size for p in path.rglob("*")
               if p.is_file() and "models" not in p.relative_to(path).parts)


def share_model(source: Path | None, home: Path) -> None:
    """The exported embedding model, hard-linked into ``home`` (exported once per run)."""
    from workers.eval.homes import share_models

    if source is not None:
        share_models(source, Home(home))


# --- part: log --------------------------------------------------------------------------------

def part_log(home: Path, transcript: Path, turns: int, quick: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    imported = run_rss(["import", str(transcript)], home)
    out["import"] = {**imported, "turns_per_s": round(turns / imported["wall_s"], 1)}
    events = bench_log.log_head(home / "events.db")
    out["events"] = events
    synced = run_rss(["sync", "--no-embed"], home)
    out["sync"] = {**synced, "events_per_s": round(events / synced["wall_s"], 1)}
    replayed = run_rss(["replay"], home)
    out["replay"] = replayed
    appends = bench_log.bench_appends(home, 100 if quick else 500, events_db=home / "events.db")
    out["append_ms"] = {k: round(v, 3) for k, v in appends.items()}
    out["var_bytes"] = dir_bytes(home)
    out["worker"] = worker_pickup(home, rounds=5 if quick else 15)
    # sync again: the worker test appended events (not embedded: the recall part does that)
    run_measured(["sync", "--no-embed"], home)
    return out


def worker_pickup(home: Path, rounds: int) -> dict[str, Any]:
    """A `diarist worker` on the home: pickup latency of one appended event, and the
    worker's peak RSS (VmHWM) after that work."""
    from workers.dispatch import QUEUE

    proc = subprocess.Popen(diarist_command() + ["worker"], env=home_env(home),
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    samples: list[float] = []
    try:
        time.sleep(2.0)
        with EventLog(home / "events.db") as log:
            for i in range(rounds + 1):
                time.sleep(0.15 + 0.2 * (i % 3) / 2)
                appended = log.append(UserTurn(session="pickup", text=f"pickup round {i}"),
                                      stream="pickup")
                t0 = time.perf_counter()
                QUEUE.appended(Home(home))
                reached = _wait_position(home / "projections.db", appended.seq, timeout=20)
                if reached is not None and i > 0:
                    samples.append((reached - t0) * 1000)
        rss = _vm_hwm_mb(proc.pid)
    finally:
        stop(proc)
    summary = latency_summary(samples) if samples else {}
    return {"pickup_ms": {k: round(v, 2) for k, v in summary.items()}, "peak_rss_mb": rss}


def _vm_hwm_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


# --- part: recall -----------------------------------------------------------------------------

def part_recall(home: Path, quick: bool) -> dict[str, Any]:
    from bench_recall_latency import fill_random_vectors

    out: dict[str, Any] = {"vectors": fill_random_vectors(home)}
    out["var_bytes_with_vectors"] = dir_bytes(home)
    queries = QUERIES * (3 if quick else 10)
    out["warm_lexical_ms"] = warm_recall(home, queries, hybrid=False)
    out["warm_hybrid_ms"] = warm_recall(home, queries, hybrid=True)
    env = dict(home_env(home), DIARIST_NO_EMBED="1")
    cold = [run_rss(["recall", QUERIES[i % len(QUERIES)], "--json"], home, env)
            for i in range(3 if quick else 7)]
    out["cold_recall_s"] = _median_of(cold)
    return out


def warm_recall(home_dir: Path, queries: list[str], hybrid: bool) -> dict[str, float]:
    from projections import open_store
    from projections.recall import recall
    from projections.semantic import semantic_searcher

    home = Home(home_dir)
    with EventLog(home.events_db) as log, open_store(home, log) as store:
        semantic = semantic_searcher(home, store) if hybrid else None
        if hybrid and semantic is None:
            raise RuntimeError("no embedding model active: hybrid recall cannot run")
        recall(store.db, "warm up", 512, 10, semantic)
        times = []
        for q in queries:
            t0 = time.perf_counter()
            recall(store.db, q, 512, 10, semantic)
            times.append((time.perf_counter() - t0) * 1000)
    return {"n": len(times), "p50": round(percentile(times, 50), 2),
            "p95": round(percentile(times, 95), 2), "max": round(max(times), 2)}


def _median_of(runs: list[dict[str, Any]]) -> dict[str, Any]:
    walls = [r["wall_s"] for r in runs]
    return {"median_s": round(statistics.median(walls), 3), "max_s": round(max(walls), 3),
            "runs": walls, "peak_rss_mb": max(r["peak_rss_mb"] for r in runs)}


# --- part: chat -------------------------------------------------------------------------------

def part_chat(home: Path, quick: bool) -> dict[str, Any]:
    from bench_session_start import cold_run

    cwd = Path(tempfile.mkdtemp(prefix="diarist-chat-cwd-"))
    try:
        runs = [cold_run(home, cwd) for _ in range(3 if quick else 5)]
    finally:
        shutil.rmtree(cwd, ignore_errors=True)
    prompts, replies = [r[0] for r in runs], [r[1] for r in runs]
    return {"first_prompt_s": {"median": round(statistics.median(prompts), 3),
                               "max": round(max(prompts), 3)},
            "first_reply_s": {"median": round(statistics.median(replies), 3),
                              "max": round(max(replies), 3)}}


# --- once: embed, tokens, real, quality -------------------------------------------------------

def part_embed(models: Path, quick: bool) -> dict[str, Any]:
    import random

    from projections.embedding import OnnxEmbedder

    rng = random.Random(5)
    texts = [_text(rng, "user") for i in range(400 if quick else 2000)]  # ~40 tokens each
    t0 = time.perf_counter()
    embedder = OnnxEmbedder(models / "model-fp32.onnx", models / "tokenizer.json")
    load_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    embedder.embed(texts)
    seconds = time.perf_counter() - t0
    single = []
    for q in QUERIES * 5:
        t1 = time.perf_counter()
        embedder.embed([q])
        single.append((time.perf_counter() - t1) * 1000)
    mean_tokens = sum(len(e.ids) for e in embedder.tokenizer.encode_batch(texts)) / len(texts)
    return {"model": "all-MiniLM-L6-v2 fp32", "texts": len(texts),
            "mean_tokens": round(mean_tokens, 1),
            "texts_per_s": round(len(texts) / seconds, 1), "load_s": round(load_s, 3),
            "query_ms": {"p50": round(percentile(single, 50), 2),
                         "p95": round(percentile(single, 95), 2)}}


def part_tokens(transcript: Path, llama_url: str | None) -> dict[str, Any]:
    from bench_tokens import llama, wordpiece

    from projections.tokens import estimate

    texts = [f"{t['name']}: {t['text']}" for t in
             map(json.loads, transcript.read_text(encoding="utf-8").splitlines()[:1500])]
    out = {}
    counters: list[tuple[str, Callable[[str], int]]] = [("wordpiece", wordpiece())]
    if llama_url:
        counters.append(("qwen2.5-coder-0.5b", llama(llama_url)))
    for name, count in counters:
        real = [count(t) for t in texts]
        est = [estimate(t) for t in texts]
        out[name] = {"texts": len(texts), "under_estimated": sum(e < r for e, r in
                                                                 zip(est, real, strict=True)),
                     "total_ratio": round(sum(est) / sum(real), 3)}
    return out


def real_model_installed() -> bool:
    try:
        from workers.models.llama_server import chunk_paths

        chunk_paths()
        import xllamacpp  # noqa: F401
    except Exception:
        return False
    return True


def part_real(home: Path, quick: bool) -> tuple[dict[str, Any], str | None, Any]:
    """First-token time with and without memory, through the chat's own session code."""
    from bench_real_chat import DEFAULTS, WITHOUT, free_port, start_server, turn

    server_home = Path(tempfile.mkdtemp(prefix="diarist-real-"))
    scratch = Path(tempfile.mkdtemp(prefix="diarist-real-sessions-"))
    port = free_port()
    proc, started_s = start_server(server_home, port, 2048)
    url = f"http://127.0.0.1:{port}/v1"
    rows: dict[str, list[dict[str, Any]]] = {"with": [], "without": []}
    for q in QUERIES[:2 if quick else 5]:
        for key, mode in (("with", DEFAULTS), ("without", WITHOUT)):
            # a fresh copy of the home a session; the person types for 3 s (bench_real_chat's
            # default), while the server reads the start block ahead
            row = turn(home, scratch, url, q, mode, 3.0)
            rows[key].append({k: row[k] for k in ("ttft_s", "reply_s", "prompt_tokens",
                                                  "injected", "tps")})
    shutil.rmtree(scratch, ignore_errors=True)
    summary = {"server_start_s": round(started_s, 2), "questions": len(rows["with"])}
    for mode, values in rows.items():
        summary[mode] = {k: round(statistics.median(r[k] for r in values), 3)
                         for k in ("ttft_s", "reply_s", "prompt_tokens", "injected", "tps")}
    return summary, f"http://127.0.0.1:{port}", (proc, server_home)


def part_quality(quick: bool, out_dir: Path) -> dict[str, Any]:
    results = {}
    datasets = [("changed-facts", "changed-facts")]
    if not quick and LOCOMO.is_dir():
        datasets.append(("locomo-dev", str(LOCOMO)))
    for name, dataset in datasets:
        home = Path(tempfile.mkdtemp(prefix="diarist-quality-"))
        try:
            started = time.perf_counter()
            done = subprocess.run(diarist_command() + ["eval", dataset, "--json", "--report",
                                                       str(out_dir / f"eval-{name}")],
                                  env=home_env(home), capture_output=True, text=True)
            if done.returncode:
                raise RuntimeError(f"diarist eval {dataset} failed: {done.stderr}")
            report = json.loads(done.stdout)
            overall = report["summary"]["overall"]
            results[name] = {
                "questions": report["summary"]["questions"],
                "wall_s": round(time.perf_counter() - started, 1),
                **{f"{system}_{m}": (overall[system][m] or {}).get("mean")
                   for system in ("diarist", "bm25")
                   for m in ("top10", "budget512", "recency")}}
        finally:
            shutil.rmtree(home, ignore_errors=True)
    return results


# --- the run ----------------------------------------------------------------------------------

def export_model(root: Path) -> Path:
    from workers.models.embedding import export_model as export

    folder = root / "models" / "all-MiniLM-L6-v2"
    say("exporting the embedding model once (10-20 s) ...")
    export(folder)
    return folder


def run_size(root: Path, size: int, parts: set[str], models: Path | None,
             quick: bool) -> dict[str, Any]:
    home = root / f"home-{size}"
    home.mkdir()
    transcript = root / f"transcript-{size}.jsonl"
    info = write_transcript(transcript, size, sessions=max(10, size // 1000))
    out: dict[str, Any] = {"turns": size, "transcript": info}
    say(f"[{size:,}] log: import, sync, replay, appends, worker ...")
    # the log part builds the home; the others need it, so it always runs
    out["log"] = part_log(home, transcript, size, quick)
    out["var_bytes_per_1000_turns"] = round(out["log"]["var_bytes"] / (size / 1000))
    if "recall" in parts and models is not None:
        say(f"[{size:,}] recall: random vectors, warm lexical / hybrid, cold process ...")
        share_model(models, home)
        out["recall"] = part_recall(home, quick)
        out["var_bytes_per_1000_turns_with_vectors"] = round(
            out["recall"]["var_bytes_with_vectors"] / (size / 1000))
    if "chat" in parts:
        say(f"[{size:,}] chat: cold start to the first prompt and reply ...")
        out["chat"] = part_chat(home, quick)
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    parts = set(args.parts.split(",")) if args.parts else set(PARTS)
    unknown = parts - set(PARTS)
    if unknown:
        raise SystemExit(f"unknown part(s) {sorted(unknown)}; known: {', '.join(PARTS)}")
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else \
        list(QUICK_SIZES if args.quick else SIZES)
    report: dict[str, Any] = {"machine": machine(), "command": " ".join(sys.argv),
                              "quick": args.quick, "sizes": {}, "once": {}}
    root = Path(tempfile.mkdtemp(prefix="diarist-suite-"))
    started = time.perf_counter()
    server = None
    try:
        needs_model = parts & {"recall", "embed"}
        models = export_model(root) if needs_model else None
        for size in sizes:
            report["sizes"][str(size)] = run_size(root, size, parts, models, args.quick)
        first = root / f"transcript-{sizes[0]}.jsonl"
        if "embed" in parts and models is not None:
            say("embedding throughput ...")
            report["once"]["embed"] = part_embed(models, args.quick)
        llama_url = None
        if "real" in parts:
            if real_model_installed():
                say("real model: first token with and without memory ...")
                real, llama_url, server = part_real(root / f"home-{sizes[0]}", args.quick)
                report["once"]["real"] = real
            else:
                report["once"]["real"] = {"skipped": "the real model is not installed"}
        if "tokens" in parts:
            say("token estimator ...")
            report["once"]["tokens"] = part_tokens(first, llama_url)
        if server is not None:
            stop(server[0])
            shutil.rmtree(server[1], ignore_errors=True)
            server = None
        if "quality" in parts:
            say("quality: diarist eval ...")
            report["once"]["quality"] = part_quality(args.quick, args.out)
    finally:
        if server is not None:
            stop(server[0])
        if args.keep:
            say(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    report["machine"]["loadavg_end"] = bench_log._loadavg()
    report["total_s"] = round(time.perf_counter() - started, 1)
    return report


# --- output -----------------------------------------------------------------------------------

def _get(data: dict[str, Any], path: str) -> Any:
    for key in path.split("."):
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return data


ROWS = (
    ("events in the log", "log.events", "{:,}"),
    ("import, turns/s (process)", "log.import.turns_per_s", "{:,.0f}"),
    ("import, peak RSS MB", "log.import.peak_rss_mb", "{:.0f}"),
    ("sync --no-embed, events/s", "log.sync.events_per_s", "{:,.0f}"),
    ("sync, peak RSS MB", "log.sync.peak_rss_mb", "{:.0f}"),
    ("replay, s", "log.replay.wall_s", "{:.2f}"),
    ("append p50 / p99, ms", ("log.append_ms.p50", "log.append_ms.p99"), "{:.2f}"),
    ("worker pickup p50 / p95, ms", ("log.worker.pickup_ms.p50", "log.worker.pickup_ms.p95"),
     "{:.1f}"),
    ("worker peak RSS MB", "log.worker.peak_rss_mb", "{:.0f}"),
    ("var/ per 1,000 turns, MB (no vectors)", "var_bytes_per_1000_turns", "mb"),
    ("var/ per 1,000 turns, MB (with vectors)", "var_bytes_per_1000_turns_with_vectors", "mb"),
    ("recall lexical p50 / p95, ms", ("recall.warm_lexical_ms.p50",
                                      "recall.warm_lexical_ms.p95"), "{:.1f}"),
    ("recall hybrid p50 / p95, ms", ("recall.warm_hybrid_ms.p50", "recall.warm_hybrid_ms.p95"),
     "{:.1f}"),
    ("cold `diarist recall`, median s", "recall.cold_recall_s.median_s", "{:.2f}"),
    ("cold `diarist recall`, peak RSS MB", "recall.cold_recall_s.peak_rss_mb", "{:.0f}"),
    ("cold `diarist chat` → first prompt, s", "chat.first_prompt_s.median", "{:.2f}"),
    ("cold `diarist chat` → first reply, s", "chat.first_reply_s.median", "{:.2f}"),
)


def _cell(block: dict[str, Any], path: str | tuple[str, ...], fmt: str) -> str:
    paths = path if isinstance(path, tuple) else (path,)
    values = [_get(block, p) for p in paths]
    if all(v is None for v in values):
        return "—"
    if fmt == "mb":
        return " / ".join(f"{v / 1e6:.2f}" if v is not None else "—" for v in values)
    return " / ".join(fmt.format(v) if v is not None else "—" for v in values)


def table(report: dict[str, Any]) -> str:
    sizes = list(report["sizes"])
    header = ["", *[f"{int(s):,} turns" for s in sizes]]
    rows = [[label, *[_cell(report["sizes"][s], path, fmt) for s in sizes]]
            for label, path, fmt in ROWS]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
             for r in [header, *rows]]
    for name, value in report["once"].items():
        lines.append(f"{name}: {json.dumps(value)}")
    m = report["machine"]
    lines.append(f"machine: {m['cpu']}, {m['nproc']} cores, Python {m['python']}, SQLite "
                 f"{m['sqlite']}; load {m['loadavg_start']} → {m.get('loadavg_end')}; "
                 f"{report['total_s']} s")
    return "\n".join(lines)


def charts(report: dict[str, Any], out: Path) -> list[Path]:
    sys.path.insert(0, str(REPO))
    from workers.eval.charts import pyplot

    plt = pyplot()
    sizes = [int(s) for s in report["sizes"]]
    blocks = [report["sizes"][s] for s in report["sizes"]]
    written = []
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=110)
    for label, path in (("recall p95, lexical (ms)", "recall.warm_lexical_ms.p95"),
                        ("recall p95, hybrid (ms)", "recall.warm_hybrid_ms.p95"),
                        ("append p99 (ms)", "log.append_ms.p99"),
                        ("worker pickup p50 (ms)", "log.worker.pickup_ms.p50"),
                        ("cold `diarist recall` (ms)", "recall.cold_recall_s.median_s"),
                        ("cold `diarist chat` to prompt (ms)", "chat.first_prompt_s.median")):
        values = [_get(b, path) for b in blocks]
        if all(v is None for v in values):
            continue
        scale = 1000 if path.endswith(("_s", "median_s", ".median")) else 1
        ax.plot(sizes, [v * scale if v is not None else float("nan") for v in values],
                marker="o", label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("turns in the log")
    ax.set_ylabel("milliseconds")
    ax.set_title("diarist: latency as the log grows")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    fig.tight_layout()
    written.append(out / "growth-latency.png")
    fig.savefig(written[-1])
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=110)
    for label, path in (("var/ without vectors", "log.var_bytes"),
                        ("var/ with vectors", "recall.var_bytes_with_vectors")):
        values = [_get(b, path) for b in blocks]
        if any(v is not None for v in values):
            ax.plot(sizes, [v / 1e6 if v is not None else float("nan") for v in values],
                    marker="o", label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("turns in the log")
    ax.set_ylabel("MB on disk")
    ax.set_title("diarist: size of var/ as the log grows")
    ax.grid(alpha=0.3, which="both")
    ax.legend()
    fig.tight_layout()
    written.append(out / "growth-size.png")
    fig.savefig(written[-1])
    plt.close(fig)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", help="comma-separated turn counts (default 1000,10000,100000;"
                                        " --quick: 1000,10000)")
    parser.add_argument("--parts", help=f"comma-separated parts (default all: {','.join(PARTS)})")
    parser.add_argument("--quick", action="store_true",
                        help="fewer repetitions, no LoCoMo eval, sizes 1000,10000")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results",
                        help="where suite.json and the charts go (default benchmarks/results)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary homes")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    report = run(args)
    (args.out / "suite.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    try:
        report["charts"] = [str(p) for p in charts(report, args.out)]
    except Exception as exc:  # matplotlib missing: the figures are still there
        say(f"charts not drawn: {exc}")
    (args.out / "suite.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(table(report))
    say(f"wrote {args.out / 'suite.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

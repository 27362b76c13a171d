"""Chat session start with a large memory: cold process to first prompt and to the first
reply (memory injection included), and the injection itself, warm.

    python benchmarks/bench_session_start.py --home DIR   # a home with memory (e.g. the
                                                           # 100k home bench_recall_latency builds
                                                           # with --keep); or --items N to build one

Cold runs use the scripted backend (no model server here) in a real pseudo-terminal:
process start → the first prompt (an onboarding question when the home has no profile; the
benchmark skips them), and → the first reply printed (the first message
triggers recall + `MemoryInjected`). Injection warm: `build_injection()` for 100 LoCoMo
questions at budget 512 (a 2,048-token window × 0.25).
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import pty
import select
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LOCOMO = REPO.parent / "shared" / "bench" / "locomo"
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))


def cold_run(home: Path, cwd: Path) -> tuple[float, float]:
    master, slave = pty.openpty()
    exe = Path(sys.executable).with_name("diarist")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-c",
                                           "from cli.main import main; main()"]
    env = dict(os.environ, DIARIST_HOME=str(home), DIARIST_NO_EMBED="1")
    started = time.perf_counter()
    proc = subprocess.Popen([*cmd, "chat", "--backend", "scripted"], stdin=slave, stdout=slave,
                            stderr=slave, env=env, cwd=cwd, close_fds=True)
    os.close(slave)
    screen, prompt_at, reply_at, asked = "", None, None, False
    try:
        while reply_at is None and time.perf_counter() - started < 60:
            ready, _, _ = select.select([master], [], [], 0.05)
            if ready:
                screen += os.read(master, 65536).decode("utf-8", "replace")
            if prompt_at is None and ("you> " in screen or "What should I call you?" in screen):
                prompt_at = time.perf_counter() - started
                if "you> " not in screen:  # onboarding (no profile yet): skip the 4 questions
                    os.write(master, b"\r\r\r\r")
            if prompt_at is not None and not asked and "you> " in screen:
                asked = True
                os.write(master, b"When did Caroline go to the support group?\r")
            if prompt_at is not None and screen.count("you> ") >= 2:
                reply_at = time.perf_counter() - started
        os.write(master, b"/exit\r")
        proc.wait(timeout=30)
    finally:
        os.close(master)
    if prompt_at is None or reply_at is None:
        raise SystemExit(f"chat did not reach its prompt/reply:\n{screen[-1000:]}")
    return prompt_at, reply_at


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--home", type=Path, help="An existing home with memory.")
    parser.add_argument("--items", type=int, default=100_000, help="Build a home of N turns.")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="diarist-start-"))
    home = args.home
    if home is None:
        import bench_recall_latency as lat

        home = tmp / "home"
        lat.transcript(tmp / "t.jsonl", args.items)
        lat.run(home, "import", str(tmp / "t.jsonl"))
        lat.run(home, "sync", "--no-embed")
        lat.fill_random_vectors(home)

    from events import EventLog, Home
    from projections import open_store
    from projections.inject import build_injection
    from projections.semantic import semantic_searcher

    h = Home(home)
    with EventLog(h.events_db) as log, open_store(h, log) as store:
        items = store.db.execute("SELECT COUNT(*) FROM search_items").fetchone()[0]
        semantic = semantic_searcher(h, store)
        questions = [json.loads(line)["query"]
                     for f in sorted(glob.glob(str(LOCOMO / "*.questions.jsonl")))
                     for line in open(f, encoding="utf-8")][:101]
        build_injection(store.db, questions[0], 512, 10, semantic)
        times = []
        for q in questions[1:]:
            started = time.perf_counter()
            build_injection(store.db, q, 512, 10, semantic)
            times.append((time.perf_counter() - started) * 1000)
    times.sort()
    cold = [cold_run(home, tmp) for _ in range(args.runs)]
    print(f"items {items}; injection warm p50 {times[len(times) // 2]:.1f} ms, "
          f"p95 {times[int(len(times) * 0.95)]:.1f} ms (n={len(times)})")
    print(f"cold: to first prompt median {statistics.median(c[0] for c in cold):.2f} s "
          f"(max {max(c[0] for c in cold):.2f}); to first reply with injection median "
          f"{statistics.median(c[1] for c in cold):.2f} s (max {max(c[1] for c in cold):.2f}); "
          f"runs {len(cold)}")


if __name__ == "__main__":
    main()

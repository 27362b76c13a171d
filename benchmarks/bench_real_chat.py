"""A chat turn with a real small model: what injected memory costs in latency.

    python benchmarks/bench_real_chat.py [--questions 5] [--ctx 2048]

Starts `diarist serve-model` (Qwen2.5-Coder-0.5B, llama.cpp, installed by scripts/setup.sh)
on a free port, imports LoCoMo conv-26 (~420 turns) into a scratch home (`sync --no-embed`:
lexical recall only), then for each of the first N questions of conv-26 runs a fresh
`ChatSession` through the `openai` backend twice — with memory injected (budget_pct 0.25 of
the window) and without — and measures: the injection (recall + MemoryInjected), the time to
the first streamed token, the whole reply (capped at 64 tokens, temperature 0), the prompt
tokens the server counted and its tok/s. Then the shadow journal's extraction call for each
exchange. Medians over the questions; the server reads every prompt afresh
(`cache_prompt` is left on, but each question changes the prompt after the system prompt).
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LOCOMO = REPO.parent / "shared" / "bench" / "locomo"
sys.path.insert(0, str(REPO))

from events import EventLog, Home  # noqa: E402
from events.config import Config, MemoryConfig  # noqa: E402
from projections import open_store  # noqa: E402
from workers.chat.session import ChatSession  # noqa: E402
from workers.chat.shadow_journal import shadow_journal  # noqa: E402
from workers.llm import make_backend  # noqa: E402

CLI = [sys.executable, "-c", "from cli.main import main; main()"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(home: Path, port: int, ctx: int) -> tuple[subprocess.Popen, float]:
    started = time.perf_counter()
    proc = subprocess.Popen([*CLI, "serve-model", "--port", str(port), "--ctx-size", str(ctx)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=dict(os.environ, DIARIST_HOME=str(home), PYTHONPATH=str(REPO)))
    while time.perf_counter() - started < 300:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                if json.loads(r.read()).get("status") == "ok":
                    return proc, time.perf_counter() - started
        except (OSError, ValueError):
            pass
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    proc.kill()
    raise SystemExit("diarist serve-model did not start")


def turn(home: Home, url: str, question: str, inject: bool) -> dict:
    backend = make_backend("openai", base_url=url, max_tokens=64, temperature=0)
    config = Config(memory=MemoryConfig(inject_on_start=False, tools=False))  # injected below
    with EventLog(home.events_db) as log, open_store(home, log) as store:
        session = ChatSession(home, log, store, backend, config, tools=False)
        session.start()
        t0 = time.perf_counter()
        first: list[float] = []
        injected_ms = 0.0
        if inject:
            session.inject(question)  # what send() does on a session's first message
            injected_ms = (time.perf_counter() - t0) * 1000
        reply = session.send(question,
                             on_token=lambda _p: first or first.append(time.perf_counter()))
        done = time.perf_counter()
        session.end()
        return {"inject_ms": injected_ms, "ttft_s": (first[0] if first else done) - t0,
                "reply_s": done - t0, "prompt_tokens": reply.stats.prompt_tokens or 0,
                "tps": reply.stats.tokens_per_sec or 0.0, "session": session.id,
                "turns": session.last_turn, "injected": session.injection.injected_tokens
                if session.injection else 0, "backend": backend}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=5)
    parser.add_argument("--ctx", type=int, default=2048)
    args = parser.parse_args()
    questions = [json.loads(line)["query"] for line in
                 open(LOCOMO / "conv-26.questions.jsonl", encoding="utf-8")][: args.questions]
    with tempfile.TemporaryDirectory(prefix="diarist-bench-real-") as scratch:
        server_home, home = Path(scratch) / "server", Home(Path(scratch) / "home").ensure()
        env = dict(os.environ, DIARIST_HOME=str(home.root), PYTHONPATH=str(REPO))
        for cmd in (["import", str(LOCOMO / "conv-26.transcript.jsonl")], ["sync", "--no-embed"]):
            subprocess.run([*CLI, *cmd], env=env, check=True, capture_output=True)
        port = free_port()
        proc, load_s = start_server(server_home, port, args.ctx)
        url = f"http://127.0.0.1:{port}/v1"
        try:
            print(f"server up in {load_s:.2f} s (first start joins and hashes the weights); "
                  f"window {args.ctx}, {len(questions)} LoCoMo questions, replies ≤ 64 tokens")
            rows = {True: [], False: []}
            for q in questions:
                for inject in (True, False):
                    rows[inject].append(turn(home, url, q, inject))
            for inject in (True, False):
                r = rows[inject]
                med = lambda k, r=r: statistics.median(x[k] for x in r)  # noqa: E731
                print(f"{'with memory   ' if inject else 'without memory'}: injected "
                      f"{med('injected'):.0f} tokens in {med('inject_ms'):.1f} ms; prompt "
                      f"{med('prompt_tokens'):.0f} tokens; first token {med('ttft_s'):.2f} s; "
                      f"reply {med('reply_s'):.2f} s; {med('tps'):.1f} tok/s (medians)")
            times = []
            with EventLog(home.events_db) as log, open_store(home, log) as store:
                for row in rows[True]:
                    t0 = time.perf_counter()
                    shadow_journal(home, log, row["session"], *row["turns"], row["backend"],
                                   store=store)
                    times.append(time.perf_counter() - t0)
            print(f"shadow journal extraction: median {statistics.median(times):.2f} s, "
                  f"max {max(times):.2f} s")
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)


if __name__ == "__main__":
    main()

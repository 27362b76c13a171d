"""A chat turn with a real small model: what injected memory costs the first reply.

    python benchmarks/bench_real_chat.py [--questions 5] [--ctx 2048] [--typing 3]

Starts `diarist serve-model` (Qwen2.5-Coder-0.5B, llama.cpp, installed by scripts/setup.sh)
on a free port, imports LoCoMo conv-26 (~420 turns) into a scratch home (`sync --no-embed`:
lexical recall only), then for each of the first N questions of conv-26 runs four fresh
`ChatSession`s through the `openai` backend, the person taking `--typing` seconds to type the
question each time:
- *without memory* (`inject_on_start` and `turn_recall` off);
- *memory, not warmed*: the start block, the backend's `warm` disabled — the server reads
  the memory only when the question arrives;
- *memory, warmed* (``memory.first_note: false``): the start block is read by the server
  while the person types; the first message gets no note;
- *warmed + first note* (the default chat): the same, and the first message gets its memory
  note, which the server reads after the message arrives.
It measures the time from the question being sent to the first streamed token, the whole
reply (capped at 64 tokens, temperature 0), the prompt tokens the server counted and the
memory injected. Then the shadow journal's extraction call for each warmed exchange.
Medians over the questions.
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


MODES = ("without memory", "memory, not warmed", "memory, warmed",
         "warmed + first note")


def turn(home: Home, url: str, question: str, mode: str, typing: float) -> dict:
    backend = make_backend("openai", base_url=url, max_tokens=64, temperature=0)
    memory = mode != MODES[0]
    config = Config(memory=MemoryConfig(inject_on_start=memory, turn_recall=memory,
                                        first_note=mode == MODES[3], tools=False))
    if mode == MODES[1]:
        setattr(backend, "warm", lambda messages: None)  # noqa: B010 — no read-ahead
    with EventLog(home.events_db) as log, open_store(home, log) as store:
        session = ChatSession(home, log, store, backend, config, tools=False)
        session.start()
        time.sleep(typing)  # the person types the first message
        t0 = time.perf_counter()
        first: list[float] = []

        def on_token(_piece: str) -> None:
            if not first:
                first.append(time.perf_counter())

        reply = session.send(question, on_token=on_token)
        done = time.perf_counter()
        session.end()
        return {"ttft_s": (first[0] if first else done) - t0, "reply_s": done - t0,
                "prompt_tokens": reply.stats.prompt_tokens or 0,
                "tps": reply.stats.tokens_per_sec or 0.0, "session": session.id,
                "turns": session.last_turn, "injected": session.memory_in_prompt(),
                "backend": backend}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=5)
    parser.add_argument("--ctx", type=int, default=2048)
    parser.add_argument("--typing", type=float, default=3.0,
                        help="seconds the person takes to type each first message")
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
            rows: dict[str, list[dict]] = {mode: [] for mode in MODES}
            for q in questions:
                for mode in MODES:
                    rows[mode].append(turn(home, url, q, mode, args.typing))
            for mode in MODES:
                r = rows[mode]
                med = lambda k, r=r: statistics.median(x[k] for x in r)  # noqa: E731
                print(f"{mode:<19}: memory {med('injected'):.0f} tokens; prompt "
                      f"{med('prompt_tokens'):.0f} tokens; first token {med('ttft_s'):.2f} s; "
                      f"reply {med('reply_s'):.2f} s; {med('tps'):.1f} tok/s (medians)")
            base = statistics.median(x["ttft_s"] for x in rows[MODES[0]])
            for mode in MODES[1:]:
                ratio = statistics.median(x["ttft_s"] for x in rows[mode]) / base
                print(f"first token, {mode} / without memory: {ratio:.2f}x")
            times = []
            with EventLog(home.events_db) as log, open_store(home, log) as store:
                for row in rows[MODES[2]]:
                    t0 = time.perf_counter()
                    user_id, assistant_id = row["turns"]
                    shadow_journal(home, log, row["session"], user_id, assistant_id,
                                   row["backend"], store=store)
                    times.append(time.perf_counter() - t0)
            print(f"shadow journal extraction: median {statistics.median(times):.2f} s, "
                  f"max {max(times):.2f} s")
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)


if __name__ == "__main__":
    main()

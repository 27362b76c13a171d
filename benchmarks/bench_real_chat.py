"""A chat turn with a real small model: what injected memory costs the first reply.

    python benchmarks/bench_real_chat.py [--questions 5] [--ctx 2048] [--typing 3]
                                         [--note-sweep 0,8,16,32,64] [--repeat 5]

Starts `diarist serve-model` (Qwen2.5-Coder-0.5B, llama.cpp, installed by scripts/setup.sh)
on a free port, imports LoCoMo conv-26 (~420 turns) into a scratch home (`sync --no-embed`:
lexical recall only), then for each of the first N questions of conv-26 runs fresh
`ChatSession`s through the `openai` backend, each on its own copy of that home (so one
session's question never becomes the next one's "last session"), the person taking
`--typing` seconds to type the question each time:
- *without memory* (`inject_on_start` and `turn_recall` off);
- *memory, not warmed*: the default settings, the backend's `warm` disabled — the server
  reads the start block only when the question arrives;
- *warmed, no first note* (``memory.first_note: false``): the start block is read by the
  server while the person types; the first message gets no note;
- *defaults*: the default chat — warmed, and the first message gets its note, capped at
  half of what the message itself costs (``workers.chat.memory.first_note_cap``), read by
  the server after the message arrives.
It measures the time from the question being sent to the first streamed token, the whole
reply (capped at 64 tokens, temperature 0), the prompt tokens the server counted, the
memory in the prompt and the first message's note; then the shadow journal's extraction
call after each default exchange. Medians over the questions.

``--note-sweep N,…`` measures instead what a note of N real tokens (counted by the server's
``/tokenize``) put before the question costs the first token, against the question alone:
for each question and size, ``--repeat`` times, the system prompt (with a start block) is
read ahead, then the question is sent with the note; the baseline reads ahead the plain
system prompt and sends the question alone, as a chat without memory does.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
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


WITHOUT, NOT_WARMED, NO_FIRST_NOTE, DEFAULTS = ("without memory", "memory, not warmed",
                                               "warmed, no first note", "defaults")
MODES = (WITHOUT, NOT_WARMED, NO_FIRST_NOTE, DEFAULTS)


def config_for(mode: str) -> Config:
    if mode == WITHOUT:
        return Config(memory=MemoryConfig(inject_on_start=False, turn_recall=False, tools=False))
    if mode == NO_FIRST_NOTE:
        return Config(memory=MemoryConfig(first_note=False, tools=False))
    return Config(memory=MemoryConfig(tools=False))  # the defaults (no tools: a 0.5B model)


def turn(seed: Path, scratch: Path, url: str, question: str, mode: str, typing: float) -> dict:
    """One session's first exchange on a fresh copy of the seeded home."""
    root = scratch / "session"
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(seed, root)
    home = Home(root)
    backend = make_backend("openai", base_url=url, max_tokens=64, temperature=0)
    if mode == NOT_WARMED:
        setattr(backend, "warm", lambda messages: None)  # noqa: B010 — no read-ahead
    with EventLog(home.events_db) as log, open_store(home, log) as store:
        session = ChatSession(home, log, store, backend, config_for(mode), tools=False)
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
        shadow = None
        if mode == DEFAULTS:  # the shadow journal's extra call, after the reply
            s0 = time.perf_counter()
            user_id, assistant_id = session.last_turn or ("", "")
            shadow_journal(home, log, session.id, user_id, assistant_id, backend, store=store)
            shadow = time.perf_counter() - s0
        return {"ttft_s": (first[0] if first else done) - t0, "reply_s": done - t0,
                "prompt_tokens": reply.stats.prompt_tokens or 0,
                "tps": reply.stats.tokens_per_sec or 0.0,
                "injected": session.memory_in_prompt(),
                "note": sum(m.memory_tokens for m in session.history), "shadow_s": shadow}


FILLER = ("Caroline: I went to a LGBTQ support group yesterday and it was so powerful. "
          "Melanie: Yeah, I painted that lake sunrise last year! It's special to me. Caroline: "
          "So, I started looking into counseling and mental health career options, so I could "
          "help other people on their own journeys like I was helped.")


def tokens(root: str, text: str) -> int:
    request = urllib.request.Request(f"{root}/tokenize", json.dumps({"content": text}).encode(),
                                     {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as r:
        return len(json.loads(r.read())["tokens"])


def note_of(root: str, size: int) -> str:
    """A ``[memory note]`` of at most ``size`` real tokens, blank line included."""
    words = FILLER.split()
    while size and words:
        text = "[memory note]\n- " + " ".join(words) + "\n\n"
        if tokens(root, text) <= size:
            return text
        words.pop()
    return ""


def note_sweep(seed: Path, url: str, questions: list[str], sizes: list[int], repeat: int) -> None:
    root = url.removesuffix("/v1")
    home = Home(seed)
    with EventLog(home.events_db) as log, open_store(home, log) as store:
        backend = make_backend("openai", base_url=url, max_tokens=1, temperature=0)
        session = ChatSession(home, log, store, backend, config_for(DEFAULTS), tools=False)
        plain = session.messages()[0]["content"]  # the session is never started: no events
        session.memory_block = session.memory.build_start().text
        with_memory = session.messages()[0]["content"]
    notes = {size: note_of(root, size) for size in sizes}
    print("note sizes (real tokens): " + ", ".join(
        f"{size}: {tokens(root, text) if text else 0}" for size, text in notes.items()))
    times: dict[tuple[str, int | None], list[float]] = {}
    for _ in range(repeat):
        for q in questions:
            for size in [None, *sizes]:  # None: the question alone, no memory
                system = plain if size is None else with_memory
                backend.warm([{"role": "system", "content": system}])
                user = q if size is None else notes[size] + q
                first: list[float] = []

                def on_token(_piece: str, first: list[float] = first) -> None:
                    if not first:
                        first.append(time.perf_counter())

                t0 = time.perf_counter()
                backend.chat([{"role": "system", "content": system},
                              {"role": "user", "content": user}], on_token=on_token)
                times.setdefault((q, size), []).append(first[0] - t0)
    for q in questions:
        base = statistics.median(times[(q, None)])
        cells = [f"{size}: {statistics.median(times[(q, size)]) / base:.2f}x" for size in sizes]
        print(f"{q} ({tokens(root, q)} tokens): alone {base * 1000:.0f} ms; with a note of "
              + ", ".join(cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=5)
    parser.add_argument("--ctx", type=int, default=2048)
    parser.add_argument("--typing", type=float, default=3.0,
                        help="seconds the person takes to type each first message")
    parser.add_argument("--note-sweep", default="",
                        help="comma-separated note sizes in real tokens: measure those instead")
    parser.add_argument("--repeat", type=int, default=5, help="rounds of --note-sweep")
    args = parser.parse_args()
    questions = [json.loads(line)["query"] for line in
                 open(LOCOMO / "conv-26.questions.jsonl", encoding="utf-8")][: args.questions]
    with tempfile.TemporaryDirectory(prefix="diarist-bench-real-") as tmp:
        scratch = Path(tmp)
        server_home, seed = scratch / "server", Home(scratch / "home").ensure()
        env = dict(os.environ, DIARIST_HOME=str(seed.root), PYTHONPATH=str(REPO))
        for cmd in (["import", str(LOCOMO / "conv-26.transcript.jsonl")], ["sync", "--no-embed"]):
            subprocess.run([*CLI, *cmd], env=env, check=True, capture_output=True)
        port = free_port()
        proc, load_s = start_server(server_home, port, args.ctx)
        url = f"http://127.0.0.1:{port}/v1"
        try:
            print(f"server up in {load_s:.2f} s (first start joins and hashes the weights); "
                  f"window {args.ctx}, {len(questions)} LoCoMo questions; "
                  f"load average {os.getloadavg()[0]:.2f}")
            if args.note_sweep:
                note_sweep(seed.root, url, questions,
                           [int(n) for n in args.note_sweep.split(",")], args.repeat)
                print(f"load average {os.getloadavg()[0]:.2f}")
                return
            rows: dict[str, list[dict]] = {mode: [] for mode in MODES}
            for q in questions:
                for mode in MODES:
                    rows[mode].append(turn(seed.root, scratch, url, q, mode, args.typing))
            for mode in MODES:
                r = rows[mode]
                med = lambda k, r=r: statistics.median(x[k] for x in r)  # noqa: E731
                print(f"{mode:<21}: memory {med('injected'):.0f} tokens (first note "
                      f"{med('note'):.0f}); prompt {med('prompt_tokens'):.0f} tokens; first "
                      f"token {med('ttft_s'):.2f} s; reply {med('reply_s'):.2f} s "
                      f"(≤ 64 tokens); {med('tps'):.1f} tok/s (medians)")
            base = statistics.median(x["ttft_s"] for x in rows[WITHOUT])
            for mode in MODES[1:]:
                ratio = statistics.median(x["ttft_s"] for x in rows[mode]) / base
                print(f"first token, {mode} / without memory: {ratio:.2f}x")
            times = [x["shadow_s"] for x in rows[DEFAULTS]]
            print(f"shadow journal extraction: median {statistics.median(times):.2f} s, "
                  f"max {max(times):.2f} s; load average {os.getloadavg()[0]:.2f}")
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)


if __name__ == "__main__":
    main()

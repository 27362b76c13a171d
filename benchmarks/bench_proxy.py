"""What `diarist proxy` adds to a request beside the model's own time (warm).

    python benchmarks/bench_proxy.py [--upstream URL] [--questions 20] [--pause 0.5] [--json]

A fresh home imports a LoCoMo dev conversation (conv-26, 419 turns) and settles (turns
embedded), so every request has real memory to recall. The proxy runs as a real process in
front of the model (`--upstream`, else a `diarist serve-model` 0.5B started here with a
2,048-token window); a client asks it the conversation's questions, each a new conversation,
not streamed, at most 16 reply tokens. Two requests warm the model and the proxy (the ONNX
model, the prompt cache) first. Between a reply and the next request the client pauses
``--pause`` seconds (0.5), as a person reading the reply would: after each exchange the
proxy catches the projections up and reads the next conversation's start block ahead, and a
request sent at once (``--pause 0``) waits for that. For each request the proxy reports in
its ``Server-Timing`` header how long the upstream took; what the client waited beyond that
is the proxy's share: recall, the start block and the note, the log's appends, the HTTP hop.
The figure is that share's median and 90th percentile, and its ratio to the model's time.
Run it alone: it measures time on a shared CPU. Needs ``../shared/bench/locomo``."""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LOCOMO = REPO.parent / "shared" / "bench" / "locomo"
sys.path.insert(0, str(REPO))

from events import EventLog, Home  # noqa: E402
from events.transcript import import_file  # noqa: E402
from workers.sync.catch_up import settle  # noqa: E402

CONV = "conv-26"
CLI = [sys.executable, "-c", "from cli.main import main; main()"]


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait(url: str, proc: subprocess.Popen, timeout: float, *, any_answer: bool) -> None:
    """Until ``url`` answers 200 (or, ``any_answer``, anything at all)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"{url}: the process exited ({proc.returncode})")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except urllib.error.HTTPError:
            if any_answer:
                return
            time.sleep(0.25)
        except OSError:
            time.sleep(0.25)
    raise SystemExit(f"{url} did not come up in {timeout:.0f} s")


def _timing(header: str) -> dict[str, float]:
    """``memory;dur=1.2, upstream;dur=345.6`` → {"memory": 1.2, "upstream": 345.6}."""
    out = {}
    for part in header.split(","):
        name, _, dur = part.strip().partition(";dur=")
        out[name] = float(dur)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--upstream", help="an OpenAI-compatible server (default: start the "
                                           "0.5B model with `diarist serve-model`)")
    parser.add_argument("--questions", type=int, default=20)
    parser.add_argument("--pause", type=float, default=0.5,
                        help="seconds between a reply and the next request (default 0.5)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    procs: list[subprocess.Popen] = []
    with tempfile.TemporaryDirectory(prefix="diarist-proxy-bench-") as work:
        try:
            home = Home(Path(work) / "home").ensure()
            with EventLog(home.events_db) as log:
                import_file(log, LOCOMO / f"{CONV}.transcript.jsonl")
            settle(home)
            env = dict(os.environ, DIARIST_HOME=str(home.root), PYTHONPATH=str(REPO))
            upstream = args.upstream
            if not upstream:
                port = _free_port()
                models_env = dict(env, DIARIST_HOME=str(Path(work) / "models-home"))
                procs.append(subprocess.Popen(
                    [*CLI, "serve-model", "--port", str(port), "--ctx-size", "2048"],
                    env=models_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
                upstream = f"http://127.0.0.1:{port}/v1"
                _wait(f"http://127.0.0.1:{port}/health", procs[-1], 300, any_answer=False)
            port = _free_port()
            procs.append(subprocess.Popen(
                [*CLI, "proxy", "--upstream", upstream, "--port", str(port)], env=env,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            proxy = f"http://127.0.0.1:{port}/v1"
            _wait(f"{proxy}/models", procs[-1], 60, any_answer=True)
            figures = _measure(proxy, args.questions, args.pause)
        finally:
            for proc in procs:
                proc.terminate()
                proc.wait(timeout=30)
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    print(f"{figures['requests']} requests through diarist proxy (warm, {args.pause} s between "
          f"them), {CONV} in memory")
    print(f"  model (upstream)  median {figures['upstream_ms_median']:8.1f} ms")
    print(f"  proxy's share     median {figures['proxy_ms_median']:8.1f} ms   "
          f"p90 {figures['proxy_ms_p90']:.1f} ms   (of which memory work: median "
          f"{figures['memory_ms_median']:.1f} ms)")
    print(f"  ratio proxy/model median {figures['ratio_median']:.4f}")


def _measure(proxy: str, count: int, pause: float) -> dict:
    """The client is urllib: it sends a request in one write on a new connection, so what
    it waits for is the proxy's and the model's time, not the client's own (the `openai`
    package, keeping the connection alive, sends the headers and the body as two writes and
    the second waits for the server's delayed ACK: +40 ms a request on Linux, whatever the
    server)."""
    with urllib.request.urlopen(f"{proxy}/models") as resp:
        model = json.loads(resp.read())["data"][0]["id"]
    questions = [json.loads(line)["query"] for line in
                 (LOCOMO / f"{CONV}.questions.jsonl").read_text().splitlines()]
    rows = []
    for i, question in enumerate(questions[:count + 2]):
        time.sleep(pause)
        body = json.dumps({"model": model, "max_tokens": 16, "temperature": 0,
                           "messages": [{"role": "user", "content": question}]}).encode()
        request = urllib.request.Request(f"{proxy}/chat/completions", data=body,
                                         headers={"Content-Type": "application/json"})
        started = time.perf_counter()
        with urllib.request.urlopen(request, timeout=600) as resp:
            json.loads(resp.read())
            header = resp.headers["Server-Timing"]
        total = (time.perf_counter() - started) * 1000
        timing = _timing(header)
        if i >= 2:  # the first two warm the model, the prompt cache and the ONNX model
            rows.append((total - timing["upstream"], timing["upstream"], timing["memory"]))
    shares = sorted(r[0] for r in rows)
    return {
        "requests": len(rows),
        "proxy_ms_median": statistics.median(shares),
        "proxy_ms_p90": shares[int(0.9 * (len(shares) - 1))],
        "memory_ms_median": statistics.median(r[2] for r in rows),
        "upstream_ms_median": statistics.median(r[1] for r in rows),
        "ratio_median": statistics.median(r[0] / r[1] for r in rows),
    }


if __name__ == "__main__":
    main()

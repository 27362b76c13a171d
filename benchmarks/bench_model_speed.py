"""How fast the local model reads and writes a mining prompt, under llama.cpp settings.

    python benchmarks/bench_model_speed.py [--model 0.5b] [--variants base,bt2,fa,ub128,poll0]

For each variant the llama.cpp server is started in this process (the same parameters as
``diarist serve-model``, one slot, 4,096 tokens) with one setting changed — ``bt2``: two
batch threads set explicitly, ``fa``: flash attention, ``ub128``: micro-batch 128,
``poll0``: no busy polling — and sent three mining prompts (the fixed instructions and 20
LoCoMo conv-26 turns each, 100 reply tokens). Prints the server's own timings: prompt
tokens/s and reply tokens/s. Run it alone (``flock /tmp/diarist-bench.lock …``); the weights
are joined under ``--models`` (default ``/tmp/diarist-bench-models``) by ``bench_mining.py``
or ``diarist serve-model`` first.
"""
from __future__ import annotations

import argparse
import json
import socket
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
LOCOMO = REPO.parent / "shared" / "bench" / "locomo"
sys.path.insert(0, str(REPO))

from workers.mining.extract import SYSTEM  # noqa: E402
from workers.models import llama_server  # noqa: E402


def _no_polling(params: Any) -> None:
    params.cpuparams.poll = params.cpuparams_batch.poll = 0


SETTINGS = {
    "base": lambda p: None,
    "bt2": lambda p: setattr(p.cpuparams_batch, "n_threads", 2),
    "fa": lambda p: setattr(p, "flash_attn_type", 1),
    "ub128": lambda p: setattr(p, "n_ubatch", 128),
    "poll0": _no_polling,
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def ask(port: int, lines: list[str]) -> dict[str, Any]:
    prompt = "\n".join(lines) + "\n\nAt most 5 memories. JSON:"
    body = {"messages": [{"role": "system", "content": SYSTEM},
                         {"role": "user", "content": prompt}],
            "temperature": 0, "max_tokens": 100, "cache_prompt": True, "stream": False}
    request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions",
                                     json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=600) as response:
        return dict(json.loads(response.read())["timings"])


def measure(model_path: Path, variant: str) -> tuple[list[float], list[float]]:
    original = llama_server._params

    def patched(spec: llama_server.ServerSpec) -> tuple[Any, Any]:
        module, params = original(spec)
        SETTINGS[variant](params)
        return module, params

    llama_server._params = patched
    port = free_port()
    server = llama_server.start(llama_server.ServerSpec(model_path, port=port, n_ctx=4096))
    try:
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2)
                break
            except OSError:
                time.sleep(0.3)
        turns = [json.loads(x) for x in open(LOCOMO / "conv-26.transcript.jsonl",
                                             encoding="utf-8")]
        reading, writing = [], []
        for start in (0, 20, 40):
            lines = [f"[{i + 1}] {t['name']}: {t['text']}"
                     for i, t in enumerate(turns[start:start + 20])]
            timings = ask(port, lines)
            reading.append(timings["prompt_per_second"])
            writing.append(timings["predicted_per_second"])
        return reading, writing
    finally:
        del server
        llama_server._params = original


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", choices=["0.5b", "1.5b"], default="0.5b")
    parser.add_argument("--variants", default=",".join(SETTINGS))
    parser.add_argument("--models", type=Path, default=Path("/tmp/diarist-bench-models"))
    args = parser.parse_args()
    model = llama_server.local_model(args.model)
    path = llama_server.assemble(args.models / "models", model)
    for variant in args.variants.split(","):
        reading, writing = measure(path, variant)
        print(f"{variant:>6} {args.model}: prompt tokens/s {[round(x) for x in reading]}, "
              f"reply tokens/s {[round(x, 1) for x in writing]}", flush=True)


if __name__ == "__main__":
    main()

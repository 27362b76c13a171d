"""Chatter: statements mining draws that keep nothing worth keeping — "John totally
agrees.", "The user will definitely check them out.", "Adding it to John's list." — left
out of what the heuristic extractor's pass keeps.

Between friends, half of what is said in the first person is encouragement, thanks and
reaction; :mod:`.statements` keeps every first-person sentence its patterns allow. Which
statements are worth keeping is learned from LoCoMo's annotators, who wrote down what each
session of a conversation tells about its people: a statement mining draws from a LoCoMo
dev session is *kept* when it states one of that session's observations (MiniLM cosine at
least :data:`OBSERVED`, as ``benchmarks/bench_observations.py`` counts), else *chatter*.

**The model**: a logistic regression on the statement's MiniLM vector — the vector mining's
near-duplicate check computes anyway — and two counts past its person's name
(:func:`counts`): its content words, and those uncommon in English (Zipf below
:data:`UNCOMMON`: a thing named, "pottery", "Coco"). ``python scripts/train_chatter.py``
fits it and writes :data:`WEIGHTS`. **The threshold**: the highest probability at which,
each LoCoMo dev conversation held out in turn, at most 5 % of its kept statements would be
left out (the worst conversation decides).

Only a life statement of the heuristic extractor is judged (type ``user_preference``, no
attribute it sets, not asked to be remembered): a value, a note, a tool's failure or a
model's extraction is never left out. Without the embedding model, or without the weights
file, nothing is.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .text import content_words, zipf

WEIGHTS = Path(__file__).with_name("chatter.npz")
OBSERVED = 0.6     # cosine at which a statement states an observation (bench_observations)
UNCOMMON = 4.5     # Zipf frequency under which a word is uncommon in English


def counts(statement: str, speaker: str) -> tuple[int, int]:
    """(content words, uncommon ones) of ``statement``, its speaker's name left out."""
    name = set(content_words(speaker))
    words = [w for w in content_words(statement) if w not in name]
    return len(words), sum(1 for w in words if zipf(w) < UNCOMMON)


def features(vectors: Any, statements: Sequence[tuple[str, str]]) -> Any:
    """The model's inputs: each statement's vector, then log(1 + count) of its two
    :func:`counts`; ``statements``: (statement, speaker) pairs, one per vector row."""
    import numpy as np

    extra = np.log1p(np.array([counts(s, who) for s, who in statements], dtype=np.float32)
                     .reshape(-1, 2))
    return np.hstack([np.asarray(vectors, dtype=np.float32).reshape(len(statements), -1),
                      extra])


class Chatter:
    """The trained weights (:data:`WEIGHTS`)."""

    def __init__(self, weights: Path = WEIGHTS) -> None:
        import numpy as np

        data = np.load(weights)
        self.w, self.b = data["w"], float(data["b"])
        self.threshold = float(data["threshold"])

    def keeps(self, vectors: Any, statements: Sequence[tuple[str, str]]) -> list[float]:
        """The probability that each statement is worth keeping."""
        import numpy as np

        if not statements:
            return []
        z = features(vectors, statements) @ self.w + self.b
        return [float(p) for p in 1 / (1 + np.exp(-z))]

    def is_chatter(self, vectors: Any, statements: Sequence[tuple[str, str]]) -> list[bool]:
        """Whether each statement falls under the threshold."""
        return [p < self.threshold for p in self.keeps(vectors, statements)]


def load_chatter(weights: Path | None = None) -> Chatter | None:
    """The model (the installed :data:`WEIGHTS` by default), or None when its weights are
    not there."""
    weights = weights or WEIGHTS
    return Chatter(weights) if weights.exists() else None

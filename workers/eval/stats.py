"""Confidence intervals for `diarist eval`: the percentile bootstrap, seeded.

:func:`bootstrap_ci` gives the mean of per-question values with a 95 % interval;
:func:`paired_ci` compares two systems on the *same* questions (resampling questions, not
systems), which is what "diarist vs the baseline" and "memory vs no memory" need: the
question-to-question spread, shared by both systems, cancels out; :func:`ratio_ci` gives
one system's total as a share of another's on the same questions (memory's share of the
ceiling). All are deterministic for a seed.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

RESAMPLES = 2000
LEVEL = 0.95


@dataclass(frozen=True)
class Estimate:
    mean: float
    low: float
    high: float
    n: int

    def to_json(self) -> dict[str, Any]:
        return {"mean": round(self.mean, 4), "low": round(self.low, 4),
                "high": round(self.high, 4), "n": self.n}

    def text(self, digits: int = 3) -> str:
        return f"{self.mean:.{digits}f} [{self.low:.{digits}f}, {self.high:.{digits}f}]"


def _defined(values: Sequence[float | None]) -> list[float]:
    return [v for v in values if v is not None]


def _interval(samples: Any, level: float) -> tuple[float, float]:
    import numpy as np

    tail = (1 - level) / 2 * 100
    low, high = np.percentile(samples, [tail, 100 - tail])
    return float(low), float(high)


def bootstrap_ci(values: Sequence[float | None], *, seed: int = 0,
                 resamples: int = RESAMPLES, level: float = LEVEL) -> Estimate | None:
    """Mean of the defined values with a percentile-bootstrap interval; None when there
    are none. One value gives a zero-width interval."""
    import numpy as np

    data = np.asarray(_defined(values), dtype=float)
    if data.size == 0:
        return None
    rng = np.random.default_rng(seed)
    means = data[rng.integers(0, data.size, (resamples, data.size))].mean(axis=1)
    low, high = _interval(means, level)
    return Estimate(float(data.mean()), low, high, int(data.size))


def _pairs(a: Sequence[float | None], b: Sequence[float | None]) -> list[tuple[float, float]]:
    """The questions where both systems' values are defined."""
    if len(a) != len(b):
        raise ValueError("paired values must be of the same questions")
    return [(x, y) for x, y in zip(a, b, strict=True) if x is not None and y is not None]


def paired_ci(a: Sequence[float | None], b: Sequence[float | None], *, seed: int = 0,
              resamples: int = RESAMPLES, level: float = LEVEL) -> Estimate | None:
    """Mean of ``a - b`` over the questions where both are defined, with a paired bootstrap
    interval (the same resampled questions for both systems); None when no pair is."""
    import numpy as np

    pairs = _pairs(a, b)
    if not pairs:
        return None
    diff = np.asarray([x - y for x, y in pairs], dtype=float)
    rng = np.random.default_rng(seed)
    means = diff[rng.integers(0, diff.size, (resamples, diff.size))].mean(axis=1)
    low, high = _interval(means, level)
    return Estimate(float(diff.mean()), low, high, int(diff.size))


def ratio_ci(a: Sequence[float | None], b: Sequence[float | None], *, seed: int = 0,
             resamples: int = RESAMPLES, level: float = LEVEL) -> Estimate | None:
    """``sum(a) / sum(b)`` over the questions where both are defined, with a paired
    bootstrap interval (the same resampled questions for both); None when no pair is or
    ``b`` sums to nothing. A resample in which ``b`` sums to nothing has no ratio and is
    left out."""
    import numpy as np

    pairs = np.asarray(_pairs(a, b), dtype=float).reshape(-1, 2)
    if pairs.size == 0 or pairs[:, 1].sum() == 0:
        return None
    rng = np.random.default_rng(seed)
    drawn = pairs[rng.integers(0, len(pairs), (resamples, len(pairs)))].sum(axis=1)
    defined = drawn[:, 1] > 0
    low, high = _interval(drawn[defined, 0] / drawn[defined, 1], level)
    return Estimate(float(pairs[:, 0].sum() / pairs[:, 1].sum()), low, high, len(pairs))

"""The metrics of `diarist eval`, one small pure function each.

Every function takes the items as recall returned them, best first (anything with ``refs``,
``score`` and ``tokens``: :class:`projections.recall.RecallItem` or :class:`Ranked`), and
returns ``None`` where the metric is undefined for the question (no evidence, no stale refs,
no items to average over) — callers leave those out of means instead of counting them as 0.

- **Evidence recall**: the share of the question's evidence refs that the items' ``refs``
  cover. Top-k takes the first k items in recall's order (equal scores are not reordered);
  within a budget, see :func:`fill_budget`.
- **Session recall**: the share of the sessions holding the answer that some item comes from.
- **Recency**: the newest relevant item (the first covering an evidence ref) ranks strictly
  above every item covering a stale ref — earlier in the order a question's block shows
  them (:func:`projections.inject.shown_rank`: the profile, then mined memories, then turns
  and journal entries, then MEMORY.md's lines; recall's order within each) *and*, within
  one such group, with a higher score, so a tie is not a win; an item covering both an
  evidence and a stale ref does not count as above itself. No relevant item: 0.
- **Answers**: token-level F1 as LoCoMo computes it (lower case, commas and punctuation
  removed, the words a/an/the/and removed, Porter-stemmed tokens; multi-hop answers are split
  at commas and each part scored against its best predicted part; an open-domain answer is
  cut at its first ``;``), and exact containment of the normalised answer in the normalised
  reply (on word boundaries).
"""
from __future__ import annotations

import math
import re
import string
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Protocol

from projections.inject import shown_rank

MIN_ITEM_TOKENS = 8  # recall stops filling a budget when less room than this is left


class Item(Protocol):
    @property
    def refs(self) -> list[str] | tuple[str, ...]: ...

    @property
    def score(self) -> float: ...

    @property
    def tokens(self) -> int: ...


@dataclass(frozen=True)
class Ranked:
    """An item of a baseline's ranking (the same shape recall's items have)."""

    refs: tuple[str, ...]
    score: float
    tokens: int
    content: str = ""
    sessions: tuple[str, ...] = field(default=())


def covered(items: Iterable[Item]) -> set[str]:
    return {ref for item in items for ref in item.refs}


def evidence_recall(evidence: Collection[str], items: Iterable[Item]) -> float | None:
    """Share of ``evidence`` the items cover; None when there is no evidence."""
    if not evidence:
        return None
    refs = covered(items)
    wanted = set(evidence)
    return len(wanted & refs) / len(wanted)


def top_k(items: Sequence[Item], k: int) -> Sequence[Item]:
    return items[:k]


def fill_budget(items: Sequence[Item], budget: int) -> list[Item]:
    """The items recall would keep within ``budget`` tokens (0: no budget): best first, an
    item that does not fit is skipped and the next tried, until less room than
    ``MIN_ITEM_TOKENS`` is left — how ``diarist recall --budget`` fills its budget."""
    if budget <= 0:
        return list(items)
    kept: list[Item] = []
    used = 0
    for item in items:
        if budget - used < MIN_ITEM_TOKENS:
            break
        if used + item.tokens <= budget:
            kept.append(item)
            used += item.tokens
    return kept


def session_recall(sessions: Collection[str], items: Iterable[Item],
                   session_of: Mapping[str, str]) -> float | None:
    """Share of the answer's ``sessions`` that some item comes from (an item's sessions are
    those of its refs); None when the question names no session."""
    if not sessions:
        return None
    found = {session_of[r] for r in covered(items) if r in session_of}
    wanted = set(sessions)
    return len(wanted & found) / len(wanted)


def recency(evidence: Collection[str], stale: Collection[str],
            items: Sequence[Item]) -> float | None:
    """1.0 when the newest relevant item ranks strictly above every stale one (see the
    module doc), 0.0 otherwise; None for a question without stale refs."""
    if not stale or not evidence:
        return None
    wanted, old = set(evidence), set(stale)
    shown = sorted(items, key=_shown)
    relevant = next((i for i, item in enumerate(shown) if wanted & set(item.refs)), None)
    if relevant is None:
        return 0.0
    lead = shown[relevant]
    for i, item in enumerate(shown):
        if old & set(item.refs) and (i <= relevant or (
                _shown(item) == _shown(lead) and item.score >= lead.score)):
            return 0.0
    return 1.0


def _shown(item: Item) -> int:
    """Where a question's block shows ``item`` (a baseline's have no source: turns)."""
    return shown_rank(getattr(item, "source", "turn"))


def share(part: float, whole: float) -> float | None:
    """``part / whole`` (efficiency: injected memory tokens ÷ prompt tokens); None for 0."""
    return part / whole if whole else None


def mean_cosine(query: Any, vectors: Any) -> float | None:
    """Mean cosine between a unit query vector and unit item vectors (numpy arrays, rows);
    None when there are no items."""
    if vectors is None or len(vectors) == 0:
        return None
    return float((vectors @ query).mean())


def mean(values: Iterable[float | None]) -> float | None:
    """The mean of the defined values; None when there are none."""
    defined = [v for v in values if v is not None and not math.isnan(v)]
    return sum(defined) / len(defined) if defined else None


# --- answers (LoCoMo's metric) ---------------------------------------------------------------

_ARTICLES = re.compile(r"\b(a|an|the|and)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def normalize_answer(text: str) -> str:
    """Lower case, no commas or punctuation, no a/an/the/and, single spaces."""
    text = str(text).replace(",", "").lower().translate(_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


@lru_cache(maxsize=1)
def _stemmer() -> Any:
    from nltk.stem import PorterStemmer

    return PorterStemmer()


def _tokens(text: str) -> list[str]:
    stem = _stemmer().stem
    return [stem(w) for w in normalize_answer(text).split()]


def f1_single(prediction: str, answer: str) -> float:
    predicted, gold = _tokens(prediction), _tokens(answer)
    same = sum((Counter(predicted) & Counter(gold)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(predicted), same / len(gold)
    return 2 * precision * recall / (precision + recall)


def f1_multi(prediction: str, answer: str) -> float:
    """Each comma-separated part of the answer against its best predicted part, averaged."""
    predicted = [p.strip() for p in prediction.split(",")]
    parts = [g.strip() for g in answer.split(",")]
    return sum(max(f1_single(p, g) for p in predicted) for g in parts) / len(parts)


def answer_f1(prediction: str, answer: str, category: str = "") -> float:
    """Token-level F1 of a reply against the reference answer, as LoCoMo scores it."""
    if category == "open-domain":
        answer = answer.split(";")[0].strip()
    if category == "multi-hop":
        return f1_multi(prediction, answer)
    return f1_single(prediction, answer)


def contains_answer(prediction: str, answer: str) -> float | None:
    """1.0 when the normalised answer appears in the normalised reply as whole words; None
    for an empty answer."""
    gold = normalize_answer(answer)
    if not gold:
        return None
    return 1.0 if f" {gold} " in f" {normalize_answer(prediction)} " else 0.0

"""Recall: the read side that fills a token budget with the memory that matters most.

Order (docs/architecture.md, "Recall"): the workspace profile, project facts, MEMORY.md
(capped), then scored results from every other projection — lexical (FTS5) always, semantic
(cosine) when vectors exist — merged (BM25 scaled to the query's best hit, plus the cosine),
deduplicated, weighted by confidence and freshness, and cut at the budget. Every item
carries source, id, content, score, tokens, at and refs.
"""
from __future__ import annotations

import datetime as dt
import math
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from events import clock

from .items import JOURNAL, LONG_TERM, MEMORY, TURN, content_hash
from .long_term import read_long_term
from .memories import list_memories, memory_states
from .search import Hit, items_by_key, search
from .tokens import estimate

DEFAULT_BUDGET = 512          # tokens, when the model's context window is unknown
CANDIDATES = 50               # depth of each ranked list before fusion
COSINE_WEIGHT = 1.0           # fused score = BM25 / best BM25 of the query + COSINE_WEIGHT · cosine
LONG_TERM_SHARE = 0.5         # MEMORY.md may take at most this share of the budget
MIN_ITEM_TOKENS = 8           # stop looking once less room than any real item needs is left
FRESHNESS_HALF_LIFE_DAYS = 90.0
FRESHNESS_FLOOR = 0.5         # an old item keeps at least half its score



class Semantic(Protocol):
    """Cosine search (see :mod:`projections.semantic`)."""

    def nearest(self, query: str, k: int) -> list[tuple[str, float]]: ...

    def cosines(self, query: str, keys: Iterable[str]) -> dict[str, float]: ...


@dataclass(frozen=True)
class RecallItem:
    source: str
    id: str
    content: str
    score: float
    tokens: int
    at: str
    refs: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class RecallResult:
    query: str
    budget: int
    used_tokens: int
    items: list[RecallItem]

    def to_json(self) -> dict[str, Any]:
        return {"query": self.query, "budget": self.budget, "used_tokens": self.used_tokens,
                "items": [asdict(i) for i in self.items]}


class _Filler:
    """Adds items while they fit (budget 0: unlimited)."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.used = 0
        self.items: list[RecallItem] = []

    def room(self) -> float:
        return math.inf if self.budget <= 0 else self.budget - self.used

    def add(self, item: RecallItem) -> bool:
        if item.tokens > self.room():
            return False
        self.items.append(item)
        self.used += item.tokens
        return True


def _item(source: str, id_: str, content: str, score: float, at: str,
          refs: Sequence[str]) -> RecallItem:
    return RecallItem(source, id_, content, round(score, 6), estimate(content), at, list(refs))


def _fixed_head(db: sqlite3.Connection, filler: _Filler) -> set[str]:
    """Profile, project facts, then MEMORY.md up to its share; returns the content hashes
    used, so the scored part does not repeat them."""
    used: set[str] = set()
    for type_, source in (("workspace_profile", "workspace_profile"),
                          ("project_fact", "project_fact")):
        for memory in list_memories(db, type_):
            if filler.add(_item(source, memory.id, memory.content, memory.confidence,
                                memory.created_at, memory.refs)):
                used.add(content_hash(memory.content))
    long_term = read_long_term(db)
    if long_term:
        share = (filler.room() if filler.budget <= 0
                 else min(filler.room(), LONG_TERM_SHARE * filler.budget))
        text = _fit_lines(long_term, share)
        if text and filler.add(_item(LONG_TERM, "MEMORY.md", text, 1.0, "", [])):
            used.add(content_hash(text))
            used |= {content_hash(section) for section in _sections_within(db, text)}
    return used


def _fit_lines(text: str, tokens: float) -> str:
    """The longest prefix of whole lines whose estimate fits ``tokens``."""
    if estimate(text) <= tokens:
        return text
    kept: list[str] = []
    for line in text.splitlines():
        if estimate("\n".join(kept + [line])) > tokens:
            break
        kept.append(line)
    return "\n".join(kept).strip()


def _sections_within(db: sqlite3.Connection, text: str) -> list[str]:
    rows = db.execute("SELECT f.content FROM search_items i JOIN search_fts f ON f.rowid = i.rowid"
                      " WHERE i.source = ?", (LONG_TERM,)).fetchall() if text else []
    return [r[0] for r in rows if r[0] in text]


def _freshness(at: str, now: dt.datetime) -> float:
    if not at:
        return 1.0
    try:
        age_days = max((now - clock.from_iso(at)).total_seconds() / 86400, 0.0)
    except ValueError:
        return 1.0
    return FRESHNESS_FLOOR + (1 - FRESHNESS_FLOOR) * 0.5 ** (age_days / FRESHNESS_HALF_LIFE_DAYS)


def _fuse(lexical: list[Hit], cosines: dict[str, float]) -> dict[str, float]:
    """BM25 scaled by the query's best hit (0–1) plus the weighted cosine, for every
    candidate of either list. Score fusion beat reciprocal-rank fusion on the LoCoMo dev set
    (0.761 vs 0.694 top-10 evidence recall): RRF lets weak cosine-only hits in at full
    rank weight."""
    best = max((h.score for h in lexical), default=0.0) or 1.0
    scores = {h.key: h.score / best for h in lexical}
    for key, cosine in cosines.items():
        scores[key] = scores.get(key, 0.0) + COSINE_WEIGHT * cosine
    return scores


def recall(db: sqlite3.Connection, query: str, budget: int = DEFAULT_BUDGET, k: int = 10,
           semantic: Semantic | None = None, now: dt.datetime | None = None) -> RecallResult:
    """Recall for ``query`` within ``budget`` tokens (0: no budget), at most ``k`` scored
    items after the fixed head. ``semantic`` adds cosine results when vectors exist."""
    now = now or clock.now()
    filler = _Filler(budget)
    seen_hashes = _fixed_head(db, filler)

    lexical = search(db, query, CANDIDATES)
    cosines: dict[str, float] = {}
    if semantic is not None:
        cosines = dict(semantic.nearest(query, CANDIDATES))
        missing = [h.key for h in lexical if h.key not in cosines]
        cosines.update(semantic.cosines(query, missing))
    fused = _fuse(lexical, cosines)
    hits = {h.key: h for h in lexical}
    hits.update(items_by_key(db, [key for key in cosines if key not in hits]))
    states = memory_states(db, [h.id for h in hits.values() if h.source == MEMORY])

    ranked: list[tuple[float, Hit]] = []
    for key, score in fused.items():
        hit = hits.get(key)
        if hit is None:
            continue
        weight = _freshness(hit.at, now)
        if hit.source == MEMORY:
            status, confidence, relevancy = states.get(hit.id, ("active", 1.0, 1.0))
            if status != "active":
                continue
            weight *= confidence * relevancy
        ranked.append((score * weight, hit))
    ranked.sort(key=lambda pair: (-pair[0], pair[1].key))

    replies = _replies(db, [hit for _, hit in ranked if hit.source == TURN])
    scored = 0
    for score, hit in ranked:
        if scored >= k or filler.room() < MIN_ITEM_TOKENS:
            break
        parts = [p for p in (hit, replies.get(hit.key)) if p and p.content_hash not in seen_hashes]
        if not parts:
            continue
        lead = parts[0]
        content = "\n".join(p.content for p in parts)
        refs = [r for p in parts for r in p.refs]
        if filler.add(_item(_source_label(lead), lead.id, content, score, lead.at, refs)):
            seen_hashes.update(p.content_hash for p in parts)
            scored += 1
    return RecallResult(query, budget, filler.used, filler.items)


def _replies(db: sqlite3.Connection, turns: list[Hit]) -> dict[str, Hit]:
    """Each turn hit's reply: the next turn of its session. Recall shows a turn hit with it —
    the exchange, not a lone line. On the LoCoMo dev set this lifted 512-token evidence recall
    from 0.618 to 0.682 with FTS5 alone (docs/benchmarks.md); adding the previous turn as
    well did better on top-10 but worse within the budget."""
    if not turns:
        return {}
    keys = [t.key for t in turns]
    rows = db.execute(
        "SELECT h.key, (SELECT n.key FROM search_items n WHERE n.session = h.session"
        " AND n.source = 'turn' AND n.seq > h.seq ORDER BY n.seq LIMIT 1)"
        f" FROM search_items h WHERE h.key IN ({','.join('?' * len(keys))})", keys).fetchall()
    found = items_by_key(db, [reply for _, reply in rows if reply])
    return {key: found[reply] for key, reply in rows if reply in found}


def _source_label(hit: Hit) -> str:
    if hit.source == MEMORY and hit.type in ("workspace_profile", "project_fact"):
        return hit.type
    return {TURN: "turn", JOURNAL: "journal", MEMORY: "memory", LONG_TERM: "long_term"}[hit.source]

"""Recall: the read side that fills a token budget with the memory that matters most.

Order (docs/architecture.md, "Recall"): the workspace profile, project facts, MEMORY.md
(capped), then scored results from every other projection — lexical (FTS5) always, semantic
(cosine) when vectors exist — merged (BM25 scaled to the query's best hit, plus the cosine),
deduplicated, weighted by confidence and freshness, and cut at the budget. Every item
carries source, id, content, score, tokens, at and refs.
"""
from __future__ import annotations

import datetime as dt
import json
import math
import re
import sqlite3
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Protocol

from events import clock
from events.db import read_transaction
from events.memory_types import PROJECT_FACT, head, names
from events.text import repaired

from . import block_headers, context, weights
from .fts import STOPWORDS, words
from .items import (
    HEADING,
    JOURNAL,
    LONG_TERM,
    MEMORY,
    TURN,
    content_hash,
    item_key,
    key_part,
)
from .long_term import TITLE, read_long_term, stated_refs, without_since
from .memories import NOT_MINED, list_memories, memory_states, reads_alone, replaced_refs
from .passages import sentences
from .readable import as_said
from .recency import (
    change_factors,
    recency_factors,
    superseded_factors,
    temporal_intent,
)
from .search import Hit, indexed_items, items_by_key, search
from .speakers import Naming, chat_sessions, is_model, naming, speaker_factors, speaker_of
from .tokens import estimate
from .when import period_factors

DEFAULT_BUDGET = 512          # tokens, when the model's context window is unknown
MIN_ITEM_TOKENS = 8           # stop looking once less room than any real item needs is left


class Semantic(Protocol):
    """Cosine search (see :mod:`projections.semantic`)."""

    def prefetch(self, query: str, k: int = 0) -> None: ...

    def embedding(self) -> bool: ...

    def nearest(self, query: str, k: int) -> list[tuple[str, float]]: ...

    def cosines(self, query: str, keys: Mapping[str, str],
                slots: Mapping[str, int] | None = None) -> dict[str, float]: ...

    def similarity(self, content_hashes: Sequence[str]) -> list[list[float]]: ...

    def neighbours(self, content_hash: str, k: int) -> list[tuple[str, float]]: ...


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

    def replace(self, index: int, item: RecallItem) -> bool:
        """Put ``item`` in place of the item at ``index`` if the difference fits."""
        extra = item.tokens - self.items[index].tokens
        if extra > self.room():
            return False
        self.items[index] = item
        self.used += extra
        return True


def _item(source: str, id_: str, content: str, score: float, at: str,
          refs: Sequence[str]) -> RecallItem:
    return RecallItem(source, id_, content, round(score, 6), estimate(content), at, list(refs))


def _fixed_head(db: sqlite3.Connection, filler: _Filler, query: str = "",
                shown: Sequence[str] = ()) -> set[str]:
    """Profile, project facts (together at most :data:`weights.HEAD_FACTS_SHARE` of the budget;
    facts by confidence × relevancy, then newest; only those that read on their own, as
    scored ones: :func:`.memories.reads_alone`), then MEMORY.md — without a ``query`` (a
    chat's start block) as much of it as the room left holds, the scored part taking what
    it leaves: read ahead of the first message, whose note is capped, it is what a session's
    first question is answered from; for a ``query`` (the question without the speakers'
    names) only the project facts and lines that answer it (:func:`_answers`), MEMORY.md's
    up to :data:`weights.LONG_TERM_SHARE` of the budget. Returns the content hashes
    used, so the scored part does not repeat them. MEMORY.md comes only here: its sections
    are not scored items (a whole section, ~240 tokens after a night over a LoCoMo conversation,
    crowded turns out of a 512-token budget; its lines are the active memories, which are
    scored items themselves). ``shown``: what the block shows before MEMORY.md (a chat's
    pinned notes), whose lines there are left out as the head's are."""
    used: set[str] = set()
    said = list(shown)      # what the head shows, which MEMORY.md's lines need not repeat
    room = math.inf if filler.budget <= 0 else weights.HEAD_FACTS_SHARE * filler.budget
    wanted = _stems(query) if filler.budget > 0 else set()
    for kind in head():  # each head type's items have its name for their source
        memories = list_memories(db, kind.name)
        if kind is PROJECT_FACT and wanted:  # a question: only the facts that answer it
            # (the others may still be scored); an unrelated decision read first cost the
            # 1.5B model answers. The profile (who is asking) stays.
            memories = [m for m in memories if _answers(m.content, wanted)]
        if kind is PROJECT_FACT:  # newest first among equals (both sorts are stable)
            memories.sort(key=lambda m: (m.created_at, m.id), reverse=True)
            memories.sort(key=lambda m: -m.confidence * m.relevancy)
        for memory in memories:
            if not reads_alone(memory.source, memory.content):
                continue  # "… using this pressure transducer …": which one? (as scored)
            # a mined fact as its MEMORY.md line says it ("Big news: " and the like left
            # out): read in every block, and its line there is then left out as said
            shown = memory.content if memory.source in NOT_MINED else as_said(memory.content)
            item = _item(kind.name, memory.id, shown, memory.confidence,
                         memory.created_at, memory.refs)
            if item.tokens <= room and filler.add(item):
                room -= item.tokens
                used.add(content_hash(memory.content))
                said.append(shown)
    long_term = read_long_term(db)
    if long_term:
        whole = filler.budget <= 0 or not query.strip()
        share = (filler.room() if whole
                 else min(filler.room(), weights.LONG_TERM_SHARE * filler.budget))
        text = _fit_lines(_unsaid_lines(long_term if whole else _relevant_lines(long_term, query),
                                        said), share)
        text = _without_empty_headings(text)
        if text and filler.add(_item(LONG_TERM, "MEMORY.md", text, 1.0, "",
                                     _line_refs(db, text))):
            used.add(content_hash(text))
            used |= {content_hash(section) for section in _sections_within(db, text)}
    return used


def _bare(line: str) -> str:
    """A bullet's statement as a memory says it: without the mark, "(since DATE)" or "(said
    DATE)" and the full stop, casefolded."""
    return without_since(line.removeprefix("- ")).rstrip(". ").casefold()


def _unsaid_lines(text: str, said: Sequence[str]) -> str:
    """MEMORY.md as the block shows it: no title (:data:`TITLE`), no blank line, and no bullet
    whose statement the head already shows ("Big news: Maya moved …" in the profile, "Maya
    moved …" in MEMORY.md): a small model's budget holds more of what it has not read."""
    shown = [s.rstrip(". ").casefold() for s in said]
    return "\n".join(line for line in text.splitlines()
                     if line.strip() and line.strip() != TITLE
                     and not (line.startswith("- ") and any(_bare(line) in s for s in shown)))


def _without_empty_headings(text: str) -> str:
    """``text`` without the headings whose lines did not fit (or were left out): a heading
    stays when a line follows it before the next heading of its level or above (a person's
    "## Projects" above "### diarist" and its bullets stays)."""
    lines = text.splitlines()

    def level(line: str) -> int:
        found = HEADING.match(line)
        return len(found.group().strip()) if found else 0

    def has_lines(n: int) -> bool:
        for later in lines[n + 1:]:
            if not level(later):
                return True
            if level(later) <= level(lines[n]):
                return False
        return False

    return "\n".join(line for n, line in enumerate(lines) if not level(line) or has_lines(n))


def _line_refs(db: sqlite3.Connection, text: str) -> list[str]:
    """What MEMORY.md's lines in ``text`` derive from: the refs of the memory each states,
    as consolidation recorded them (:func:`.long_term.stated_refs`); for a line it did not
    record (a MEMORY.md written before it did), those of the active memory whose content
    the line is (less its full stop, maybe with "(since DATE)" or "(said DATE)")."""
    bullets = [line[2:] for line in text.splitlines() if line.startswith("- ")]
    recorded = stated_refs(db, bullets)
    found = [ref for line in bullets for ref in recorded.get(line, ())]
    lines = {_bare(line) for line in bullets if line not in recorded}
    if lines:
        marks = ", ".join("?" * len(lines))
        rows = db.execute("SELECT refs FROM memories WHERE status = 'active' AND"
                          f" lower(rtrim(content, '. ')) IN ({marks}) ORDER BY seq",
                          sorted(lines)).fetchall()
        found += [ref for (refs,) in rows for ref in json.loads(refs or "[]")]
    return list(dict.fromkeys(found))


def _relevant_lines(text: str, query: str) -> str:
    """MEMORY.md with only the bullets that share at least :data:`weights.LINE_OVERLAP` words
    (their first five letters, so "moved" meets "move"; all of them for a shorter question)
    with ``query``, under their headings; "" when none does. A file of a year's facts would
    otherwise fill its share of every budget, whatever is asked (LoCoMo evidence recall
    @512 with a night's MEMORY.md: docs/benchmarks.md)."""
    wanted = _stems(query)
    if not wanted:
        return ""
    out: list[str] = []
    heading: list[str] = []
    for line in text.splitlines():
        if line.startswith("#"):
            heading = [line]
        elif line.strip() and _answers(line, wanted):
            out += heading + [line]
            heading = []
    return "\n".join(out)


def _answers(line: str, wanted: set[str]) -> bool:
    """Whether ``line`` shares :data:`weights.LINE_OVERLAP` of a question's word stems
    ``wanted`` (all of them for a shorter question)."""
    return len(_stems(line) & wanted) >= min(weights.LINE_OVERLAP, len(wanted))


def _stems(text: str) -> set[str]:
    return {w[:5] for w in re.findall(r"[a-z0-9]{3,}", text.casefold()) if w not in STOPWORDS}


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
    floor, half_life = weights.FRESHNESS_FLOOR, weights.FRESHNESS_HALF_LIFE_DAYS
    return floor + (1 - floor) * 0.5 ** (age_days / half_life)


def _fuse(lexical: list[Hit], cosines: dict[str, float],
          unsaid: Collection[str] = ()) -> dict[str, float]:
    """BM25 scaled by the query's best hit (0–1) plus the weighted cosine, for every
    candidate of either list. The best hit is the best of those that may be recalled: a
    question asked again in a diarist chat (one of ``unsaid``) matches the question best
    and would scale down every answer to it (below a note's least score). Score fusion
    beat reciprocal-rank fusion on the LoCoMo dev set (0.761 vs 0.694 top-10 evidence
    recall): RRF lets weak cosine-only hits in at full rank weight."""
    best = max((h.score for h in lexical if h.key not in unsaid), default=0.0) or 1.0
    scores = {h.key: h.score / best for h in lexical}
    for key, cosine in cosines.items():
        scores[key] = scores.get(key, 0.0) + weights.COSINE_WEIGHT * cosine
    return scores


def recall(db: sqlite3.Connection, query: str, budget: int = DEFAULT_BUDGET, k: int = 10,
           semantic: Semantic | None = None, now: dt.datetime | None = None, *,
           head: bool = True, exclude: Iterable[str] = (), exclude_session: str = "",
           min_score: float = 0.0, whole_long_term: bool = False,
           shown: Sequence[str] = ()) -> RecallResult:
    """Recall for ``query`` within ``budget`` tokens (0: no budget), at most ``k`` scored
    items after the fixed head. ``semantic`` adds cosine results when vectors exist.
    ``head=False`` leaves out the fixed head (profile, project facts, MEMORY.md) — within a
    budget its MEMORY.md holds the lines that answer ``query`` unless ``whole_long_term``
    (a chat's start block: the whole file, up to its share);
    ``exclude`` names item ids already shown (a chat's earlier injections) and
    ``exclude_session`` a session whose own turns are not recalled (a chat's history is in
    its prompt already) and ``shown`` the texts of those the block shows whatever recall
    finds (a chat's pinned notes: MEMORY.md's lines stating one are left out); scored
    items below ``min_score`` are left out. A start block (``whole_long_term``) wants what
    is true now whatever ``query`` says, so a turn whose fact a newer one replaced weighs
    less there, as for a question about the present (:data:`weights.REPLACED_INTENTS`).
    Any string is a query: FTS5 syntax is searched as words and a lone surrogate becomes
    U+FFFD. ``now``: when the query is asked (default: the clock), which freshness is
    measured from; given, the query's relative dates ("last week") are read from its day
    too."""
    query = repaired(query)
    asked = now.date() if now else None
    now = now or clock.now()
    filler = _Filler(budget)
    named = naming(db, query)
    seen_hashes = _fixed_head(db, filler, "" if whole_long_term else named.query, shown) \
        if head else set()
    skip = set(exclude)
    if semantic is not None:
        semantic.prefetch(named.query, weights.CANDIDATES)  # embedded and scanned beside FTS5
    total = indexed_items(db)  # read outside the transaction: see search.indexed_items
    slots: dict[str, int] | None = {} if semantic is not None else None
    with read_transaction(db):
        lexical = search(db, query, weights.CANDIDATES, common=semantic is None, total=total,
                         slots=slots)
        scored, chats = _ranked(db, query, lexical, named, semantic, now, asked, slots or {},
                                current=whole_long_term)
        ranked = [(score, hit) for score, hit in scored
                  if score >= min_score and hit.id not in skip
                  and not (exclude_session and hit.session == exclude_session)]
        ranked, replies = _voiced(db, named, ranked, chats)
        if budget <= 0:
            ranked = _by_turn(ranked)
        _pack(db, ranked, replies, filler, seen_hashes, k)
    return RecallResult(query, budget, filler.used, filler.items)


def _by_turn(ranked: list[tuple[float, Hit]]) -> list[tuple[float, Hit]]:
    """Without a budget whole turns are shown: rank a turn cut into passages by its best
    passage plus :data:`weights.PASSAGE_SUM_SHARE` of the others' scores."""
    rest: dict[str, float] = {}
    best: dict[str, tuple[float, Hit]] = {}
    for score, hit in ranked:
        if hit.source != TURN or key_part(hit.key) is None:
            continue
        if hit.id in best:
            rest[hit.id] = rest.get(hit.id, 0.0) + score
        else:
            best[hit.id] = (score, hit)
    out = []
    for score, hit in ranked:
        if hit.source == TURN and key_part(hit.key) is not None:
            if best[hit.id][1] is not hit:
                continue
            score += weights.PASSAGE_SUM_SHARE * rest.get(hit.id, 0.0)
        out.append((score, hit))
    out.sort(key=lambda pair: (-pair[0], pair[1].key))
    return out


def _ranked(db: sqlite3.Connection, query: str, lexical: list[Hit], named: Naming,
            semantic: Semantic | None, now: dt.datetime, asked: dt.date | None,
            slots: Mapping[str, int],
            current: bool = False) -> tuple[list[tuple[float, Hit]], set[str]]:
    """Every candidate of either list (``lexical``: the FTS5 hits, ``slots`` the matrix
    slots read with them; the semantic half was prefetched for ``named.query``, the query
    without the speakers' names it holds) with its fused score, weighted by freshness and
    (for memories) confidence, a replaced turn lighter for a present question or when
    ``current``; inactive memories left out; best first. And the diarist chats
    (:func:`~projections.speakers.chat_sessions`) among the candidates' sessions."""
    reads = context.TurnReads(db, slots=semantic is not None)
    reads.know(lexical, slots)
    cosines: dict[str, float] = {}
    if semantic is not None:
        if weights.CONTEXT_WEIGHT:  # while the other thread embeds the query
            reads.warm([hit.id for hit in lexical if hit.source == TURN], semantic.embedding)
        # the lexical hits' cosines once the query is embedded, while the file is scanned
        lexical_cosines = semantic.cosines(named.query,
                                           {h.key: h.content_hash for h in lexical}, reads.slots)
        cosines = dict(semantic.nearest(named.query, weights.CANDIDATES))
        cosines.update((key, cosine) for key, cosine in lexical_cosines.items()
                       if key not in cosines)
    hits = {h.key: h for h in lexical}
    hits.update(items_by_key(db, [key for key in cosines if key not in hits]))
    chats = chat_sessions(db, [hit.session for hit in hits.values() if hit.source == TURN])
    unsaid = _unsaid(db, hits.values(), chats)
    fused = _fuse(lexical, cosines, unsaid)
    if weights.CONTEXT_WEIGHT:
        reads.know(hits.values())
        fused, fresh = context.in_context(
            db, fused, {key: (hit.id, speaker_of(hit.content)) for key, hit in hits.items()
                        if hit.source == TURN},
            (lambda keys, slots: semantic.cosines(named.query, keys, slots))
            if semantic is not None else None,
            weights.COSINE_WEIGHT, lambda session, speaker: is_model(speaker, session, chats),
            reads)
        contenders = _contenders(fused, fresh)
        unsaid |= _unsaid(db, [fresh[key] for key in contenders if key not in hits], chats,
                          hits.values())
        hits.update((key, fresh[key]) for key in contenders)
    # a remembered note's journal line has the note's id: a superseded value stays in its
    # day's journal file but is no answer any more
    states = memory_states(db, [h.id for h in hits.values() if h.source in (MEMORY, JOURNAL)])
    essays = long_turns(db, [h.id for h in hits.values() if key_part(h.key) is not None])

    intent = temporal_intent(query)
    replaced = replaced_refs(db) if current or intent in weights.REPLACED_INTENTS else set()
    ranked: list[tuple[float, Hit]] = []
    for key, score in fused.items():
        hit = hits.get(key)
        if key in unsaid:
            continue
        weight = None if hit is None else _weight(hit, now, essays, states, replaced)
        if hit is not None and weight is not None:
            ranked.append((score * weight, hit))
    times = [hit.at for _, hit in ranked]
    ranked = [(score * change, hit) for (score, hit), change in zip(
        ranked, change_factors([hit.content for _, hit in ranked], [s for s, _ in ranked], intent),
        strict=True)]
    factors = recency_factors(times, intent, [score for score, _ in ranked])
    dated = period_factors(query, times, asked)
    ranked = [(score * factor * date, hit)
              for (score, hit), factor, date in zip(ranked, factors, dated, strict=True)]
    ranked.sort(key=lambda pair: (-pair[0], pair[1].key))
    if semantic is not None and intent in weights.LIFT_INTENTS and len(ranked) > 1:
        known = unsaid | {hit.key for _, hit in ranked}
        ranked = _with_successors(db, ranked, semantic)
        joined = [hit for _, hit in ranked if hit.key not in known]
        chats |= chat_sessions(db, [hit.session for hit in joined])
        unsaid |= _unsaid(db, joined, chats, [hit for _, hit in ranked])
        ranked = [(score, hit) for score, hit in ranked if hit.key not in unsaid]
        top = ranked[:weights.COMPARED]
        similarity = semantic.similarity([hit.content_hash for _, hit in top])
        kept = superseded_factors([s for s, _ in top], [h.at for _, h in top], similarity,
                                  intent)
        ranked = sorted([(score * f, hit) for (score, hit), f in zip(top, kept, strict=True)]
                        + ranked[weights.COMPARED:], key=lambda pair: (-pair[0], pair[1].key))
    return ranked, chats


def _hidden(hit: Hit, states: Mapping[str, tuple[str, float, float, bool]]) -> bool:
    """What is never a scored item: MEMORY.md's sections (it comes in the head only: see
    :func:`_fixed_head`), a memory no longer active or that does not read on its own (its
    turn, a candidate too, reads better) and a remembered note's journal line no longer
    active; ``states``: :func:`.memories.memory_states` of the memories and journal lines."""
    if hit.source == LONG_TERM:
        return True
    if hit.source == JOURNAL:
        return states.get(hit.id, ("active",))[0] != "active"
    if hit.source == MEMORY:
        status, _confidence, _relevancy, alone = states.get(hit.id, ("active", 1.0, 1.0, True))
        return status != "active" or not alone
    return False


def only_asks(content: str) -> bool:
    """Whether a turn item (``Speaker: text``) only asks: every sentence a question. In a
    diarist chat such a turn is a query to memory, or a model echoing one, never evidence
    of its answer ("user: Where do I live now?"); recalled, it would outrank the turn that
    answers it the next time the person asks, and the model's reply to it after it."""
    said = sentences(_text_of(content))
    return bool(said) and all(sentence.endswith("?") for sentence in said)


def _unsaid(db: sqlite3.Connection, hits: Iterable[Hit], chats: set[str],
            among: Iterable[Hit] = ()) -> set[str]:
    """The keys of ``hits`` that are no evidence, being turns of a diarist chat (one of
    ``chats``): a turn that only asks (:func:`only_asks`), a model's reply that says
    nothing of its own (:func:`says_nothing`, or :func:`_reads_back` one of ``hits`` or
    ``among``, the other candidates)."""
    hits = list(hits)
    turns = [hit for hit in hits if hit.source == TURN and hit.session in chats]
    asks = {hit.key for hit in turns if only_asks(hit.content)}
    replies = [hit for hit in turns if hit.key not in asks
               and is_model(speaker_of(hit.content), hit.session, chats)]
    return asks | _echoes(db, replies) | _reads_back(replies, [*hits, *among])


def _reads_back(replies: Sequence[Hit], candidates: Sequence[Hit]) -> set[str]:
    """The keys of the model's replies among ``replies`` that repeat what an earlier
    candidate says, every word of theirs in it: the memory the chat's prompt carried, read
    back ("I cooked a mushroom risotto for dinner", a day after the person said it).
    Recalled, such a reply repeats it under the model's name and a later date."""
    if not replies:
        return set()
    said = [(hit.at, hit.key, _words(_text_of(hit.content) if hit.source == TURN
                                     else hit.content)) for hit in candidates]
    found = set()
    for reply in replies:
        words_of = _words(_text_of(reply.content))
        if words_of and any(key != reply.key and at and at < reply.at and words_of <= other
                            for at, key, other in said):
            found.add(reply.key)
    return found


def _echoes(db: sqlite3.Connection, replies: Sequence[Hit]) -> set[str]:
    """The keys of the model's replies among ``replies`` (a diarist chat's) that say
    nothing of their own: every word of theirs is in the message they answer (a small model
    echoing it: "By the way, I live in Lisbon now"), or they copy the memory block the
    prompt carried (a header of it: "[relevant experience] - …"). Recalled, such a reply
    repeats the person's words or memory under the model's name, often above them."""
    if not replies:
        return set()
    ids = sorted({hit.id for hit in replies})
    before = dict(db.execute(
        "SELECT t.event_id, (SELECT p.text FROM turns p WHERE p.session = t.session"
        " AND p.seq < t.seq ORDER BY p.seq DESC LIMIT 1) FROM turns t"
        f" WHERE t.event_id IN ({','.join('?' * len(ids))})", ids).fetchall())
    return {hit.key for hit in replies
            if says_nothing(_text_of(hit.content), before.get(hit.id) or "")}


def says_nothing(reply: str, message: str) -> bool:
    """Whether a model's reply says nothing of its own beside ``message``, the text it
    answers: every word of it is there, or it copies a header of the memory block."""
    return any(header in reply for header in block_headers.ALL) or \
        _words(reply) <= _words(message)


def _text_of(content: str) -> str:
    """A turn item's text without its speaker (``Speaker: text``)."""
    return content.partition(": ")[2]


def _words(text: str) -> set[str]:
    return {w for w in words(text) if w not in STOPWORDS}


def _weight(hit: Hit, now: dt.datetime, essays: set[str],
            states: Mapping[str, tuple[str, float, float, bool]],
            replaced: set[str]) -> float | None:
    """A candidate's weight: freshness, essays lighter, memories by confidence ×
    relevancy, a replaced turn by :data:`weights.REPLACED_WEIGHT`; None for what is not shown (a
    memory or a remembered note's journal line no longer active, a mined statement that does
    not read on its own, MEMORY.md's sections)."""
    if _hidden(hit, states):
        return None
    weight = _freshness(hit.at, now)
    if hit.id in essays:
        weight *= weights.ESSAY_WEIGHT
    if hit.source == MEMORY:
        _status, confidence, relevancy, _alone = states.get(hit.id, ("active", 1.0, 1.0, True))
        weight *= confidence * relevancy
    if replaced and hit.source == TURN and set(hit.refs) <= replaced:
        weight *= weights.REPLACED_WEIGHT
    return weight


def _contenders(fused: dict[str, float], fresh: dict[str, Hit]) -> list[str]:
    """The neighbours that joined (``fresh``) that are ranked: those among the
    :data:`weights.CONTENDERS` best fused scores; a neighbour below them drops out. Begun as a cost
    cut — at 100,000 items reading every neighbour's item a second time took a third of warm
    recall (p50 49 → 35 ms); the items now come with the speakers' read — and kept as the
    ranking it gave: none of the dev sets' answers ranks that low (the same evidence recall
    at 200 as with every neighbour; at 60 LoCoMo lost one)."""
    if not fresh:
        return []
    scores = sorted(fused.values(), reverse=True)
    floor = scores[min(weights.CONTENDERS, len(scores)) - 1]
    return [key for key in fresh if fused[key] >= floor]


def long_turns(db: sqlite3.Connection, turn_ids: list[str]) -> set[str]:
    """The turns among ``turn_ids`` (event ids) cut into at least ``weights.ESSAY_PASSAGES``
    passages: essays, stories and documents pasted in more often than a person's own
    words. 400 ids a query, within SQLite's bound on parameters."""
    ids = sorted(set(turn_ids))
    found: set[str] = set()
    for start in range(0, len(ids), 400):
        chunk = ids[start:start + 400]
        found.update(r[0] for r in db.execute(
            f"SELECT id FROM search_items WHERE id IN ({','.join('?' * len(chunk))})"
            " AND +source = 'turn' GROUP BY id HAVING COUNT(*) >= ?",  # +: by id
            [*chunk, weights.ESSAY_PASSAGES]))
    return found


def _with_successors(db: sqlite3.Connection, ranked: list[tuple[float, Hit]],
                     semantic: Semantic) -> list[tuple[float, Hit]]:
    """On a question about the present, the newer statements that speak of the same thing as
    the best candidates (their nearest items by cosine, at least ``SAME_SUBJECT``) join the
    candidates with the score of the statement they follow: a move is found from where one
    used to live even when the question's words are not in it. What is never a scored item
    (:func:`_hidden`: a memory the dream superseded, a MEMORY.md section) joins none."""
    best = ranked[0][0]
    known = {hit.key for _, hit in ranked}
    found: dict[str, float] = {}
    for score, hit in ranked[:weights.SUCCESSORS_OF]:
        if score < weights.RELEVANT_SHARE * best:
            break
        for key, cosine in semantic.neighbours(hit.content_hash, weights.NEIGHBOURS):
            if cosine >= weights.SAME_SUBJECT and key not in known:
                found[key] = max(found.get(key, 0.0), score)
    if not found:
        return ranked
    hits = items_by_key(db, list(found))
    states = memory_states(db, [hit.id for hit in hits.values() if hit.source in (MEMORY, JOURNAL)])
    followers = [(found[key], hit) for key, hit in hits.items()
                 if not _hidden(hit, states)
                 and any(hit.at > h.at for s, h in ranked[:weights.SUCCESSORS_OF]
                         if s >= found[key])]
    return sorted(ranked + followers, key=lambda pair: (-pair[0], pair[1].key))


@dataclass
class _Turn:
    """What of one turn recall has shown so far: its passages by number, and where."""

    index: int                    # position of its item in the filler
    parts: dict[int, str]         # passage number → text without the speaker
    speaker: str


def _voiced(db: sqlite3.Connection, named: Naming, ranked: list[tuple[float, Hit]],
            chats: set[str]) -> tuple[list[tuple[float, Hit]], _Replies]:
    """Whose words answer (:mod:`projections.speakers`): when the question names some of
    the candidates' speakers, a turn by someone else keeps
    :data:`~projections.speakers.OTHER_WEIGHT` of its score, and a hit is shown with its
    reply only when the reply is a named speaker's (a question put to them, answered);
    never a model's reply in one of ``chats`` that says nothing of its own
    (:func:`says_nothing`). Returns the re-ranked hits and each turn hit's reply to show."""
    speakers = [speaker_of(hit.content) if hit.source == TURN else "" for _, hit in ranked]

    def echo(turn: Hit, reply: Hit) -> bool:   # a diarist chat's model saying nothing new
        return reply.session in chats and is_model(speaker_of(reply.content), reply.session,
                                                   chats) and says_nothing(
            _text_of(reply.content), _text_of(turn.content))

    if not named.speakers or {s for s in speakers if s} <= named.speakers:
        return ranked, _Replies(db, [hit for _, hit in ranked if hit.source == TURN],
                                (lambda turn, reply: not echo(turn, reply)) if chats else None)
    factors = speaker_factors(named.speakers, speakers)
    voiced = [(score * f, hit) for (score, hit), f in zip(ranked, factors, strict=True)]
    voiced.sort(key=lambda pair: (-pair[0], pair[1].key))
    return voiced, _Replies(db, [hit for _, hit in voiced if hit.source == TURN],
                            lambda turn, reply: speaker_of(reply.content) in named.speakers
                            and not echo(turn, reply))


def _pack(db: sqlite3.Connection, ranked: list[tuple[float, Hit]], replies: _Replies,
          filler: _Filler, seen_hashes: set[str], k: int) -> None:
    """Add the ranked hits best first while they fit, at most ``k`` items. A passage next to
    one already shown from the same turn joins that item (one item, one ref, read in
    order); a whole short turn comes with its reply (``replies``) when that is short too."""
    asked = (_asked(db, _model_replies(db, [hit for _, hit in ranked if hit.source == TURN]))
             if filler.budget <= 0 else {})
    turns: dict[str, _Turn] = {}
    whole: set[str] = set()   # turns shown whole (no budget)
    # within a budget, what an item derives from is shown once: a mined statement of a turn
    # already shown (or the turn of a statement already shown) would only say it again
    covered = {r for item in filler.items for r in item.refs}
    scored = 0
    for score, hit in ranked:
        if scored >= k or filler.room() < MIN_ITEM_TOKENS:
            break
        part = key_part(hit.key) if hit.source == TURN else None
        if filler.budget > 0 and _repeats(covered, hit, part is not None and hit.id in turns):
            continue
        if part is not None and filler.budget <= 0:
            if hit.id in whole:
                continue
            whole.add(hit.id)
            hit, part = _whole_turn(db, hit), None
        if part is not None and hit.id in turns:
            if hit.content_hash not in seen_hashes and _extend(filler, turns[hit.id], part, hit):
                seen_hashes.add(hit.content_hash)
            continue
        if (filler.budget > 0 and hit.content_hash not in seen_hashes
                and estimate(hit.content) > filler.room()):
            continue  # does not fit, with its reply or without: the reply is not read
        pair = _exchange(db, hit, replies.get(hit.key) if part is None else None,
                         asked.get(hit.id), whole=filler.budget <= 0)
        parts = [p for p in pair if p is not None and p.content_hash not in seen_hashes]
        if not parts:
            continue
        lead = parts[0]
        content = "\n".join(p.content for p in parts)
        refs = [r for p in parts for r in p.refs]
        if filler.add(_item(_source_label(lead), lead.id, content, score, lead.at, refs)):
            seen_hashes.update(p.content_hash for p in parts)
            scored += 1
            covered.update(refs)
            if part is not None:
                speaker, _, text = hit.content.partition(": ")
                turns[hit.id] = _Turn(len(filler.items) - 1, {part: text}, speaker)


def _repeats(covered: set[str], hit: Hit, joins_shown_turn: bool) -> bool:
    """Whether every turn ``hit`` derives from is shown already (never for a passage that
    joins its turn's item)."""
    return bool(hit.refs) and set(hit.refs) <= covered and not joins_shown_turn


def _exchange(db: sqlite3.Connection, hit: Hit, reply: Hit | None, question: Hit | None,
              *, whole: bool) -> tuple[Hit | None, Hit | None]:
    """What an item shows for ``hit``: a model's reply after the ``question`` it answers
    (only given without a budget), else the hit and its ``reply`` — whole without a budget,
    left out when it is long (its passages compete on their own)."""
    if question is not None:
        return (_whole_turn(db, question) if key_part(question.key) is not None
                else question), hit
    if reply is not None and key_part(reply.key) is not None:
        reply = _whole_turn(db, reply) if whole else None
    return hit, reply


def _whole_turn(db: sqlite3.Connection, hit: Hit) -> Hit:
    """The whole turn a passage belongs to: its passages in order, as one hit. Without a
    budget there is no reason to cut a turn."""
    prefix = item_key(TURN, hit.id)
    rows = db.execute("SELECT i.key, f.content FROM search_items i"
                      " JOIN search_fts f ON f.rowid = i.rowid WHERE i.key > ? AND i.key < ?",
                      (f"{prefix}#", f"{prefix}$")).fetchall()
    texts = [text for key, text in sorted(rows, key=lambda row: key_part(row[0]) or 0)]
    speaker = hit.content.partition(": ")[0]
    content = f"{speaker}: " + " ".join(t.partition(": ")[2] for t in texts)
    return replace(hit, key=prefix, content=content, content_hash=content_hash(content))


def _extend(filler: _Filler, turn: _Turn, part: int, hit: Hit) -> bool:
    """Add a passage to its turn's item when it is next to a passage shown (the item then
    reads the turn's passages in order); False when it is not adjacent or does not fit."""
    if part in turn.parts or not (part - 1 in turn.parts or part + 1 in turn.parts):
        return False
    text = hit.content.partition(": ")[2]
    parts = {**turn.parts, part: text}
    joined = " ".join(parts[n] for n in sorted(parts))
    old = filler.items[turn.index]
    new = replace(old, content=f"{turn.speaker}: {joined}",
                  tokens=estimate(f"{turn.speaker}: {joined}"))
    if not filler.replace(turn.index, new):
        return False
    turn.parts[part] = text
    return True


class _Replies:
    """Each turn hit's reply to show (:func:`_replies`), read when asked for, for the next
    turns in rank order: :attr:`FIRST` of them the first time, :attr:`BATCH` at a time
    after that. Packing asks for ~10 replies a question among hundreds of turn hits, the
    farthest at rank 9 for half the LoCoMo questions at 100,000 items (66 at the 90th
    percentile); reading every reply took ~2 ms of a warm recall, a first batch of 64
    about 0.5 ms more than one of 16. ``keep`` says which replies may be shown."""

    FIRST = 16
    BATCH = 64

    def __init__(self, db: sqlite3.Connection, turns: list[Hit],
                 keep: Callable[[Hit, Hit], bool] | None = None) -> None:
        self.db, self.turns, self.keep = db, turns, keep
        self.position = {hit.key: i for i, hit in enumerate(turns)}
        self.read: set[str] = set()
        self.found: dict[str, Hit] = {}

    def get(self, key: str) -> Hit | None:
        at = self.position.get(key)
        if at is not None and key not in self.read:
            size = self.BATCH if self.read else self.FIRST
            batch = [hit for hit in self.turns[at:at + size] if hit.key not in self.read]
            self.read.update(hit.key for hit in batch)
            self.found.update((k, reply) for k, reply in _replies(self.db, batch).items()
                              if self.keep is None
                              or self.keep(self.turns[self.position[k]], reply))
        return self.found.get(key)


def _replies(db: sqlite3.Connection, turns: list[Hit]) -> dict[str, Hit]:
    """Each turn hit's reply: the next turn of its session. Recall shows a turn hit with it —
    the exchange, not a lone line. On the LoCoMo dev set this lifted 512-token evidence recall
    from 0.618 to 0.682 with FTS5 alone (docs/experiments.md); adding the previous turn as
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


# Without a budget a model's reply is shown after the message it answers (the exchange);
# a person's turn (and anything with a budget) comes with the turn that follows it, as
# before. Dev harness, LongMemEval top-10: 0.875 → 0.925 with it (the evidence is what the
# user said; the reply restates the topic and ranks higher); for LoCoMo, where both speakers
# are people, pairing the second speaker's turns the same way cost 0.751 → 0.729, hence
# only for models' replies.
def _model_replies(db: sqlite3.Connection, hits: list[Hit]) -> list[Hit]:
    """The turns that are a model's replies (:func:`projections.speakers.is_model`)."""
    chats = chat_sessions(db, [h.session for h in hits])
    return [h for h in hits if is_model(speaker_of(h.content), h.session, chats)]


def _asked(db: sqlite3.Connection, replies: list[Hit]) -> dict[str, Hit]:
    """Each assistant turn's question: the previous turn of its session (by turn id)."""
    ids = sorted({h.id for h in replies})
    if not ids:
        return {}
    rows = db.execute(
        "SELECT h.id, (SELECT p.key FROM search_items p WHERE p.session = h.session"
        " AND p.source = 'turn' AND p.seq < h.seq ORDER BY p.seq DESC, p.key LIMIT 1)"
        f" FROM search_items h WHERE h.id IN ({','.join('?' * len(ids))})"
        " GROUP BY h.id", ids).fetchall()
    found = items_by_key(db, [key for _, key in rows if key])
    return {id_: found[key] for id_, key in rows if key in found}


_HEAD_NAMES = names(head())


def _source_label(hit: Hit) -> str:
    if hit.source == MEMORY and hit.type in _HEAD_NAMES:
        return hit.type
    return {TURN: "turn", JOURNAL: "journal", MEMORY: "memory", LONG_TERM: "long_term"}[hit.source]

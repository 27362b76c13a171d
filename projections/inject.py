"""The memory block put at the start of a chat: recall within the budget, rendered as plain
text a 2B model can parse (docs/architecture.md, "Recall").

    [memory context]
    [workspace profile]
    - name: Ann
    [project facts]
    - build: hatch
    [knowledge]
    - (1 March 2024) Ann: I adopted a greyhound yesterday [29 February 2024] …

A question's block and a chat's note put their best match apart, under ``[most relevant]``,
the rest under ``[other memories]`` (:func:`_best_apart`): a model that reads on past the
first line answers more often from the line that answers (docs/benchmarks.md).

The whole block — headers included — fits the budget: ``budget_pct`` of the model's context
window, 512 tokens when the window is unknown.
"""
from __future__ import annotations

import datetime as dt
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from events.memory_types import head

from .block_headers import (
    BEST_TITLE,
    HEADER,
    KNOWLEDGE_TITLE,
    MEMORIES_TITLE,
    NOTE_HEADER,
    OTHERS_TITLE,
)
from .recall import DEFAULT_BUDGET, RecallItem, RecallResult, Semantic, recall
from .relative_time import ago, annotate, day_text, unit_asked
from .search import turns_by_ref
from .tokens import estimate

SECTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    *((kind.heading, (kind.name,)) for kind in head()),  # [workspace profile], [project facts]
    (MEMORIES_TITLE, ("memory",)),
    (KNOWLEDGE_TITLE, ("long_term", "journal", "turn")),
)


def shown_rank(source: str) -> int:
    """Where a question's block (:func:`build_injection` with ``whole_long_term=False``)
    shows an item from ``source``: its section's place in :data:`SECTIONS`, MEMORY.md's
    lines after the rest of [knowledge]. Items of one rank are shown in recall's order, so
    sorting by it (stably) gives the order a model reads them in."""
    if source == "long_term":
        return len(SECTIONS)
    return next((n for n, (_title, sources) in enumerate(SECTIONS) if source in sources),
                len(SECTIONS) - 1)


def budget_for(context_window: int | None, budget_pct: float) -> int:
    """Tokens for injected memory: ``budget_pct`` of the window, 512 when it is unknown."""
    if not context_window:
        return DEFAULT_BUDGET
    return max(int(context_window * budget_pct), 0)


def _line(item: RecallItem, today: dt.date | None = None, unit: str | None = None) -> str:
    """``- (7 May 2023, 3 weeks ago) Ann: I went yesterday [6 May 2023] …``: a turn or a
    journal line with its day — and how long before ``today`` that was, when the day the
    block is read is known (:func:`.relative_time.ago`; in the ``unit`` the question asks,
    if it asks one) — and its relative time (:func:`.relative_time.annotate`) dated from
    it; a memory, which says when it happened, only the relative time its words still
    have, dated from the day it was noted (a person's note "… a dentist appointment on
    Friday [11 December 2026]"; mining resolves what it can: :mod:`.relative_time`)."""
    content = item.content.strip()
    when = ""
    if item.at and item.source in ("turn", "journal"):
        day = dt.date.fromisoformat(item.at[:10])
        since = ago(day, today, unit) if today else ""
        when = f"({day_text(day)}{', ' + since if since else ''}) "
        content = annotate(content, day)
    elif item.at and item.source == "memory":
        content = annotate(content, dt.date.fromisoformat(item.at[:10]))
    lines = content.splitlines() or [""]
    return "- " + when + lines[0] + "".join(f"\n  {rest}" for rest in lines[1:])


def _best_apart(lines: list[str]) -> list[str]:
    """The first of two or more lines under ``[most relevant]``, the rest under ``[other
    memories]``; a single line as it is."""
    if len(lines) < 2:
        return lines
    return [BEST_TITLE, lines[0], OTHERS_TITLE, *lines[1:]]


def render_block(items: list[RecallItem], today: dt.date | None = None, *,
                 best_first: bool = False, unit: str | None = None) -> str:
    """Items grouped by section in the fixed order; empty sections are left out; ``today``:
    the day it is read, if known, ``unit``: the unit of time a question asks (see
    :func:`_line`). ``best_first``: [knowledge]'s first item (recall's best) apart from the
    rest (:func:`_best_apart`) — a question's block; a chat's start block, which MEMORY.md
    opens, keeps them together."""
    out = [HEADER]
    for title, sources in SECTIONS:
        lines = [_line(i, today, unit) for i in items if i.source in sources]
        if lines:
            out.append(title)
            out.extend(_best_apart(lines) if best_first and title == KNOWLEDGE_TITLE
                       else lines)
    return "\n".join(out) if len(out) > 1 else ""


@dataclass(frozen=True)
class Injection:
    text: str
    budget_tokens: int
    injected_tokens: int
    items: list[RecallItem]


def build_injection(db: sqlite3.Connection, query: str, budget: int, k: int,
                    semantic: Semantic | None = None,
                    pinned: Sequence[RecallItem] = (), *,
                    whole_long_term: bool = True, now: dt.datetime | None = None,
                    today: dt.date | None = None) -> Injection:
    """Recall for ``query`` and render it, never over ``budget`` tokens: recall runs with
    room left for the headers, and trailing items are dropped until the rendered block
    fits. An empty ``query`` gives the fixed head alone (profile, project facts, MEMORY.md).
    ``pinned`` items (a chat's recent notes) are rendered first in their section and kept
    before any scored item, which never repeats them, nor does MEMORY.md (a note the
    night wrote there is shown once, pinned); the caller keeps them within the budget.
    ``whole_long_term``: MEMORY.md up to its share (a chat's start block, whose
    query is the last session's words, so a turn whose fact was replaced weighs less), first
    in [knowledge]; False: only its lines that
    answer ``query`` (a question asked outright, as `diarist eval --answer` asks), after the
    items recall scored, each line's age in the unit it asks ("How many days ago …?": "26
    days ago"). ``now``: when ``query`` is asked, if it is (see :func:`recall`); ``today``:
    the day the block is read (default: ``now``'s), each line's age told from it."""
    today = today or (now.date() if now else None)
    if budget <= 0:
        return Injection("", budget, 0, [])
    overhead = estimate(HEADER) + sum(estimate(title) for title, _ in SECTIONS)
    room = max(budget - overhead - sum(i.tokens for i in pinned), 0)
    result: RecallResult = recall(db, query, room, k, semantic,
                                  now, exclude={i.id for i in pinned},
                                  whole_long_term=whole_long_term,
                                  shown=[i.content for i in pinned])
    items = [*pinned, *result.items]
    if not whole_long_term:  # MEMORY.md's lines that share words with the question come
        # after what recall ranked: a small model answers from the first lines it reads
        # (docs/benchmarks.md, "The 0.5B model against its ceiling")
        items = sorted(items, key=lambda i: i.source == "long_term")   # stable: see shown_rank
    # rendered by section, the pinned first in theirs; trailing items are dropped first; a
    # question's best match apart from the rest
    unit = None if whole_long_term else unit_asked(query)
    return _fitted(items, budget, lambda chosen: render_block(
        chosen, today, best_first=not whole_long_term, unit=unit))


def build_evidence(db: sqlite3.Connection, refs: Sequence[str], budget: int,
                   today: dt.date | None = None, question: str = "") -> Injection:
    """The turns ``refs`` name, as :func:`build_injection` would render them for
    ``question`` were recall to find exactly those, in log order and within the same
    ``budget`` (trailing ones dropped): the ceiling `diarist eval --answer` compares memory
    with (the first apart, as a question's block puts its best match)."""
    items = [RecallItem("turn", hit.id, hit.content, 1.0, estimate(hit.content), hit.at,
                        hit.refs) for hit in turns_by_ref(db, refs)]
    unit = unit_asked(question)
    return _fitted(items, budget, lambda chosen: render_block(chosen, today, best_first=True,
                                                              unit=unit))


def render_note(items: list[RecallItem], today: dt.date | None = None,
                unit: str | None = None) -> str:
    """A per-turn memory note: the items as lines under one header, the best apart
    (:func:`_best_apart`; ``today`` and ``unit`` as :func:`_line` reads them)."""
    return "\n".join([NOTE_HEADER, *_best_apart([_line(i, today, unit) for i in items])]) \
        if items else ""


def build_note(db: sqlite3.Connection, query: str, budget: int, k: int,
               semantic: Semantic | None, *, exclude: set[str], min_score: float,
               session: str = "", now: dt.datetime | None = None) -> Injection:
    """What memory adds for one chat message: scored items not shown before (``exclude``:
    item ids), scoring at least ``min_score``, never over ``budget`` tokens — no fixed head
    (that is in the system prompt already), none of ``session``'s own turns; ``now``: when
    the message was sent (its relative dates, and each line's age, are read from it; the
    age in the unit the message asks, if it asks one)."""
    if budget <= estimate(NOTE_HEADER):
        return Injection("", budget, 0, [])
    result = recall(db, query, budget - estimate(NOTE_HEADER), k, semantic, now, head=False,
                    exclude=exclude, exclude_session=session, min_score=min_score)
    today, unit = (now.date() if now else None), unit_asked(query)
    return _fitted(list(result.items), budget, lambda chosen: render_note(chosen, today, unit))


def _fitted(items: list[RecallItem], budget: int,
            render: Callable[[list[RecallItem]], str]) -> Injection:
    text = render(items)
    while items and estimate(text) > budget:
        items.pop()
        text = render(items)
    return Injection(text, budget, estimate(text) if text else 0, items)

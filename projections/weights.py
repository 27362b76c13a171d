"""Recall's tuning values, all in one place, by the stage that reads them.

The stages, in the order :func:`projections.recall.recall` runs them (docs/architecture.md,
"Recall"): **naming** (which speakers the question names) → **fixed head** (profile, project
facts, MEMORY.md's matching lines) → **search** (FTS5 BM25, and the query's vector against
the matrix) → **fuse** → **context** (a turn gains from its neighbours) → **weight**
(freshness, essays, confidence and relevancy, replaced facts) → **recency** and **change**
(on a question about the present) → **period** (a named day, month or year) → **successors**
and **superseded** (newer items of the same subject) → **voiced** (the named speakers'
turns) → **by turn** (no budget: a cut turn as a whole) → **pack** (best first within the
budget and ``k``).

Every module of recall reads these as ``weights.NAME`` when it runs, so a sweep sets one
here (``python benchmarks/recall_dev.py … --set projections.weights.COSINE_WEIGHT=2.5``, or
``diarist eval … --set COSINE_WEIGHT=2.5``) and every stage sees it. The figures that chose
them are in the comments and in docs/benchmarks.md.
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

from events.errors import DiaristError

# --- search -----------------------------------------------------------------------------
CANDIDATES = 50               # depth of each ranked list before fusion
# A term found in more than this share of the items says little about any of them (a low
# IDF) but costs the most: BM25 must score every item it matches. Such terms are left out
# of the query when a rarer one remains.
COMMON_TERM_SHARE = 0.02

# --- fuse ---------------------------------------------------------------------------------
COSINE_WEIGHT = 3.0           # fused score = BM25 / best BM25 of the query + COSINE_WEIGHT · cosine
CONTENDERS = 200              # fused scores among which a turn's neighbour must be to be read

# --- fixed head -------------------------------------------------------------------------
LONG_TERM_SHARE = 0.5         # MEMORY.md's lines that answer a question: at most this share
LINE_OVERLAP = 3              # within a budget, a MEMORY.md line shares this many words
# The profile and project facts together take at most this share: mining can type hundreds
# of memories project_fact, and the 1.5B model's 243 memories of the LoCoMo dev set, all
# put first, left the scored part no room (evidence recall @512 0.642 → 0.031). Facts that
# do not fit compete with everything else in the scored part.
HEAD_FACTS_SHARE = 0.25

# --- context ------------------------------------------------------------------------------
CONTEXT_WEIGHT = 0.35  # share of the best neighbour's score a turn gains
REACH = 2              # turns looked at on each side (the statement in neighbours() reads two)
FAR_WEIGHT = 0.5       # what a neighbour two turns away counts for, against one next to it
# Only the best CONTEXT_OF candidate turns (by their own fused score) have their neighbours
# read; the others gain no context (and still give it to a neighbour that is read). At
# 100,000 items a question has ~100 candidate turns and ~420 new neighbours; reading them all
# was the largest part of a warm recall after the vector search. Dev harness, every
# neighbour → 60 → 40 → 20: LoCoMo top-10 / @512 0.812 / 0.804 → same → 0.812 / 0.807 (every
# category the same or higher) → 0.811 / 0.806 (single-hop top-10 0.904 → 0.895);
# LongMemEval 0.967 / 0.917 and changed-facts recency (seed 0: 0.938; seeds 1–4: 0.921,
# changed-state 0.286) the same at each. Warm recall at 100k, p50: 27.5–29.3 → 23.8–24.4 →
# 22.4–23.0 ms.
CONTEXT_OF = 40

# --- weight -------------------------------------------------------------------------------
# A separate knob from dreaming.half_life_days (that one fades memories' stored relevancy).
FRESHNESS_HALF_LIFE_DAYS = 90.0
FRESHNESS_FLOOR = 0.5         # an old item keeps at least half its score
# A passage of an essay — a turn cut into at least ESSAY_PASSAGES passages (about 170
# tokens and more: an assistant's long reply, a paste) — counts for less: such a turn, cut
# up, gives many pieces that restate the question's topic and crowd out the short
# statements a person makes about themselves. LongMemEval dev (20 questions) evidence
# recall @512 by weight: 1.0 → 0.688; 0.8 → 0.762; 0.6 → 0.838; 0.5 → 0.85; 0.4 → 0.892.
# 0.5, not lower, so an answer inside a long reply is still found. From 4 passages: from
# 2, LoCoMo (whose few long turns are a person's own news) fell 0.703 → 0.659 @512.
# (To reproduce a point, set the value and run `diarist eval
# ../shared/bench/longmemeval/longmemeval_s_dev.json` — its 0.5 run gave 0.850.)
ESSAY_WEIGHT = 0.5
ESSAY_PASSAGES = 4
# On a question about the present, a turn whose fact a newer one replaced (dreaming
# superseded every memory that cites it) keeps this share of its score: still there for
# "where did she live before?", below the current value for "where does she live?".
REPLACED_WEIGHT = 0.5
REPLACED_INTENTS = ("present", "state")

# --- recency and change (projections/recency.py) ----------------------------------------
PRESENT_WEIGHT = 0.7   # share of its score the oldest candidate loses on a present question
STATE_WEIGHT = 0.1     # the same on a present-tense state question ("Where does Ann live?")
NEUTRAL_WEIGHT = 0.1   # the same on a question that says neither
LIFT_INTENTS = ("present",)  # where the newer of two same-subject candidates is lifted
PRESENT_BAND = 0.3     # on a present question, candidates scoring this share of the best
CHANGE_BOOST = 1.0     # on a present question, a statement that announces a change gains this
# The same bonus on a plain present-tense question: off. It lifted the changed-facts set's
# changed-state questions 0.29 -> 0.64 but cost LoCoMo @512 0.804 -> 0.789 (docs/experiments.md);
# kept as a setting for that sweep.
STATE_CHANGE_BOOST = 0.0

# --- period (projections/when.py) -------------------------------------------------------
OUTSIDE_WEIGHT = 0.4             # what an item said outside the named period keeps

# --- successors and superseded ----------------------------------------------------------
SUCCESSORS_OF = 3            # on a present question, newer same-subject items of the best 3 join
NEIGHBOURS = 16              # nearest items looked at for each of them
SAME_SUBJECT = 0.55     # cosine between two candidates above which they speak of one thing
RELEVANT_SHARE = 0.5    # a newer candidate counts when it scores this share of the best
COMPARED = 20           # the best candidates compared pairwise
SUPERSEDED_WEIGHT = 0.5  # what a candidate keeps when a newer one speaks of the same thing

# --- voiced (projections/speakers.py) ---------------------------------------------------
NAMED_WEIGHT = 1.0      # a turn by a speaker the question names keeps its score
OTHER_WEIGHT = 0.7      # a turn by someone else, when the question names a speaker

# --- by turn ------------------------------------------------------------------------------
# Without a budget a turn cut into passages counts its best passage plus this share of its
# other passages' scores (a long reply that matches in several places is worth more than
# one that matches once). Top-10 evidence recall, with a model's reply shown after the
# question it answers, on the dev harness (this recall() over homes built once): LongMemEval
# dev 0.892 (share 0) → 0.925 (0.25, 0.5); LoCoMo dev 0.751 (0) → 0.752 (0.25) → 0.748 (0.5).
# `diarist eval` with 0.25: 0.925 and 0.752 (docs/experiments.md).
PASSAGE_SUM_SHARE = 0.25


def names() -> list[str]:
    """Every tuning value's name, in this module's order."""
    return [name for name, value in globals().items()
            if name.isupper() and isinstance(value, int | float | tuple)]


@contextlib.contextmanager
def overridden(settings: Sequence[str]) -> Iterator[dict[str, Any]]:
    """Inside the block, each ``NAME=VALUE`` of ``settings`` replaces that value (read as the
    type it has: a tuple from ``a,b``); yields what was set. Every setting is checked before
    any is applied: an unknown name or a value of the wrong type is a :class:`DiaristError`
    naming it, and nothing changes."""
    known = names()
    applied: dict[str, Any] = {}
    for setting in settings:
        name, sep, text = setting.partition("=")
        name = name.strip().removeprefix("projections.weights.")
        if not sep or name not in known:
            raise DiaristError(f"{setting!r} is not a recall weight to set",
                               hint="write NAME=VALUE with one of: " + ", ".join(known))
        old = globals()[name]
        try:
            applied[name] = (tuple(v for v in text.split(",") if v) if isinstance(old, tuple)
                             else type(old)(text))
        except ValueError:
            raise DiaristError(f"{name} takes a {type(old).__name__}, not {text!r}",
                               hint=f"its value now is {old!r}") from None
    before = {name: globals()[name] for name in applied}
    globals().update(applied)
    try:
        yield applied
    finally:
        globals().update(before)

"""What is true now: recency-aware ranking for recall.

When a fact changed (a move, a new job, a renamed pet), the old and the new statement both
match a question about it, and a small model answers with whichever it reads first. So
recall weighs each candidate by how new it is *among the candidates* — not by its age
against the clock, which says nothing when the whole history is old — and by how much the
question asks about the present:

- **present** ("now", "currently", "these days", "still", "latest", "at the moment", or a
  present-tense state question such as "Where does Ann live?" / "What is Ann's job?"): the
  newest candidate keeps its score, the oldest loses :data:`PRESENT_WEIGHT` of it;
- **past** ("when did …", "before …", "used to", "last year", "previously", "first"): no
  recency weight at all, so an old statement that answers it is not buried;
- **neutral** (anything else): a light :data:`NEUTRAL_WEIGHT`, so that between two
  statements that match alike the newer comes first.

Pure functions of the query and the candidates' times: the same log gives the same ranking.
"""
from __future__ import annotations

import re
from collections.abc import Sequence

from events import clock

PRESENT_WEIGHT = 0.7   # share of its score the oldest candidate loses on a present question
STATE_WEIGHT = 0.1     # the same on a present-tense state question ("Where does Ann live?")
NEUTRAL_WEIGHT = 0.1   # the same on a question that says neither
LIFT_INTENTS = ("present",)  # where the newer of two same-subject candidates is lifted

_WORDS = re.compile(r"[a-z']+")
_PRESENT_CUES = ("now", "currently", "current", "nowadays", "these days", "still",
                 "latest", "at the moment", "at present", "right now", "today", "anymore",
                 "most recent", "most recently", "newest")
_PAST_CUES = ("before", "previously", "used to", "last year", "ago", "originally", "first",
              "formerly", "earlier", "old", "at first", "back then", "initially", "was",
              "were", "did", "had")
_PRESENT_AUX = {"is", "are", "am", "does", "do", "has", "have", "'s"}


def _has(words: list[str], text: str, cue: str) -> bool:
    return (f" {cue} " in f" {text} ") if " " in cue else cue in words


def temporal_intent(query: str) -> str:
    """``present``, ``past`` or ``neutral`` (see the module docstring)."""
    text = " ".join(_WORDS.findall(query.lower().replace("’", "'")))
    words = text.split()
    if any(_has(words, text, cue) for cue in _PRESENT_CUES if cue not in ("first",)):
        if not any(_has(words, text, cue) for cue in ("before", "used to", "previously",
                                                        "ago", "last year", "originally")):
            return "present"
    if any(_has(words, text, cue) for cue in _PAST_CUES):
        return "past"
    if any(w in _PRESENT_AUX for w in words[:4]):
        return "state"
    return "neutral"


PRESENT_BAND = 0.3     # on a present question, candidates scoring this share of the best
# The same bonus on a plain present-tense question: off. It lifted the changed-facts set's
# changed-state questions 0.29 -> 0.64 but cost LoCoMo @512 0.804 -> 0.789 (docs/experiments.md);
# kept as a setting for that sweep.
STATE_CHANGE_BOOST = 0.0
CHANGE_BOOST = 1.0     # on a present question, a statement that announces a change gains this

# How people say that something changed: "we moved to", "I switched to", "I've taken up …
# instead", "I started a new job", "I handed in my notice", "no longer", "these days".
# Words of change, not of any one subject; a statement with one of them, on a question
# about what is true now, is likely the newer truth.
_CHANGE = re.compile(
    r"\b(?:moved|move[sd]? (?:to|in|out)|relocat\w*|switched|switch(?:ing)? to|started|"
    r"starting|taken up|took up|take up|instead|no longer|not any ?more|anymore|"
    r"these days|nowadays|now|new (?:job|place|home|flat|house|apartment|role|position)|"
    r"hired|promoted|quit|handed in|resigned|changed|change[sd]? (?:to|my)|career change|"
    r"renamed|became|become|gone off|from (?:now on|monday|next week|today)|"
    r"got (?:a new|rid of)|sold my|bought a new|adopted|replaced)\b", re.IGNORECASE)


def change_factors(contents: Sequence[str], scores: Sequence[float],
                   intent: str) -> list[float]:
    """On a question about the present, ``1 + CHANGE_BOOST`` for a statement that announces
    a change (:data:`_CHANGE`) and answers the question (scores at least
    :data:`PRESENT_BAND` of the best: a change of something else gains nothing), else 1.0."""
    boost = {"present": CHANGE_BOOST, "state": STATE_CHANGE_BOOST}.get(intent, 0.0)
    if not boost or not scores:
        return [1.0] * len(contents)
    floor = PRESENT_BAND * max(scores)
    return [1.0 + boost if score >= floor and _CHANGE.search(c) else 1.0
            for c, score in zip(contents, scores, strict=True)]


def recency_factors(times: Sequence[str], intent: str,
                    scores: Sequence[float] | None = None) -> list[float]:
    """A weight per candidate from its time (ISO, '' when unknown) relative to the others:
    1.0 for the newest, ``1 - weight`` for the oldest, linear in between. On a question
    about the present (``present``, ``state``) only the candidates that answer it — those
    scoring at least :data:`PRESENT_BAND` of the best (``scores``) — are compared and
    weighed: between two statements that both answer "where does Ann live now?" the newer
    wins, while a new remark that answers nothing gains nothing over an old one that does."""
    weight = {"present": PRESENT_WEIGHT, "state": STATE_WEIGHT,
              "neutral": NEUTRAL_WEIGHT}.get(intent, 0.0)
    stamps: list[float | None] = []
    for at in times:
        try:
            stamps.append(clock.from_iso(at).timestamp() if at else None)
        except ValueError:
            stamps.append(None)
    compared = [True] * len(times)
    if intent in ("present", "state") and scores is not None and scores:
        best = max(scores)
        compared = [score >= PRESENT_BAND * best for score in scores]
    known = [s for s, c in zip(stamps, compared, strict=True) if s is not None and c]
    if not weight or len(known) < 2 or max(known) == min(known):
        return [1.0] * len(times)
    newest, span = max(known), max(known) - min(known)
    return [1.0 if s is None or not c else 1.0 - weight * (newest - s) / span
            for s, c in zip(stamps, compared, strict=True)]


SAME_SUBJECT = 0.55     # cosine between two candidates above which they speak of one thing
RELEVANT_SHARE = 0.5    # a newer candidate counts when it scores this share of the best
COMPARED = 20           # the best candidates compared pairwise
SUPERSEDED_WEIGHT = 0.5  # what a candidate keeps when a newer one speaks of the same thing


def superseded_factors(scores: Sequence[float], times: Sequence[str],
                       similarity: Sequence[Sequence[float]], intent: str) -> list[float]:
    """On a question about the present, a candidate for which a newer, relevant candidate
    speaks of the same subject (``similarity`` at least :data:`SAME_SUBJECT`) keeps only
    :data:`SUPERSEDED_WEIGHT` of its score: the old statement sinks below the new one. The
    first :data:`COMPARED` candidates are compared; the lists are in the same order."""
    n = min(len(scores), COMPARED)
    factors = [1.0] * len(scores)
    if intent not in LIFT_INTENTS or n < 2:
        return factors
    best = max(scores[:n])
    for old in range(n):
        for new in range(n):
            if (times[new] > times[old] and similarity[old][new] >= SAME_SUBJECT
                    and scores[new] >= RELEVANT_SHARE * best):
                factors[old] = SUPERSEDED_WEIGHT
                break
    return factors

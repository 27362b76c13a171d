"""What is true now: recency-aware ranking for recall.

When a fact changed (a move, a new job, a renamed pet), the old and the new statement both
match a question about it, and a small model answers with whichever it reads first. So
recall weighs each candidate by how new it is *among the candidates* — not by its age
against the clock, which says nothing when the whole history is old — and by how much the
question asks about the present:

- **present** ("now", "currently", "these days", "still", "latest", "at the moment", or a
  present-tense state question such as "Where does Ann live?" / "What is Ann's job?"): the
  newest candidate keeps its score, the oldest loses :data:`weights.PRESENT_WEIGHT` of it;
- **past** ("when did …", "before …", "used to", "last year", "previously", "first"): no
  recency weight at all, so an old statement that answers it is not buried;
- **neutral** (anything else): a light :data:`weights.NEUTRAL_WEIGHT`, so that between two
  statements that match alike the newer comes first.

Pure functions of the query and the candidates' times: the same log gives the same ranking.
"""
from __future__ import annotations

import re
from collections.abc import Sequence

from events import clock

from . import weights

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
    """On a question about the present, ``1 + weights.CHANGE_BOOST`` for a statement that
    announces a change (:data:`_CHANGE`) and answers the question (scores at least
    :data:`weights.PRESENT_BAND` of the best: a change of something else gains nothing),
    else 1.0."""
    boost = {"present": weights.CHANGE_BOOST, "state": weights.STATE_CHANGE_BOOST}.get(intent, 0.0)
    if not boost or not scores:
        return [1.0] * len(contents)
    floor = weights.PRESENT_BAND * max(scores)
    return [1.0 + boost if score >= floor and _CHANGE.search(c) else 1.0
            for c, score in zip(contents, scores, strict=True)]


def recency_factors(times: Sequence[str], intent: str,
                    scores: Sequence[float] | None = None) -> list[float]:
    """A weight per candidate from its time (ISO, '' when unknown) relative to the others:
    1.0 for the newest, ``1 - weight`` for the oldest, linear in between. On a question
    about the present (``present``, ``state``) only the candidates that answer it — those
    scoring at least :data:`weights.PRESENT_BAND` of the best (``scores``) — are compared and
    weighed: between two statements that both answer "where does Ann live now?" the newer
    wins, while a new remark that answers nothing gains nothing over an old one that does."""
    weight = {"present": weights.PRESENT_WEIGHT, "state": weights.STATE_WEIGHT,
              "neutral": weights.NEUTRAL_WEIGHT}.get(intent, 0.0)
    stamps: list[float | None] = []
    for at in times:
        try:
            stamps.append(clock.from_iso(at).timestamp() if at else None)
        except ValueError:
            stamps.append(None)
    compared = [True] * len(times)
    if intent in ("present", "state") and scores is not None and scores:
        best = max(scores)
        compared = [score >= weights.PRESENT_BAND * best for score in scores]
    known = [s for s, c in zip(stamps, compared, strict=True) if s is not None and c]
    if not weight or len(known) < 2 or max(known) == min(known):
        return [1.0] * len(times)
    newest, span = max(known), max(known) - min(known)
    return [1.0 if s is None or not c else 1.0 - weight * (newest - s) / span
            for s, c in zip(stamps, compared, strict=True)]


def superseded_factors(scores: Sequence[float], times: Sequence[str],
                       similarity: Sequence[Sequence[float]], intent: str) -> list[float]:
    """On a question about the present, a candidate for which a newer, relevant candidate
    speaks of the same subject (``similarity`` at least :data:`weights.SAME_SUBJECT`) keeps only
    :data:`weights.SUPERSEDED_WEIGHT` of its score: the old statement sinks below the new one. The
    first :data:`weights.COMPARED` candidates are compared; the lists are in the same order."""
    n = min(len(scores), weights.COMPARED)
    factors = [1.0] * len(scores)
    if intent not in weights.LIFT_INTENTS or n < 2:
        return factors
    best = max(scores[:n])
    for old in range(n):
        for new in range(n):
            if (times[new] > times[old] and similarity[old][new] >= weights.SAME_SUBJECT
                    and scores[new] >= weights.RELEVANT_SHARE * best):
                factors[old] = weights.SUPERSEDED_WEIGHT
                break
    return factors

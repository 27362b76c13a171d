"""What each person keeps coming back to: the statements of MEMORY.md's "Themes" section.

A line of MEMORY.md is otherwise chosen by what it says (a current value, a like, a
relationship, a dated plan). What a person talks about session after session — Caroline's
counseling, her mentoring and the adoption she works towards, Maria's volunteering at the
homeless shelter — is said in no such form, and is what a reader most expects to find.

- **A theme word** of a person: a word (:func:`..mining.text.stem` of a content word, names
  of the home's speakers and numbers aside) that their mined statements use in at least
  :data:`MIN_SESSIONS` sessions, in at least twice as many as any other speaker's, and
  that is uncommon in English: its Zipf frequency (wordfreq's general word list, the most
  common of its forms) at most :data:`ZIPF_MAX` ("counseling" 3.9, "adoption" 4.2,
  "tournament" 4.6; not "excited" 4.7, "family" 5.7). Its weight: sessions × (7 − Zipf), so
  a word said often and rarely said elsewhere weighs most.
- **A theme statement**: among the statements a caller allows (they read as a lasting
  line), the heaviest by the summed weights of the theme words in their line, at least
  :data:`MIN_WEIGHT`; each shares no theme word with a line before it, up to
  :data:`PER_PERSON` a person. Ties go to the newer statement.

Pure and deterministic: the same statements give the same lines.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from ..mining.text import content_words, stem, zipf

MIN_SESSIONS = 3
ZIPF_MAX = 4.7
MIN_WEIGHT = 9.0      # three sessions of a word at Zipf 4.0, or one weightier
PER_PERSON = 2


@dataclass(frozen=True)
class Said:
    """A mined statement as themes read it: who says it (a speaker key), in which session,
    when (ISO time, for ties), its full text (for the words a person uses) and its line
    (the words a theme statement is weighed by)."""

    id: str
    who: str
    session: str
    at: str
    text: str
    line: str


def _stems(text: str, skip: frozenset[str]) -> dict[str, set[str]]:
    """``text``'s content words by stem (each stem's forms), the ``skip`` words and numbers
    left out."""
    out: dict[str, set[str]] = defaultdict(set)
    for word in content_words(text):
        if word not in skip and not any(c.isdigit() for c in word):
            out[stem(word)].add(word)
    return out


def theme_words(said: Iterable[Said], skip: frozenset[str] = frozenset()
                ) -> dict[str, dict[str, float]]:
    """Each person's theme words (see the module doc) with their weights; ``skip``: words
    that are no theme (the speakers' names, casefolded)."""
    sessions: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    forms: dict[str, set[str]] = defaultdict(set)
    for s in said:
        for key, words in _stems(s.text, skip).items():
            sessions[s.who][key].add(s.session)
            forms[key] |= words
    out: dict[str, dict[str, float]] = {}
    for who, used in sessions.items():
        weights: dict[str, float] = {}
        for key, where in used.items():
            others = max((len(sessions[o].get(key, ())) for o in sessions if o != who),
                         default=0)
            common = max(zipf(w) for w in forms[key])
            if len(where) >= MIN_SESSIONS and len(where) >= 2 * others \
                    and 0 < common <= ZIPF_MAX:
                weights[key] = len(where) * (7 - common)
        out[who] = weights
    return out


def theme_statements(said: Sequence[Said], allowed: Callable[[Said], bool],
                     skip: frozenset[str] = frozenset()) -> list[Said]:
    """The theme statements (see the module doc), person by person in the order they first
    speak, each person's heaviest first; ``allowed``: whether a statement may be a line."""
    themes = theme_words(said, skip)
    chosen: list[Said] = []
    for who in dict.fromkeys(s.who for s in said):
        weights = themes.get(who, {})
        if not weights:
            continue
        scored = []
        for s in said:
            if s.who != who:
                continue
            words = {key for key in _stems(s.line, skip) if key in weights}
            weight = sum(weights[key] for key in words)
            if weight >= MIN_WEIGHT and allowed(s):
                scored.append((weight, s.at, s, words))
        scored.sort(key=lambda x: (-x[0], _descending(x[1])))
        covered: set[str] = set()
        taken = 0
        for _weight, _at, s, words in scored:
            if taken == PER_PERSON:
                break
            if words & covered:
                continue
            covered |= words
            chosen.append(s)
            taken += 1
    return chosen


def _descending(at: str) -> tuple[int, ...]:
    """A sort key that puts a later ISO time first."""
    return tuple(-ord(c) for c in at)

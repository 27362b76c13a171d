"""The extractor that needs no model: first-person facts, preferences, decisions, habits,
tool trouble and "remember that …", found by patterns in the source turns of a chunk.

Deterministic (the same chunk always gives the same memories), instant, and marked as
such: ``model = "heuristic"`` on the event, ``source = "heuristic"`` on the memory, and a
lower confidence (0.6–0.7; 0.9 for "remember that …") than a model's. It is what
``diarist mine`` does when no LLM is configured, and what stands in for a model whose
answer could not be used. A statement is kept only when it is a sentence (not a
question) with at least :data:`MIN_WORDS` content words; at most :data:`PER_TURN` a turn.
"""
from __future__ import annotations

import re
from collections.abc import Iterator

from .candidates import Candidate
from .chunks import Chunk, Turn
from .text import GENERIC_SPEAKERS, content_words, normal, subject_key, tags_of

MIN_WORDS = 2
PER_TURN = 3
MAX_CHARS = 240
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]*")
_TECH = frozenset("""api app bug build db branch ci cli code commit config container database
deploy docker editor git github python repo release script server shell test tests vim
emacs vscode linux library package npm pip pytest rust go java javascript typescript sql
kubernetes terminal compiler framework endpoint function module lint make push
makefile ssh vault key""".split())


def _p(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


_REMEMBER = _p(r"^(?:please |and )?(?:remember|don'?t forget|do not forget|note)"
               r"( that| to|:|,)?\s+(.{6,})")
# (pattern, type, kind, confidence); the first that matches a sentence decides
_RULES: list[tuple[re.Pattern[str], str, str, float]] = [
    (_p(r"\bmy name is\b|\bi (?:live|am living|'m living) in\b|\bi(?:'ve| have)? moved to\b"
        r"|\bi work (?:at|for|as)\b|\bi(?:'m| am) from\b|\bi(?:'m| am) an? (?:\w+ )?(?:engineer"
        r"|developer|teacher|nurse|designer|manager|student|doctor|writer|artist|counselor"
        r"|scientist|researcher)\b"), "workspace_profile", "pattern", 0.7),
    (_p(r"\b(?:doesn'?t|does not|didn'?t|did not|won'?t|can'?t) (?:work|build|start|run"
        r"|compile)\b|\b(?:fails|failed|crashes|crashed|breaks|broke|hangs)\b"),
     "tool_use", "pitfall", 0.6),
    (_p(r"\bworkaround\b|\bthe fix (?:is|was)\b|\b(?:fixed|solved) it by\b"),
     "tool_use", "workaround", 0.6),
    (_p(r"\bi (?:really |absolutely |do |don'?t |do not |still )?(?:like|love|enjoy|prefer"
        r"|hate|dislike|adore|can'?t stand)\b|\bmy fav(?:ou?rite)\b"),
     "user_preference", "pattern", 0.7),
    (_p(r"\b(?:i|we)(?:'ve| have)? decided\b|\bwe agreed\b|\bi chose\b|\bi plan to\b"
        r"|\b(?:i|we)(?:'re| are|'m| am) going to\b|\bi(?:'m| am) planning\b"),
     "project_fact", "recommendation", 0.6),
    (_p(r"\bi (?:always|usually|never|often|normally)\b|\bevery (?:day|morning|evening|week"
        r"|night|weekend)\b"), "workflow", "pattern", 0.6),
    (_p(r"\bi (?:use|am using|'m using|switched to|run)\b"), "tool_use", "pattern", 0.6),
    (_p(r"\bi (?:just |recently |finally |also )?(?:went|started|joined|finished|adopted|bought"
        r"|signed up|visited|took|painted|ran|graduated|learned|met|won|made|wrote|tried"
        r"|volunteered|got|have been|'ve been)\b|\bi have (?:a|an|two|three|four|\d+) \w+"
        r"|\bmy (?:\w+ )?(?:is|are|was|were|has|have) \w+"), "user_preference", "pattern", 0.6),
]


def kind_of(text: str) -> str:
    """pitfall / workaround / recommendation / pattern, by the same patterns."""
    low = text.casefold()
    if _RULES[1][0].search(low):
        return "pitfall"
    if _RULES[2][0].search(low):
        return "workaround"
    if _RULES[4][0].search(low) or _RECOMMEND.search(low) or _REMEMBER.match(low):
        return "recommendation"
    return "pattern"


def type_of(text: str) -> str | None:
    """The type the patterns give a statement, or None when none matches."""
    low = text.casefold()
    for pattern, type_, _kind, _confidence in _RULES:
        if pattern.search(low):
            return _by_topic(type_, text)
    return None


_RECOMMEND = _p(r"(?:should|must|always use|never use|recommend|better to|prefer)")


def _by_topic(type_: str, text: str) -> str:
    """A decision or a tool note about something that is not software is a preference."""
    if type_ in ("project_fact", "tool_use") and not (set(content_words(text)) & _TECH):
        return "user_preference"
    return type_


def _sentences(text: str) -> Iterator[str]:
    for piece in _SENTENCE.findall(text):
        sentence = piece.strip()
        if sentence and not sentence.endswith("?"):
            yield sentence


def _attributed(speaker: str, sentence: str) -> str:
    text = sentence[:MAX_CHARS].rstrip()
    return text if normal(speaker) in GENERIC_SPEAKERS else f"{speaker}: {text}"


def _from_sentence(turn: Turn, sentence: str) -> Candidate | None:
    low = sentence.casefold()
    remembered = _REMEMBER.match(low)
    if remembered:
        said = sentence[remembered.start(2):].strip().rstrip(".!")
        if len(content_words(said)) < MIN_WORDS:
            return None
        to_do = remembered.group(1) == " to"
        text = ("Remember to " + said) if to_do else said[0].upper() + said[1:]
        type_ = "project_fact" if set(content_words(said)) & _TECH else "user_preference"
        return Candidate(type_, _attributed(turn.speaker, text), "recommendation",
                         said if to_do else "", 0.9, tags_of(said, turn.speaker),
                         subject_key(said, turn.speaker), [turn.n])
    if len(content_words(sentence)) < MIN_WORDS:
        return None
    for pattern, type_, kind, confidence in _RULES:
        if pattern.search(low):
            return Candidate(_by_topic(type_, sentence), _attributed(turn.speaker, sentence),
                             kind, "", confidence, tags_of(sentence, turn.speaker),
                             subject_key(sentence, turn.speaker), [turn.n])
    return None


def heuristic_candidates(chunk: Chunk) -> list[Candidate]:
    """The memories the patterns find in the chunk's source turns, in turn order."""
    out: list[Candidate] = []
    for turn in chunk.turns:
        if not turn.source:
            continue
        found = 0
        for sentence in _sentences(turn.text):
            candidate = _from_sentence(turn, sentence)
            if candidate is not None:
                out.append(candidate)
                found += 1
                if found == PER_TURN:
                    break
    return out

"""Requests to remember: a sentence in which the speaker asks the listener to keep
something in memory or in mind, before what is to be kept or after it.

- Before: "Please remember that I'm allergic to penicillin", "Remember: I take my coffee
  black", "Don't forget that …", "Can you remember that my wife's birthday is on 3 May?",
  "I'd like you to remember that …", "Keep in mind that I'm diabetic", "Note that …".
- After, as its own clause: "I'm allergic to penicillin, please remember that.", "My
  doctor is Dr. Patel - don't forget that!", "I use Neovim, keep that in mind."

A request is *asked* when it asks to remember ("remember", "don't forget") something the
speaker says of themselves ("I …", "my …"), or anything when it asks the listener outright
("Can you remember that the movers come on 12 December?", "…, please remember that"): a
person telling their assistant what to keep for good. "Keep in mind" and "note that" are
not: in a chat with an assistant they mostly set up the task at hand ("Keep in mind I am a
hot elf girl", "Note that I want the output in JSON"). Nor is a bare "Remember, …" of
anything else, advice to the listener or the task's brief ("Remember that staying positive
is very important", "Remember that the target persona is a Developer"), nor "remember to
…", something to be done (:attr:`Request.to_do`), nor a request to keep a secret: turns
are scrubbed before mining, and "[secret]" keeps nothing.
A question is no request ("Remember that epic block in Game 7?") unless it asks the
listener to remember ("Can you remember that …?").
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from projections.secrets import MASK

from .statements import FIRST_PERSON
from .text import folded

_MEMORY = r"remember|don'?t forget|do not forget|never forget"   # to keep for good
_MIND = r"keep in mind|bear in mind|note|make a note|take note"    # for the task at hand
_LEADING = re.compile(
    r"^(?:(?:and|also|oh|ok|okay|so)\b,?\s+)*"
    r"(?P<ask>(?:can|could|would|will) you\s+(?:please\s+)?"
    r"|(?:i want|i'd like|i would like|i need) you to\s+)?"
    r"(?P<please>(?:please|pls)\b,?\s+)?(?:do\s+)?"
    rf"(?:(?P<memory>{_MEMORY})|{_MIND})(?:\s+for me)?(?P<after>,?\s+please)?"
    r"(?:(?P<to>\s+to\b)|\s+that\b|\s*[:,]|\s+[-–—])?\s+(?P<kept>\S.*)$",
    re.IGNORECASE | re.DOTALL)
_TRAILING = re.compile(
    r"^(?P<kept>\S.*?)\s*(?:[,;:]|\s[-–—])\s*(?:(?:so|and)\s+)?(?P<please>please\s+)?"
    rf"(?:do\s+)?(?:(?P<memory>{_MEMORY})|note|keep|make a note of|take note of)"
    r"(?:\s+(?:that|this|it))?(?:\s+in mind)?(?P<after>,?\s+please)?"
    r"(?:\s+for (?:me|later|next time|the future))?\s*[.!]*$",
    re.IGNORECASE | re.DOTALL)
MIN_CHARS = 6


@dataclass(frozen=True)
class Request:
    """``kept``: what the speaker asks to keep, as said, without the request and the
    sentence's last mark ("I'm allergic to penicillin"); ``to_do``: "remember to …", what
    to do ("run make lint before pushing"); ``asked``: to be remembered for good, of the
    speaker (see the module doc); ``mind``: "keep in mind", "note that": for the task."""

    kept: str
    to_do: bool
    asked: bool
    mind: bool = False


def request_in(sentence: str) -> Request | None:
    """The request to remember in ``sentence``, or None (see the module doc)."""
    text = sentence.strip()
    found = _LEADING.match(text)
    if found:
        kept = found.group("kept").strip()
        if kept.endswith("?") and not found.group("ask"):
            return None
        return _request(kept, bool(found.group("to")), not found.group("memory"),
                        _addressed(found))
    if text.endswith("?"):
        return None
    found = _TRAILING.match(text)
    if found:
        return _request(found.group("kept").strip(), False, not found.group("memory"),
                        _addressed(found))
    return None


def _addressed(found: re.Match[str]) -> bool:
    """Whether the request asks the listener outright ("Can you …", "I'd like you to …",
    "please"), not a bare imperative ("Remember, the goal is …")."""
    return any(found.groupdict().get(g) for g in ("ask", "please", "after"))


def _request(kept: str, to_do: bool, mind: bool, addressed: bool = False) -> Request | None:
    kept = kept.rstrip(" .!?")
    if len(kept) < MIN_CHARS:
        return None
    asked = not (to_do or mind or MASK in kept) and (addressed or about_speaker(kept))
    return Request(kept, to_do, asked, mind)


def about_speaker(text: str) -> bool:
    """Whether ``text`` says "I", "my", "we" …: something of the speaker's own."""
    return bool(FIRST_PERSON.search(folded(text)))

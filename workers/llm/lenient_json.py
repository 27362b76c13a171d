"""JSON from a small model's answer, leniently: the one parser every extractor uses.

Small models wrap JSON in code fences, add chatter before or after it, use single quotes
or Python literals (``True``, ``None``), and run out of tokens half-way through a list.
:func:`loads_lenient` tries, in order, for the fenced block (if any) and then the whole
text: strict JSON; the span from the first ``[``/``{`` to the last ``]``/``}``; Python
literal syntax; and a truncated answer cut back to its last complete list element — or to
the last complete key and value of an object cut off inside it, so that a memory whose
text is whole is kept without the fields the cap cut — with the open brackets closed. It
raises :class:`LenientJSONError` saying what was wrong (shown to the model when it is asked
again); :func:`decode_lenient` returns None instead.
"""
from __future__ import annotations

import ast
import json
import re
from typing import Any

_FENCE = re.compile(r"```(?:json|JSON)?\s*([\s\S]*?)(?:```|$)")
_PY_WORDS = {"true": "True", "false": "False", "null": "None"}
_WORD = re.compile(r"\b(true|false|null)\b")
_CLOSERS = {"[": "]", "{": "}"}
MAX_CUTS = 8  # truncation repairs tried, from the last complete element or pair backwards


class LenientJSONError(ValueError):
    """No JSON value could be recovered from the text."""


def loads_lenient(text: str) -> Any:
    """The JSON value in ``text`` (see the module doc); LenientJSONError otherwise."""
    text = text.strip()
    if not text:
        raise LenientJSONError("the answer was empty")
    fenced = _FENCE.search(text)
    candidates = ([fenced.group(1).strip()] if fenced else []) + [text]
    for candidate in candidates:
        found = _attempts(candidate)
        if found is not _NOTHING:
            return found
    try:
        json.loads(text)
    except ValueError as exc:
        raise LenientJSONError(f"not valid JSON ({exc})") from None
    raise LenientJSONError("not valid JSON")  # pragma: no cover - json.loads raised above


def decode_lenient(text: str) -> Any | None:
    """:func:`loads_lenient`, or None when nothing could be recovered."""
    try:
        return loads_lenient(text)
    except LenientJSONError:
        return None


_NOTHING = object()


def _attempts(text: str) -> Any:
    for attempt in (text, _outer_span(text)):
        if not attempt:
            continue
        for parse in (json.loads, _python_literal):
            try:
                return parse(attempt)
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                continue
    start = _first_open(text)
    if start is not None:
        for repaired in _truncation_repairs(text[start:]):
            try:
                return json.loads(repaired)
            except ValueError:
                try:
                    return _python_literal(repaired)
                except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                    continue
    return _NOTHING


def _first_open(text: str) -> int | None:
    positions = [i for i in (text.find("["), text.find("{")) if i >= 0]
    return min(positions) if positions else None


def _outer_span(text: str) -> str:
    """From the first opening bracket to the last matching kind of closing one."""
    start = _first_open(text)
    if start is None:
        return ""
    end = text.rfind(_CLOSERS[text[start]])
    return text[start:end + 1] if end > start else ""


def _python_literal(text: str) -> Any:
    """Single-quoted strings and Python/JSON literals, e.g. ``{'a': true}``."""
    value = ast.literal_eval(_WORD.sub(lambda m: _PY_WORDS[m.group(1)], text))
    if not isinstance(value, dict | list | str | int | float | bool) and value is not None:
        raise ValueError("not a JSON-like value")
    return json.loads(json.dumps(value))  # tuples → lists, and only JSON types remain


def _truncation_repairs(text: str) -> list[str]:
    """``text`` cut after each complete element of an open list, and after each complete
    key and value of an open object (last first), with the brackets still open at that
    point closed. A cut inside a string or after a bare key is never made: a value the cap
    cut is left out whole."""
    stack: list[str] = []
    cuts: list[tuple[int, str]] = []
    quote: str | None = None
    escaped = False
    for i, ch in enumerate(text):
        if quote is not None:
            escaped, quote = _in_string(ch, quote, escaped)
            continue
        if ch in "\"'":
            quote = ch
        elif ch == "," and stack:  # after a complete list element or key and value
            cuts.append((i, _closers(stack)))
        elif ch in "[{":
            stack.append(ch)
        elif ch in "]}":
            if not stack or _CLOSERS[stack[-1]] != ch:
                break
            stack.pop()
            if not stack:
                return []  # complete: the other attempts saw it whole
            if stack[-1] == "[":
                cuts.append((i + 1, _closers(stack)))
    return [text[:end] + closers for end, closers in reversed(cuts[-MAX_CUTS:])]


def _in_string(ch: str, quote: str, escaped: bool) -> tuple[bool, str | None]:
    """(escaped, quote) after ``ch`` inside a string quoted by ``quote``."""
    if escaped:
        return False, quote
    if ch == "\\":
        return True, quote
    return False, None if ch == quote else quote


def _closers(stack: list[str]) -> str:
    return "".join(_CLOSERS[b] for b in reversed(stack))

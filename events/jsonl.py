"""The one JSON-lines reader: transcripts, recall query files and scripted-backend rules.

:func:`jsonl_lines` yields every non-blank line (and, with ``comments``, every line not
starting with ``#``) decoded, or with the reason it is not usable — the caller decides how to
report it, so that every reader can name ``file:line`` and collect several errors at once.

Besides JSON syntax, a line is refused (with its reason) when it is longer than
:data:`MAX_LINE_BYTES` (it is never held in memory whole), nested too deeply, holds a number
too long to convert (Python's 4,300-digit limit), or holds a string with a lone surrogate
(``"\\ud800"``: valid JSON, but not text that can be stored).
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from .errors import DiaristError
from .text import text_problem

MAX_LINE_BYTES = 1 << 20  # 1 MiB: far above any turn a model could read
_READ = 1 << 16
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


@dataclass(frozen=True)
class JsonLine:
    number: int            # 1-based line number in the file
    value: Any = None      # the decoded value (None when ``error`` is set)
    error: str | None = None  # "not valid JSON (... at column N)"


Source = IO[bytes] | IO[str] | Iterable[str]


def _bounded(source: Source, limit: int) -> Iterator[tuple[str | bytes, int]]:
    """Each line of ``source`` as (line, its length); a line longer than ``limit`` comes as
    ("", its length) and is read in pieces, never held whole. A binary file's lengths are in
    bytes."""
    if not hasattr(source, "readline"):
        for line in source:
            yield (line, len(line)) if len(line) <= limit else ("", len(line))
        return
    readline: Callable[[int], Any] = source.readline
    while True:
        line = readline(limit + 1)
        if not line:
            return
        newline = "\n" if isinstance(line, str) else b"\n"
        if len(line) <= limit or (len(line) == limit + 1 and line.endswith(newline)):
            yield line, len(line)
            continue
        length = len(line)
        while not line.endswith(newline):
            line = readline(_READ)
            length += len(line)
            if not line:
                break
        yield "", length - (1 if line.endswith(newline) else 0)


def _text(line: str | bytes) -> tuple[str, str | None]:
    """A line as text: (text, None), or ("", why it is not UTF-8)."""
    if isinstance(line, str):
        return line, None
    try:
        return line.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        return "", f"not UTF-8 text ({exc.reason} at byte {exc.start + 1})"


def _strings(value: Any) -> Iterator[str]:
    """Every string in a decoded JSON value, keys included (iteratively: no recursion)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def decode(raw: str) -> tuple[Any, str | None]:
    """One line decoded: (value, None), or (None, what is wrong)."""
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        msg = exc.msg.removesuffix(" at")  # "Invalid control character at"
        return None, f"not valid JSON ({msg} at column {exc.colno})"
    except RecursionError:
        return None, "JSON nested too deeply (arrays or objects inside each other)"
    except ValueError as exc:  # int() refuses a number of more than 4,300 digits
        if "digits" in str(exc):
            return None, "a number with too many digits (more than 4,300)"
        return None, f"not valid JSON ({exc})"
    if _SURROGATE_ESCAPE.search(raw):
        for text in _strings(value):
            problem = text_problem(text)
            if problem:
                return None, f"a string {problem}"
    return value, None


def decode_lines(lines: Source, *, comments: bool = False,
                 max_length: int = MAX_LINE_BYTES) -> Iterator[JsonLine]:
    """Decode each non-blank line of ``lines``: a binary file (each line must be UTF-8), a
    text file, or any iterable of lines."""
    for number, (line, length) in enumerate(_bounded(lines, max_length), start=1):
        if length > max_length:
            yield JsonLine(number, error=f"line too long ({length:,} bytes; at most "
                                         f"{max_length:,})")
            continue
        raw, error = _text(line)
        if number == 1:
            raw = raw.removeprefix("\ufeff")  # a byte-order mark some editors write
        if error:
            yield JsonLine(number, error=error)
            continue
        text = raw.strip()
        if not text or (comments and text.startswith("#")):
            continue
        value, error = decode(raw)
        yield JsonLine(number, value, error)


def jsonl_lines(path: Path, *, comments: bool = False,
                error: type[DiaristError] = DiaristError) -> Iterator[JsonLine]:
    """The decoded lines of a UTF-8 file (a line that is not UTF-8 is a bad line); a
    missing or unreadable file raises ``error`` naming the path."""
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        raise error(f"{path}: no such file") from None
    except IsADirectoryError:
        raise error(f"{path}: is a directory, not a file") from None
    except OSError as exc:
        raise error(f"{path}: cannot be read ({exc.strerror})") from None
    with handle:
        yield from decode_lines(handle, comments=comments)

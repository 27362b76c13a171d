"""The one JSON-lines reader: transcripts, recall query files and scripted-backend rules.

:func:`jsonl_lines` yields every non-blank line (and, with ``comments``, every line not
starting with ``#``) decoded, or with the reason it is not JSON — the caller decides how to
report it, so that every reader can name ``file:line`` and collect several errors at once.
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import DiaristError


@dataclass(frozen=True)
class JsonLine:
    number: int            # 1-based line number in the file
    value: Any = None      # the decoded value (None when ``error`` is set)
    error: str | None = None  # "not valid JSON (... at column N)"


def decode_lines(lines: Iterable[str], *, comments: bool = False) -> Iterator[JsonLine]:
    """Decode each non-blank line of ``lines``."""
    for number, raw in enumerate(lines, start=1):
        text = raw.strip()
        if not text or (comments and text.startswith("#")):
            continue
        try:
            yield JsonLine(number, json.loads(raw))
        except json.JSONDecodeError as exc:
            yield JsonLine(number, error=f"not valid JSON ({exc.msg} at column {exc.colno})")


def jsonl_lines(path: Path, *, comments: bool = False,
                error: type[DiaristError] = DiaristError) -> Iterator[JsonLine]:
    """The decoded lines of a UTF-8 file; a missing, unreadable or non-UTF-8 file raises
    ``error`` naming the path (before any line is yielded when the file cannot be opened)."""
    try:
        handle = path.open(encoding="utf-8")
    except FileNotFoundError:
        raise error(f"{path}: no such file") from None
    except IsADirectoryError:
        raise error(f"{path}: is a directory, not a file") from None
    except OSError as exc:
        raise error(f"{path}: cannot be read ({exc.strerror})") from None
    with handle:
        try:
            yield from decode_lines(handle, comments=comments)
        except UnicodeDecodeError as exc:
            raise error(f"{path}: not UTF-8 text ({exc.reason})") from None

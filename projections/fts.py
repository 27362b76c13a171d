"""Turning what a user typed into a safe FTS5 query.

User text is never passed to MATCH as syntax: it is split into words and each word is
quoted, so ``"``, ``*``, ``AND(``, ``:`` and the like are searched as words and never raise.
"""
from __future__ import annotations

import re

_WORD = re.compile(r"\w+", re.UNICODE)


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def match_any(text: str) -> str | None:
    """An FTS5 MATCH expression that matches any of the words (None when there are none)."""
    unique = list(dict.fromkeys(words(text)))
    if not unique:
        return None
    return " OR ".join(f'"{w}"' for w in unique)

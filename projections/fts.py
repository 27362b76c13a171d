"""Turning what a user typed into a safe FTS5 query.

User text is never passed to MATCH as syntax: it is split into words and each word is
quoted, so ``"``, ``*``, ``AND(``, ``:`` and the like are searched as words and never raise.
"""
from __future__ import annotations

import re

_WORD = re.compile(r"\w+", re.UNICODE)


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


# Function words carry no topic; dropping them from a query keeps BM25 on the content words.
STOPWORDS = frozenset("""
a about above after again against all am an and any are as at be because been before being
below between both but by can could did do does doing down during each few for from further
had has have having he her here hers herself him himself his how i if in into is it its itself
just me more most my myself no nor not now of off on once only or other our ours ourselves out
over own same she should so some such than that the their theirs them themselves then there
these they this those through to too under until up very was we were what when where which
while who whom why will with would you your yours yourself yourselves
""".split())


def query_terms(text: str) -> list[str]:
    """The words of a query worth searching: stopwords and one-letter pieces (the "s" of
    "John's") are dropped unless nothing else is left."""
    unique = list(dict.fromkeys(words(text)))
    content = [w for w in unique if w not in STOPWORDS and len(w) > 1]
    return content or unique


def quoted_any(terms: list[str]) -> str | None:
    return " OR ".join(f'"{w}"' for w in terms) if terms else None


def match_any(text: str) -> str | None:
    """An FTS5 MATCH expression that matches any of the query's terms (None when there are
    none)."""
    unique = query_terms(text)
    if not unique:
        return None
    return " OR ".join(f'"{w}"' for w in unique)

"""``diarist recall``: one query, or a file of them, answered from the projections."""
from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

from events import DiaristError, Home, clock
from events.jsonl import jsonl_lines
from events.problems import Problems
from projections import ProjectionStore
from projections.recall import RecallResult, recall
from projections.semantic import semantic_searcher

EMPTY_QUERY = "the query is empty: there is nothing to search for"
LINE = '{"id": ..., "query": "text"}'
Query = tuple[object, str, dt.datetime | None]   # id, text, when it is asked (None: now)


class QueriesError(DiaristError):
    hint = f"--queries takes a JSON-lines file, one {LINE} a line."


def check_query(query: str) -> None:
    """Refuse a blank query (the command line's; a file's lines say which line)."""
    if not query.strip():
        raise DiaristError(EMPTY_QUERY, hint='Give the words to look for: diarist recall '
                                              '"where does Maya live?"')


def read_queries(path: Path) -> list[Query]:
    """Every ``{"id", "query"}`` line of ``path`` (with ``"at"``, when it is asked, if
    given), all validated before any is answered; bad lines are reported as
    ``file:line: what is wrong`` (the first few, and how many more)."""
    out: list[Query] = []
    problems = Problems()
    for line in jsonl_lines(path, error=QueriesError):
        obj = line.value
        if line.error:
            problems.add(f"{path}:{line.number}: {line.error}")
        elif not isinstance(obj, dict) or "id" not in obj or not isinstance(obj.get("query"), str):
            problems.add(f"{path}:{line.number}: expected {LINE}")
        elif not obj["query"].strip():
            problems.add(f"{path}:{line.number}: {EMPTY_QUERY}")
        else:
            try:
                at = asked_at(obj["at"]) if obj.get("at") is not None else None
            except DiaristError as exc:
                problems.add(f"{path}:{line.number}: {exc}")
                continue
            out.append((obj["id"], obj["query"], at))
    if problems:
        raise DiaristError(problems.render(), hint="Fix those lines; nothing was recalled.")
    return out


def asked_at(value: object) -> dt.datetime:
    """``--at`` / a line's ``"at"``: when a query is asked."""
    try:
        return clock.parse_moment(str(value))
    except ValueError as exc:
        raise DiaristError(str(exc), hint="Give when the query is asked, or leave it out "
                                          "for now.") from None


def recall_each(home: Home, store: ProjectionStore, queries: list[Query], budget: int,
                k: int, at: dt.datetime | None = None) -> Iterator[tuple[object, RecallResult]]:
    """Recall for each query (lexical, plus cosine when the home has vectors), asked at its
    own time, else ``at``, else now: freshness is measured from then, and "last week" in
    the query is the week before that one."""
    semantic = semantic_searcher(home, store)
    for qid, text, asked in queries:
        yield qid, recall(store.db, text, budget, k, semantic, asked or at or clock.now())


def projection_lag(store: ProjectionStore) -> int:
    """How many events the furthest-behind projection has still to apply."""
    return max((s.lag for s in store.status()), default=0)

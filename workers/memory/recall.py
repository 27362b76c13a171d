"""``diarist recall``: one query, or a file of them, answered from the projections."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from events import DiaristError, Home
from events.jsonl import jsonl_lines
from projections import ProjectionStore
from projections.recall import RecallResult, recall
from projections.semantic import semantic_searcher

MAX_REPORTED = 10


def read_queries(path: Path) -> list[tuple[object, str]]:
    """Every ``{"id", "query"}`` line of ``path``, all validated before any is answered; bad
    lines are reported as ``file:line: what is wrong``."""
    out: list[tuple[object, str]] = []
    errors: list[str] = []
    for line in jsonl_lines(path):
        obj = line.value
        if line.error:
            errors.append(f"{path}:{line.number}: {line.error}")
        elif not isinstance(obj, dict) or "id" not in obj or not isinstance(obj.get("query"), str):
            errors.append(f"{path}:{line.number}: expected {{\"id\": ..., \"query\": \"text\"}}")
        else:
            out.append((obj["id"], obj["query"]))
    if errors:
        raise DiaristError("\n".join(errors[:MAX_REPORTED]),
                           hint="Fix those lines; nothing was recalled.")
    return out


def recall_each(home: Home, store: ProjectionStore, queries: list[tuple[object, str]],
                budget: int, k: int) -> Iterator[tuple[object, RecallResult]]:
    """Recall for each query (lexical, plus cosine when the home has vectors)."""
    semantic = semantic_searcher(home, store)
    for qid, text in queries:
        yield qid, recall(store.db, text, budget, k, semantic)


def projection_lag(store: ProjectionStore) -> int:
    """How many events the furthest-behind projection has still to apply."""
    return max((s.lag for s in store.status()), default=0)

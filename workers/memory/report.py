"""What ``diarist memory status`` and ``diarist journal`` show."""
from __future__ import annotations

from dataclasses import dataclass

from events import DiaristError, Home, clock
from events.config import load_config
from projections import ProjectionStore
from projections.journal import ARCHIVE, FILE_NAME
from projections.memories import memory_counts
from projections.stats import budget_line, budget_summary


@dataclass(frozen=True)
class MemoryReport:
    counts: list[tuple[str, str, int]]   # (type, status, count)
    journal_days: list[str]              # YYYY-MM-DD, oldest first
    long_term_chars: int                 # MEMORY.md's size
    budget: str                          # the budget line (and advice)
    top_k: int


def memory_report(home: Home, store: ProjectionStore) -> MemoryReport:
    config = load_config(home)
    days = sorted(p.name[:-3] for p in home.memory_dir.glob("*.md") if FILE_NAME.match(p.name))
    long_term = home.memory_dir / "MEMORY.md"
    size = len(long_term.read_text(encoding="utf-8")) if long_term.exists() else 0
    return MemoryReport(
        memory_counts(store.db), days, size,
        budget_line(budget_summary(store.db, config.memory.budget_pct), config.memory.budget_pct),
        config.memory.top_k)


def journal_day(home: Home, value: str) -> tuple[str, str | None]:
    """(the day ``value`` names, its journal file's text or None)."""
    try:
        day = clock.parse_day(value)
    except ValueError as exc:
        raise DiaristError(str(exc), hint="Use YYYY-MM-DD, `today` or `yesterday`.") from None
    path = home.memory_dir / f"{day}.md"
    if not FILE_NAME.match(path.name):
        return day, None
    for candidate in (path, home.memory_dir / ARCHIVE / path.name):
        if candidate.exists():
            return day, candidate.read_text(encoding="utf-8")
    return day, None

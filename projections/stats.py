"""The stats projection: one ``memory_stats`` row per chat session, and the budget advice.

A row (session_id, budget_tokens, injected_tokens, compressed, avg_tokens_per_sec,
recorded_at) is written when the session ends, from its ``MemoryInjected`` (the largest
injection counts), ``HistoryCompressed`` (how many) and ``AssistantTurn`` (mean tokens/s)
events. Imported sessions (backend ``import``) have no memory budget and get no row.
"""
from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from events import RecordedEvent
from events.types import (
    AssistantTurn,
    HistoryCompressed,
    MemoryInjected,
    SessionEnded,
    SessionStarted,
)

from .engine import Projector
from .schema import create_table

MIN_SESSIONS_FOR_ADVICE = 10
HIGH_UTILISATION = 0.90
SLOW_TOKENS_PER_SEC = 2.0


class StatsProjector(Projector):
    name = "stats"
    handles = frozenset({SessionStarted, MemoryInjected, HistoryCompressed, AssistantTurn,
                         SessionEnded})
    version = 1

    def create(self, db: sqlite3.Connection) -> None:
        create_table(db, "memory_stats", {
            "session_id": str, "budget_tokens": int, "injected_tokens": int, "compressed": int,
            "avg_tokens_per_sec": float, "recorded_at": str}, "session_id",
            nullable=["avg_tokens_per_sec"])
        create_table(db, "stats_open", {
            "session_id": str, "budget_tokens": int, "injected_tokens": int, "compressed": int,
            "tps_sum": float, "tps_count": int}, "session_id", defaults={
                "budget_tokens": 0, "injected_tokens": 0, "compressed": 0, "tps_sum": 0,
                "tps_count": 0})

    def drop(self, db: sqlite3.Connection) -> None:
        db.execute("DROP TABLE IF EXISTS memory_stats")
        db.execute("DROP TABLE IF EXISTS stats_open")

    def apply(self, db: sqlite3.Connection, event: RecordedEvent) -> None:
        data = event.data
        if isinstance(data, SessionStarted):
            if data.backend != "import":
                db.execute("INSERT OR IGNORE INTO stats_open (session_id) VALUES (?)",
                           (data.session,))
            return
        if not isinstance(data, MemoryInjected | HistoryCompressed | AssistantTurn | SessionEnded):
            return
        session = data.session
        if not db.execute("SELECT 1 FROM stats_open WHERE session_id = ?", (session,)).fetchone():
            return
        if isinstance(data, MemoryInjected):  # the most memory the prompt ever held
            db.execute("UPDATE stats_open SET budget_tokens = MAX(budget_tokens, ?),"
                       " injected_tokens = MAX(injected_tokens, ?) WHERE session_id = ?",
                       (data.budget_tokens, data.memory_tokens or data.injected_tokens, session))
        elif isinstance(data, HistoryCompressed):
            db.execute("UPDATE stats_open SET compressed = compressed + 1 WHERE session_id = ?",
                       (session,))
        elif isinstance(data, AssistantTurn) and data.tokens_per_sec:
            db.execute("UPDATE stats_open SET tps_sum = tps_sum + ?, tps_count = tps_count + 1"
                       " WHERE session_id = ?", (data.tokens_per_sec, session))
        elif isinstance(data, SessionEnded):
            db.execute(
                "INSERT OR REPLACE INTO memory_stats (session_id, budget_tokens, injected_tokens,"
                " compressed, avg_tokens_per_sec, recorded_at) SELECT session_id, budget_tokens,"
                " injected_tokens, compressed,"
                " CASE WHEN tps_count > 0 THEN ROUND(tps_sum / tps_count, 3) END, ?"
                " FROM stats_open WHERE session_id = ?", (event.recorded_at, session))
            db.execute("DELETE FROM stats_open WHERE session_id = ?", (session,))

    def canonical_rows(self, db: sqlite3.Connection) -> Iterable[Sequence[Any]]:
        yield from db.execute("SELECT * FROM memory_stats ORDER BY session_id")
        yield from db.execute("SELECT * FROM stats_open ORDER BY session_id")


@dataclass(frozen=True)
class BudgetSummary:
    sessions: int
    utilisation: float | None        # mean injected / budget
    tokens_per_sec: float | None     # mean of the sessions' means
    advice: str | None               # None below MIN_SESSIONS_FOR_ADVICE sessions


def budget_summary(db: sqlite3.Connection, budget_pct: float, recent: int = 50) -> BudgetSummary:
    """Mean use of the memory budget over the last ``recent`` sessions, and the advice (it
    never changes the setting itself)."""
    try:
        rows = db.execute("SELECT budget_tokens, injected_tokens, avg_tokens_per_sec"
                          " FROM memory_stats"
                          " WHERE budget_tokens > 0 ORDER BY recorded_at DESC LIMIT ?",
                          (recent,)).fetchall()
    except sqlite3.OperationalError:
        rows = []
    if not rows:
        return BudgetSummary(0, None, None, None)
    utilisation = sum(i / b for b, i, _ in rows) / len(rows)
    speeds = [t for _, _, t in rows if t]
    speed = sum(speeds) / len(speeds) if speeds else None
    advice = None
    if len(rows) >= MIN_SESSIONS_FOR_ADVICE:
        if speed is not None and speed < SLOW_TOKENS_PER_SEC and utilisation > HIGH_UTILISATION:
            advice = (f"the model reads slowly ({speed:.1f} tokens/s) and memory fills its budget: "
                      f"consider lowering memory.budget_pct (now {budget_pct:g}) and relying on "
                      "lexical recall")
        elif utilisation > HIGH_UTILISATION:
            advice = (f"memory fills {utilisation:.0%} of its budget: consider raising "
                      f"memory.budget_pct (now {budget_pct:g})")
        else:
            advice = "current setting looks good"
    return BudgetSummary(len(rows), utilisation, speed, advice)


def budget_line(summary: BudgetSummary, budget_pct: float) -> str:
    line = f"memory budget: {budget_pct:.0%} of the context window (512 tokens when unknown)"
    if summary.sessions:
        line += f"; last {summary.sessions} sessions used {summary.utilisation:.0%} of it"
        if summary.tokens_per_sec is not None:
            line += f" at {summary.tokens_per_sec:.1f} tokens/s"
    if summary.advice:
        line += f"\nadvice: {summary.advice}"
    elif summary.sessions < MIN_SESSIONS_FOR_ADVICE:
        line += f"\nadvice: after {MIN_SESSIONS_FOR_ADVICE} chat sessions"
    return line

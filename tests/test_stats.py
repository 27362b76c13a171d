"""memory_stats rows per chat session, and the budget advice of `diarist status`."""
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from cli.main import cli
from events import EventLog, Home
from events.transcript import import_file
from events.types import (
    AssistantTurn,
    HistoryCompressed,
    MemoryInjected,
    SessionEnded,
    SessionStarted,
)
from projections import open_store
from projections.stats import budget_summary

from .conftest import make_turns, write_transcript


def session(log: EventLog, name: str, budget: int, injected: int, tps: list[float],
            compressions: int = 0) -> None:
    log.append(SessionStarted(session=name, backend="ollama", model="m", context_window=2048),
               stream=name)
    log.append(MemoryInjected(session=name, budget_tokens=budget, injected_tokens=injected),
               stream=name)
    for speed in tps:
        log.append(AssistantTurn(session=name, text="x", tokens_per_sec=speed), stream=name)
    for _ in range(compressions):
        log.append(HistoryCompressed(session=name, replaced=[], summary="s"), stream=name)
    log.append(SessionEnded(session=name, turns=len(tps)), stream=name)


def status_output() -> str:
    result = CliRunner().invoke(cli, ["status"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_a_row_per_chat_session(home: Home, log: EventLog, tmp_path: Path) -> None:
    import_file(log, write_transcript(tmp_path / "t.jsonl", make_turns(4)))  # no row
    session(log, "chat/a", 512, 400, [10.0, 20.0], compressions=2)
    with open_store(home, log) as store:
        store.catch_up_all()
        rows = store.db.execute("SELECT session_id, budget_tokens, injected_tokens, compressed,"
                                " avg_tokens_per_sec FROM memory_stats").fetchall()
    assert rows == [("chat/a", 512, 400, 2, 15.0)]


@pytest.mark.parametrize("injected, tps, advice", [
    (500, [30.0], "memory fills 98% of its budget: consider raising memory.budget_pct (now 0.25)"),
    (500, [1.5], "reads slowly (1.5 tokens/s) and memory fills its budget: consider lowering"),
    (300, [1.5], "current setting looks good"),
])
def test_advice_after_ten_sessions(home: Home, log: EventLog, injected: int, tps: list[float],
                                   advice: str) -> None:
    for i in range(9):
        session(log, f"chat/{i}", 512, injected, tps)
    out = status_output()
    assert "last 0 sessions" not in out
    CliRunner().invoke(cli, ["sync", "--no-embed"], catch_exceptions=False)
    assert "advice: after 10 chat sessions" in status_output()
    session(log, "chat/9", 512, injected, tps)
    CliRunner().invoke(cli, ["sync", "--no-embed"], catch_exceptions=False)
    out = status_output()
    assert "last 10 sessions used" in out and advice in out


def test_summary_never_changes_the_setting(home: Home, log: EventLog) -> None:
    for i in range(12):
        session(log, f"chat/{i}", 512, 510, [40.0])
    with open_store(home, log) as store:
        store.catch_up_all()
        summary = budget_summary(store.db, 0.25)
    assert summary.sessions == 12 and summary.advice and "raising" in summary.advice
    assert not home.config_file.exists()

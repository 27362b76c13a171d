"""Shared fixtures. Every test gets its own DIARIST_HOME: no test touches the real var/."""
from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from events import EventLog, Home

REPO = Path(__file__).resolve().parent.parent
LOCOMO = REPO.parent / "shared" / "bench" / "locomo"


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Home:
    root = tmp_path / "home"
    monkeypatch.setenv("DIARIST_HOME", str(root))
    monkeypatch.delenv("DIARIST_REDIS_URL", raising=False)
    return Home(root).ensure()


@pytest.fixture
def log(home: Home) -> Iterator[EventLog]:
    with EventLog(home.events_db) as event_log:
        yield event_log


@pytest.fixture
def locomo26() -> Path:
    path = LOCOMO / "conv-26.transcript.jsonl"
    if not path.exists():
        pytest.skip("../shared/bench/locomo is not beside the checkout")
    return path


def write_transcript(path: Path, turns: list[dict]) -> Path:
    path.write_text("".join(json.dumps(t) + "\n" for t in turns), encoding="utf-8")
    return path


def make_turns(n: int, session: str = "s1", prefix: str = "t") -> list[dict]:
    return [
        {"session": session, "at": f"2024-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}Z",
         "role": "user" if i % 2 == 0 else "assistant", "name": "Ann" if i % 2 == 0 else "Bot",
         "text": f"message number {i} about topic {i % 7}", "ref": f"{prefix}:{session}:{i}"}
        for i in range(n)
    ]


def diarist_cmd() -> list[str]:
    """Run the CLI as a real process (the installed entry point's code, this interpreter)."""
    return [sys.executable, "-c", "from cli.main import main; main()"]


def subprocess_env(home: Home) -> dict[str, str]:
    env = dict(os.environ)
    env["DIARIST_HOME"] = str(home.root)
    env["PYTHONPATH"] = str(REPO)
    return env

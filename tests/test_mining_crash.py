"""kill -9 during `diarist mine` (a real process, a real HTTP model server), then reruns: no
chunk of turns is mined twice and none is skipped."""
from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from events import EventLog, Home
from events.transcript import import_file
from projections import open_store
from projections.memories import list_memories
from projections.mining import mining_totals

from .conftest import diarist_cmd, subprocess_env, write_transcript
from .fake_llm import fake_llm
from .faults import kill9

SESSIONS, LIKES = 30, 2


def transcript(tmp_path: Path) -> Path:
    turns = []
    for s in range(SESSIONS):
        for t in range(4):
            text = (f"I like thing {s}-{t}" if t < LIKES else f"ok {s} {t}, see you")
            turns.append({"session": f"s{s:02d}", "at": f"2024-02-{1 + s % 28:02d}T10:0{t}:00Z",
                          "role": "user" if t % 2 == 0 else "assistant", "name": f"P{t % 2}",
                          "text": text, "ref": f"r{s}-{t}"})
    return write_transcript(tmp_path / "t.jsonl", turns)


def mined_events(home: Home) -> list:
    with EventLog(home.events_db) as log:
        return log.read(types=["MemoriesMined"])


@pytest.mark.slow
def test_kill_9_during_mine_then_rerun_mines_every_chunk_once(home: Home,
                                                             tmp_path: Path) -> None:
    with EventLog(home.events_db) as log:
        import_file(log, transcript(tmp_path))
    kills = []
    with fake_llm(delay=0.08) as llm:
        home.config_file.write_text(f"llm:\n  backend: openai\n  base_url: {llm.url}\n")
        for stop_after in (4, 14):  # two kills at different points of the pass
            proc = subprocess.Popen([*diarist_cmd(), "mine"], env=subprocess_env(home),
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            deadline = time.monotonic() + 60
            while len(mined_events(home)) < stop_after and time.monotonic() < deadline:
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                time.sleep(0.02)
            kill9(proc)
            kills.append(len(mined_events(home)))
        done = subprocess.run([*diarist_cmd(), "mine"], env=subprocess_env(home),
                              capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert kills[0] < kills[1] < SESSIONS  # each kill landed mid-pass
    events = mined_events(home)
    chunks = [(e.payload["session"], e.payload["first_seq"], e.payload["last_seq"])
              for e in events]
    assert len(chunks) == len(set(chunks)) == SESSIONS  # every session's chunk once
    with open_store(home) as store:
        store.catch_up_all()
        totals = mining_totals(store.db)
        contents = [m.content for m in list_memories(store.db)]
    assert totals["waiting"] == 0 and totals["chunks"] == SESSIONS
    assert sorted(contents) == sorted(f"P{t} likes thing {s}-{t}" for s in range(SESSIONS)
                                      for t in range(LIKES))
    # the turns each event covers are exactly its session's turns, no gap and no overlap
    with EventLog(home.events_db) as log:
        for session, first, last in chunks:
            turns = [e.seq for e in log.read(stream=session, types=["UserTurn", "AssistantTurn"])]
            assert (turns[0], turns[-1]) == (first, last)

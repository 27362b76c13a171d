"""Scale-out: with a Redis queue, `diarist mine` shares its chunks with `diarist worker
--mining` processes — here each with a home of its own, as on another machine: extraction
is stateless — and the memories are the same with 0, 1 or 3 workers (a real redis-server
on 127.0.0.1, started by the test run)."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from events import EventLog, Home
from events.transcript import import_file
from projections import open_store
from workers.app import configure, mining_queue

from .conftest import diarist_cmd, stop_process, subprocess_env, write_transcript
from .fake_llm import FakeLLM, fake_llm
from .test_workers import redis_url  # noqa: F401 - the fixture: a redis-server of its own

SESSIONS = 16


def transcript(tmp_path: Path) -> Path:
    turns = []
    for s in range(SESSIONS):
        for t in range(3):
            turns.append({"session": f"s{s:02d}", "at": f"2024-04-{1 + s:02d}T08:0{t}:00Z",
                          "role": "user" if t % 2 == 0 else "assistant", "name": f"P{t % 2}",
                          "text": f"I like item {s}.{t} a lot", "ref": f"r{s}.{t}"})
    return write_transcript(tmp_path / "t.jsonl", turns)


def memories(home: Home) -> list[tuple]:
    with open_store(home) as store:
        store.catch_up_all()
        return store.db.execute("SELECT id, type, content, refs, status FROM memories"
                                " ORDER BY id").fetchall()


def extractors(home: Home) -> list[str]:
    with EventLog(home.events_db) as log:
        return [e.payload["extracted_by"] for e in log.read(types=["MemoriesMined"])]


def mine_with_workers(tmp_path: Path, llm: FakeLLM, redis: str | None,
                      workers: int) -> tuple[list[tuple], list[str], list[int]]:
    home = Home(tmp_path / "home").ensure()
    with EventLog(home.events_db) as log:
        import_file(log, transcript(tmp_path))
    queue = f"queue:\n  redis_url: {redis}\n" if redis else ""
    home.config_file.write_text(f"{queue}llm:\n  backend: openai\n  base_url: {llm.url}\n")
    procs = []
    for i in range(workers):  # each on a home of its own: no access to the log
        remote = Home(tmp_path / f"remote{i}").ensure()
        remote.config_file.write_text(home.config_file.read_text())
        procs.append(subprocess.Popen([*diarist_cmd(), "worker", "--mining"],
                                      env=subprocess_env(remote), stdout=subprocess.DEVNULL,
                                      stderr=subprocess.PIPE, text=True))
    try:
        for proc in procs:  # up and consuming
            line = proc.stderr.readline() if proc.stderr else ""
            assert "diarist worker --mining" in line, line
        done = subprocess.run([*diarist_cmd(), "mine"], env=subprocess_env(home),
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
    finally:
        for proc in procs:
            stop_process(proc)
    if redis:
        configure(home)
        assert mining_queue.pending_count() == 0  # the pass left nothing queued
        assert [k for k in mining_queue.storage.result_items() if k.startswith("mine:")] == []
    for i in range(workers):
        assert not (tmp_path / f"remote{i}" / "events.db").exists()
    return memories(home), extractors(home), [p.pid for p in procs]


@pytest.fixture
def reference(tmp_path_factory: pytest.TempPathFactory) -> list[tuple]:
    """The memories of the same log mined in one process, without Redis."""
    with fake_llm() as llm:
        found, _, _ = mine_with_workers(tmp_path_factory.mktemp("local"), llm, None, 0)
    return found


@pytest.mark.slow
@pytest.mark.parametrize("workers", [1, 3])
def test_the_workers_share_the_chunks_and_change_nothing(
        tmp_path: Path, redis_url: str, workers: int,  # noqa: F811
        reference: list[tuple]) -> None:
    with fake_llm(delay=0.15) as llm:
        found, by, pids = mine_with_workers(tmp_path, llm, redis_url, workers)
        calls = len(llm.chat_calls())
    assert found == reference and len(found) == SESSIONS * 2
    assert calls == SESSIONS  # each chunk extracted once
    helpers = {int(b.rsplit(":", 1)[1]) for b in by} & set(pids)
    assert len(helpers) == workers  # every worker took chunks
    assert len(by) == SESSIONS

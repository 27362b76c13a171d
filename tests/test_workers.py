"""The Huey app: tasks run projector catch-up under a lock; SQLite or Redis storage."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from huey.storage import RedisStorage, SqliteStorage

from events import EventLog, Home
from events.types import UserTurn
from projections import open_store
from workers.app import configure, huey
from workers.tasks import EMBED_TASK, PROJECTION_TASKS, enqueue_catch_up

from .conftest import (
    diarist_cmd,
    free_port,
    make_turns,
    no_night,
    stop_process,
    subprocess_env,
    write_transcript,
)

QUEUED = [*PROJECTION_TASKS, EMBED_TASK]  # the projections, then embed.pending


def append_turns(home: Home, n: int) -> int:
    with EventLog(home.events_db) as log:
        for i in range(n):
            log.append(UserTurn(session="s", text=f"turn {i}"), stream="s")
        return log.head()


def position(home: Home) -> int:
    with open_store(home) as store:
        return store.position("turns")


def test_immediate_mode_runs_catch_up_inline(home: Home) -> None:
    configure(home, immediate=True)
    head = append_turns(home, 5)
    assert enqueue_catch_up() == QUEUED
    assert position(home) == head


def test_a_locked_projection_is_left_to_the_lock_holder(home: Home) -> None:
    configure(home, immediate=True)
    append_turns(home, 3)
    with huey.lock_task("project.turns"):
        PROJECTION_TASKS["turns"]()
        assert position(home) == 0  # the holder will see these events
    PROJECTION_TASKS["turns"]()
    assert position(home) == 3


def test_sqlite_queue_lives_in_the_home_and_coalesces(home: Home) -> None:
    configure(home)
    assert huey.storage_class is SqliteStorage and Path(huey.storage.filename) == home.queue_db
    huey.flush()
    assert enqueue_catch_up() == QUEUED
    assert enqueue_catch_up() == []  # one waiting catch-up per projection is enough
    assert huey.pending_count() == len(QUEUED)


# --- Redis ---------------------------------------------------------------------------------


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    server = shutil.which("redis-server")
    if server is None:
        if os.environ.get("CI"):
            pytest.fail("redis-server is missing: the set-up script installs it")
        pytest.skip("redis-server not installed (scripts/setup.sh installs it)")
    port = free_port()
    proc = subprocess.Popen(
        [server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--dir", str(tmp_path)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait(10)


def test_redis_url_from_env_selects_redis(home: Home, redis_url: str,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DIARIST_REDIS_URL", redis_url)
    configure(home)
    assert issubclass(huey.storage_class, RedisStorage)
    huey.flush()
    assert enqueue_catch_up() == QUEUED
    assert huey.pending_count() == len(QUEUED)
    assert not home.queue_db.exists()


def test_redis_from_config_and_a_real_worker(home: Home, redis_url: str, tmp_path: Path) -> None:
    home.config_file.write_text(f"queue:\n  redis_url: {redis_url}\n", encoding="utf-8")
    no_night(home)  # between 02:00 and 08:00 the worker would mine the import: more events
    worker = subprocess.Popen(diarist_cmd() + ["worker"], env=subprocess_env(home),
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        transcript = write_transcript(tmp_path / "t.jsonl", make_turns(20))
        subprocess.run(diarist_cmd() + ["import", str(transcript)], env=subprocess_env(home),
                       check=True, capture_output=True)
        with EventLog(home.events_db) as log:
            head = log.head()
        deadline = time.monotonic() + 30
        while position(home) < head and time.monotonic() < deadline:
            time.sleep(0.1)
        assert position(home) == head
        assert not home.queue_db.exists()  # the work went through Redis
    finally:
        stop_process(worker)

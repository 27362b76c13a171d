"""Maintenance (old journals archived, the queue pruned), `diarist status`, the schedule, and
mining a chat session when it ends."""
from __future__ import annotations

import datetime as dt
import re
import subprocess
from pathlib import Path

import pytest

from events import EventLog, Home, clock
from events.config import Config, MiningConfig, load_config
from events.types import MemoryForgotten, Remembered
from projections import open_store
from workers.app import configure, huey, mining_queue
from workers.maintenance.maintain import maintain
from workers.maintenance.queue import prune_queue
from workers.pass_lock import pass_lock
from workers.presence import hold_worker_lock
from workers.schedule import ended_sessions_to_mine, night_due, read_state, tick
from workers.sync.replay import verify
from workers.tasks import enqueue_catch_up, mine_extract_task

from .conftest import diarist_cmd, rules, run, subprocess_env

NOW = dt.datetime(2024, 6, 1, 12, tzinfo=dt.UTC)


def notes(home: Home, *days: str) -> list[str]:
    with EventLog(home.events_db) as log:
        return [log.append(Remembered(text=f"note of {day}"), stream="memory",
                           occurred_at=clock.from_iso(f"{day}T10:00:00Z")).id for day in days]


def test_journals_older_than_90_days_move_to_the_archive(home: Home) -> None:
    ids = notes(home, "2024-01-15", "2024-03-05", "2024-05-30")
    report = maintain(home, now=NOW)
    assert report.archived == ["2024-01-15"]  # 2024-03-05 is 88 days old
    memory = home.memory_dir
    assert not (memory / "2024-01-15.md").exists()
    assert "note of 2024-01-15" in (memory / "archive" / "2024-01-15.md").read_text()
    assert (memory / "2024-03-05.md").exists()
    assert "note of 2024-01-15" in run("journal", "2024-01-15").output  # still readable
    with EventLog(home.events_db) as log:
        [event] = log.read(types=["JournalArchived"])
    assert event.payload == {"date": "2024-01-15", "at": clock.to_iso(NOW),
                             "older_than_days": 90}
    assert maintain(home, now=NOW).archived == []  # once
    # a late entry for an archived day, and forgetting one, keep to the archive folder
    with EventLog(home.events_db) as log:
        log.append(Remembered(text="late note"), stream="memory",
                   occurred_at=clock.from_iso("2024-01-15T11:00:00Z"))
        log.append(MemoryForgotten(ids=[ids[0]], texts=["note of 2024-01-15"]), stream="memory")
    with open_store(home) as store:
        store.catch_up_all()
    archived = (memory / "archive" / "2024-01-15.md").read_text()
    assert "late note" in archived and "note of 2024-01-15" not in archived
    assert not (memory / "2024-01-15.md").exists()
    assert all(v.same for v in verify(home))
    before = {str(p.relative_to(memory)): p.read_text() for p in memory.rglob("*.md")}
    run("replay")
    assert {str(p.relative_to(memory)): p.read_text() for p in memory.rglob("*.md")} == before


def test_a_queue_without_a_worker_is_pruned(home: Home) -> None:
    configure(home)
    huey.flush()
    enqueue_catch_up()
    enqueue_catch_up()  # coalesced: still one each
    mining_queue.flush()
    mine_extract_task("old-pass", {"session": "s", "turns": []}, {})
    mine_extract_task("old-pass", {"session": "s", "turns": []}, {})
    mining_queue.put("mine:old-pass:s:1-2:claim", "x")
    assert (huey.pending_count(), mining_queue.pending_count()) == (9, 2)
    report = prune_queue(mining_queue, worker_running=True, mining_running=True)
    assert report.dropped == {"mine.extract": 1} and report.keys == 0  # the duplicate only
    report = prune_queue(mining_queue, worker_running=True, mining_running=False)
    assert report.dropped == {"mine.extract": 1} and report.keys == 1 and report.pending == 0
    with hold_worker_lock(home):  # a worker will run the catch-ups: kept
        assert prune_queue(huey, worker_running=True, mining_running=False).tasks == 0
    report = prune_queue(huey, worker_running=False, mining_running=False)
    assert report.tasks == 9 and report.pending == 0


def test_sync_leaves_no_catch_up_behind(home: Home) -> None:
    run("remember", "I like tea")  # queues catch-ups for a worker that is not there
    configure(home)
    assert huey.pending_count() > 0
    run("sync")
    configure(home)
    assert huey.pending_count() == 0


def test_maintain_command_and_status(home: Home) -> None:
    notes(home, "2020-01-01")
    out = run("maintain", "--dry-run").output
    assert "journals: would archive 1 (2020-01-01 … 2020-01-01)" in out
    out = run("maintain").output
    assert "journals: archived 1" in out and "queue:" in out
    status = run("status").output
    assert "mining: 0 sessions, 0 waiting to be mined" in status
    assert "memories: 1 active" in status
    assert re.search(r"archived journals \d+ B \(1 files\)", status) and "disk: log " in status


def test_two_maintenance_passes_never_run_at_once(home: Home) -> None:
    from workers.pass_lock import PassRunning

    with pass_lock(home, "maintain"), pytest.raises(PassRunning):
        maintain(home, now=NOW)


# --- the schedule ----------------------------------------------------------------------------


def local(hour: int, minute: int = 0, day: int = 2) -> dt.datetime:
    return dt.datetime(2024, 6, day, hour, minute).astimezone()


def test_the_night_is_due_once_between_its_time_and_six_hours_later() -> None:
    config = Config()
    assert not night_due(config, local(1, 59), None)
    assert night_due(config, local(2, 0), None)
    assert night_due(config, local(7, 59), "2024-06-01")
    assert not night_due(config, local(7, 59), "2024-06-02")  # done tonight
    assert not night_due(config, local(8, 0), None)          # too late: the next night
    late = Config(mining=MiningConfig(at="23:30"))
    assert night_due(late, local(1, 0, day=3), "2024-06-01")  # the window runs past midnight
    assert not night_due(Config(mining=MiningConfig(nightly=False)), local(3), None)


def test_tick_queues_the_night_once_and_maintenance_after_its_interval(home: Home) -> None:
    at = local(2, 30).astimezone(dt.UTC)
    assert tick(home, now=at) == ["night"]
    assert read_state(home)["night"] == "2024-06-02"
    assert tick(home, now=at + dt.timedelta(minutes=1)) == []
    assert tick(home, now=at + dt.timedelta(hours=6, minutes=1)) == ["maintenance"]
    home.config_file.write_text("mining:\n  nightly: false\nmaintenance:\n  enabled: false\n")
    assert tick(home, now=at + dt.timedelta(days=1)) == []


def test_config_is_validated(home: Home) -> None:
    home.config_file.write_text("mining:\n  at: 2:00\n")
    out = run("status", ok=False).output
    assert "`mining.at` must be a time of day \"HH:MM\" (24 h, quoted)" in out
    home.config_file.write_text("mining:\n  at: '03:15'\n  min_turns: 4\n"
                                "llm:\n  mining_model: qwen2.5-coder-1.5b\n")
    config = load_config(home)
    assert (config.mining.at, config.mining.min_turns, config.llm.mining_model) == (
        "03:15", 4, "qwen2.5-coder-1.5b")


# --- a chat session is mined when it ends ------------------------------------------------------


def chat(home: Home, tmp_path: Path, messages: int) -> str:
    script = rules(tmp_path, {"reply": "Noted."})
    lines = "".join(f"I love topic number {i}\n" for i in range(messages)) + "/exit\n"
    done = subprocess.run([*diarist_cmd(), "chat", "--backend", "scripted", "--script",
                           str(script), "--no-tools"], env=subprocess_env(home), input=lines,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stderr


def test_a_long_enough_chat_is_mined_when_it_ends(home: Home, tmp_path: Path) -> None:
    err = chat(home, tmp_path, 5)  # 10 turns: user and assistant
    assert "(memory: +5 mined, 0 reinforced)" in err
    with EventLog(home.events_db) as log:
        [mined] = log.read(types=["MemoriesMined"])
    assert mined.payload["model"] == "heuristic" and len(mined.payload["memories"]) == 5


def test_a_short_chat_waits_and_the_switch_turns_it_off(home: Home, tmp_path: Path) -> None:
    assert "mined" not in chat(home, tmp_path, 4)
    home.config_file.write_text("mining:\n  on_session_end: false\n")
    assert "mined" not in chat(home, tmp_path, 6)
    with EventLog(home.events_db) as log:
        assert log.read(types=["MemoriesMined"]) == []
    home.config_file.write_text("mining:\n  min_turns: 1\n")
    with open_store(home) as store:
        store.catch_up_all()
    now = clock.now()
    assert len(ended_sessions_to_mine(home, load_config(home), now)) == 2
    assert ended_sessions_to_mine(home, load_config(home), now + dt.timedelta(hours=2)) == []

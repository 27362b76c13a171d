"""Damaged, read-only and full homes (issue 14, items 6 and 7, "Fault injection").

- A garbage, half-truncated, deleted or in-the-middle overwritten ``projections.db`` is
  found by `diarist status` (which names it and says to run `diarist replay`), other
  commands fail naming the file and the fix, and `diarist replay` moves it aside and
  rebuilds it from the log, to the same digests as before the damage.
- Journal files and MEMORY.md edited or deleted by hand: status notices, replay rewrites.
- A read-only home (a read-only bind mount, or chmod a-w when not root): reading commands
  work, writing ones fail with one clear line, and nothing changes.
- A full disk (a size-limited tmpfs; and SQLITE_FULL injected, which always runs): the
  append fails with a clear message, nothing is written, the log stays valid.
"""
from __future__ import annotations

import random
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from events import EventLog, Home
from events.health import check_database
from projections import open_store

from .conftest import REPO, make_turns, run, run_cli, write_transcript
from .faults import fill, integrity, read_only, small_disk, snapshot

SAMPLE = REPO / "examples" / "sample-week.transcript.jsonl"


def digests(home: Home) -> dict[str, str]:
    with EventLog(home.events_db) as log, open_store(home, log) as store:
        return {name: store.digest(name) for name in store.projectors}


@pytest.fixture
def full_home(home: Home) -> Iterator[tuple[Home, dict[str, str]]]:
    """A week of chats imported, mined, dreamt, consolidated, with a note: journals and a
    MEMORY.md on disk; and its digests."""
    run("import", str(SAMPLE))
    run("remember", "I keep bees on the allotment")
    for command in ("mine", "dream", "consolidate"):
        run(command)
    run("sync")
    assert (home.memory_dir / "MEMORY.md").exists()
    assert len(list(home.memory_dir.glob("2026-*.md"))) >= 3
    yield home, digests(home)


def garbage(path: Path) -> None:
    path.write_bytes(random.Random(1).randbytes(path.stat().st_size))


def half(path: Path) -> None:
    with open(path, "r+b") as handle:
        handle.truncate(path.stat().st_size // 2)


def middle(path: Path) -> None:
    """Overwrite sixteen pages in the middle of the file with random bytes."""
    size, page = path.stat().st_size, 4096
    start = (size // page // 2) * page
    with open(path, "r+b") as handle:
        handle.seek(start)
        handle.write(random.Random(2).randbytes(16 * page))


DAMAGE = {"garbage": garbage, "half-truncated": half, "pages overwritten": middle}


@pytest.mark.parametrize("kind", sorted(DAMAGE))
def test_a_damaged_projections_db_is_found_named_and_rebuilt(
        full_home: tuple[Home, dict[str, str]], kind: str) -> None:
    home, before = full_home
    for suffix in ("-wal", "-shm"):  # a clean shutdown: everything is in the main file
        assert not Path(f"{home.projections_db}{suffix}").exists()
    DAMAGE[kind](home.projections_db)
    assert check_database(home.projections_db) is not None

    status = run("status")  # reports, does not fail
    assert f"projections: DAMAGED — {home.projections_db} is " in status.output
    with EventLog(home.events_db) as log:
        head = log.head()
    assert "Run `diarist replay`" in status.output and f"log: {head} events" in status.output
    failed = []
    for command in (["recall", "bees"], ["sync"], ["memory", "list"], ["memory", "forget", "x"]):
        result = run(*command, ok=False)
        if result.exit_code == 0 or "nothing to forget" in result.output:
            continue  # pages it did not need to read (only the middle case)
        failed.append(command[0])
        assert result.exit_code == 1, (command, result.output)
        assert f"Error: {home.projections_db} is " in result.output, (command, result.output)
        assert "Run `diarist replay`" in result.output and "Traceback" not in result.output
    assert "recall" in failed and (len(failed) == 4 or kind == "pages overwritten")

    with EventLog(home.events_db) as log:
        assert log.head() == head  # nothing was appended by the failed commands
    remembered = run("remember", "a note while it is damaged")  # an append still works
    assert f"memory is not up to date: {home.projections_db} is " in remembered.stderr
    with EventLog(home.events_db) as log:
        assert log.head() == head + 1

    replayed = run("replay")
    broken = [p for p in home.root.glob("projections.db.broken-*")
              if not p.name.endswith(("-wal", "-shm"))]
    assert len(broken) == 1 and f"moved it aside to {broken[0]}" in replayed.output
    assert check_database(home.projections_db) is None
    after = digests(home)
    assert after["turns"] == before["turns"] and after["long_term"] == before["long_term"]
    assert "a note while it is damaged" in run("recall", "note while damaged").output
    assert "bees" in run("recall", "bees").output
    assert "DAMAGED" not in run("status").output
    verify = run("replay", "--verify")
    assert "DIFFERS" not in verify.output


def test_a_deleted_projections_db_is_reported_and_rebuilt(
        full_home: tuple[Home, dict[str, str]]) -> None:
    home, before = full_home
    home.projections_db.unlink()
    status = run("status").output
    with EventLog(home.events_db) as log:
        head = log.head()
    assert "projections: projections.db is missing: run `diarist replay`" in status
    assert f"projection turns: position 0, lag {head}" in status
    assert not home.projections_db.exists()  # status writes nothing
    run("replay")
    assert digests(home) == before


def test_journal_and_memory_md_changed_by_hand_are_noticed_and_rewritten(
        full_home: tuple[Home, dict[str, str]]) -> None:
    home, before = full_home
    days = sorted(home.memory_dir.glob("2026-*.md"))
    days[0].write_text(days[0].read_text() + "- 12:00:00 [me] a line I added\n")
    days[1].unlink()
    (home.memory_dir / "MEMORY.md").unlink()
    (home.memory_dir / "2020-01-01.md").write_text("# Journal 2020-01-01\n")
    line = next(text for text in run("status").output.splitlines() if text.startswith("files:"))
    for name, what in ((days[0].name, "edited"), (days[1].name, "missing"),
                       ("MEMORY.md", "missing"), ("2020-01-01.md", "not from the log")):
        assert f"{name} {what}" in line
    assert "`diarist replay` rewrites them" in line
    assert run("replay", "--verify", ok=False).exit_code == 1
    run("replay")
    assert digests(home) == before
    assert not (home.memory_dir / "2020-01-01.md").exists()
    assert "files:" not in run("status").output


def test_status_measures_nothing_for_a_sound_home(full_home: tuple[Home, dict[str, str]]) -> None:
    home, _ = full_home
    out = run("status").output
    assert "quick_check ok" in out
    for word in ("DAMAGED", "stuck:", "stale:", "files:", "missing"):
        assert word not in out


def test_a_damaged_log_is_named_with_the_way_to_restore(full_home: tuple[Home, dict[str, str]],
                                                        tmp_path: Path) -> None:
    home, _ = full_home
    middle(home.events_db)
    status = run("status")
    assert f"log: DAMAGED — {home.events_db} is damaged" in status.output
    assert "restore it from a backup" in status.output
    result = run("events", ok=False)
    assert result.exit_code == 1 and f"{home.events_db} is damaged" in result.output


# --- a read-only home -----------------------------------------------------------------------


def test_a_read_only_home_reads_and_refuses_writes_clearly(
        full_home: tuple[Home, dict[str, str]], tmp_path: Path) -> None:
    home, _ = full_home
    before = snapshot(home.root)
    with read_only(home) as ro:
        reading = {
            ("status",): "(read-only: reading works, nothing can be written)",
            ("recall", "bees"): "bees",
            ("events", "-n", "3"): "LongTermRewritten",
            ("journal", "2026-03-02"): "# Journal 2026-03-02",
            ("memory", "list"): "active",
            ("export", "-o", str(tmp_path / "out.jsonl")): "Exported 58 turns",
            ("replay", "--verify"): "turns: ok",
        }
        for args, expected in reading.items():
            result = run_cli(ro, *args)
            assert result.returncode == 0, (args, result.stdout + result.stderr)
            assert expected in result.stdout + result.stderr, (args, result.stdout)
            assert "Traceback" not in result.stderr
        for args in (["remember", "x"], ["import", str(SAMPLE)], ["sync"], ["replay"],
                     ["mine"], ["memory", "forget", "bees"], ["dream"]):
            result = run_cli(ro, *args)
            assert result.returncode == 1, (args, result.stdout + result.stderr)
            first = result.stderr.splitlines()[0]
            assert first.startswith(f"Error: the home {ro.root} is read-only: cannot write"), (
                args, result.stderr)
            assert "Traceback" not in result.stderr
    assert snapshot(home.root) == before


def test_a_read_only_home_with_a_wal_left_behind_shows_the_latest_events(
        home: Home) -> None:
    """A home that became read-only while a writer had commits only in the WAL: the reader
    sees them (mode=ro reads the WAL; immutable would not)."""
    run("remember", "first note")
    with EventLog(home.events_db) as writer:
        writer.db.execute("PRAGMA wal_autocheckpoint=0")
        from events.types import Remembered

        writer.append(Remembered(text="only in the WAL"), stream="memory")
        assert Path(f"{home.events_db}-wal").stat().st_size > 0
        with read_only(home) as ro:
            result = run_cli(ro, "events", "-n", "5")
        assert result.returncode == 0, result.stderr
        assert "only in the WAL" in result.stdout


# --- a full disk ----------------------------------------------------------------------------


def assert_disk_full(result: subprocess.CompletedProcess[str]) -> None:
    assert result.returncode == 1, result.stdout + result.stderr
    first = result.stderr.splitlines()[0]
    assert first.startswith("Error: disk full: cannot write"), result.stderr
    assert first.endswith("free space and retry; nothing was written")
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("open_reader", [False, True], ids=["at open", "mid-append"])
def test_a_full_disk_fails_the_append_clearly_and_leaves_the_log_valid(
        tmp_path: Path, open_reader: bool) -> None:
    """A size-limited tmpfs filled up. With no other connection, SQLite cannot even open the
    log (its ``-shm`` cannot grow); with one open (a running worker or chat), the append
    itself hits SQLITE_FULL and is rolled back. Either way: one clear line, nothing written,
    the log sound, and the same command works once there is room."""
    with small_disk(tmp_path / "disk", "3m") as disk:
        home = Home(disk / "var")
        assert run_cli(home, "import", str(SAMPLE)).returncode == 0
        assert run_cli(home, "sync").returncode == 0
        reader = EventLog(home.events_db) if open_reader else None
        try:
            with EventLog(home.events_db) as log:
                count = log.count()
            filler = fill(disk)
            late = write_transcript(tmp_path / "late.jsonl", make_turns(200, session="late"))
            assert_disk_full(run_cli(home, "remember", "a note that does not fit " * 200))
            assert_disk_full(run_cli(home, "import", str(late)))
            status = run_cli(home, "status")
            assert status.returncode == 0 and "disk: FULL" in status.stdout, status.stderr
            filler.unlink()  # (SQLite cannot even open a WAL database on a full tmpfs)
            assert integrity(home.events_db) == "ok"
            with EventLog(home.events_db) as log:
                assert log.count() == count
            assert run_cli(home, "remember", "now it fits").returncode == 0
            assert run_cli(home, "import", str(late)).returncode == 0
            with EventLog(home.events_db) as log:
                assert log.count() == count + 1 + 202
            assert integrity(home.events_db) == "ok"
        finally:
            if reader is not None:
                reader.close()


def test_sqlite_full_is_a_clear_error_and_nothing_is_appended(
        home: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same path without a mount: SQLITE_FULL injected by capping the log's pages."""
    run("remember", "before")
    import events.log

    real = events.log.connect

    def capped(path: Path | str, **kwargs: object) -> sqlite3.Connection:
        db = real(path, **kwargs)  # type: ignore[arg-type]
        if Path(path).name == "events.db":
            pages = db.execute("PRAGMA page_count").fetchone()[0]
            db.execute(f"PRAGMA max_page_count = {pages}")
        return db

    monkeypatch.setattr(events.log, "connect", capped)
    with EventLog(home.events_db) as log:
        count = log.count()
    result = run("remember", "x" * 50_000, ok=False)
    assert result.exit_code == 1
    assert "Error: disk full: cannot write" in result.output and "events.db" in result.output
    assert "nothing was written" in result.output
    monkeypatch.undo()
    with EventLog(home.events_db) as log:
        assert log.count() == count
    assert integrity(home.events_db) == "ok"
    shutil.rmtree(home.root / "memory", ignore_errors=True)

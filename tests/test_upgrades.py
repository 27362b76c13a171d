"""Upgrades (issue 14): a home written by an older diarist opens, is backed up, migrates and
replays to the same digests; one written by a newer diarist is refused and left untouched.

``tests/fixtures/home-v1`` is a home as schema 1 wrote it (scripts/make_home_fixture.py):
its log and the digests replaying it gave. It is never regenerated."""
from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from events import EventLog, Home
from events.log import migrations
from projections import open_store

from .conftest import REPO, run, run_cli
from .faults import integrity, snapshot

FIXTURES = REPO / "tests" / "fixtures"
V1 = FIXTURES / "home-v1"


def fixture_home(home: Home, source: Path = V1) -> dict:
    """Copy a fixture's log into ``home``; returns what the fixture says about it."""
    home.ensure()
    shutil.copyfile(source / "events.db", home.events_db)
    return json.loads((source / "digests.json").read_text(encoding="utf-8"))


def table(path: Path, sql: str) -> list[tuple]:
    db = sqlite3.connect(path)
    try:
        return db.execute(sql).fetchall()
    finally:
        db.close()


def test_the_schema_1_home_opens_and_replays_to_the_same_digests(home: Home) -> None:
    """The fixture was written before the redaction permit (migration 2): opening it is a
    real upgrade — backed up first, then migrated — and its memory is what it was."""
    recorded = fixture_home(home)
    assert recorded["schema_version"] == 1
    original = home.events_db.read_bytes()
    replayed = run("replay")
    assert f"turns: rebuilt to {recorded['head']}" in replayed.output
    with EventLog(home.events_db) as log, open_store(home, log) as store:
        assert log.count() == recorded["events"]
        assert all(event.problem is None for event in log.iter_all())  # every row still reads
        compared = 0
        for name, then in recorded["projections"].items():
            if store.projectors[name].version != then["version"]:
                continue  # a projection whose output changed on purpose (version bumped)
            assert store.digest(name) == then["digest"], name
            compared += 1
    # half of its 8 projections are still at the fixture's version (long_term's refs of
    # its lines, version 2, rebuild it: the fixture's rewrite has none)
    assert compared >= 4
    backups = list((home.root / "backups").glob("events-v1-*.db"))
    assert len(backups) == 1  # taken before migrating, once
    assert table(backups[0], "PRAGMA user_version") == [(1,)]
    assert table(backups[0], "SELECT COUNT(*) FROM events") == [(recorded["events"],)]
    assert table(home.events_db, "PRAGMA user_version")[0][0] >= 2
    assert home.events_db.read_bytes() != original
    assert "DIFFERS" not in run("replay", "--verify").output


def test_a_home_from_before_user_version_was_kept_opens_as_schema_1(home: Home) -> None:
    """Homes written before the schema version was kept in the file's header have 0 there:
    their `_migrations` table says which schema they are."""
    fixture_home(home)
    db = sqlite3.connect(home.events_db)
    db.execute("PRAGMA user_version = 0")
    db.commit()
    db.close()
    run("events", "-n", "1")
    # read as schema 1 (not as an empty log), so upgraded from 1 like any schema-1 home
    assert table(home.events_db, "PRAGMA user_version") == [(migrations.version,)]
    assert len(list((home.root / "backups").glob("events-v1-*.db"))) == 1


@pytest.fixture
def version_2() -> Iterator[list[str]]:
    """This diarist, one schema later: a migration step added (an index). (The fixture is
    schema 1; today's steps and this one are applied to it.)"""
    calls: list[str] = []

    @migrations()
    def m002_events_by_stream(db: sqlite3.Connection) -> None:
        calls.append("m002")
        db.execute("CREATE INDEX events_stream ON events (stream, seq)")

    try:
        yield calls
    finally:
        migrations._steps.remove(("m002_events_by_stream", m002_events_by_stream))


def test_an_older_home_is_backed_up_then_migrated_on_first_use(home: Home,
                                                              version_2: list[str]) -> None:
    today = [name for name, _ in migrations._steps]
    recorded = fixture_home(home)
    original = (V1 / "events.db").read_bytes()
    rows = table(V1 / "events.db", "SELECT * FROM events ORDER BY seq")

    result = run("status")
    assert "log: 80 events" in result.output
    assert version_2 == ["m002"]
    backups = list((home.root / "backups").glob("events-v1-*.db"))
    assert len(backups) == 1
    backup = backups[0]
    # the backup is the log as it was, before the migration: schema 1, every event
    assert integrity(backup) == "ok"
    assert table(backup, "SELECT name FROM _migrations") == [("m001_events",)]
    assert table(backup, "PRAGMA user_version") == [(1,)]
    assert table(backup, "SELECT * FROM events ORDER BY seq") == rows
    assert not Path(f"{backup}-wal").exists()  # one self-contained file
    # the live log is migrated
    assert table(home.events_db, "SELECT name FROM _migrations ORDER BY rowid") == [
        (name,) for name in today]
    assert today[-1] == "m002_events_by_stream" and migrations.version == len(today)
    assert table(home.events_db, "PRAGMA user_version") == [(len(today),)]
    assert table(home.events_db, "SELECT name FROM sqlite_master WHERE name = 'events_stream'")
    assert table(home.events_db, "SELECT * FROM events ORDER BY seq") == rows
    # replayed, the memory is what it was (projections whose version was not bumped on purpose)
    run("replay")
    with open_store(home) as store:
        same = [name for name, then in recorded["projections"].items()
                if store.projectors[name].version == then["version"]]
        assert len(same) >= 4
        for name in same:
            assert store.digest(name) == recorded["projections"][name]["digest"], name
        store.log.close()
    # and used: nothing migrates twice, nothing is backed up twice
    run("remember", "after the upgrade")
    run("replay")
    assert version_2 == ["m002"] and len(list((home.root / "backups").iterdir())) == 1
    assert original == (V1 / "events.db").read_bytes()  # the fixture itself untouched


def test_a_migration_that_fails_changes_nothing_and_says_where_the_backup_is(
        home: Home) -> None:
    fixture_home(home)

    @migrations()
    def m002_broken(db: sqlite3.Connection) -> None:
        db.execute("CREATE INDEX half_done ON events (type)")
        raise RuntimeError("this step has a bug")

    steps = list(migrations._steps)
    try:
        rows = table(home.events_db, "SELECT * FROM events ORDER BY seq")
        result = run("events", ok=False)
    finally:
        migrations._steps.remove(("m002_broken", m002_broken))
    assert result.exit_code == 1
    assert f"upgrading the log to schema {len(steps)} failed at m002_broken (RuntimeError: " \
        "this step has a bug)" in result.output
    assert "the log was not changed" in result.output and "backups/events-v1-" in result.output
    # the steps before the broken one are applied (each in its own transaction); the broken
    # one left nothing behind
    assert table(home.events_db, "SELECT name FROM _migrations ORDER BY rowid") == [
        (name,) for name, _ in steps[:-1]]
    assert not table(home.events_db, "SELECT name FROM sqlite_master WHERE name='half_done'")
    assert table(home.events_db, "SELECT * FROM events ORDER BY seq") == rows
    assert run("events", "-n", "1").exit_code == 0  # this diarist still reads it as it was


@pytest.mark.parametrize("how", ["user_version", "unknown migration"])
def test_a_home_from_a_newer_diarist_is_refused_and_not_modified(home: Home, how: str) -> None:
    fixture_home(home)
    db = sqlite3.connect(home.events_db)
    if how == "user_version":
        db.execute("PRAGMA user_version = 7")
    else:
        db.execute("INSERT INTO _migrations VALUES ('events', 'm002_from_the_future', 'x')")
        db.execute("PRAGMA user_version = 2")
    db.commit()
    db.close()
    found = 7 if how == "user_version" else 2
    before = snapshot(home.root)
    for args in (["status"], ["events"], ["remember", "x"], ["sync"], ["replay"],
                 ["import", str(REPO / "examples" / "sample-week.transcript.jsonl")]):
        result = run_cli(home, *args)
        assert result.returncode == 1, (args, result.stdout)
        assert result.stderr.startswith(
            f"Error: this home was written by a newer diarist (schema {found}, this one knows "
            f"{migrations.version}): upgrade diarist"), (args, result.stderr)
        assert "Traceback" not in result.stderr
    assert snapshot(home.root) == before  # not a byte, not a timestamp
    assert not home.projections_db.exists()

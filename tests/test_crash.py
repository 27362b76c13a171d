"""kill -9 safety: a SIGKILLed `diarist sync` or `diarist import` loses nothing and doubles
nothing (DESIGN.md, principle 7). Real processes, real SQLite files, no mocks."""
from __future__ import annotations

import random
import shutil
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from events import EventLog, Home
from events.log import NewEvent
from events.transcript import import_file
from events.types import TURN_TYPES, FactsExtracted, Remembered
from projections import all_projectors, open_store

from .conftest import diarist_cmd, make_turns, run_cli, subprocess_env, write_transcript
from .faults import Tally, checkpoint, fault_runs, kill9, kill_and_restart

SYNC_TURNS = 2_000           # long texts: sync takes seconds (kills land mid-sync)
SYNC_NOTES = 600             # Remembered + FactsExtracted events over 30 days: journal files
SYNC_WORDS = 100
SYNC_BATCH = 200
IMPORT_TURNS = 50_000
SEED = 20240101


# --- helpers --------------------------------------------------------------------------------


def wordy_turns(n: int, sessions: int, words: int, seed: int) -> list[dict]:
    """``n`` turns over ``sessions`` sessions, each ~``words`` words from a seeded vocabulary."""
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(4000)] + ["memory", "diary", "garden", "python", "river"]
    pool = rng.choices(vocab, k=n + words)
    return [
        {"session": f"s{i % sessions}", "at": f"2024-01-01T{i // 3600 % 24:02d}:"
         f"{i // 60 % 60:02d}:{i % 60:02d}Z", "role": "user" if i % 2 == 0 else "assistant",
         "name": "Ann" if i % 2 == 0 else "Bot",
         "text": f"turn {i}: " + " ".join(pool[i:i + words]), "ref": f"w:{i}"}
        for i in range(n)
    ]


def notes(n: int, seed: int) -> list[NewEvent]:
    """Journal material: notes and extracted facts spread over 30 days."""
    import datetime as dt

    rng = random.Random(seed)
    out = []
    for i in range(n):
        at = dt.datetime(2024, 2, 1, tzinfo=dt.UTC) + dt.timedelta(hours=rng.randrange(720))
        if i % 2:
            data = Remembered(text=f"note {i} about the garden river {rng.random():.6f}")
        else:
            data = FactsExtracted(from_events=[], facts=[f"fact {i}a", f"fact {i}b"],
                                  refs=[f"w:{i}"])
        out.append(NewEvent(stream="memory", data=data, occurred_at=at))
    return out


def all_positions(home: Home) -> int:
    """The sum of every projection's stored position."""
    if not home.projections_db.exists():
        return 0
    db = sqlite3.connect(home.projections_db)
    try:
        return db.execute("SELECT COALESCE(SUM(position), 0) FROM projection_state").fetchone()[0]
    except sqlite3.OperationalError:
        return 0
    finally:
        db.close()


def copy_log(template: Path, home: Home) -> None:
    home.ensure()
    for suffix in ("-wal", "-shm"):
        Path(f"{home.events_db}{suffix}").unlink(missing_ok=True)
    shutil.copyfile(template, home.events_db)


def sync_position(home: Home) -> int:
    """The turns projection's stored position (0 before the first committed batch)."""
    if not home.projections_db.exists():
        return 0
    db = sqlite3.connect(home.projections_db)
    try:
        row = db.execute("SELECT position FROM projection_state WHERE name = 'turns'").fetchone()
    except sqlite3.OperationalError:  # killed before the state table was created
        return 0
    finally:
        db.close()
    return row[0] if row else 0


def turn_event_count(log: EventLog, upto: int | None = None) -> int:
    names = sorted(TURN_TYPES)
    sql = f"SELECT COUNT(*) FROM events WHERE type IN ({','.join('?' * len(names))})"
    args: list = list(names)
    if upto is not None:
        sql += " AND seq <= ?"
        args.append(upto)
    return log.db.execute(sql, args).fetchone()[0]


def assert_turns_consistent(home: Home, log: EventLog, position: int) -> None:
    """The turns table holds exactly the turn events up to the stored position."""
    db = sqlite3.connect(home.projections_db)
    try:
        rows, top, distinct = db.execute(
            "SELECT COUNT(*), COALESCE(MAX(seq), 0), COUNT(DISTINCT event_id) FROM turns"
        ).fetchone()
    except sqlite3.OperationalError:
        rows, top, distinct = 0, 0, 0
    finally:
        db.close()
    assert rows == distinct == turn_event_count(log, upto=position)
    assert top <= position


def fts_content_check(db: sqlite3.Connection) -> None:
    """FTS5 integrity check that also compares the index with the external content table
    (the plain form only checks the index's own structure)."""
    db.execute("INSERT INTO turns_fts (turns_fts, rank) VALUES ('integrity-check', 1)")
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


# --- fixtures -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def big_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An ``events.db`` with ~25k events (a wordy transcript imported once), WAL folded in."""
    root = tmp_path_factory.mktemp("big-log")
    transcript = write_transcript(root / "wordy.jsonl",
                                  wordy_turns(SYNC_TURNS, 50, SYNC_WORDS, SEED))
    with EventLog(root / "events.db") as log:
        result = import_file(log, transcript)
        log.append_many(notes(SYNC_NOTES, SEED))
    assert result.turns == SYNC_TURNS
    checkpoint(root / "events.db")
    return root / "events.db"


# --- sync -----------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.soak
def test_sync_killed_repeatedly_converges_to_the_reference(big_log: Path, home: Home,
                                                            tmp_path: Path) -> None:
    copy_log(big_log, home)
    reference = Home(tmp_path / "reference")
    copy_log(big_log, reference)
    names = [p.name for p in all_projectors()]
    with open_store(reference) as ref_store:
        ref_store.catch_up_all()
        ref_digests = {name: ref_store.digest(name) for name in names}
        ref_digest = ref_digests["turns"]
        ref_rows = ref_store.db.execute("SELECT * FROM turns ORDER BY seq").fetchall()
        ref_store.log.close()

    rng = random.Random(SEED)
    totals: list[int] = []
    tally = Tally("sync, repeatedly (test_crash)")
    with EventLog(home.events_db) as log:
        head = log.head()
        for _ in range(fault_runs(7)):
            # kill once this run has made progress (whatever the machine's load), somewhere
            # in the next second of its work
            start = all_positions(home)
            killed = kill_and_restart(
                home, ["sync", "--batch-size", str(SYNC_BATCH)], rng, delay=(0.0, 1.0),
                ready=lambda start=start: all_positions(home) > start, restart=[])
            totals.append(all_positions(home))
            tally.add(killed.landed)
            assert killed.landed or totals[-1] == head * len(names)
            assert_turns_consistent(home, log, sync_position(home))  # output and position
            if totals[-1] == head * len(names):                      # move together
                break
        assert any(0 < t < head * len(names) for t in totals), (
            f"no kill landed mid-sync (positions {totals}, head {head} x {len(names)}); "
            "make the dataset larger or the batches smaller")
        tally.done()

        done = run_cli(home, "sync", "--batch-size", str(SYNC_BATCH))
        assert done.returncode == 0, done.stderr

        with open_store(home, log) as store:
            assert store.position("turns") == head
            assert store.digest("turns") == ref_digest
            assert {name: store.digest(name) for name in names} == ref_digests
            assert len(list(home.memory_dir.glob("2024-*.md"))) == 30
            rows = store.db.execute("SELECT * FROM turns ORDER BY seq").fetchall()
            assert len(rows) == turn_event_count(log) == SYNC_TURNS  # nothing applied twice
            assert rows == ref_rows
            fts_content_check(store.db)
            store.check("turns")

    verify = run_cli(home, "replay", "--verify")
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert "turns: ok" in verify.stdout and "DIFFERS" not in verify.stdout


# --- import ---------------------------------------------------------------------------------


def wal_size(home: Home) -> int:
    try:
        return Path(f"{home.events_db}-wal").stat().st_size
    except FileNotFoundError:
        return 0


def refs_of(log: EventLog, prefix: str) -> tuple[int, int]:
    """(events whose ref starts with ``prefix``, distinct such refs)."""
    return log.db.execute(
        "SELECT COUNT(*), COUNT(DISTINCT json_extract(meta, '$.ref')) FROM events"
        " WHERE json_extract(meta, '$.ref') LIKE ?", (prefix + "%",),
    ).fetchone()


def assert_no_seq_gaps(log: EventLog) -> None:
    count, low, high = log.db.execute(
        "SELECT COUNT(*), MIN(seq), MAX(seq) FROM events").fetchone()
    assert (low, high) == (1, count)


@pytest.mark.slow
@pytest.mark.soak
def test_import_killed_mid_transaction_is_all_or_nothing(home: Home, tmp_path: Path) -> None:
    small = write_transcript(tmp_path / "small.jsonl", make_turns(50, session="before"))
    assert run_cli(home, "import", str(small)).returncode == 0
    sessions = [f"big{k}" for k in range(5)]
    big_turns = [t for s in sessions for t in make_turns(IMPORT_TURNS // 5, session=s, prefix="b")]
    big = write_transcript(tmp_path / "big.jsonl", big_turns)
    with EventLog(home.events_db) as log:
        before = log.count()

    rng = random.Random(SEED)
    baseline = wal_size(home)
    proc = subprocess.Popen([*diarist_cmd(), "import", str(big)], env=subprocess_env(home),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    # Wait until the append transaction is spilling pages into the WAL, then kill at a random
    # moment inside it.
    deadline = time.monotonic() + 60
    while wal_size(home) < baseline + 1_000_000 and proc.poll() is None:
        assert time.monotonic() < deadline, "the import never started writing"
        time.sleep(0.01)
    time.sleep(rng.uniform(0.0, 1.5))
    early = kill9(proc)
    stderr = proc.stderr.read() if proc.stderr else b""
    proc.stderr.close()
    assert early is None, f"the import finished (exit {early}) before the kill: {stderr!r}"

    with EventLog(home.events_db) as log:
        big_events = log.db.execute(
            f"SELECT COUNT(*) FROM events WHERE stream IN ({','.join('?' * len(sessions))})",
            sessions).fetchone()[0]
        turns, _ = refs_of(log, "b:")
        assert (turns, big_events) in {(0, 0), (IMPORT_TURNS, IMPORT_TURNS + 2 * len(sessions))}
        assert log.count() in {before, before + IMPORT_TURNS + 2 * len(sessions)}
        assert refs_of(log, "t:") == (50, 50)
        assert_no_seq_gaps(log)
        assert log.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"

    again = run_cli(home, "import", str(big))
    assert again.returncode == 0, again.stderr
    with EventLog(home.events_db) as log:
        assert refs_of(log, "b:") == (IMPORT_TURNS, IMPORT_TURNS)  # exactly one copy
        for session in sessions:
            versions = [v for (v,) in log.db.execute(
                "SELECT stream_version FROM events WHERE stream = ? ORDER BY seq", (session,))]
            assert versions == list(range(1, IMPORT_TURNS // 5 + 3))
        assert log.count() == before + IMPORT_TURNS + 2 * len(sessions)
        assert_no_seq_gaps(log)

    third = run_cli(home, "import", str(big))
    assert third.returncode == 0, third.stderr
    assert "0 events appended" in third.stdout


def test_verify_sees_an_index_entry_applied_twice(home: Home, tmp_path: Path) -> None:
    """The oracle above can see a double apply that leaves the ``turns`` rows (and so the
    digest) intact: a second FTS entry for one turn fails `replay --verify`."""
    transcript = write_transcript(tmp_path / "t.jsonl", make_turns(40))
    assert run_cli(home, "import", str(transcript)).returncode == 0
    assert run_cli(home, "sync").returncode == 0
    db = sqlite3.connect(home.projections_db)
    try:
        db.execute("INSERT INTO turns_fts (rowid, text, name) SELECT seq, text, name FROM turns"
                   " WHERE seq = (SELECT MIN(seq) FROM turns)")
        db.commit()
        with pytest.raises(sqlite3.DatabaseError):
            fts_content_check(db)
    finally:
        db.close()
    verify = run_cli(home, "replay", "--verify")
    assert verify.returncode == 1
    assert "turns: DIFFERS at 42" in verify.stdout and "consistency check failed" in verify.stdout

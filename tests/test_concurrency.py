"""Several processes on one home at once: appends, imports, syncs and a real worker.

Real processes and real SQLite files, no mocks. Processes that must overlap wait on a
"go" file after start-up (a cross-process barrier), so they race on the log itself rather
than on interpreter start-up.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from events import ConcurrencyError, EventLog, Home
from events.transcript import import_file
from events.types import TURN_TYPES, UserTurn
from projections import all_projectors, open_store
from projections.engine import ProjectionStore

from .conftest import (
    diarist_cmd,
    make_turns,
    run_cli,
    stop_process,
    subprocess_env,
    write_transcript,
)

APPENDS = 300

# argv: events.db, go-file, stream, count, who, expected_version ("none" or an int)
WRITER = textwrap.dedent("""
    import json, os, random, sys, time
    from events import ConcurrencyError, EventLog
    from events.types import UserTurn
    path, go, stream, count, who, expected = sys.argv[1:7]
    log = EventLog(path)
    print("ready", flush=True)
    while not os.path.exists(go):
        time.sleep(0.001)
    seqs, conflicts = [], 0
    for i in range(int(count)):
        options = {} if expected == "none" else {"expected_version": int(expected)}
        try:
            event = log.append(UserTurn(session=stream, text=f"{who} {i}"), stream=stream,
                               **options)
        except ConcurrencyError:
            conflicts += 1
            continue
        seqs.append(event.seq)
        time.sleep(random.uniform(0, 0.002))  # a real writer pauses; lets the other one in
    log.close()
    print(json.dumps({"seqs": seqs, "conflicts": conflicts}), flush=True)
""")


# --- helpers --------------------------------------------------------------------------------


def start_writers(home: Home, tmp_path: Path, specs: list[tuple[str, int, str, str]]
                  ) -> list[dict]:
    """Start one writer process per (stream, count, who, expected), release them together,
    return each one's result."""
    go = tmp_path / "go"
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(home.events_db), str(go), stream,
                          str(count), who, expected],
                         env=subprocess_env(home), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
        for stream, count, who, expected in specs
    ]
    try:
        for proc in procs:  # every writer has opened the log (and run migrations)
            assert proc.stdout is not None
            ready = proc.stdout.readline().strip()
            assert ready == "ready", proc.stderr.read() if proc.stderr else ""
        go.touch()
        results = []
        for proc in procs:
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err
            results.append(json.loads(out.strip().splitlines()[-1]))
        return results
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def assert_log_invariants(log: EventLog) -> None:
    """seq is 1..N without gaps, ids are unique, and each stream's versions are 1..n in
    seq order."""
    count, low, high, ids = log.db.execute(
        "SELECT COUNT(*), MIN(seq), MAX(seq), COUNT(DISTINCT id) FROM events").fetchone()
    assert (low, high, ids) == (1, count, count)
    for stream, n in log.streams():
        versions = [v for (v,) in log.db.execute(
            "SELECT stream_version FROM events WHERE stream = ? ORDER BY seq", (stream,))]
        assert versions == list(range(1, n + 1)), stream


def run_together(home: Home, *commands: list[str], timeout: float = 120
                 ) -> list[tuple[int, str, str]]:
    """Start the CLI commands at once; (exit code, stdout, stderr) of each."""
    procs = [subprocess.Popen([*diarist_cmd(), *args], env=subprocess_env(home),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for args in commands]
    results = []
    try:
        for proc in procs:
            out, err = proc.communicate(timeout=timeout)
            results.append((proc.returncode, out, err))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return results


def ref_counts(log: EventLog) -> Counter[str]:
    return Counter(ref for (ref,) in log.db.execute(
        "SELECT json_extract(meta, '$.ref') FROM events"
        " WHERE json_extract(meta, '$.ref') IS NOT NULL"))


def turn_event_count(log: EventLog) -> int:
    names = sorted(TURN_TYPES)
    return log.db.execute(
        f"SELECT COUNT(*) FROM events WHERE type IN ({','.join('?' * len(names))})", names,
    ).fetchone()[0]


def turns_rows(store: ProjectionStore) -> tuple[int, int]:
    return store.db.execute("SELECT COUNT(*), COUNT(DISTINCT event_id) FROM turns").fetchone()


# --- appends --------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("streams", [("alpha", "beta"), ("shared", "shared")],
                         ids=["distinct-streams", "same-stream"])
def test_two_processes_appending_at_once(home: Home, tmp_path: Path,
                                         streams: tuple[str, str]) -> None:
    results = start_writers(home, tmp_path, [(streams[0], APPENDS, "A", "none"),
                                             (streams[1], APPENDS, "B", "none")])
    assert [len(r["seqs"]) for r in results] == [APPENDS, APPENDS]
    first, second = results[0]["seqs"], results[1]["seqs"]
    assert not set(first) & set(second)
    # they really ran at the same time: their appends interleave
    assert min(first) < max(second) and min(second) < max(first), (first, second)
    with EventLog(home.events_db) as log:
        assert log.count() == 2 * APPENDS
        assert_log_invariants(log)
        # each writer's events are in its own order
        for who, result in zip("AB", results, strict=True):
            texts = [e.payload["text"] for e in log.read() if e.seq in set(result["seqs"])]
            assert texts == [f"{who} {i}" for i in range(APPENDS)]
        if streams[0] == streams[1]:
            assert log.stream_version("shared") == 2 * APPENDS


def test_many_connections_opening_a_fresh_log_at_once(tmp_path: Path) -> None:
    """Opening a new events.db switches it to WAL; SQLite answers a concurrent switch with
    an immediate "database is locked" (no busy handler), which must not reach the caller."""
    for round_ in range(60):
        path = tmp_path / f"r{round_}" / "events.db"
        path.parent.mkdir()
        barrier = threading.Barrier(8)
        errors: list[BaseException] = []

        def open_log(barrier: threading.Barrier = barrier, path: Path = path,
                     errors: list[BaseException] = errors) -> None:
            barrier.wait()
            try:
                EventLog(path).close()
            except BaseException as exc:  # collected for the assertion
                errors.append(exc)

        threads = [threading.Thread(target=open_log) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        with EventLog(path) as log:
            assert log.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_same_expected_version_from_two_processes_one_wins(home: Home, tmp_path: Path) -> None:
    with EventLog(home.events_db) as log:
        for i in range(3):
            log.append(UserTurn(session="s", text=f"before {i}"), stream="s")
    results = start_writers(home, tmp_path, [("s", 1, "A", "3"), ("s", 1, "B", "3")])
    assert sorted(len(r["seqs"]) for r in results) == [0, 1]
    assert sorted(r["conflicts"] for r in results) == [0, 1]
    with EventLog(home.events_db) as log:
        assert log.stream_version("s") == 4
        assert_log_invariants(log)


def test_same_expected_version_from_two_connections_one_wins(home: Home) -> None:
    with EventLog(home.events_db) as first, EventLog(home.events_db) as second:
        first.append(UserTurn(session="s", text="start"), stream="s")
        assert first.stream_version("s") == second.stream_version("s") == 1
        first.append(UserTurn(session="s", text="first"), stream="s", expected_version=1)
        with pytest.raises(ConcurrencyError, match="at version 2, expected 1"):
            second.append(UserTurn(session="s", text="second"), stream="s", expected_version=1)
        assert [e.payload["text"] for e in second.read(stream="s")] == ["start", "first"]
        assert_log_invariants(second)


# --- imports --------------------------------------------------------------------------------


@pytest.mark.slow
def test_two_imports_of_different_files_at_once(home: Home, tmp_path: Path) -> None:
    def transcript(prefix: str) -> Path:
        turns = (make_turns(2000, session=f"{prefix}1", prefix=prefix)
                 + make_turns(1000, session=f"{prefix}2", prefix=prefix))
        return write_transcript(tmp_path / f"{prefix}.jsonl", turns)

    a, b = transcript("a"), transcript("b")
    results = run_together(home, ["import", str(a)], ["import", str(b)])
    for code, out, err in results:
        assert code == 0, err
        assert "3000 turns in 2 sessions; 3004 events appended, 0 already" in out
    with EventLog(home.events_db) as log:
        refs = ref_counts(log)
        assert len(refs) == 6000 and set(refs.values()) == {1}
        assert log.count() == 6008
        assert_log_invariants(log)
        for prefix in ("a", "b"):  # each import is one transaction: one contiguous block
            low, high, n = log.db.execute(
                "SELECT MIN(seq), MAX(seq), COUNT(*) FROM events WHERE stream LIKE ?",
                (prefix + "%",)).fetchone()
            assert high - low + 1 == n == 3004


@pytest.mark.slow
def test_two_imports_of_the_same_file_at_once(home: Home, tmp_path: Path) -> None:
    path = write_transcript(tmp_path / "same.jsonl",
                            make_turns(2000, session="x") + make_turns(1000, session="y"))
    results = run_together(home, ["import", str(path)], ["import", str(path)])
    assert [code for code, _, _ in results] == [0, 0], [err for _, _, err in results]
    appended = sorted(int(re.search(r"(\d+) events appended", out).group(1))
                      for _, out, _ in results)
    assert appended == [0, 3004]
    with EventLog(home.events_db) as log:
        refs = ref_counts(log)
        assert len(refs) == 3000 and set(refs.values()) == {1}
        assert log.count() == 3004
        assert_log_invariants(log)


# --- projections ----------------------------------------------------------------------------


@pytest.mark.slow
def test_two_syncs_at_once_apply_each_event_once(home: Home, tmp_path: Path) -> None:
    turns = [t for s in range(20) for t in make_turns(1000, session=f"s{s}")]
    with EventLog(home.events_db) as log:
        import_file(log, write_transcript(tmp_path / "t.jsonl", turns))
        head = log.head()
    assert head == 20_040

    results = run_together(home, ["sync", "--batch-size", "100"], ["sync", "--batch-size", "100"])
    moved = []
    for code, out, err in results:
        assert code == 0, err
        match = re.search(r"turns: at (\d+) \(\+(\d+)\)", out)
        assert match and int(match.group(1)) == head, out
        moved.append(int(match.group(2)))
    assert sum(moved) == head  # the two processes split the log between them, no overlap

    with EventLog(home.events_db) as log, open_store(home, log) as store:
        assert store.position("turns") == head
        assert turns_rows(store) == (turn_event_count(log),) * 2 == (20_000, 20_000)
        store.db.execute("INSERT INTO turns_fts (turns_fts, rank) VALUES ('integrity-check', 1)")
        store.check("turns")
        with ProjectionStore(Home(tmp_path / "scratch"), log, all_projectors()) as clean:
            clean.rebuild("turns", upto=head)
            assert clean.digest("turns") == store.digest("turns")

    verify = run_cli(home, "replay", "--verify")
    assert verify.returncode == 0, verify.stdout + verify.stderr


@pytest.mark.slow
def test_a_real_worker_catches_up_after_an_import(home: Home, tmp_path: Path) -> None:
    worker = subprocess.Popen([*diarist_cmd(), "worker"], env=subprocess_env(home),
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        transcript = write_transcript(tmp_path / "t.jsonl",
                                      make_turns(500, session="w1") + make_turns(500, session="w2"))
        imported = run_cli(home, "import", str(transcript))
        assert imported.returncode == 0, imported.stderr
        with EventLog(home.events_db) as log:
            head = log.head()
        assert head == 1004

        def position() -> int:
            with EventLog(home.events_db) as log, open_store(home, log) as store:
                return store.position("turns")

        deadline = time.monotonic() + 30
        while position() < head and time.monotonic() < deadline:
            assert worker.poll() is None, "the worker exited early"
            time.sleep(0.1)
        assert position() == head
        with EventLog(home.events_db) as log, open_store(home, log) as store:
            assert turns_rows(store) == (1000, 1000)
    finally:
        stop_process(worker)
        if worker.stderr:
            worker.stderr.close()

"""Several processes on one home at once: appends, imports, syncs and a real worker.

Real processes and real SQLite files, no mocks. Processes that must overlap wait on a
"go" file after start-up (a cross-process barrier), so they race on the log itself rather
than on interpreter start-up.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from events import ConcurrencyError, EventLog, Home
from events.transcript import import_file
from events.types import TURN_TYPES, UserTurn
from projections import all_projectors, open_store
from projections.engine import ProjectionStore
from workers.presence import worker_present

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
    turns = [t for s in range(8) for t in make_turns(1000, session=f"s{s}")]
    with EventLog(home.events_db) as log:
        import_file(log, write_transcript(tmp_path / "t.jsonl", turns))
        head = log.head()
    assert head == 8_016

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
        assert turns_rows(store) == (turn_event_count(log),) * 2 == (8_000, 8_000)
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

        # at least the import's head: the worker may append after it (it mines the two ended
        # sessions at once), and the turns projection then moves past it
        deadline = time.monotonic() + 30
        while position() < head and time.monotonic() < deadline:
            assert worker.poll() is None, "the worker exited early"
            time.sleep(0.1)
        assert position() >= head
        with EventLog(home.events_db) as log, open_store(home, log) as store:
            assert turns_rows(store) == (1000, 1000)
    finally:
        stop_process(worker)
        if worker.stderr:
            worker.stderr.close()


# --- the soak: everything at once, for a bounded time -------------------------------------------

SOAK_SECONDS = float(os.environ.get("DIARIST_SOAK_SECONDS") or 15)
TROUBLE = re.compile(r"locked|busy|Traceback|unexpected|Error", re.IGNORECASE)

# argv: stop-file, who. A chat as `diarist chat` runs it (ChatSession + AfterReply: the turns
# are handed to the running worker), five exchanges a session (ten turns: the worker mines
# each session when it ends), sessions until the stop file appears.
CHATTER = textwrap.dedent("""
    import json, os, sys
    from events import EventLog, Home
    from events.config import load_config
    from projections import open_store
    from workers.chat.handoff import AfterReply
    from workers.chat.session import ChatSession
    from workers.dispatch import QUEUE
    from workers.llm import ScriptedBackend
    stop, who = sys.argv[1:3]
    home, sent, notes = Home.resolve(), [], []
    with EventLog(home.events_db) as log, open_store(home, log) as store:
        while not os.path.exists(stop):
            session = ChatSession(home, log, store, ScriptedBackend(), load_config(home),
                                  tools=False)
            after = AfterReply(home, session, store, shadow=False, echo=notes.append,
                               queue=QUEUE)
            session.start()
            for _ in range(5):
                text = f"soak-chat-{who}-{len(sent)}-end: how are the harbour tides today?"
                after.reply_done(session.send(text))
                sent.append(text)
            session.end()
            after.finish()
    print(json.dumps({"sent": sent, "notes": notes}), flush=True)
""")


def _soak_loop(home: Home, stop: Path, make_args: Callable[[int], list[str]]) -> dict:
    """Run `diarist ARGS` again and again until ``stop`` exists: how many succeeded, and
    every run that failed or printed trouble (its exit code and output)."""
    done, trouble, seconds = [], [], [0.0]
    while not stop.exists():
        args = make_args(len(done) + len(trouble))
        began = time.monotonic()
        result = run_cli(home, *args)
        seconds.append(time.monotonic() - began)
        said = result.stdout + result.stderr
        if result.returncode != 0 or TROUBLE.search(result.stderr):
            trouble.append((args, result.returncode, said[-2000:]))
        else:
            done.append(args)
    return {"done": done, "trouble": trouble, "slowest": max(seconds)}


@pytest.mark.soak
def test_soak_appends_imports_recalls_and_a_worker_at_once(home: Home, tmp_path: Path) -> None:
    """For DIARIST_SOAK_SECONDS (15 by default; the full run is 300): two chats appending
    turns through the library, a loop of `diarist remember`, a loop of `diarist import` of
    small transcripts, a loop of `diarist recall`, and `diarist worker` projecting (and
    mining each chat session as it ends). No user sees `database is locked` or a traceback;
    afterwards `seq` has no gap and every note, imported turn and chat message is in the log
    exactly once and in the projections exactly once."""
    run_cli(home, "remember", "soak-note-seed-end")  # the home exists before anyone races
    stop = tmp_path / "stop"
    worker_log = tmp_path / "worker.err"
    with worker_log.open("w") as sink:  # a file, not a pipe: a full pipe would stall it
        worker = subprocess.Popen([*diarist_cmd(), "worker"], env=subprocess_env(home),
                                  stdout=subprocess.DEVNULL, stderr=sink)
    deadline = time.monotonic() + 60
    while not worker_present(home):  # the worker projects from the first append on
        assert worker.poll() is None and time.monotonic() < deadline, "no worker"
        time.sleep(0.05)
    chatters = [subprocess.Popen([sys.executable, "-c", CHATTER, str(stop), who],
                                 env=subprocess_env(home), stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True) for who in "ab"]

    def transcript(i: int) -> list[str]:
        path = write_transcript(tmp_path / f"import-{i}.jsonl",
                                make_turns(6, session=f"soak-import-{i}", prefix="soak"))
        return ["import", str(path)]

    loops: dict[str, Callable[[int], list[str]]] = {
        "remember": lambda i: ["remember", f"soak-note-{i}-end"],
        "import": transcript,
        "recall": lambda i: ["recall", "harbour tides soak", "--k", "5"],
    }
    started = time.monotonic()
    results: dict[str, dict] = {}
    try:
        threads = [threading.Thread(target=lambda n=name, f=fn: results.__setitem__(
            n, _soak_loop(home, stop, f))) for name, fn in loops.items()]
        for thread in threads:
            thread.start()
        time.sleep(SOAK_SECONDS)
        stop.touch()
        for thread in threads:
            thread.join(timeout=300)
        chats = []
        for proc in chatters:
            out, err = proc.communicate(timeout=300)
            assert proc.returncode == 0 and not TROUBLE.search(err), err[-3000:]
            chats.append(json.loads(out.strip().splitlines()[-1]))
    finally:
        stop.touch()
        stop_process(worker)
        for proc in chatters:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    elapsed = time.monotonic() - started
    worker_err = worker_log.read_text(encoding="utf-8", errors="replace")
    assert not re.search(r"locked|busy|Traceback", worker_err, re.IGNORECASE), worker_err[-3000:]
    for name, result in results.items():
        assert result["trouble"] == [], (name, result["trouble"][:3])
    assert not [note for chat in chats for note in chat["notes"] if TROUBLE.search(note)], chats

    final = run_cli(home, "sync", "--no-embed")
    assert final.returncode == 0, final.stderr
    notes = ["soak-note-seed-end"] + [args[1] for args in results["remember"]["done"]]
    numbers = [re.search(r"import-(\d+)\.jsonl$", args[1]).group(1)  # type: ignore[union-attr]
               for args in results["import"]["done"]]
    imported = [t["ref"] for n in numbers
                for t in make_turns(6, session=f"soak-import-{n}", prefix="soak")]
    said = [text for chat in chats for text in chat["sent"]]
    with EventLog(home.events_db) as log, open_store(home, log) as store:
        assert_log_invariants(log)  # seq 1..N, no gap; each stream's versions 1..n
        head = log.head()
        assert all(store.position(name) == head for name in store.projectors)
        remembered = Counter(e.payload["text"] for e in log.read(types=["Remembered"]))
        assert remembered == Counter(notes)  # each note once, no other
        assert Counter(ref for ref in ref_counts(log).elements()
                       if ref.startswith("soak:")) == Counter(imported)
        user_texts = Counter(e.payload["text"] for e in log.read(types=["UserTurn"])
                             if e.payload["text"].startswith("soak-chat-"))
        assert user_texts == Counter(said)
        # ... and once in the projections
        assert turns_rows(store) == (turn_event_count(log),) * 2
        in_turns = Counter(text for (text,) in store.db.execute(
            "SELECT text FROM turns WHERE text LIKE 'soak-chat-%'"))
        assert in_turns == Counter(said)
        assert Counter(ref for (ref,) in store.db.execute(
            "SELECT ref FROM turns WHERE ref LIKE 'soak:%'")) == Counter(imported)
        assert Counter(c for (c,) in store.db.execute(
            "SELECT content FROM memories WHERE content LIKE 'soak-note-%'")) == Counter(notes)
        assert Counter(c for (c,) in store.db.execute(
            "SELECT content FROM journal_entries WHERE content LIKE 'soak-note-%'")
        ) == Counter(notes)
    # the day files only: between 02:00 and 08:00 the worker also runs the night, and
    # consolidation may rightly copy a note into MEMORY.md
    day_files = home.memory_dir.glob("[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9].md")
    journals = "".join(p.read_text(encoding="utf-8") for p in day_files)
    assert all(journals.count(f"{note}\n") == 1 for note in notes), "a note twice in a journal"
    verify = run_cli(home, "replay", "--verify", timeout=600)
    assert verify.returncode == 0 and "DIFFERS" not in verify.stdout, verify.stdout
    operations = {name: len(r["done"]) for name, r in results.items()} | {
        "chat_turns": 2 * len(said)}
    slowest = {name: round(r["slowest"], 1) for name, r in results.items()}
    print(f"\nsoak: {elapsed:.0f} s, {head} events, operations {operations}, slowest (s) "
          f"{slowest}, errors: 0")

"""kill -9 at random (seeded) points of every command that writes, each followed by a
restart (issue 14, "Fault injection"; DESIGN.md principle 7).

For each of `diarist import`, `sync`, `replay`, `worker`, `mine` (the heuristic extractor,
no model), `dream` and `consolidate`: a copy of a prepared home, the command as a real
process, SIGKILL after a random delay counted from when it has started its real work (the
WAL growing, a projection moving, its pass lock taken, its scratch database made), then the
command again to the end. After each run: the log passes ``PRAGMA integrity_check`` and has
no gap in ``seq``; no appended event is lost and none is applied twice (the import is all
or nothing; the projections equal an uninterrupted run's; no chunk mined twice, no decision
taken twice); `diarist replay --verify` passes.

How many runs: ``fault_runs(2)`` per command in the suite (what `.ci/run` runs), and up to
four more, each with half the delay window, while no kill has landed mid-work; the full
counts with ``DIARIST_FAULT_RUNS=10`` (docs/reliability.md, "Fault injection: how to run the
full counts"). With ``DIARIST_FAULT_REPORT=FILE`` each test appends a JSON line of what it
did (runs, kills that landed mid-work).
"""
from __future__ import annotations

import json
import random
import shutil
import sqlite3
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from events import EventLog, Home
from events.transcript import import_file
from events.types import TURN_TYPES
from projections import open_store

from .conftest import diarist_cmd, no_night, run, stop_process, subprocess_env, write_transcript
from .faults import (
    Tally,
    assert_log_sound,
    assert_replay_verifies,
    checkpoint,
    fault_runs,
    kill9,
    kill_and_restart,
)

pytestmark = [pytest.mark.soak, pytest.mark.slow]

SEED = 1414
SESSIONS, TURNS = 240, 12          # the "life" transcript: 2,880 turns, ~1,400 memories
LATE_SESSIONS, LATE_TURNS = 30, 200  # a second transcript for the import runs: 6,000 turns
FOODS = ["tea", "coffee", "sushi", "pasta", "curry", "bread", "cheese", "olives"]
CITIES = ["Bristol", "Plymouth", "Leeds", "York", "Bath", "Exeter"]
TOOLS = ["vim", "emacs", "git", "docker", "pytest", "make"]
HABITS = ["walk the dog", "read before bed", "cycle to work", "cook on sundays"]


def life(sessions: int, turns: int, seed: int, prefix: str = "life") -> list[dict]:
    """A person telling an assistant about their life: preferences, homes, tools, habits
    and things to remember — what the heuristic miner picks up, and what dreaming merges,
    supersedes and lets fade."""
    rng = random.Random(seed)
    out = []
    for s in range(sessions):
        for t in range(turns):
            i = s * turns + t
            if t % 2:
                role, name, text = "assistant", "Bot", f"Noted, thanks for telling me about {i}."
            else:
                role, name = "user", "Ann"
                text = rng.choice([
                    f"I like {rng.choice(FOODS)} number {i}.",
                    f"I live in {rng.choice(CITIES)} near street {i}.",
                    f"I use {rng.choice(TOOLS)} for project {i}.",
                    f"I always {rng.choice(HABITS)} on day {i}.",
                    f"Remember that the code for locker {i} is {rng.randrange(1000, 9999)}."])
            out.append({"session": f"{prefix}{s:04d}", "role": role, "name": name,
                        "at": f"2026-{1 + s // 28 % 9:02d}-{1 + s % 28:02d}T10:"
                              f"{t // 60 % 60:02d}:{t % 60:02d}Z",
                        "text": text, "ref": f"{prefix}:{s}:{t}"})
    return out


# --- the prepared homes -------------------------------------------------------------------


@dataclass
class Stages:
    """Homes after each step, built once per module (in-process) and copied for each run;
    with what an uninterrupted run gave and how long its work took."""

    root: Path
    late: Path                                   # the transcript the import runs append
    seconds: dict[str, float] = field(default_factory=dict)

    def home(self, stage: str) -> Home:
        return Home(self.root / stage)

    def clone(self, stage: str, target: Home) -> Home:
        shutil.rmtree(target.root, ignore_errors=True)
        shutil.copytree(self.home(stage).root, target.root,
                        ignore=shutil.ignore_patterns("*-wal", "*-shm", "locks", "*.lock",
                                                      "queue.db*", "schedule.json"))
        return target


def _settle(home: Home) -> None:
    """Fold every WAL into its main file, so a copy of the folder is the whole state."""
    for path in (home.events_db, home.projections_db):
        if path.exists():
            checkpoint(path)


def _timed(stages: Stages, name: str, *args: str) -> None:
    started = time.perf_counter()
    run(*args)
    stages.seconds[name] = time.perf_counter() - started


@pytest.fixture(scope="module")
def stages(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stages]:
    # module-scoped: the function-scoped "no embedding" setting of conftest is not on yet,
    # and the passes settle (embed) when they end unless it is
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DIARIST_NO_EMBED", "1")
        yield _stages(tmp_path_factory)


def _stages(tmp_path_factory: pytest.TempPathFactory) -> Stages:
    root = tmp_path_factory.mktemp("stages")
    stages = Stages(root, write_transcript(root / "late.jsonl",
                                           life(LATE_SESSIONS, LATE_TURNS, SEED + 1, "late")))
    transcript = write_transcript(root / "life.jsonl", life(SESSIONS, TURNS, SEED))
    imported = stages.home("imported")
    with EventLog(imported.ensure().events_db) as log:
        import_file(log, transcript)
    steps = [("synced", "sync", ["sync", "--no-embed"]),
             ("mined", "mine", ["mine", "--heuristic"]),
             ("dreamt", "dream", ["dream"]),
             ("consolidated", "consolidate", ["consolidate", "--heuristic"])]
    previous = "imported"
    for stage, name, args in steps:
        _settle(stages.home(previous))
        home = stages.clone(previous, stages.home(stage))
        _timed(stages, name, "--home", str(home.root), *args)
        if name != "sync":
            run("--home", str(home.root), "sync", "--no-embed")
        previous = stage
    _settle(stages.home(previous))
    replay_home = stages.clone("consolidated", Home(root / "replayed"))
    _timed(stages, "replay", "--home", str(replay_home.root), "replay")
    return stages


# --- what the checks read -----------------------------------------------------------------


def query(path: Path, sql: str, args: tuple = ()) -> list[tuple]:
    db = sqlite3.connect(path)
    try:
        return db.execute(sql, args).fetchall()
    finally:
        db.close()


def digests(home: Home) -> dict[str, str]:
    with EventLog(home.events_db) as log, open_store(home, log) as store:
        return {name: store.digest(name) for name in store.projectors}


def position(home: Home, name: str = "turns") -> int:
    try:
        rows = query(home.projections_db,
                     "SELECT position FROM projection_state WHERE name = ?", (name,))
    except sqlite3.OperationalError:
        return 0
    return rows[0][0] if rows else 0


def memories(home: Home) -> Counter:
    """(type, content, status) of every memory, as a multiset."""
    return Counter(query(home.projections_db, "SELECT type, content, status FROM memories"))


def events_of(home: Home, type_: str) -> list[dict]:
    return [json.loads(p) for (p,) in query(home.events_db,
                                            "SELECT payload FROM events WHERE type = ?"
                                            " ORDER BY seq", (type_,))]


def assert_turns_exactly_once(home: Home) -> None:
    """The turns table holds each turn event up to its position once."""
    names = sorted(TURN_TYPES)
    at = position(home)
    expected = query(home.events_db, f"SELECT COUNT(*) FROM events WHERE seq <= ? AND type IN"
                                     f" ({','.join('?' * len(names))})", (at, *names))[0][0]
    rows, distinct = query(home.projections_db,
                           "SELECT COUNT(*), COUNT(DISTINCT event_id) FROM turns")[0]
    assert rows == distinct == expected


def runs_of(tally: Tally, delay: tuple[float, float], default: int = 2,
            extra: int = 4) -> Iterator[tuple[int, random.Random, tuple[float, float]]]:
    """(run number, its seeded random source, the kill's delay window) for each run:
    ``fault_runs(default)`` runs, then up to ``extra`` more while no kill has landed
    mid-work. Each miss (the command finished before the kill) halves the window, so a
    machine faster than the one that timed the uninterrupted run still gets its kill."""
    low, high = delay
    n = 0
    while n < fault_runs(default) or (tally.landed == 0 and n < fault_runs(default) + extra):
        missed = tally.runs - tally.landed
        yield n, random.Random(f"{SEED}:{tally.name}:{n}"), (low, high)
        if tally.runs - tally.landed > missed:
            high = max(low, high / 2)
        n += 1


def window(stages: Stages, name: str) -> tuple[float, float]:
    """Delays (s) for a kill inside the command's work, by how long it took uninterrupted."""
    return (0.0, max(0.3, 0.8 * stages.seconds[name]))


# --- the commands ---------------------------------------------------------------------------


def test_kill_9_during_import(stages: Stages, tmp_path: Path) -> None:
    tally = Tally("import")
    late_refs = LATE_SESSIONS * LATE_TURNS
    for n, rng, delay in runs_of(tally, (0.0, 1.0)):
        home = stages.clone("synced", Home(tmp_path / f"h{n}"))
        before = assert_log_sound(home)
        wal = Path(f"{home.events_db}-wal")

        def writing(wal: Path = wal) -> bool:
            return wal.exists() and wal.stat().st_size > 256 * 1024

        killed = kill_and_restart(home, ["import", str(stages.late)], rng, delay=delay,
                                  ready=writing, restart=[])
        tally.add(killed.landed)
        after_kill = assert_log_sound(home)
        assert after_kill in (before, before + late_refs + 2 * LATE_SESSIONS)  # all or nothing
        again = subprocess.run([*diarist_cmd(), "import", str(stages.late)],
                               env=subprocess_env(home), capture_output=True, text=True)
        assert again.returncode == 0, again.stderr
        head = assert_log_sound(home)
        assert head == before + late_refs + 2 * LATE_SESSIONS
        refs = query(home.events_db, "SELECT COUNT(*), COUNT(DISTINCT json_extract(meta,"
                     " '$.ref')) FROM events WHERE json_extract(meta, '$.ref') LIKE 'late:%'")
        assert refs == [(late_refs, late_refs)]  # every turn, once
    tally.done()


def test_kill_9_during_sync(stages: Stages, tmp_path: Path) -> None:
    tally = Tally("sync")
    reference = digests(stages.home("synced"))
    for n, rng, delay in runs_of(tally, window(stages, "sync")):
        home = stages.clone("imported", Home(tmp_path / f"h{n}"))
        killed = kill_and_restart(home, ["sync", "--batch-size", "100"], rng, delay=delay,
                                  ready=lambda home=home: position(home) > 0, restart=[])
        tally.add(killed.landed)
        assert_log_sound(home)
        assert_turns_exactly_once(home)  # output and position moved together
        done = subprocess.run([*diarist_cmd(), "sync"], env=subprocess_env(home),
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert digests(home) == reference
        assert_replay_verifies(home)
    tally.done()


def test_kill_9_during_replay_leaves_the_projections_as_they_were(stages: Stages,
                                                                  tmp_path: Path) -> None:
    """A replay builds beside the live projections and swaps a finished build in: killed at
    any point, the live projections (rows, digests, files) are as before — never
    half-built — and the next replay cleans up after it."""
    tally = Tally("replay")
    for n, rng, delay in runs_of(tally, window(stages, "replay")):
        home = stages.clone("consolidated", Home(tmp_path / f"h{n}"))
        before = digests(home)
        files = {p.name: p.read_bytes() for p in home.memory_dir.rglob("*.md")}

        def building(home: Home = home) -> bool:
            return any(home.root.glob(".replay-*"))

        killed = kill_and_restart(home, ["replay"], rng, delay=delay,
                                  ready=building, restart=[])
        tally.add(killed.landed)
        assert_log_sound(home)
        assert digests(home) == before
        assert {p.name: p.read_bytes() for p in home.memory_dir.rglob("*.md")} == files
        again = subprocess.run([*diarist_cmd(), "replay"], env=subprocess_env(home),
                               capture_output=True, text=True)
        assert again.returncode == 0, again.stderr
        assert not list(home.root.glob(".replay-*"))  # the killed one's scratch is gone
        assert digests(home) == before
        assert_replay_verifies(home)
    tally.done()


def test_kill_9_of_the_worker(stages: Stages, tmp_path: Path) -> None:
    tally = Tally("worker")
    reference = digests(stages.home("synced"))
    for n, rng, delay in runs_of(tally, window(stages, "sync")):
        home = stages.clone("imported", Home(tmp_path / f"h{n}"))
        no_night(home)  # the reference is a synced home, not a mined one
        killed = kill_and_restart(home, ["worker"], rng, delay=delay,
                                  ready=lambda home=home: position(home) > 0, restart=[])
        tally.add(killed.landed)
        assert_log_sound(home)
        assert_turns_exactly_once(home)
        worker = subprocess.Popen([*diarist_cmd(), "worker"], env=subprocess_env(home),
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 180
            with EventLog(home.events_db) as log:
                while not all(position(home, name) == log.head() for name in reference):
                    assert worker.poll() is None, worker.stderr.read() if worker.stderr else ""
                    assert time.monotonic() < deadline, "the restarted worker never caught up"
                    time.sleep(0.1)
        finally:
            stop_process(worker)
            if worker.stderr:
                worker.stderr.close()
        assert digests(home) == reference
        assert_replay_verifies(home)
    tally.done()


def test_a_lock_left_by_a_killed_worker_does_not_block_the_next(stages: Stages,
                                                                tmp_path: Path) -> None:
    """What the worker runs above found: a worker killed inside ``project.turns`` leaves
    that task's huey lock in the SQLite queue (it never expires there), and every later
    ``project.turns`` returned at once ("another worker is on it") — turns were never
    caught up by a worker again. A worker that starts alone on a home now clears them."""
    from workers.app import configure
    from workers.tasks import TASK_LOCKS

    home = stages.clone("imported", Home(tmp_path / "h"))
    queue = configure(home)
    for name in TASK_LOCKS:  # as a worker killed mid-task leaves them
        queue.lock_task(name).acquire()
    worker = subprocess.Popen([*diarist_cmd(), "worker"], env=subprocess_env(home),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        with EventLog(home.events_db) as log:
            while position(home) < log.head():
                assert worker.poll() is None
                assert time.monotonic() < deadline, "turns never caught up: the lock stayed"
                time.sleep(0.1)
    finally:
        stop_process(worker)
    assert_turns_exactly_once(home)


def _pass_test(stages: Stages, tmp_path: Path, name: str, args: list[str], stage: str,
               check: Callable[[Home], None]) -> None:
    """kill -9 a night pass (mine, dream, consolidate) once its lock is taken; rerun it."""
    tally = Tally(name)
    for n, rng, delay in runs_of(tally, window(stages, name)):
        home = stages.clone(stage, Home(tmp_path / f"h{n}"))
        lock = home.root / "locks" / f"{name}.lock"
        # ready once the pass has written its pid into the lock file it holds; probing with
        # a flock of our own could make the pass, starting that instant, refuse to run
        lock.parent.mkdir(parents=True, exist_ok=True)
        lock.write_text("")
        killed = kill_and_restart(home, args, rng, delay=delay,
                                  ready=lambda lock=lock: lock.read_text().strip() != "")
        tally.add(killed.landed)
        assert_log_sound(home)
        assert run("--home", str(home.root), "sync", "--no-embed").exit_code == 0
        check(home)
        assert_replay_verifies(home)
    tally.done()


def test_kill_9_during_mine(stages: Stages, tmp_path: Path) -> None:
    reference = memories(stages.home("mined"))

    def check(home: Home) -> None:
        chunks = [(p["session"], p["first_seq"], p["last_seq"])
                  for p in events_of(home, "MemoriesMined")]
        assert len(chunks) == len(set(chunks))  # no chunk mined twice
        assert {c[0] for c in chunks} == {f"life{s:04d}" for s in range(SESSIONS)}  # none left
        assert memories(home) == reference

    _pass_test(stages, tmp_path, "mine", ["mine", "--heuristic"], "synced", check)


def test_kill_9_during_dream(stages: Stages, tmp_path: Path) -> None:
    reference = memories(stages.home("dreamt"))
    decided = len(events_of(stages.home("dreamt"), "MemorySuperseded"))

    def check(home: Home) -> None:
        superseded = [i for p in events_of(home, "MemorySuperseded") for i in p["ids"]]
        assert len(superseded) == len(set(superseded))  # no decision taken twice
        assert len(events_of(home, "MemorySuperseded")) == decided
        assert len(events_of(home, "RelevancyDecayed")) == 1
        assert memories(home) == reference

    _pass_test(stages, tmp_path, "dream", ["dream"], "mined", check)


def test_kill_9_during_consolidate(stages: Stages, tmp_path: Path) -> None:
    expected = (stages.home("consolidated").memory_dir / "MEMORY.md").read_text()
    rewrites = len(events_of(stages.home("consolidated"), "LongTermRewritten"))

    def check(home: Home) -> None:
        assert len(events_of(home, "LongTermRewritten")) == rewrites  # once, not twice
        assert (home.memory_dir / "MEMORY.md").read_text() == expected

    _pass_test(stages, tmp_path, "consolidate", ["consolidate", "--heuristic"], "dreamt", check)


def test_the_kill_helper_really_kills(tmp_path: Path, home: Home) -> None:
    """The oracle: a process killed mid-work is dead (SIGKILL, exit -9), so what the tests
    above see after it is what a crash leaves."""
    proc = subprocess.Popen([*diarist_cmd(), "worker"], env=subprocess_env(home),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.2)
    assert kill9(proc) is None and proc.returncode == -9

#!/usr/bin/env python
"""Benchmark the event log and the projection engine (issue 2).

Measures, each in its own temporary DIARIST_HOME (never the workspace's var/):

1. single-append latency (one transaction each, synchronous=FULL);
2. transcript import throughput: ``diarist import FILE`` as a real process, and the in-process
   ``events.transcript.import_file``;
3. ``sync`` throughput of the turns projection: in-process ``catch_up_all()`` and the
   ``diarist sync`` process;
4. ``diarist replay`` and ``diarist replay --verify`` wall time on the imported log;
5. worker pickup latency: a running ``diarist worker``, one append + enqueue, time until the
   ``turns`` position reaches the new head.

Usage::

    python benchmarks/bench_log.py [--events 100000] [--appends 2000] [--json]

``--events`` is the number of transcript turns generated (the log gets two more events per
session: SessionStarted and SessionEnded). With ``--json`` the results go to stdout as one
JSON object (progress still goes to stderr). Runs in about 1-3 minutes on 2 cores.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import random
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from events import EventLog, Home
from events.transcript import import_file
from events.types import UserTurn

CHECKOUT = Path(__file__).resolve().parent.parent

# --- targets (issue 2) ----------------------------------------------------------------------

TARGET_APPEND_P99_MS = 10.0
TARGET_IMPORT_TURNS_S = 5000.0
TARGET_SYNC_EVENTS_S = 5000.0
TARGET_REPLAY_S = 60.0
TARGET_PICKUP_MS = 100.0          # "~100 ms": judged on the p50, p95 reported alongside

SESSIONS = 100
SEED = 20261122


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# --- figures ----------------------------------------------------------------------------------


@dataclass
class Row:
    benchmark: str
    figure: str
    value: float | None
    unit: str
    target: str = ""
    passed: bool | None = None       # None: informative, no target
    note: str = ""


@dataclass
class Report:
    machine: dict[str, Any]
    rows: list[Row] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)

    def add(self, *args: Any, **kwargs: Any) -> Row:
        row = Row(*args, **kwargs)
        self.rows.append(row)
        return row


def percentile(values: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile (no interpolation: a reported p99 was actually observed)."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = max(1, min(len(ordered), int(-(-pct * len(ordered) // 100))))
    return ordered[rank - 1]


def latency_summary(samples_ms: Sequence[float]) -> dict[str, float]:
    return {
        "n": len(samples_ms),
        "p50": percentile(samples_ms, 50), "p95": percentile(samples_ms, 95),
        "p99": percentile(samples_ms, 99), "max": max(samples_ms),
        "mean": statistics.fmean(samples_ms),
    }


# --- helpers ----------------------------------------------------------------------------------


def diarist_command() -> list[str]:
    """The installed `diarist` entry point of this interpreter (not a pyenv shim, whose own
    start-up would be measured too); falls back to running the entry point with -c."""
    scripts = Path(sysconfig.get_path("scripts"))
    for candidate in (scripts / "diarist", Path(sys.executable).parent / "diarist"):
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return [str(candidate)]
    return [sys.executable, "-c", "from cli.main import main; main()"]


def home_env(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["DIARIST_HOME"] = str(home)
    # the processes run this checkout's code, not the installed one's (a worktree's run
    # measured the main checkout's command otherwise)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(CHECKOUT), env.get("PYTHONPATH")]))
    env.pop("DIARIST_REDIS_URL", None)   # the SQLite queue in the temporary home, always
    return env


def run_cli(args: list[str], home: Path) -> tuple[float, str]:
    """Run `diarist ARGS` against ``home``; wall seconds (process start included), stdout."""
    start = time.perf_counter()
    proc = subprocess.run(diarist_command() + args, env=home_env(home), capture_output=True,
                          text=True, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"diarist {' '.join(args)} exited {proc.returncode}:\n"
                           f"{proc.stdout}\n{proc.stderr}")
    return elapsed, proc.stdout.strip()


def log_head(events_db: Path) -> int:
    db = sqlite3.connect(f"file:{events_db}?mode=ro", uri=True)
    try:
        return db.execute("SELECT COALESCE(MAX(seq), 0) FROM events").fetchone()[0]
    finally:
        db.close()


# --- synthetic transcript -------------------------------------------------------------------

_SUBJECTS = ["I", "We", "The build", "My laptop", "The worker", "Our team", "The test suite",
             "The new parser", "This script", "The database", "Anna", "The client",
             "The deploy job", "The model", "My sister", "The nightly backup", "It"]
_VERBS = ["keeps failing on", "finally works with", "needs a second look at", "was slow on",
          "should probably skip", "depends on", "broke again after", "handles", "ignores",
          "caches", "times out while reading", "was rewritten around", "logs too much about",
          "quietly retries", "still refuses", "spends most of its time in"]
_OBJECTS = ["the Raspberry Pi", "the staging server", "a flaky network mount",
            "the migration script", "large JSON files", "the morning standup notes",
            "the recipe for sourdough bread", "our quarterly report", "the garden irrigation timer",
            "the Python 3.11 upgrade", "an old SQLite file", "the trip to Lisbon",
            "the config in diarist.yaml", "the unit tests", "the Ollama endpoint",
            "the second monitor", "the invoice from March", "the bike repair"]
_TAILS = ["", "", "", " this week", " since Tuesday", " for no obvious reason",
          " when the cache is cold", " after the last update", " on battery power",
          " unless I restart it", " every other night", " in the evening"]
_OPENERS = ["", "", "", "Honestly, ", "By the way, ", "As far as I can tell, ", "Yesterday ",
            "To be fair, ", "Again, ", "In short, "]
_QUESTIONS = ["Can you remind me what we decided about {o}?", "What did I say about {o} last time?",
              "Do you think {o} is worth fixing today?", "How long did {o} take before?",
              "Should I write down {o} somewhere?", "Why would {o} behave like that?"]
_ANSWERS = ["That makes sense.", "Let me summarise what we know so far.",
            "Here is what I would try first.", "I noted that down for later.",
            "There are two likely causes.", "You mentioned this on an earlier day."]
_NAMES = ["Caroline", "Melanie", "Jon", "Gina", "Anna", "Bob", "Priya", "Tomás", "Yuki", "Omar"]


def _sentence(rng: random.Random) -> str:
    if rng.random() < 0.15:
        return rng.choice(_QUESTIONS).format(o=rng.choice(_OBJECTS))
    opener = rng.choice(_OPENERS)
    subject = rng.choice(_SUBJECTS)
    if opener and subject != "I":
        subject = subject[0].lower() + subject[1:]
    return f"{opener}{subject} {rng.choice(_VERBS)} {rng.choice(_OBJECTS)}{rng.choice(_TAILS)}."


def _text(rng: random.Random, role: str) -> str:
    # users: mostly 1-3 sentences; assistants: longer, with a tail of long answers
    if role == "user":
        count = min(1 + int(rng.expovariate(0.9)), 8)
        return " ".join(_sentence(rng) for _ in range(count))
    count = min(2 + int(rng.expovariate(0.35)), 25)
    return rng.choice(_ANSWERS) + " " + " ".join(_sentence(rng) for _ in range(count))


def write_transcript(path: Path, turns: int, sessions: int = SESSIONS) -> dict[str, Any]:
    """A deterministic synthetic transcript: ``turns`` lines over ``sessions`` sessions, each
    session a run of alternating user/assistant turns on its own day, times with 'Z'."""
    rng = random.Random(SEED)
    per_session = [turns // sessions + (1 if i < turns % sessions else 0) for i in range(sessions)]
    start = dt.datetime(2026, 1, 1, 8, 0, tzinfo=dt.UTC)
    chars = 0
    with path.open("w", encoding="utf-8") as out:
        for s, count in enumerate(per_session):
            session = f"bench-{s:03d}"
            user, bot = rng.choice(_NAMES), "Assistant"
            at = start + dt.timedelta(days=s, minutes=rng.randrange(0, 600))
            for t in range(count):
                role = "user" if t % 2 == 0 else "assistant"
                at += dt.timedelta(seconds=rng.randrange(5, 240), microseconds=rng.randrange(10**6))
                text = _text(rng, role)
                chars += len(text)
                line = {"session": session, "at": at.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
                        "role": role, "name": user if role == "user" else bot, "text": text,
                        "ref": f"{session}:{t}"}
                out.write(json.dumps(line, ensure_ascii=False) + "\n")
    return {"turns": turns, "sessions": sessions, "bytes": path.stat().st_size,
            "mean_text_chars": round(chars / max(turns, 1), 1)}


# --- 1. single appends ------------------------------------------------------------------------


def bench_appends(root: Path, n: int, events_db: Path | None = None) -> dict[str, float]:
    rng = random.Random(SEED + 1)
    db_path = events_db or (root / "append-home" / "events.db")
    samples: list[float] = []
    with EventLog(db_path) as log:
        streams = [f"append-bench-{i}" for i in range(4)]
        for i in range(20):                      # warm-up: page cache, statement cache
            log.append(UserTurn(session=streams[i % 4], text=_text(rng, "user")),
                       stream=streams[i % 4])
        for i in range(n):
            stream = streams[i % len(streams)]
            event = UserTurn(session=stream, text=_text(rng, "user"), name="Bench")
            t0 = time.perf_counter()
            log.append(event, stream=stream)
            samples.append((time.perf_counter() - t0) * 1000.0)
    return latency_summary(samples)


# --- 2-4. import, sync, replay ----------------------------------------------------------------


def bench_import_sync_replay(report: Report, root: Path, turns: int) -> None:
    transcript = root / "transcript.jsonl"
    say(f"[2] generating a {turns}-turn transcript ...")
    t0 = time.perf_counter()
    info = write_transcript(transcript, turns)
    info["generate_s"] = round(time.perf_counter() - t0, 2)
    report.details["transcript"] = info
    say(f"    {info}")

    # 2a. the CLI, as a real process (home A)
    home_a = root / "home-cli"
    home_a.mkdir()
    say("[2] diarist import (subprocess) ...")
    wall, out = run_cli(["import", str(transcript)], home_a)
    events_a = log_head(home_a / "events.db")
    report.details["import_cli"] = {"wall_s": wall, "stdout": out, "events": events_a}
    report.add("2 import", "`diarist import` (process, wall)", turns / wall, "turns/s",
               f"> {TARGET_IMPORT_TURNS_S:,.0f}", turns / wall > TARGET_IMPORT_TURNS_S,
               f"{wall:.2f} s for {turns:,} turns ({events_a:,} events)")

    # 2b. in-process import_file (home B), with the parse / append split
    home_b = root / "home-lib"
    home_b.mkdir()
    say("[2] events.transcript.import_file (in-process) ...")
    with EventLog(home_b / "events.db") as log:
        t0 = time.perf_counter()
        result = import_file(log, transcript)
        lib_s = time.perf_counter() - t0
    report.details["import_lib"] = {"seconds": lib_s, **asdict(result)}
    report.add("2 import", "import_file (in-process)", turns / lib_s, "turns/s",
               f"> {TARGET_IMPORT_TURNS_S:,.0f}", turns / lib_s > TARGET_IMPORT_TURNS_S,
               f"{lib_s:.2f} s")

    # 2c. re-import of the same file (idempotent: nothing appended)
    say("[2] diarist import again (idempotent, subprocess) ...")
    wall2, out2 = run_cli(["import", str(transcript)], home_a)
    report.details["reimport_cli"] = {"wall_s": wall2, "stdout": out2}
    report.add("2 import", "re-import, nothing new (process)", turns / wall2, "turns/s",
               note=f"{wall2:.2f} s")

    # 3a. in-process catch-up of every projection (home B)
    from projections import open_store

    say("[3] ProjectionStore.catch_up_all() (in-process) ...")
    events_b = log_head(home_b / "events.db")
    hb = Home(home_b)
    with EventLog(hb.events_db) as log, open_store(hb, log) as store:
        t0 = time.perf_counter()
        moved = store.catch_up_all()
        sync_s = time.perf_counter() - t0
    report.details["sync_lib"] = {"seconds": sync_s, "moved": moved, "events": events_b}
    report.add("3 sync", "catch_up_all() (in-process)", events_b / sync_s, "events/s",
               f"> {TARGET_SYNC_EVENTS_S:,.0f}", events_b / sync_s > TARGET_SYNC_EVENTS_S,
               f"{sync_s:.2f} s for {events_b:,} events")

    # 3b. `diarist sync` as a process (home A)
    say("[3] diarist sync (subprocess) ...")
    wall, out = run_cli(["sync"], home_a)
    report.details["sync_cli"] = {"wall_s": wall, "stdout": out}
    report.add("3 sync", "`diarist sync` (process, wall)", events_a / wall, "events/s",
               f"> {TARGET_SYNC_EVENTS_S:,.0f}", events_a / wall > TARGET_SYNC_EVENTS_S,
               f"{wall:.2f} s for {events_a:,} events")

    # 4. replay and replay --verify (home A)
    say("[4] diarist replay (subprocess) ...")
    wall, out = run_cli(["replay"], home_a)
    report.details["replay_cli"] = {"wall_s": wall, "stdout": out}
    report.add("4 replay", "`diarist replay` (process, wall)", wall, "s",
               f"< {TARGET_REPLAY_S:.0f}", wall < TARGET_REPLAY_S,
               f"{events_a / wall:,.0f} events/s")
    say("[4] diarist replay --verify (subprocess) ...")
    wall, out = run_cli(["replay", "--verify"], home_a)
    report.details["replay_verify_cli"] = {"wall_s": wall, "stdout": out}
    report.add("4 replay", "`diarist replay --verify` (process, wall)", wall, "s",
               f"< {TARGET_REPLAY_S:.0f}", wall < TARGET_REPLAY_S,
               out.splitlines()[0] if out else "")

    # extra: append latency on the big log (the append triggers' lookups must stay indexed)
    say("[1b] single appends on the imported log ...")
    big = bench_appends(root, 300, events_db=home_b / "events.db")
    report.details["append_big_log"] = big
    report.add("1 append", f"p99 on the {events_b:,}-event log", big["p99"], "ms",
               note=f"n={big['n']}, p50 {big['p50']:.2f} ms, max {big['max']:.2f} ms")

    sizes = {p.name: p.stat().st_size for p in sorted(home_a.iterdir()) if p.is_file()}
    report.details["home_cli_files"] = sizes


# --- 5. worker pickup -------------------------------------------------------------------------


def _turns_position(projections_db: Path) -> int:
    if not projections_db.exists():
        return 0
    db = sqlite3.connect(f"file:{projections_db}?mode=ro", uri=True, timeout=5)
    try:
        row = db.execute("SELECT position FROM projection_state WHERE name = 'turns'").fetchone()
        return row[0] if row else 0
    except sqlite3.OperationalError:      # not created yet
        return 0
    finally:
        db.close()


def _wait_position(projections_db: Path, target: int, timeout: float) -> float | None:
    """Poll (every ~2 ms) until the turns position reaches ``target``; perf_counter at that
    moment, or None on timeout."""
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        if _turns_position(projections_db) >= target:
            return time.perf_counter()
        time.sleep(0.002)
    return None


def bench_worker(report: Report, root: Path, rounds: int) -> None:
    from workers.dispatch import QUEUE

    home_dir = root / "home-worker"
    home_dir.mkdir()
    home = Home(home_dir)
    stderr_path = root / "worker.stderr"
    rng = random.Random(SEED + 2)
    say("[5] starting diarist worker ...")
    with stderr_path.open("w") as stderr:
        proc = subprocess.Popen(diarist_command() + ["worker"], env=home_env(home_dir),
                                stdin=subprocess.DEVNULL, stdout=stderr, stderr=stderr)
    try:
        time.sleep(2.0)                                   # let the consumer start and go idle
        if proc.poll() is not None:
            raise RuntimeError(f"worker exited {proc.returncode}: {stderr_path.read_text()}")
        projections_db = home.projections_db
        samples: list[float] = []
        misses = 0
        with EventLog(home.events_db) as log:
            for i in range(rounds + 1):                   # round 0 is a warm-up
                time.sleep(rng.uniform(0.15, 0.35))       # random phase vs the 50 ms poll
                appended = log.append(UserTurn(session="pickup", text=_text(rng, "user")),
                                      stream="pickup")
                t0 = time.perf_counter()                  # the event is durable from here
                QUEUE.appended(Home(home_dir))
                reached = _wait_position(projections_db, appended.seq, timeout=15.0)
                if reached is None:
                    misses += 1
                    say(f"    round {i}: not picked up within 15 s")
                    if misses >= 2:
                        break                             # broken worker: do not wait 15 s a round
                    continue
                if i > 0:
                    samples.append((reached - t0) * 1000.0)
        if not samples:
            tail = stderr_path.read_text(errors="replace")[-1500:]
            report.details["worker_pickup"] = {"timeouts": misses, "worker_stderr_tail": tail}
            report.add("5 worker", "pickup latency p50", None, "ms", f"~{TARGET_PICKUP_MS:.0f}",
                       False, "the worker never caught up (see details.worker_stderr_tail)")
            say(f"    worker stderr (tail):\n{tail}")
            return
        summary = latency_summary(samples)
        summary["timeouts"] = misses
        report.details["worker_pickup"] = summary
        report.add("5 worker", "pickup latency p50", summary["p50"], "ms",
                   f"~{TARGET_PICKUP_MS:.0f}", summary["p50"] <= TARGET_PICKUP_MS * 1.2,
                   f"n={summary['n']}, timeouts {misses}")
        report.add("5 worker", "pickup latency p95", summary["p95"], "ms",
                   note=f"max {summary['max']:.1f} ms")
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        report.details["worker_exit"] = proc.returncode


# --- output -----------------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    return {
        "nproc": os.cpu_count(),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "platform": platform.platform(),
        "cpu": _cpu_model(),
        "date": dt.date.today().isoformat(),
        "loadavg_start": _loadavg(),
    }


def _loadavg() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def format_value(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if unit in ("turns/s", "events/s"):
        return f"{value:,.0f} {unit}"
    if unit == "ms":
        return f"{value:.2f} ms" if value < 100 else f"{value:.0f} ms"
    return f"{value:.2f} {unit}"


def print_table(report: Report, out: Callable[[str], None]) -> None:
    m = report.machine
    out(f"machine: {m['nproc']} cores ({m['cpu']}), Python {m['python']}, SQLite {m['sqlite']},"
        f" {m['platform']}")
    out(f"load average (1/5/15 min): {m['loadavg_start']} at start, {m.get('loadavg_end', '?')}"
        f" at end; tmp dir {tempfile.gettempdir()}")
    head = ("benchmark", "figure", "value", "target", "result", "notes")
    rows = [(r.benchmark, r.figure, format_value(r.value, r.unit), r.target,
             "" if r.passed is None else ("PASS" if r.passed else "MISS"), r.note)
            for r in sorted(report.rows, key=lambda r: r.benchmark)]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows, strict=True)]
    line = "  ".join(f"{{:<{w}}}" for w in widths)
    out(line.format(*head))
    out(line.format(*("-" * w for w in widths)))
    for row in rows:
        out(line.format(*row))
    judged = [r for r in report.rows if r.passed is not None]
    out(f"{sum(r.passed for r in judged)}/{len(judged)} targets met")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=100_000,
                        help="transcript turns to generate and import (default 100000)")
    parser.add_argument("--appends", type=int, default=2000,
                        help="single appends timed on a fresh log (default 2000)")
    parser.add_argument("--pickups", type=int, default=20,
                        help="worker pickup rounds (default 20)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON on stdout")
    parser.add_argument("--keep", action="store_true", help="keep the temporary homes")
    args = parser.parse_args(argv)

    report = Report(machine=machine())
    report.details["command"] = diarist_command()
    started = time.perf_counter()
    root = Path(tempfile.mkdtemp(prefix="diarist-bench-"))
    say(f"temporary homes under {root}; diarist = {' '.join(diarist_command())}")
    try:
        say(f"[1] {args.appends} single appends ...")
        app = bench_appends(root, args.appends)
        report.details["append_fresh_log"] = app
        note = f"n={app['n']}, fresh log, 4 streams"
        report.add("1 append", "single append p50", app["p50"], "ms", note=note)
        report.add("1 append", "single append p95", app["p95"], "ms")
        report.add("1 append", "single append p99", app["p99"], "ms",
                   f"< {TARGET_APPEND_P99_MS:.0f}", app["p99"] < TARGET_APPEND_P99_MS)
        report.add("1 append", "single append max", app["max"], "ms",
                   note=f"mean {app['mean']:.2f} ms")
        bench_import_sync_replay(report, root, args.events)
        bench_worker(report, root, args.pickups)
    finally:
        if args.keep:
            say(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    report.details["total_s"] = round(time.perf_counter() - started, 1)
    report.machine["loadavg_end"] = _loadavg()

    if args.json:
        print(json.dumps({"machine": report.machine, "rows": [asdict(r) for r in report.rows],
                          "details": report.details}, indent=2, default=str))
    else:
        print_table(report, print)
        print(f"total {report.details['total_s']} s")
    return 0 if all(r.passed is not False for r in report.rows) else 1


if __name__ == "__main__":
    sys.exit(main())

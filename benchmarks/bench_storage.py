#!/usr/bin/env python
"""Benchmark the storage checks and the copies of issue 14 (docs/reliability.md).

On a home of ``--turns`` synthetic turns (benchmarks/bench_log.py's transcript, imported
and synced in-process, no embeddings), in a temporary folder:

1. what `diarist status` adds to check the home: ``PRAGMA quick_check`` of the log and of
   the projections database (``events.health.check_database``), the projection files'
   drift check (``ProjectionStore.file_drift``), and the whole `diarist status` process;
   ``PRAGMA integrity_check`` of the log for comparison;
2. `diarist replay` as a process (fresh build + swap), and the two copies it adds: the
   live database copied into the build (online backup) and the build copied over the live
   one;
3. `diarist backup DIR` as a process.

Usage::

    flock /tmp/diarist-bench.lock python benchmarks/bench_storage.py [--turns 100000] [--json]
"""
from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_log import machine, write_transcript  # noqa: E402

from events import EventLog, Home  # noqa: E402
from events.health import check_database  # noqa: E402
from events.transcript import import_file  # noqa: E402
from projections import open_store  # noqa: E402


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def timed(fn: Any, repeat: int = 3) -> float:
    """The best of ``repeat`` runs, in seconds (the page cache warm after the first)."""
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - started)
    return best


def cli(home: Home, *args: str) -> float:
    env = {**os.environ, "DIARIST_HOME": str(home.root), "PYTHONPATH": str(REPO),
           "DIARIST_NO_EMBED": "1"}
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "from cli.main import main; main()", *args], env=env,
                   check=True, capture_output=True)
    return time.perf_counter() - started


def copy_cost(source: Path, target: Path) -> float:
    started = time.perf_counter()
    src = sqlite3.connect(source)
    dst = sqlite3.connect(target)
    try:
        src.backup(dst)
    finally:
        dst.close()
        src.close()
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=100_000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    out: dict[str, Any] = {"machine": machine(), "turns": args.turns}
    with tempfile.TemporaryDirectory(prefix="diarist-bench-storage-") as scratch:
        root = Path(scratch)
        home = Home(root / "var").ensure()
        say(f"building a home of {args.turns} turns ...")
        write_transcript(root / "t.jsonl", args.turns)
        with EventLog(home.events_db) as log:
            import_file(log, root / "t.jsonl")
            out["events"] = log.count()
        with open_store(home) as store:
            store.catch_up_all()
            store.log.close()
        out["events_db_mb"] = round(home.events_db.stat().st_size / 1e6, 1)
        out["projections_db_mb"] = round(home.projections_db.stat().st_size / 1e6, 1)

        say("1. checks ...")
        out["quick_check_events_s"] = timed(lambda: check_database(home.events_db))
        out["quick_check_projections_s"] = timed(lambda: check_database(home.projections_db))
        out["integrity_check_events_s"] = timed(
            lambda: check_database(home.events_db, full=True), 1)

        def drift() -> None:
            with open_store(home) as store:
                for name in store.projectors:
                    store.file_drift(name)
                store.log.close()

        out["file_drift_s"] = timed(drift)
        out["status_process_s"] = min(cli(home, "status") for _ in range(3))

        say("2. replay ...")
        out["replay_process_s"] = cli(home, "replay")
        out["copy_live_to_build_s"] = copy_cost(home.projections_db, root / "copy1.db")
        out["copy_build_over_live_s"] = copy_cost(root / "copy1.db", root / "copy2.db")

        say("3. backup ...")
        out["backup_process_s"] = cli(home, "backup", str(root / "backup"))
    out["machine"]["loadavg_end"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        for key, value in out.items():
            print(f"{key}: {round(value, 3) if isinstance(value, float) else value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

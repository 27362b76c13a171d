#!/usr/bin/env python
"""Write a small home as this version of diarist writes it, for the upgrade tests.

    python scripts/make_home_fixture.py [--out tests/fixtures/home-v1]

It runs the real commands on a fresh temporary home — a week of chats imported, a note
remembered, mined (the heuristic extractor: no model), dreamt, consolidated, one memory
flagged and one forgotten, the projections synced — then keeps the log (``events.db``,
compacted into one file) and what replaying it gives: each projection's version and digest
(``digests.json``). A future diarist must open this log, migrate it (after taking a backup)
and replay it to the same digests, projection by projection, wherever the projection's
version has not changed (tests/test_upgrades.py).

Run it once per schema version, into a new folder (``home-v<N>``), and commit the result:
an old fixture is never regenerated — it is the record of what that version wrote.
"""
from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "examples" / "sample-week.transcript.jsonl"


def diarist(home: Path, *args: str) -> str:
    env = {**os.environ, "DIARIST_HOME": str(home), "PYTHONPATH": str(REPO),
           "DIARIST_NO_EMBED": "1"}
    env.pop("DIARIST_REDIS_URL", None)
    done = subprocess.run([sys.executable, "-c", "from cli.main import main; main()", *args],
                          env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"diarist {' '.join(args)} failed:\n{done.stdout}{done.stderr}")
    return done.stdout


def build(home: Path) -> None:
    diarist(home, "import", str(SAMPLE))
    diarist(home, "remember", "I keep bees on the allotment behind the station")
    diarist(home, "remember", "The spare key is with Priya at number 12", "--type", "workflow")
    for command in ("mine", "dream", "consolidate"):
        diarist(home, command)
    listed = diarist(home, "memory", "list").splitlines()
    diarist(home, "memory", "flag", listed[0].split()[0], "--reason", "not sure")
    diarist(home, "memory", "forget", listed[1].split()[0], "--reason", "fixture")
    diarist(home, "sync")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "tests" / "fixtures" / "home-v1")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO))
    from events import EventLog, Home
    from events.log import migrations
    from projections import open_store

    with tempfile.TemporaryDirectory(prefix="diarist-fixture-") as scratch:
        home = Home(Path(scratch) / "var")
        build(home.root)
        with EventLog(home.events_db) as log, open_store(home, log) as store:
            digests = {name: {"version": p.version, "digest": store.digest(name),
                              "position": store.position(name)}
                       for name, p in store.projectors.items()}
            head, count = log.head(), log.count()
        args.out.mkdir(parents=True, exist_ok=True)
        target = args.out / "events.db"
        target.unlink(missing_ok=True)
        db = sqlite3.connect(home.events_db)
        try:
            db.execute("VACUUM INTO ?", (str(target),))
        finally:
            db.close()
        copy = sqlite3.connect(target)
        try:
            copy.execute("PRAGMA journal_mode=DELETE")
        finally:
            copy.close()
    (args.out / "digests.json").write_text(json.dumps({
        "schema_version": migrations.version, "head": head, "events": count,
        "projections": digests}, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {target} ({target.stat().st_size} bytes, {count} events, schema "
          f"{migrations.version}) and {args.out / 'digests.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""`diarist backup DIR` (issue 14, "Backups"): a consistent copy of the log taken while
another process keeps appending; restored into a new home, `diarist replay` gives the same
digests as the source home at the backup's last seq."""
from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from events import EventLog, Home
from projections import open_store

from .conftest import REPO, run, run_cli, subprocess_env
from .faults import integrity, read_only, snapshot

SAMPLE = REPO / "examples" / "sample-week.transcript.jsonl"

APPENDER = """
import sys, time
from pathlib import Path
from events import EventLog
from events.types import Remembered, UserTurn
stop = Path(sys.argv[2])
with EventLog(sys.argv[1]) as log:
    i = 0
    while not stop.exists():
        if i % 2:
            log.append(Remembered(text=f"note {i} about the garden"), stream="memory")
        else:
            log.append(UserTurn(session="live", text=f"turn {i} while backing up"),
                       stream="live")
        i += 1
"""


def digests_upto(source: Home, head: int, scratch: Path) -> dict[str, str]:
    """The source home's projections as they are at seq ``head``: rebuilt in a scratch home
    over the source's log, up to it."""
    with EventLog(source.events_db) as log, open_store(Home(scratch), log) as store:
        for name in store.projectors:
            store.rebuild(name, upto=head)
        return {name: store.digest(name) for name in store.projectors}


def test_backup_while_another_process_appends_is_consistent_and_restores(
        home: Home, tmp_path: Path) -> None:
    assert run_cli(home, "import", str(SAMPLE)).returncode == 0
    assert run_cli(home, "remember", "The spare key is with Priya").returncode == 0
    home.config_file.write_text("memory:\n  top_k: 7\n", encoding="utf-8")
    stop = tmp_path / "stop"
    appender = subprocess.Popen([sys.executable, "-c", APPENDER, str(home.events_db), str(stop)],
                                env=subprocess_env(home))
    backups = []
    try:
        with EventLog(home.events_db) as log:
            start = log.head()
            while log.head() < start + 50:  # it is appending
                time.sleep(0.01)
            for n in range(3):
                target = tmp_path / f"backup-{n}"
                done = run_cli(home, "backup", str(target))
                assert done.returncode == 0, done.stderr
                assert f"to {target}: events.db, diarist.yaml, backup.json." in done.stdout
                backups.append(target)
            assert log.head() > start + 50
    finally:
        stop.touch()
        appender.wait(timeout=60)
    assert appender.returncode == 0

    with EventLog(home.events_db) as log:
        final = log.head()
    heads = []
    for target in backups:
        manifest = json.loads((target / "backup.json").read_text())
        heads.append(manifest["head"])
        copy = target / "events.db"
        assert integrity(copy) == "ok"
        assert not Path(f"{copy}-wal").exists()  # one self-contained file
        db = sqlite3.connect(copy)
        try:
            count, low, high = db.execute(
                "SELECT COUNT(*), MIN(seq), MAX(seq) FROM events").fetchone()
            rows = db.execute("SELECT * FROM events ORDER BY seq").fetchall()
        finally:
            db.close()
        assert (count, low, high) == (manifest["events"], 1, manifest["head"])  # no gap
        source = sqlite3.connect(home.events_db)
        try:
            assert rows == source.execute("SELECT * FROM events WHERE seq <= ? ORDER BY seq",
                                          (high,)).fetchall()  # a prefix of the log, exact
        finally:
            source.close()
        assert (target / "diarist.yaml").read_text() == "memory:\n  top_k: 7\n"
    assert start < heads[0] < heads[1] < heads[2] < final  # taken while the log grew

    # restore the middle one into a new home, replay, compare with the source at its seq
    restored = Home(tmp_path / "restored")
    restored.ensure()
    for name in ("events.db", "diarist.yaml"):
        shutil.copyfile(backups[1] / name, restored.root / name)
    replay = run_cli(restored, "replay")
    assert replay.returncode == 0, replay.stderr
    assert f"turns: rebuilt to {heads[1]}" in replay.stdout
    with EventLog(restored.events_db) as log, open_store(restored, log) as store:
        got = {name: store.digest(name) for name in store.projectors}
    assert got == digests_upto(home, heads[1], tmp_path / "reference")
    verify = run_cli(restored, "replay", "--verify")
    assert verify.returncode == 0 and "DIFFERS" not in verify.stdout


def test_backup_refuses_a_folder_in_the_home_or_one_not_empty(home: Home,
                                                             tmp_path: Path) -> None:
    run("remember", "something")
    before = snapshot(home.root)
    inside = run("backup", str(home.root / "backups" / "today"), ok=False)
    assert inside.exit_code == 1 and "is inside the home" in inside.output
    assert snapshot(home.root) == before
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "keep.txt").write_text("mine")
    refused = run("backup", str(busy), ok=False)
    assert refused.exit_code == 1 and "already exists and is not an empty folder" in \
        refused.output
    assert sorted(p.name for p in busy.iterdir()) == ["keep.txt"]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "Backed up 1 events" in run("backup", str(empty)).output


def test_backup_of_a_read_only_home(home: Home, tmp_path: Path) -> None:
    """The moment one wants a backup: the disk went read-only."""
    run("import", str(SAMPLE))
    with read_only(home) as ro:
        done = run_cli(ro, "backup", str(tmp_path / "rescue"))
    assert done.returncode == 0, done.stderr
    assert integrity(tmp_path / "rescue" / "events.db") == "ok"
    assert json.loads((tmp_path / "rescue" / "backup.json").read_text())["events"] == 68

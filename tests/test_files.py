"""Projection files: concurrent writers, paths that stay inside `var/memory/`, symbolic links,
and the home's permissions. Real processes and real files."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path

import pytest

from events import EventLog, Home
from events.types import Remembered

from .conftest import REPO, run, stop_process, subprocess_env

BURST = 20

# argv: go-file, then the CLI's arguments. Waits for the go file, then runs `diarist ARGS`
# exactly as the console entry point does.
CLI_AFTER_GO = textwrap.dedent("""
    import os, sys, time
    go, args = sys.argv[1], sys.argv[2:]
    from cli.main import main
    print("ready", flush=True)
    while not os.path.exists(go):
        time.sleep(0.001)
    sys.argv = ["diarist", *args]
    main()
""")


def burst(home: Home, tmp_path: Path,
          commands: list[list[str]]) -> list[subprocess.CompletedProcess]:
    """Start one real process per command, let them all import, then release them at once."""
    go = tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, "-c", CLI_AFTER_GO, str(go), *args],
                              env=subprocess_env(home), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, cwd=REPO)
             for args in commands]
    for proc in procs:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    go.touch()
    out = []
    for proc, args in zip(procs, commands, strict=True):
        stdout, stderr = proc.communicate(timeout=180)
        out.append(subprocess.CompletedProcess(args, proc.returncode, stdout, stderr))
    return out


def test_a_burst_of_remembers_writes_every_note_once(home: Home, tmp_path: Path) -> None:
    """Issue 14 item 1: twenty `diarist remember` at once all write today's journal; every
    one exits 0 and every note is in the log and in the journal exactly once."""
    run("remember", "the first note of the day")  # the journal file exists before the burst
    notes = [f"burst note number {i:02d}" for i in range(BURST)]
    results = burst(home, tmp_path, [["remember", note] for note in notes])
    for result in results:
        assert result.returncode == 0, result.stderr
        assert "Traceback" not in result.stderr and "Error" not in result.stderr, result.stderr
    with EventLog(home.events_db) as log:
        logged = Counter(e.payload["text"] for e in log.read(types=["Remembered"]))
    assert all(logged[note] == 1 for note in notes), logged
    (journal,) = [p for p in home.memory_dir.glob("*.md") if p.name != "MEMORY.md"]
    text = journal.read_text()
    assert all(text.count(note) == 1 for note in notes), text
    assert text.count("the first note of the day") == 1
    assert not list(home.memory_dir.rglob("*.tmp")), "a temporary file was left behind"


def test_a_temporary_file_left_by_a_killed_writer_is_removed(home: Home) -> None:
    """A writer killed between writing its temporary file and renaming it leaves the file;
    the next write of the folder (under the projection lock) removes it."""
    run("remember", "a note")
    (journal,) = home.memory_dir.glob("*.md")
    stale = journal.with_name(f".{journal.name}.k1ll3d.tmp")
    stale.write_text("half a journal")
    run("remember", "another note")
    assert not stale.exists()
    assert "another note" in journal.read_text()


def test_a_failed_write_leaves_no_temporary_file(tmp_path: Path) -> None:
    from projections.files import write_file

    folder = tmp_path / "memory"
    target = folder / "day.md"
    with pytest.raises(TypeError):
        write_file(target, object())  # type: ignore[arg-type]  # the write itself fails
    assert list(folder.iterdir()) == []
    write_file(target, "ok\n")
    assert target.read_text() == "ok\n" and [p.name for p in folder.iterdir()] == ["day.md"]


def test_journal_dates_cannot_name_a_path(home: Home) -> None:
    result = run("journal", "../../etc/passwd", ok=False)
    assert result.exit_code != 0
    assert "not a date: '../../etc/passwd'" in result.output and "Traceback" not in result.output


@pytest.mark.parametrize("name", ["../outside.md", "/etc/passwd", "archive/../../x.md", "", "."])
def test_projection_file_names_cannot_leave_the_memory_folder(tmp_path: Path, name: str) -> None:
    from projections.files import UnsafePath, contained

    with pytest.raises(UnsafePath, match="not a plain path"):
        contained(tmp_path / "memory", name)


def test_a_memory_folder_linked_out_of_the_home_is_refused(home: Home, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    home.memory_dir.symlink_to(outside)
    # the note is appended (a retry would add it twice), the journal is not written through
    # the link: a warning that names it, exit 0
    result = run("remember", "a note that must not land outside")
    assert "Warning:" in result.output
    assert "refusing to write through the symbolic link" in result.output
    assert "Traceback" not in result.output
    assert list(outside.iterdir()) == []
    with EventLog(home.events_db) as log:  # the note itself is safe in the log
        assert [e.payload["text"] for e in log.read(types=["Remembered"])] == [
            "a note that must not land outside"]
    home.memory_dir.unlink()
    run("sync")  # once the link is gone, the file is written
    assert "must not land outside" in next(home.memory_dir.glob("*.md")).read_text()


@pytest.mark.parametrize("which", ["journal", "MEMORY.md"])
def test_a_projection_file_linked_out_of_the_home_is_not_followed(home: Home, tmp_path: Path,
                                                                 which: str) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    home.memory_dir.mkdir(parents=True)
    with EventLog(home.events_db) as log:
        event = log.append(Remembered(text="a note"), stream="memory")
    name = f"{event.occurred_at[:10]}.md" if which == "journal" else "MEMORY.md"
    (home.memory_dir / name).symlink_to(victim)
    if which == "MEMORY.md":
        from events.types import LongTermRewritten

        with EventLog(home.events_db) as log:
            log.append(LongTermRewritten(content="# Memory\n- a line\n"), stream="memory")
    result = run("sync", ok=False)
    assert result.exit_code == 1 and "symbolic link" in result.output, result.output
    assert victim.read_text() == "precious\n"
    assert (home.memory_dir / name).is_symlink()



# --- permissions ----------------------------------------------------------------------------


def modes(root: Path) -> dict[str, int]:
    out = {".": root.stat().st_mode & 0o777}
    for path in root.rglob("*"):
        if not path.is_symlink():
            out[path.relative_to(root).as_posix()] = path.stat().st_mode & 0o777
    return out


def test_a_new_home_is_private(tmp_path: Path) -> None:
    """Every folder 0700, every file 0600 — the log and its -wal/-shm, projections, queue,
    journals, MEMORY.md, vectors, config — whatever the user's umask."""
    root = tmp_path / "fresh" / "var"
    env = {**subprocess_env(Home(root)), "DIARIST_NO_EMBED": "1"}
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(json.dumps({"session": "s", "at": "2024-03-01T10:00:00Z",
                                      "role": "user", "name": "Ann", "text": "I live in Leeds",
                                      "ref": "r1"}) + "\n")
    script = ("import os, sys; os.umask(0o022); sys.argv = ['diarist', *sys.argv[1:]];"
              " from cli.main import main; main()")
    for args in (["import", str(transcript)], ["sync"], ["remember", "tea, no sugar"],
                 ["mine", "--heuristic"], ["consolidate", "--heuristic"]):
        done = subprocess.run([sys.executable, "-c", script, *args], env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
    # a reader that keeps the log open, so its -wal and -shm files exist while we look
    tail = subprocess.Popen([sys.executable, "-c", script, "events", "tail", "-f"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not (root / "events.db-shm").exists():
            assert time.monotonic() < deadline and tail.poll() is None
            time.sleep(0.05)
        found = modes(root)
    finally:
        stop_process(tail)
    assert {"events.db", "events.db-wal", "events.db-shm", "projections.db", "queue.db",
            "memory/MEMORY.md", "memory/2024-03-01.md"} <= set(found), found
    loose = {name: oct(mode) for name, mode in found.items()
             if mode != (0o700 if (root / name).is_dir() else 0o600)}
    assert not loose, loose


def test_an_existing_home_is_tightened_once_with_a_note(home: Home, tmp_path: Path) -> None:
    run("remember", "a note")
    os.chmod(home.root, 0o755)
    for path in home.root.rglob("*"):
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    done = subprocess.run([sys.executable, "-c", "from cli.main import main; main()", "status"],
                          env=subprocess_env(home), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    notes = [line for line in done.stderr.splitlines() if "private to you" in line]
    assert len(notes) == 1 and str(home.root) in notes[0], done.stderr
    found = modes(home.root)
    assert all(mode == (0o700 if (home.root / name).is_dir() else 0o600)
               for name, mode in found.items()), found
    again = subprocess.run([sys.executable, "-c", "from cli.main import main; main()", "status"],
                           env=subprocess_env(home), capture_output=True, text=True, timeout=60)
    assert again.returncode == 0 and "private" not in again.stderr



def test_a_folder_without_a_log_is_never_tightened(tmp_path: Path) -> None:
    """`diarist status` run in / would take /var for its home: a folder diarist did not make
    (no events.db) keeps its modes, whatever is in it."""
    root = tmp_path / "var"
    (root / "lib").mkdir(parents=True)
    (root / "lib" / "file").write_text("x")
    for path in (root, root / "lib"):
        os.chmod(path, 0o755)
    os.chmod(root / "lib" / "file", 0o644)
    done = subprocess.run([sys.executable, "-c", "from cli.main import main; main()", "status"],
                          env=dict(os.environ, DIARIST_HOME=str(root)), capture_output=True,
                          text=True, timeout=60)
    assert "private to you" not in done.stderr, done.stderr
    found = modes(root)
    assert (found["."], found["lib"], found["lib/file"]) == (0o755, 0o755, 0o644), found

"""Fault injection for the storage tests: kill -9 at a random point, a read-only home, a
full disk, damaged files — real processes, real mounts where the machine allows them.

- :func:`kill_and_restart` is the one helper for "run a command, SIGKILL it at a random
  (seeded) moment, run it again to the end, then check": tests/test_crash.py,
  tests/test_fault_injection.py.
- :func:`read_only` makes a home read-only: a read-only bind mount when this process may
  mount (root), else ``chmod -R a-w`` (which root would ignore).
- :func:`small_disk` mounts a size-limited tmpfs (root only; the tests that need one skip
  otherwise, and the SQLITE_FULL path is also tested by injection, which always runs).
"""
from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import sqlite3
import stat
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from events import Home

from .conftest import diarist_cmd, run_cli, subprocess_env


def fault_runs(default: int) -> int:
    """How many kill -9 runs a fault test makes: ``default`` (what .ci/run runs), or
    ``$DIARIST_FAULT_RUNS`` for the full counts (docs/reliability.md)."""
    value = os.environ.get("DIARIST_FAULT_RUNS")
    return int(value) if value else default


def kill9(proc: subprocess.Popen) -> int | None:
    """SIGKILL ``proc``; returns None when it was still running (the kill landed), else its
    exit code."""
    code = proc.poll()
    if code is None:
        proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    return code


@dataclass
class Killed:
    """What one run of :func:`kill_and_restart` saw."""

    landed: bool          # the kill hit a running process (not one that had finished)
    delay: float          # seconds after the start (or the trigger) the kill was sent
    stderr: str           # of the killed process
    restart: subprocess.CompletedProcess[str] | None


def kill_and_restart(home: Home, args: list[str], rng: random.Random, *,
                     delay: tuple[float, float], ready: Callable[[], bool] | None = None,
                     restart: list[str] | None = None, env: dict[str, str] | None = None,
                     timeout: float = 300) -> Killed:
    """Run ``diarist ARGS`` on ``home`` as a real process, SIGKILL it after a random delay
    drawn from ``delay`` (counted from when ``ready()`` first says yes, if given), then run
    ``restart`` (default: the same command) to the end. The caller checks the home."""
    proc = subprocess.Popen([*diarist_cmd(), *args], env=env or subprocess_env(home),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        if ready is not None:
            deadline = time.monotonic() + timeout
            while not ready() and proc.poll() is None:
                assert time.monotonic() < deadline, f"{args} never got ready"
                time.sleep(0.005)
        wait = rng.uniform(*delay)
        time.sleep(wait)
        landed = kill9(proc) is None
    finally:
        if proc.poll() is None:
            kill9(proc)
        stderr = proc.stderr.read() if proc.stderr else ""
        if proc.stderr:
            proc.stderr.close()
    assert landed or proc.returncode == 0, f"{args} failed before the kill: {stderr}"
    done = None
    if restart != []:
        done = subprocess.run([*diarist_cmd(), *(restart or args)],
                              env=env or subprocess_env(home), capture_output=True, text=True,
                              timeout=timeout)
        assert done.returncode == 0, done.stdout + done.stderr
    return Killed(landed, wait, stderr, done)


def checkpoint(db_path: Path) -> None:
    """Fold the WAL into the main file so copying the ``.db`` file alone copies everything."""
    db = sqlite3.connect(db_path)
    try:
        busy, _, _ = db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        assert busy == 0
    finally:
        db.close()


class Tally:
    """Runs and kills that landed mid-work, per test; each line also goes to
    ``$DIARIST_FAULT_REPORT`` when set (the figures in docs/reliability.md)."""

    def __init__(self, name: str) -> None:
        self.name, self.runs, self.landed = name, 0, 0

    def add(self, landed: bool) -> None:
        self.runs += 1
        self.landed += landed

    def done(self) -> None:
        assert self.landed >= 1, f"{self.name}: no kill landed mid-work in {self.runs} runs"
        report = os.environ.get("DIARIST_FAULT_REPORT")
        if report:
            with open(report, "a", encoding="utf-8") as handle:
                handle.write(json.dumps({"command": self.name, "runs": self.runs,
                                         "landed": self.landed}) + "\n")


def integrity(path: Path) -> str:
    """``PRAGMA integrity_check`` of a database file (``ok`` when sound)."""
    db = sqlite3.connect(path)
    try:
        return db.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        db.close()


def assert_log_sound(home: Home) -> int:
    """The log passes integrity_check and ``seq`` has no gap; returns the head."""
    assert integrity(home.events_db) == "ok"
    db = sqlite3.connect(home.events_db)
    try:
        count, low, high = db.execute("SELECT COUNT(*), MIN(seq), MAX(seq) FROM events").fetchone()
    finally:
        db.close()
    assert count == 0 or (low, high) == (1, count)
    return high or 0


def assert_replay_verifies(home: Home) -> None:
    verify = run_cli(home, "replay", "--verify")
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert "DIFFERS" not in verify.stdout


# --- mounts ---------------------------------------------------------------------------------


def can_mount() -> bool:
    return os.geteuid() == 0 and Path("/proc/mounts").exists()


def _mount(*args: str) -> None:
    subprocess.run(["mount", *args], check=True, capture_output=True, text=True)


def _umount(path: Path) -> None:
    for _ in range(50):  # a child that still holds a file keeps it busy for a moment
        if subprocess.run(["umount", str(path)], capture_output=True).returncode == 0:
            return
        time.sleep(0.1)
    subprocess.run(["umount", "-l", str(path)], capture_output=True)


@contextlib.contextmanager
def read_only(home: Home) -> Iterator[Home]:
    """``home`` made read-only; yields the home to use (a read-only bind mount of it when
    this process can mount, else the same folder after ``chmod -R a-w``)."""
    if can_mount():
        target = home.root.with_name(home.root.name + "-ro")
        target.mkdir()
        try:
            _mount("--bind", str(home.root), str(target))
        except subprocess.CalledProcessError as exc:
            target.rmdir()
            pytest.skip(f"cannot bind-mount here: {exc.stderr}")
        try:
            _mount("-o", "remount,bind,ro", str(target))
            yield Home(target)
        finally:
            _umount(target)
            target.rmdir()
        return
    if os.geteuid() == 0:
        pytest.skip("root can write through chmod a-w and cannot mount here")
    modes = {p: p.stat().st_mode for p in [home.root, *home.root.rglob("*")]}
    for path in modes:
        path.chmod(stat.S_IMODE(modes[path]) & ~0o222)
    try:
        yield home
    finally:
        for path, mode in modes.items():
            path.chmod(stat.S_IMODE(mode))


@contextlib.contextmanager
def small_disk(folder: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` (e.g. ``"4m"``) mounted at ``folder``; skips when not allowed."""
    if not can_mount():
        pytest.skip("mounting a size-limited tmpfs needs root")
    folder.mkdir(parents=True, exist_ok=True)
    try:
        _mount("-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder))
    except subprocess.CalledProcessError as exc:
        pytest.skip(f"cannot mount a tmpfs here: {exc.stderr}")
    try:
        yield folder
    finally:
        _umount(folder)


def fill(folder: Path) -> Path:
    """Write a file into ``folder`` until its disk is full; returns the file."""
    filler = folder / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        for size in (1 << 20, 1 << 16, 4096, 512, 1):
            block = b"\0" * size
            while True:
                try:
                    os.write(fd, block)
                except OSError:
                    break
    finally:
        os.close(fd)
    return filler


def snapshot(root: Path) -> dict[str, tuple[int, bytes]]:
    """Every file under ``root``: (mtime_ns, bytes) — to prove nothing changed."""
    return {str(p.relative_to(root)): (p.stat().st_mtime_ns, p.read_bytes())
            for p in sorted(root.rglob("*")) if p.is_file()}

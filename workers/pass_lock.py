"""One pass of a kind at a time on a home: mining, dreaming, consolidation, maintenance.

Each pass holds an exclusive ``flock`` on ``var/locks/<pass>.lock`` while it runs; a second
one (another worker thread or process, or ``diarist mine`` while the worker mines) is
refused at once with :class:`PassRunning` — it does not wait. The kernel drops the lock
when its process dies however it dies (``kill -9``, power loss), so a killed pass never
blocks the next, and there is no TTL to tune. Passes run where the log is (they append to
it), so a lock on the home's file system is enough even when extraction is spread over
Redis workers on other machines.
"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import os
from collections.abc import Iterator

from events import DiaristError, Home

PASSES = ("mine", "dream", "consolidate", "maintain")


class PassRunning(DiaristError):
    hint = "Wait for it to finish (a killed pass frees its lock at once), then run it again."


def lock_path(home: Home, name: str) -> os.PathLike[str]:
    if name not in PASSES:
        raise ValueError(f"unknown pass {name!r}")
    folder = home.root / "locks"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{name}.lock"


@contextlib.contextmanager
def pass_lock(home: Home, name: str) -> Iterator[None]:
    """Hold the lock of pass ``name`` for the block; PassRunning when another holds it."""
    path = lock_path(home, name)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            raise PassRunning(f"another {name} pass is running on this home"
                              + (f" (pid {holder})" if holder else "")) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)


def pass_running(home: Home, name: str) -> bool:
    """Whether a pass ``name`` holds its lock right now."""
    try:
        with pass_lock(home, name):
            return False
    except PassRunning:
        return True

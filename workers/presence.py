"""Is a ``diarist worker`` running on this home? A lock file answers, and survives ``kill -9``.

Every running worker holds a *shared* ``flock`` on ``var/worker.lock`` for its whole life
(:func:`hold_worker_lock`), so several workers can run side by side. :func:`worker_present`
asks for an *exclusive* lock without blocking: refused means at least one worker holds its
shared lock; granted means none does, and it is released at once. The kernel drops a
process's locks when it dies, however it dies, so a killed worker never looks alive, and
there is no pid file to go stale. The file also holds the pid of the worker that started
last (for people; presence never reads it).

Only workers on this machine (sharing this home's file system) are seen: with Redis and
workers elsewhere the chat still catches up in-process — correct, only duplicate work.
"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path

from events import DiaristError, Home

# A worker waits this long for its shared lock: only a probe (microseconds) holds the
# exclusive one, so a longer wait means something else is holding the file.
ACQUIRE_TIMEOUT_S = 5.0


def worker_present(home: Home) -> bool:
    """True while at least one ``diarist worker`` holds its lock on ``home``."""
    return lock_held(home.worker_lock)


def lock_held(path: Path) -> bool:
    """Whether some process holds an ``flock`` on ``path`` (False when there is no such
    file): a non-blocking probe, released at once."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                return True
            raise
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def last_worker_pid(home: Home) -> int | None:
    """The pid the most recently started worker wrote (it may have exited since)."""
    try:
        return int(home.worker_lock.read_text(encoding="ascii").split()[0])
    except (OSError, ValueError, IndexError):
        return None


@contextlib.contextmanager
def hold_worker_lock(home: Home) -> Iterator[int]:
    """Hold this process's shared worker lock for the ``with`` block; yields the fd."""
    home.ensure()
    fd = os.open(home.worker_lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        deadline = time.monotonic() + ACQUIRE_TIMEOUT_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    raise
                if time.monotonic() >= deadline:
                    raise DiaristError(
                        f"{home.worker_lock} stays locked exclusively",
                        hint="Something other than a diarist worker holds the lock file; "
                             "find it with `fuser` and stop it.") from None
                time.sleep(0.01)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield fd
    finally:
        os.close(fd)  # closing the last descriptor releases the lock

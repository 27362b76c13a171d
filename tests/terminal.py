"""A real pseudo-terminal for driving `diarist chat` as a person would (tests only)."""
from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import subprocess
import termios
import time
from pathlib import Path


def _controlling_tty() -> None:
    """In the child: its own session with the pty as controlling terminal, so ^C typed on the
    pty is a SIGINT for it, as in a real terminal."""
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class Terminal:
    def __init__(self, cmd: list[str], env: dict[str, str], cwd: Path) -> None:
        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen(cmd, stdin=slave, stdout=slave, stderr=slave, env=env,
                                     cwd=cwd, close_fds=True, preexec_fn=_controlling_tty)
        os.close(slave)
        self.screen = ""

    def expect(self, pattern: str, timeout: float = 30.0) -> str:
        deadline = time.monotonic() + timeout
        while not re.search(pattern, self.screen):
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"{pattern!r} not seen; screen:\n{self.screen[-2000:]}")
            ready, _, _ = select.select([self.master], [], [], min(left, 0.2))
            if ready:
                try:
                    self.screen += os.read(self.master, 65536).decode("utf-8", "replace")
                except OSError:
                    break
        return self.screen

    def send(self, line: str) -> None:
        os.write(self.master, (line + "\r").encode())

    def close(self) -> int:
        try:
            return self.proc.wait(timeout=30)
        finally:
            os.close(self.master)

    def key(self, data: bytes) -> None:
        """Type raw bytes (``b"\\x03"`` is ^C, ``b"\\x04"`` ^D)."""
        os.write(self.master, data)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()

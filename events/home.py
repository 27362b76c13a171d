"""Where a workspace keeps its state: ``var/`` of the current directory, or ``DIARIST_HOME``.

Everything diarist writes lives under one home; nothing global, nothing else on disk.

A home holds a person's memory, so it is theirs alone: folders 0700, files 0600. The CLI sets
the umask to :data:`UMASK` (new files are private whatever the shell's umask), the home is
created 0700, and :func:`tighten` brings a home made by an older diarist (or copied with
looser modes) to that on first use.
"""
from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from .errors import NotFound
from .settings import setting

HOME_ENV = "DIARIST_HOME"
UMASK = 0o077          # no bit for the group or others on anything diarist creates
PRIVATE_DIR = 0o700


@dataclass(frozen=True)
class Home:
    root: Path

    @classmethod
    def resolve(cls, explicit: str | os.PathLike[str] | None = None) -> Home:
        """``--home`` first, then ``$DIARIST_HOME``, then ``./var``."""
        chosen: str | os.PathLike[str] = setting(explicit, HOME_ENV, None) or Path.cwd() / "var"
        return cls(Path(chosen).expanduser().resolve())

    def ensure(self) -> Home:
        self.root.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
        return self

    def exists(self) -> bool:
        return self.root.is_dir()

    def missing(self) -> NotFound:
        """The error for a home that does not exist (a mistyped ``--home``, most likely)."""
        what = "it is a file, not a folder" if self.root.exists() else "the folder does not exist"
        return NotFound(
            f"no diarist home at {self.root} ({what})",
            hint=f"Check --home or ${HOME_ENV} for a typo. `diarist import FILE`, "
                 "`diarist remember TEXT` or `diarist chat` start a new home there.")

    @property
    def events_db(self) -> Path:
        return self.root / "events.db"

    @property
    def projections_db(self) -> Path:
        return self.root / "projections.db"

    @property
    def queue_db(self) -> Path:
        return self.root / "queue.db"

    @property
    def memory_dir(self) -> Path:
        return self.root / "memory"

    @property
    def models_dir(self) -> Path:
        return self.root / "models"

    @property
    def config_file(self) -> Path:
        return self.root / "diarist.yaml"

    @property
    def worker_lock(self) -> Path:
        """Held (``flock``, shared) by every running ``diarist worker``: see workers/presence.py."""
        return self.root / "worker.lock"


def _loose(path: Path) -> bool:
    """Whether ``path`` (not followed if a link) gives the group or others any access."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return False
    return not stat.S_ISLNK(mode) and bool(mode & 0o077)


def _quick_look(home: Home) -> bool:
    """Whether anything looks loose: the root, what is in it and in ``memory/`` (a few
    dozen stats; a home diarist made itself never is)."""
    paths = [home.root]
    for folder in (home.root, home.memory_dir):
        try:
            paths.extend(folder.iterdir())
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            continue
    return any(_loose(p) for p in paths)


def tighten(home: Home) -> int:
    """Take every permission of the group and others off everything under the home (a
    0755 folder becomes 0700, a 0644 file 0600; symbolic links are left alone, never
    followed); returns how many were changed. Cheap when nothing is loose. A folder
    without a log is not a diarist home and is never touched: ``./var`` in ``/`` is the
    system's ``/var``."""
    if not home.events_db.is_file() or not _quick_look(home):
        return 0
    changed = 0
    for folder, dirs, files in os.walk(home.root):
        for name in [".", *dirs, *files]:
            path = Path(folder) / name
            if name == "." and Path(folder) != home.root:
                continue  # each folder is seen once, as an entry of its parent
            if _loose(path):  # the owner's bits stay; the group's and others' go
                os.chmod(path, stat.S_IMODE(os.lstat(path).st_mode) & ~UMASK)
                changed += 1
    return changed

"""Where a workspace keeps its state: ``var/`` of the current directory, or ``DIARIST_HOME``.

Everything diarist writes lives under one home; nothing global, nothing else on disk.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .errors import NotFound
from .settings import setting

HOME_ENV = "DIARIST_HOME"


@dataclass(frozen=True)
class Home:
    root: Path

    @classmethod
    def resolve(cls, explicit: str | os.PathLike[str] | None = None) -> Home:
        """``--home`` first, then ``$DIARIST_HOME``, then ``./var``."""
        chosen: str | os.PathLike[str] = setting(explicit, HOME_ENV, None) or Path.cwd() / "var"
        return cls(Path(chosen).expanduser().resolve())

    def ensure(self) -> Home:
        self.root.mkdir(parents=True, exist_ok=True)
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

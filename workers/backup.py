"""``diarist backup DIR``: a consistent copy of the log (and the config), taken while others
keep writing.

The log is the only truth: everything else in a home is rebuilt from it (``diarist
replay``), the embedding model re-exported and the vectors re-embedded (``diarist sync``).
So a backup is ``events.db`` — copied with SQLite's online backup API, which reads one
snapshot of the database (WAL: writers go on meanwhile) — plus ``diarist.yaml`` and a
``backup.json`` manifest (events, last seq, schema, sha256). The copy is checked
(``PRAGMA integrity_check``) before the command reports success. It reads only, so it works
on a read-only home. Restore: docs/reliability.md, "Backups".
"""
from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as package_version
from pathlib import Path

from events import DiaristError, EventLog, Home, clock
from events.db import fsync_dir, is_full, online_backup
from events.health import disk_full
from events.log import migrations

MANIFEST = "backup.json"


@dataclass(frozen=True)
class Backup:
    folder: Path
    events: int          # events in the copy
    head: int            # the last seq in the copy
    size: int            # bytes of the copied log
    files: list[Path]    # what was written


def backup(home: Home, target: Path) -> Backup:
    """Copy ``home``'s log and config into ``target``, a new or empty folder outside the
    home; nothing is left behind in ``target`` if it fails."""
    folder = _check_target(home, target)
    created = not folder.exists()
    written: list[Path] = []
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with EventLog.reader(home) as log:
            copy = folder / "events.db"
            online_backup(log.db, copy)
            written.append(copy)
        events, head = _verify_copy(copy)
        if home.config_file.exists():
            shutil.copy2(home.config_file, folder / home.config_file.name)
            written.append(folder / home.config_file.name)
        manifest = folder / MANIFEST
        manifest.write_text(json.dumps({
            "created_at": clock.now_iso(), "home": str(home.root), "events": events,
            "head": head, "schema_version": migrations.version, "diarist": _version(),
            "sha256": _sha256(copy), "files": sorted(p.name for p in written)},
            indent=2, sort_keys=True) + "\n", encoding="utf-8")
        written.append(manifest)
        fsync_dir(folder)
    except BaseException as exc:
        for path in written:
            path.unlink(missing_ok=True)
        if created:
            shutil.rmtree(folder, ignore_errors=True)
        if isinstance(exc, OSError | sqlite3.OperationalError) and is_full(exc):
            raise disk_full(folder, exc) from None
        raise
    return Backup(folder, events, head, copy.stat().st_size, written)


def _check_target(home: Home, target: Path) -> Path:
    folder = target.expanduser().resolve()
    root = home.root.resolve()
    if folder == root or folder.is_relative_to(root):
        raise DiaristError(f"{target} is inside the home {home.root}",
                           hint="Back up to another folder, ideally on another disk: a backup "
                                "inside the home is lost with it.")
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise DiaristError(f"{target} already exists and is not an empty folder",
                           hint="Give a new or empty folder for each backup (e.g. one named "
                                "after the date); nothing was written.")
    return folder


def _verify_copy(path: Path) -> tuple[int, int]:
    """The copy passes ``integrity_check``; returns (events, last seq)."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        result = db.execute("PRAGMA integrity_check").fetchone()[0]
        events, head = db.execute("SELECT COUNT(*), COALESCE(MAX(seq), 0) FROM events").fetchone()
    finally:
        db.close()
    if result != "ok":
        raise DiaristError(f"the copy at {path} failed its integrity check ({result})",
                           hint="Check the disk of the backup folder and try again.")
    return events, head


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _version() -> str:
    try:
        return package_version("diarist")
    except PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        return "unknown"

"""Projection files on disk: written atomically, privately, and only inside their folder.

- :func:`write_file` writes a unique temporary file in the target's folder (``mkstemp``:
  mode 0600, a name no other writer can hold), fsyncs it, renames it over the target and
  fsyncs the folder; on any failure the temporary file is removed. Two processes writing the
  same journal at once therefore never share a temporary name (they used to: one's rename
  found the other's file gone, `FileNotFoundError`).
- :func:`contained` turns a name relative to a folder (``2024-03-01.md``,
  ``archive/2024-03-01.md``) into a path, refusing absolute names, ``..`` and any symbolic
  link on the way (the folder itself included), so a journal or MEMORY.md can never be
  written outside ``var/memory/`` — not through a crafted name, not through a link.
"""
from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path, PurePosixPath

from events import DiaristError
from events.db import fsync_dir

TEMP_SUFFIX = ".tmp"


class UnsafePath(DiaristError):
    """A projection file's path leaves its folder or goes through a symbolic link."""


def fsync_file(path: Path) -> None:
    """Flush a file's data to disk."""
    with open(path, "rb") as handle:
        os.fsync(handle.fileno())


def write_file(path: Path, content: str | None) -> None:
    """Replace ``path`` atomically (a temp file of its own, fsync, rename); None removes it.
    The caller checks the path (:func:`contained`); this never follows a link at ``path``:
    the rename replaces the link itself."""
    if content is None:
        path.unlink(missing_ok=True)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=TEMP_SUFFIX)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(content)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise
    fsync_dir(path.parent)


def remove_stale_temps(folder: Path) -> int:
    """Delete the temporary files :func:`write_file` left in ``folder`` (and below) when its
    process was killed; the caller must hold what serialises writers (the projection
    database's write lock). Returns how many."""
    if not folder.is_dir() or folder.is_symlink():
        return 0
    removed = 0
    for path in folder.rglob(f".*{TEMP_SUFFIX}"):
        if path.is_file() and not path.is_symlink():
            path.unlink(missing_ok=True)
            removed += 1
    return removed


def contained(folder: Path, name: str) -> Path:
    """``folder / name``, refusing a name that is absolute or climbs out (``..``), and any
    symbolic link from ``folder`` down to the file (UnsafePath says which and what to do)."""
    parts = PurePosixPath(name).parts
    if not parts or PurePosixPath(name).is_absolute() or any(p in ("..", ".", "") for p in parts):
        raise UnsafePath(f"refusing to write {name!r}: not a plain path inside {folder}",
                         hint="Projection files are named YYYY-MM-DD.md, archive/… or MEMORY.md.")
    for candidate in [folder, *(folder.joinpath(*parts[:i + 1]) for i in range(len(parts)))]:
        try:
            mode = os.lstat(candidate).st_mode
        except FileNotFoundError:
            break
        if stat.S_ISLNK(mode):
            target = os.readlink(candidate)
            raise UnsafePath(
                f"refusing to write through the symbolic link {candidate} (→ {target}): "
                "diarist writes its files only inside its home",
                hint=f"Remove the link (`rm {candidate}`), then run `diarist sync`.")
    return folder.joinpath(*parts)

"""``diarist import`` and ``export``: transcripts in and out of the log."""
from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from events import DiaristError, EventLog, Home, RecordedEvent
from events.transcript import ImportResult, export_lines, import_turns, read_turns

from .dispatch import after_append


def import_transcript(home: Home, path: Path) -> ImportResult:
    """Append a transcript (all or nothing, idempotent by ref); a running worker is asked to
    project what was appended. The file is read and checked before the home is touched."""
    turns, name = read_turns(path)
    with EventLog(home.events_db) as log:
        result = import_turns(log, turns, name)
    if result.appended:
        after_append(home)
    return result


@dataclass(frozen=True)
class Exported:
    turns: int                         # transcript lines written
    unreadable: list[RecordedEvent]    # rows written raw with a marker (see export_lines)


def export_transcript(home: Home, path: Path | None = None,
                      echo: Callable[[str], None] = print) -> Exported:
    """Write every turn as transcript JSONL to ``path`` (replaced atomically), or line by
    line to ``echo``; rows this code cannot read are written raw, marked, and listed."""
    unreadable: list[RecordedEvent] = []
    if path is None:
        with EventLog.reader(home) as log:
            count = 0
            for line in export_lines(log, unreadable):
                echo(line)
                count += 1
        return Exported(count - len(unreadable), unreadable)
    if not path.parent.is_dir():
        raise DiaristError(f"{path.parent}: no such folder",
                           hint="Create the folder first, or write somewhere else with -o.")
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    count = 0
    try:
        with EventLog.reader(home) as log, tmp.open("w", encoding="utf-8") as handle:
            for line in export_lines(log, unreadable):
                handle.write(line + "\n")
                count += 1
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)
    return Exported(count - len(unreadable), unreadable)

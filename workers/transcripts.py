"""``diarist import`` and ``export``: transcripts (and chat exports) in, transcripts out."""
from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from events import DiaristError, EventLog, Home, RecordedEvent
from events.transcript import export_lines, import_turns

from .imports import LABELS, read_export
from .imports.common import left_out_line
from .queue_port import NO_QUEUE, QueuePort


@dataclass(frozen=True)
class Imported:
    file: str            # as errors name it (``<stdin>`` for standard input)
    format: str          # a key of workers.imports.LABELS: "transcript", "chatgpt", …
    turns: int
    sessions: int
    appended: int        # events appended
    skipped: int         # events already in the log
    left_out: list[str]  # what an export held that is not a turn: "3 system or tool messages"
    kept: list[str]      # messages changed since a first import, kept as first imported

    @property
    def label(self) -> str:
        return LABELS[self.format]


def import_transcript(home: Home, path: Path, *, queue: QueuePort = NO_QUEUE) -> Imported:
    """Append a transcript or a chat export (:mod:`workers.imports` tells which): all or
    nothing, idempotent by ref; a running worker is asked (``queue``) to project what was
    appended. The file is read and checked before the home is touched.

    A transcript's ref already in the log for a different turn refuses the import (a ref
    names one turn for good: its author can give a changed turn a new ref). An export's
    message changed since it was first imported (edited in place, as Open WebUI allows)
    cannot be given a new id: it is kept as first imported, and listed in ``kept``."""
    export = read_export(path)
    with EventLog(home.events_db) as log:
        result = import_turns(log, export.turns, export.name, titles=export.titles,
                              changed="refuse" if export.format == "transcript" else "keep")
    if result.appended:
        queue.appended(home)
    left_out = export.left_out_lines()
    if result.copies:
        left_out.append(left_out_line("copy", result.copies) + " (imported before)")
    return Imported(export.name, export.format, result.turns, result.sessions, result.appended,
                    result.skipped, left_out, list(result.kept))


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

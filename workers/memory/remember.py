"""``diarist remember``: a note appended as ``Remembered`` and projected at once."""
from __future__ import annotations

from dataclasses import dataclass

from events import DiaristError, EventLog, Home, RecordedEvent, streams
from events.memory_types import DEFAULT
from events.text import text_problem
from events.types import Remembered
from projections import open_store

from ..queue_port import NO_QUEUE, QueuePort
from ..sync.catch_up import catch_up_after_append, not_up_to_date


def catch_up_now(home: Home, log: EventLog, queue: QueuePort) -> str | None:
    """Project what was just appended in this process (no embedding), so the next read sees
    it even with no worker running; a worker (if any) gets the rest through ``queue``.
    Returns a warning when the projections could not be caught up (the append stands)."""
    try:
        with open_store(home, log) as store:
            warning = catch_up_after_append(store)
    except Exception as exc:  # a damaged or unwritable projections.db: the note stands
        warning = not_up_to_date(exc, home)
    queue.appended(home)
    return warning


@dataclass(frozen=True)
class Remembering:
    event: RecordedEvent
    warning: str | None  # the note is in the log, but memory could not be brought up to date


def remember(home: Home, text: str, type_: str = DEFAULT.name, *,
             queue: QueuePort = NO_QUEUE) -> Remembering:
    """Remember ``text`` (a typed memory and a line in today's journal); ``queue`` tells a
    running worker to catch up the rest (embeddings)."""
    if not text.strip():
        raise DiaristError("nothing to remember: TEXT is empty",
                           hint='Give the note in quotes: diarist remember "I prefer tabs"')
    problem = text_problem(text)
    if problem:
        raise DiaristError(f"TEXT {problem}",
                           hint="Type the note again without the broken character; "
                                "nothing was remembered.")
    with EventLog(home.events_db) as log:
        event = log.append(Remembered(text=text.strip(), type=type_, source="user"),
                           stream=streams.MEMORY)
        warning = catch_up_now(home, log, queue)
    return Remembering(event, warning)

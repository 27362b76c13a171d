"""``diarist remember``: a note appended as ``Remembered`` and projected at once."""
from __future__ import annotations

from events import DiaristError, EventLog, Home, RecordedEvent, streams
from events.text import text_problem
from events.types import Remembered
from projections import open_store

from ..dispatch import after_append


def catch_up_now(home: Home, log: EventLog) -> None:
    """Project what was just appended in this process (no embedding), so the next read sees
    it even with no worker running; a worker (if any) gets the rest."""
    with open_store(home, log) as store:
        store.catch_up_all()
    after_append(home)


def remember(home: Home, text: str, type_: str = "user_preference") -> RecordedEvent:
    """Remember ``text`` (a typed memory and a line in today's journal)."""
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
        catch_up_now(home, log)
    return event

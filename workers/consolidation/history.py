"""Every MEMORY.md there ever was: the ``LongTermRewritten`` events of the log, newest
first, each shown as the long_term projection shows it (secrets masked, forgotten lines
dropped, capped) — ``diarist memory history``."""
from __future__ import annotations

from dataclasses import dataclass

from events import EventLog, Home, NotFound
from events.types import LongTermRewritten
from projections import open_store
from projections.long_term import LongTermProjector, render


@dataclass(frozen=True)
class Version:
    number: int          # 1 = the first MEMORY.md
    seq: int
    id: str
    at: str
    model: str
    journals: list[str]
    chars: int
    content: str         # as MEMORY.md showed it (masked, forgotten lines dropped, capped)


def versions(home: Home) -> list[Version]:
    """Every MEMORY.md in the log, newest first."""
    with EventLog(home.events_db) as log, open_store(home, log) as store:
        store.catch_up("long_term")
        marks = LongTermProjector.marks.all(store.db)
        events = log.read(types=[LongTermRewritten])
    out = []
    for number, event in enumerate(events, 1):
        rewrite = event.data_as(LongTermRewritten)
        content = render(rewrite.content, marks)
        out.append(Version(number, event.seq, event.id, event.occurred_at, rewrite.model,
                           list(rewrite.journals), len(content), content))
    return out[::-1]


def version(home: Home, which: str) -> Version:
    """One version by number (1 = the first), log position or event id."""
    found = versions(home)
    for v in found:
        if which in (str(v.number), v.id) or (which.startswith("#") and which[1:] == str(v.seq)):
            return v
    raise NotFound(f"no MEMORY.md version {which!r}",
                   hint=f"`diarist memory history` lists them (1 to {len(found)}).")

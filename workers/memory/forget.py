"""``diarist memory forget`` and ``flag``: a user's decision, recorded as an event first."""
from __future__ import annotations

from events import EventLog, Home, NotFound, streams
from events.types import MemoryFlagged, MemoryForgotten
from projections import open_store
from projections.lookup import memory_md_lines_named_by, texts_named_by
from projections.memories import Memory, get_memory
from projections.vector_matrix import refresh_vectors

from ..queue_port import NO_QUEUE, QueuePort


def forget(home: Home, key: str, reason: str = "", *, queue: QueuePort = NO_QUEUE) -> int:
    """Forget what ``key`` names (a memory id, journal entry id, or a turn's event id or ref)
    in every projection — recall, the search index, vectors, journal files and MEMORY.md —
    by appending ``MemoryForgotten``; returns how many texts it named. Names nothing: an
    error, and nothing is appended. ``queue`` tells a running worker."""
    with EventLog(home.events_db) as log, open_store(home, log) as store:
        store.catch_up_all()
        texts = texts_named_by(store.db, key)
        if not texts:
            raise NotFound(f"nothing to forget for {key!r}",
                           hint="Use an id from `diarist memory list`, `diarist recall` or "
                                "`diarist events`.")
        # and MEMORY.md's lines that state it in other words (a cut, "Sam" for "I")
        texts += memory_md_lines_named_by(store.db, key)
        log.append(MemoryForgotten(ids=[key], reason=reason, texts=texts), stream=streams.MEMORY)
        store.catch_up_all()
        refresh_vectors(store)  # zero the forgotten columns of the vector matrix file now
        store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # no old page keeps the text
    queue.appended(home)
    return len(texts)


def flag(home: Home, memory_id: str, reason: str = "", *,
         queue: QueuePort = NO_QUEUE) -> Memory:
    """Flag an active memory as doubtful (``MemoryFlagged``: confidence −0.1, archived at
    0.2 or below); returns it as it is now."""
    with EventLog(home.events_db) as log, open_store(home, log) as store:
        store.catch_up_all()
        found = get_memory(store.db, memory_id)
        if found is None or found.status != "active":
            raise NotFound(f"no active memory {memory_id!r}",
                           hint="List them with `diarist memory list`.")
        log.append(MemoryFlagged(ids=[memory_id], reason=reason), stream=streams.MEMORY)
        store.catch_up_all()
        after = get_memory(store.db, memory_id)
    queue.appended(home)
    assert after is not None  # a flagged memory is archived, never deleted
    return after

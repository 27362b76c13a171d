"""What an id names across the projections: for ``diarist memory forget``, which must say
what it is about to forget (and refuse an id that names nothing)."""
from __future__ import annotations

import json
import re
import sqlite3

from .long_term import without_since
from .memories import get_memory
from .turns import cited_turns

_BY_ID = (
    ("SELECT content FROM journal_entries WHERE id = ?", 1),
    ("SELECT text FROM turns WHERE event_id = ? OR ref = ?", 2),
    ("SELECT f.content FROM search_items i JOIN search_fts f ON f.rowid = i.rowid"
     " WHERE i.id = ?", 1),
)


def texts_named_by(db: sqlite3.Connection, key: str) -> list[str]:
    """The contents ``key`` names — a memory id, a journal entry id, a turn's event id or
    ref, a search item's id — sorted and distinct; empty when it names nothing."""
    texts: list[str] = []
    found = get_memory(db, key)
    if found and found.status != "forgotten":
        texts.append(found.content)
    for sql, placeholders in _BY_ID:
        try:
            texts += [row[0] for row in db.execute(sql, (key,) * placeholders)]
        except sqlite3.OperationalError:  # a projection not built yet has nothing to find
            continue
    return sorted({t for t in texts if t.strip()})


MOSTLY = 0.8   # of a MEMORY.md line's words, the share a forgotten memory must say


def memory_md_lines_named_by(db: sqlite3.Connection, key: str) -> list[str]:
    """MEMORY.md's lines (without their "(said …)") that state what ``key`` names: each
    line cites its memory's turns (``long_term_refs``), and is a cut or a rewording of it
    ("Sam's sister Ana is coming over on Saturday" of "Sam's sister Ana is coming over on
    Saturday, so Sam is cleaning the flat."), so no window of it repeats the forgotten
    text. A turn's event id or ref names every line citing that turn (all that was mined
    from it is forgotten with it); a memory id, a line citing its turns most of whose
    words (:data:`MOSTLY`) it says."""
    try:
        turn = cited_turns(db, [key]).get(key)
        memory = get_memory(db, key)
        stated = db.execute("SELECT line, refs FROM long_term_refs").fetchall()
    except sqlite3.OperationalError:  # a projection not built yet has nothing to find
        return []
    if turn is not None:
        cited, said = {r for r in (turn.event_id, turn.ref) if r}, None
    elif memory is not None:
        cited, said = set(memory.refs), _words(memory.content)
    else:
        return []
    found = []
    for line, refs in stated:
        if not cited & set(json.loads(refs)):
            continue
        words = _words(line := without_since(line))
        if said is None or (words and len(words & said) >= MOSTLY * len(words)):
            found.append(line)
    return sorted(found)


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.casefold()))

"""The long_term projection: ``var/memory/MEMORY.md`` from the latest ``LongTermRewritten``.

The file is capped at 12,288 characters: over the cap it is cut at a line boundary and a
marker line says so. A ``MemoryForgotten`` drops every line that repeats forgotten content,
now and in later rewrites. To do that without keeping a copy of the forgotten text, a
projection keeps only (length, sha256) of its normalised form and compares windows of each
line against them. A family line, which repeats no statement, goes with a forgotten text
that names one of its people (:func:`without_family_told`); a later rewrite has it anew
from what is remembered.
"""
from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

from events import RecordedEvent
from events.types import LongTermRewritten, MemoryForgotten

from .engine import Projector, mark_dirty
from .items import forget_texts
from .schema import create_table
from .secrets import scrub

FILE = "MEMORY.md"
TITLE = "# Memory"   # the first line consolidation writes
CAP = 12_288
MARKER = "[… MEMORY.md truncated at {cap} characters]"
Mark = tuple[int, str]
# a current value's line ends with the day it began, when its line tells the change: "…
# moved to Leeds (since 3 May 2026)"; else with the day it was said: "… is lactose
# intolerant (said 3 May 2026)", "… is moving soon (said 3 May 2026)"; a model rewriting a
# section may put a full stop after it
_SINCE = re.compile(r" \((?:since|said) \d{1,2} \w+ \d{4}\)\.?$")


# a person's family line (written by consolidation's family module: "- The user's family: a
# sister (Stella), a cat (Luna)."): a summary of many statements, repeating none of them
FAMILY_LINE = re.compile(r"^(?:- )?(?:The user|[A-Z][\w-]*)['’]s family: ")
_WORD = re.compile(r"[^\W\d_]{3,}")


def without_family_told(content: str, texts: Iterable[str]) -> str:
    """``content`` without the family lines that name a relative, pet or name a forgotten
    text says (any word of theirs after the colon, as a whole word): a forgotten "My sister
    Stella is visiting" takes "… a sister (Stella) …" with it; the next consolidation writes
    the line again from what is still remembered."""
    told = {w.casefold() for text in texts for w in _WORD.findall(text)}
    return "".join(line for line in content.splitlines(keepends=True)
                   if not (FAMILY_LINE.match(line) and told & {
                       w.casefold() for w in _WORD.findall(line.partition(": ")[2])}))


def without_since(line: str) -> str:
    """A MEMORY.md line without its "(since DATE)" or "(said DATE)"."""
    return _SINCE.sub("", line)


def cap(content: str, limit: int = CAP) -> str:
    """``content`` cut at the last line boundary that leaves room for the marker."""
    if len(content) <= limit:
        return content
    marker = MARKER.format(cap=limit)
    room = limit - len(marker) - 1
    cut = content.rfind("\n", 0, room + 1)
    head = content[:cut + 1] if cut >= 0 else ""
    return head + marker


def render(content: str, marks: Iterable[Mark]) -> str:
    """What MEMORY.md shows for a rewrite: secrets masked, forgotten lines dropped, capped."""
    return cap(without_forgotten(scrub(content), marks))


def _normal(text: str) -> str:
    return " ".join(text.lower().split())


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def forget_marks(texts: Iterable[str]) -> list[Mark]:
    return [(len(n), _digest(n)) for n in (_normal(t) for t in texts) if n]


def _repeats(line: str, marks: dict[int, set[str]]) -> bool:
    text = _normal(line)
    for length, digests in marks.items():
        for start in range(0, len(text) - length + 1):
            if _digest(text[start:start + length]) in digests:
                return True
    return False


def without_forgotten(content: str, marks: Iterable[Mark]) -> str:
    by_length: dict[int, set[str]] = {}
    for length, digest in marks:
        by_length.setdefault(length, set()).add(digest)
    if not by_length:
        return content
    return "".join(line for line in content.splitlines(keepends=True)
                   if not _repeats(line, by_length))


class ForgetMarks:
    """A projection's own table of forget marks (create/drop/add/read)."""

    def __init__(self, table: str) -> None:
        self.table = table

    def create(self, db: sqlite3.Connection) -> None:
        create_table(db, self.table, {"length": int, "digest": str}, ("length", "digest"))

    def drop(self, db: sqlite3.Connection) -> None:
        db.execute(f"DROP TABLE IF EXISTS {self.table}")

    def add(self, db: sqlite3.Connection, forgotten: MemoryForgotten) -> list[Mark]:
        marks = forget_marks(forget_texts(forgotten))
        db.executemany(f"INSERT OR IGNORE INTO {self.table} (length, digest) VALUES (?, ?)", marks)
        return marks

    def all(self, db: sqlite3.Connection) -> list[Mark]:
        return [(row[0], row[1]) for row in db.execute(f"SELECT length, digest FROM {self.table}")]


class LongTermProjector(Projector):
    """MEMORY.md, and the refs of the memory each of its lines states (``long_term_refs``,
    by the line as shown: masked, only lines the file still has)."""

    name = "long_term"
    handles = frozenset({LongTermRewritten, MemoryForgotten})
    version = 3
    marks = ForgetMarks("long_term_forgotten")

    def create(self, db: sqlite3.Connection) -> None:
        db.execute("CREATE TABLE IF NOT EXISTS long_term ("
                   " id INTEGER PRIMARY KEY CHECK (id = 1), content TEXT NOT NULL,"
                   " event_id TEXT NOT NULL, at TEXT NOT NULL)")
        db.execute("CREATE TABLE IF NOT EXISTS long_term_refs ("
                   " line TEXT PRIMARY KEY, refs TEXT NOT NULL)")
        self.marks.create(db)

    def drop(self, db: sqlite3.Connection) -> None:
        db.execute("DROP TABLE IF EXISTS long_term")
        db.execute("DROP TABLE IF EXISTS long_term_refs")
        self.marks.drop(db)

    def apply(self, db: sqlite3.Connection, event: RecordedEvent) -> None:
        match event.data:
            case MemoryForgotten() as forgotten:
                marks = self.marks.add(db, forgotten)
                current = read_long_term(db)
                if not marks or not current:
                    return
                content = without_family_told(without_forgotten(current, marks),
                                              forget_texts(forgotten))
                db.execute("UPDATE long_term SET content = ? WHERE id = 1", (content,))
                _keep_refs(db, content)
            case LongTermRewritten() as rewritten:
                content = render(rewritten.content, self.marks.all(db))
                db.execute("INSERT OR REPLACE INTO long_term (id, content, event_id, at)"
                           " VALUES (1, ?, ?, ?)", (content, event.id, event.occurred_at))
                db.execute("DELETE FROM long_term_refs")
                shown = _lines(content)
                db.executemany(
                    "INSERT OR IGNORE INTO long_term_refs (line, refs) VALUES (?, ?)",
                    [(line, json.dumps(refs)) for line, refs in
                     ((scrub(raw), refs) for raw, refs in sorted(rewritten.refs.items()))
                     if line in shown and refs])
        mark_dirty(db, self, FILE)

    def canonical_rows(self, db: sqlite3.Connection) -> Iterable[Sequence[Any]]:
        yield from db.execute("SELECT content, event_id, at FROM long_term")
        yield from db.execute("SELECT line, refs FROM long_term_refs ORDER BY 1")
        yield from db.execute("SELECT length, digest FROM long_term_forgotten ORDER BY 1, 2")

    def owns_file(self, name: str) -> bool:
        return name == FILE

    def file_content(self, db: sqlite3.Connection, name: str) -> str | None:
        return read_long_term(db) or None

    def expected_files(self, db: sqlite3.Connection) -> Iterable[str]:
        return [FILE] if read_long_term(db) else []


def _lines(content: str) -> set[str]:
    """The lines of MEMORY.md's ``content``, each without its "- "."""
    return {line[2:] for line in content.splitlines() if line.startswith("- ")}


def _keep_refs(db: sqlite3.Connection, content: str) -> None:
    """Forget the refs of the lines ``content`` no longer has (a forgotten memory's)."""
    shown = _lines(content)
    gone = [(line,) for (line,) in db.execute("SELECT line FROM long_term_refs")
            if line not in shown]
    db.executemany("DELETE FROM long_term_refs WHERE line = ?", gone)


def stated_refs(db: sqlite3.Connection, lines: Iterable[str]) -> dict[str, list[str]]:
    """The refs of the memory each of MEMORY.md's ``lines`` (without "- ") states, for
    those consolidation recorded (``LongTermRewritten.refs``)."""
    wanted = sorted(set(lines))
    if not wanted:
        return {}
    try:
        rows = db.execute("SELECT line, refs FROM long_term_refs WHERE line IN"
                          f" ({', '.join('?' * len(wanted))})", wanted).fetchall()
    except sqlite3.OperationalError:  # not projected yet
        return {}
    return {line: json.loads(refs) for line, refs in rows}


def read_long_term(db: sqlite3.Connection) -> str:
    try:
        row = db.execute("SELECT content FROM long_term WHERE id = 1").fetchone()
    except sqlite3.OperationalError:  # not projected yet
        return ""
    return row[0] if row else ""

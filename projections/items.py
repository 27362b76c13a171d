"""Searchable items: what the search index and the vectors hold, derived from events.

One pure function, :func:`items_from`, says which items an event adds, and
:func:`forget_keys` which keys a ``MemoryForgotten`` removes; the search and vectors
projectors (and the journal) share them so that they can never disagree. Every item's
content has passed :func:`projections.secrets.scrub`.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from functools import lru_cache

from events import RecordedEvent
from events.memory_types import DEFAULT, PROFILE, PROJECT_FACT, names
from events.types import (
    TURNS,
    AssistantTurn,
    FactsExtracted,
    MemoriesMined,
    MemoryForgotten,
    ProfileSet,
    ProjectFactsDetected,
    Remembered,
    UserTurn,
)

from .passages import passages
from .secrets import scrub

TURN, JOURNAL, MEMORY, LONG_TERM = "turn", "journal", "memory", "long_term"
MEMORY_TYPES = names()  # of events.memory_types, in its order


@dataclass(frozen=True)
class Item:
    source: str
    id: str
    content: str
    at: str
    refs: tuple[str, ...] = ()
    session: str = ""
    type: str = ""
    extra: dict = field(default_factory=dict, compare=False, hash=False)
    part: int | None = None  # the passage's number when a long turn is cut into passages

    @property
    def key(self) -> str:
        return item_key(self.source, self.id, self.part)

    @property
    def content_hash(self) -> str:
        return content_hash(self.content)


def item_key(source: str, id_: str, part: int | None = None) -> str:
    """``turn:ID`` for a whole item, ``turn:ID#N`` for passage N of a long turn."""
    return f"{source}:{id_}" if part is None else f"{source}:{id_}#{part}"


def key_part(key: str) -> int | None:
    """The passage number of an item key (None for a whole item)."""
    _, hash_, number = key.rpartition("#")
    return int(number) if hash_ and number.isdigit() else None


def embedding_text(source: str, content: str) -> str:
    """What the semantic index embeds for an item: a turn's words without its ``Speaker: ``
    prefix. With the name in it, every short turn of one speaker is near every question
    that names them (MiniLM gives the name more weight than the words), and a question's
    neighbours are its name's turns, not the turns that answer it: on the LoCoMo dev set,
    cosine-only evidence recall@10 0.512 with the prefix, 0.621 without it and with the
    speakers' names taken out of the question (:mod:`projections.speakers`); whose words
    they are, recall weighs on its own."""
    if source == TURN:
        head, sep, rest = content.partition(": ")
        if sep and rest.strip():
            return rest
    return content


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _own_refs(event: RecordedEvent) -> tuple[str, ...]:
    """A note's refs: its own external ref when it has one (no turn behind it)."""
    return (event.ref,) if event.ref else ()


@lru_cache(maxsize=1024)   # a catch-up batch's turns
def scrubbed_passages(text: str) -> tuple[str, tuple[str, ...]]:
    """A turn's text without its secrets, and its passages: the search and the vector index
    both ask, one right after the other when all projections catch up."""
    clean = scrub(text)
    return clean, tuple(passages(clean))


def turn_items(event: RecordedEvent, turn: UserTurn | AssistantTurn) -> list[Item]:
    """A turn as one item (``Speaker: text``), or, when it is long, as its passages, each
    ``Speaker: passage`` with the turn's time and ref (:mod:`projections.passages`)."""
    speaker = turn.name or ("user" if isinstance(turn, UserTurn) else "assistant")
    text, parts = scrubbed_passages(turn.text)
    refs = (event.ref or event.id,)
    if len(parts) <= 1:
        return [Item(TURN, event.id, f"{speaker}: {text}", event.occurred_at, refs,
                     turn.session)]
    return [Item(TURN, event.id, f"{speaker}: {text}", event.occurred_at, refs, turn.session,
                 part=n) for n, text in enumerate(parts)]


def journal_items(event: RecordedEvent) -> list[Item]:
    match event.data:
        case Remembered() as note:
            return [Item(JOURNAL, event.id, scrub(note.text), event.occurred_at,
                         _own_refs(event), note.session, note.type, {"source": note.source})]
        case FactsExtracted() as facts:
            refs = tuple(facts.refs or facts.from_events or ())
            return [Item(JOURNAL, f"{event.id}.{i}", scrub(fact), event.occurred_at, refs,
                         extra={"source": facts.model or "extractor"})
                    for i, fact in enumerate(facts.facts) if fact.strip()]
    return []


def memory_items(event: RecordedEvent) -> list[Item]:
    """Typed memory records an event creates (status changes are the memories projector's)."""
    match event.data:
        case Remembered() as note:
            return [Item(MEMORY, event.id, scrub(note.text), event.occurred_at,
                         _own_refs(event), note.session, note.type or DEFAULT.name,
                         {"source": note.source, "confidence": 1.0})]
        case MemoriesMined() as mined:
            return [Item(MEMORY, str(m["id"]), scrub(str(m["content"])), event.occurred_at,
                         tuple(m.get("refs") or ()), mined.session,
                         m.get("type") or DEFAULT.name,
                         {k: m[k] for k in ("kind", "action", "confidence", "tags") if k in m})
                    for m in mined.memories]
        case ProfileSet() as profile:
            return [Item(MEMORY, f"profile:{key}", scrub(f"{key}: {value}"), event.occurred_at,
                         (), "", PROFILE.name)
                    for key, value in sorted(profile.fields.items()) if str(value).strip()]
        case ProjectFactsDetected() as detected:
            out = []
            for fact in detected.facts:
                key = str(fact.get("key") or fact.get("name") or content_hash(str(fact))[:12])
                text = str(fact.get("value") if "value" in fact else fact.get("content", ""))
                out.append(Item(MEMORY, f"project:{key}", scrub(f"{key}: {text}"),
                                event.occurred_at, tuple(fact.get("sources") or ()), "",
                                PROJECT_FACT.name))
            return out
    return []


HEADING = re.compile(r"^#{1,6}\s")   # a Markdown heading line (MEMORY.md's sections)


def long_term_sections(event: RecordedEvent, content: str) -> list[Item]:
    """MEMORY.md split at headings (a section keeps its heading), blank sections dropped."""
    sections: list[list[str]] = [[]]
    for line in content.splitlines():
        if HEADING.match(line) and any(s.strip() for s in sections[-1]):
            sections.append([])
        sections[-1].append(line)
    out = []
    for n, lines in enumerate(s for s in sections if any(x.strip() for x in s)):
        out.append(Item(LONG_TERM, f"{event.id}#{n}", "\n".join(lines).strip(), event.occurred_at))
    return out


def items_from(event: RecordedEvent) -> list[Item]:
    """Every searchable item an event adds (MEMORY.md sections come from the long-term
    projector, which caps the file first)."""
    data = event.data
    if isinstance(data, TURNS):
        return turn_items(event, data)
    return journal_items(event) + memory_items(event)


def forget_keys(forgotten: MemoryForgotten) -> list[str]:
    """The ids a ``MemoryForgotten`` names: memory / journal ids, turn event ids or refs."""
    return [str(i) for i in forgotten.ids]


def forget_texts(forgotten: MemoryForgotten) -> list[str]:
    return [scrub(t) for t in forgotten.texts if t.strip()]

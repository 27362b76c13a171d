"""Event types: frozen dataclasses with a ``schema_version``, and the upcaster chain.

A type's name in the log is its class name. Old payloads are never rewritten: when a type's
schema changes, bump ``schema_version`` and register an upcaster from the old version; reads
run the chain (v1 → v2 → …) before building the dataclass.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from .errors import UnknownEventType

Payload = dict[str, Any]
Upcaster = Callable[[Payload], Payload]


@dataclass(frozen=True)
class Event:
    schema_version: ClassVar[int] = 1

    @classmethod
    def type_name(cls) -> str:
        return cls.__name__

    def to_payload(self) -> Payload:
        return dataclasses.asdict(self)


class Registry:
    """Event classes by name, and upcasters keyed by (type, from_version)."""

    def __init__(self) -> None:
        self._types: dict[str, type[Event]] = {}
        self._upcasters: dict[tuple[str, int], Upcaster] = {}

    def register(self, cls: type[Event]) -> type[Event]:
        self._types[cls.type_name()] = cls
        return cls

    def upcaster(self, type_name: str, from_version: int) -> Callable[[Upcaster], Upcaster]:
        def decorator(fn: Upcaster) -> Upcaster:
            self._upcasters[(type_name, from_version)] = fn
            return fn

        return decorator

    def cls(self, type_name: str) -> type[Event]:
        try:
            return self._types[type_name]
        except KeyError:
            raise UnknownEventType(f"unknown event type {type_name!r}") from None

    def knows(self, type_name: str) -> bool:
        return type_name in self._types

    def names(self) -> list[str]:
        return sorted(self._types)

    def upcast(self, type_name: str, version: int, payload: Payload) -> tuple[int, Payload]:
        """Run the chain from ``version`` to the type's current version."""
        target = self.cls(type_name).schema_version
        while version < target:
            step = self._upcasters.get((type_name, version))
            if step is None:
                raise UnknownEventType(
                    f"no upcaster for {type_name} v{version} → v{version + 1}",
                    hint="Register an upcaster for that version in events/types.py.",
                )
            payload = step(dict(payload))
            version += 1
        if version > target:
            raise UnknownEventType(f"{type_name} v{version} is newer than this diarist (v{target})")
        return version, payload

    def decode(self, type_name: str, version: int, payload: Payload) -> Event:
        _, payload = self.upcast(type_name, version, payload)
        return self.cls(type_name)(**payload)


registry = Registry()
event = registry.register


# --- the catalog (v1; docs/architecture.md) ----------------------------------------------


@event
@dataclass(frozen=True)
class SessionStarted(Event):
    session: str
    backend: str = ""
    model: str = ""
    context_window: int | None = None


@event
@dataclass(frozen=True)
class UserTurn(Event):
    session: str
    text: str
    name: str = ""


@event
@dataclass(frozen=True)
class AssistantTurn(Event):
    session: str
    text: str
    name: str = ""
    prompt_tokens: int | None = None
    reply_tokens: int | None = None
    elapsed_ms: int | None = None
    tokens_per_sec: float | None = None
    interrupted: bool = False


@event
@dataclass(frozen=True)
class MemoryInjected(Event):
    """Memory put into a chat's prompt: the start block (``kind`` "start", the end of the
    system prompt) or a note attached to one user message (``kind`` "turn").
    ``memory_tokens``: all the memory in the prompt after this injection (0 in events
    written before notes existed: then ``injected_tokens``)."""

    session: str
    budget_tokens: int
    injected_tokens: int
    items: list[str] = field(default_factory=list)
    kind: str = "start"
    memory_tokens: int = 0


@event
@dataclass(frozen=True)
class HistoryCompressed(Event):
    session: str
    replaced: list[str]
    summary: str


@event
@dataclass(frozen=True)
class ToolCalled(Event):
    """A memory tool the model called in a chat session, and the text it got back."""

    session: str
    name: str
    arguments: dict[str, Any]
    result: str


@event
@dataclass(frozen=True)
class SessionEnded(Event):
    session: str
    turns: int = 0


@event
@dataclass(frozen=True)
class Remembered(Event):
    text: str
    type: str = "user_preference"
    source: str = "user"
    session: str = ""


@event
@dataclass(frozen=True)
class FactsExtracted(Event):
    from_events: list[str]
    facts: list[str]
    model: str = ""
    refs: list[str] = field(default_factory=list)


@event
@dataclass(frozen=True)
class MemoriesMined(Event):
    """Typed memories mined from one chunk of a session's turns (``first_seq`` …
    ``last_seq``: the log positions of its first and last turn). Each memory: ``id``,
    ``type``, ``content``, ``kind``, ``action``, ``confidence``, ``tags``, ``subject``,
    ``refs`` (the turns' refs) and ``events`` (their event ids). ``reinforced``: active
    memories the chunk said again (``{"id", "refs"}``), kept instead of duplicated.
    ``fallback``: why the heuristic extractor stood in for the model (empty otherwise)."""

    session: str
    memories: list[dict[str, Any]]
    model: str = ""
    first_seq: int = 0
    last_seq: int = 0
    turns: int = 0
    calls: int = 0
    reinforced: list[dict[str, Any]] = field(default_factory=list)
    dropped: int = 0
    fallback: str = ""
    extracted_by: str = ""


@event
@dataclass(frozen=True)
class MiningFailed(Event):
    """The model's answer for a chunk could not be used, even after one retry with the
    error shown to it. ``reply``: the start of its last answer (secrets scrubbed)."""

    session: str
    first_seq: int
    last_seq: int
    model: str
    error: str
    reply: str = ""
    attempts: int = 2


@event
@dataclass(frozen=True)
class MemorySuperseded(Event):
    ids: list[str]
    by: str
    reason: str = ""


@event
@dataclass(frozen=True)
class MemoriesMerged(Event):
    ids: list[str]
    into: str
    reason: str = ""


@event
@dataclass(frozen=True)
class MemoryFlagged(Event):
    ids: list[str]
    reason: str = ""


@event
@dataclass(frozen=True)
class MemoryForgotten(Event):
    """``ids``: memory ids, journal entry ids, turn event ids or turn refs. ``texts``: the
    content being forgotten, resolved when the user asked, so that files written from
    LLM output (MEMORY.md) can drop the lines that repeat it."""

    ids: list[str]
    reason: str = ""
    texts: list[str] = field(default_factory=list)


@event
@dataclass(frozen=True)
class LongTermRewritten(Event):
    """A new MEMORY.md. ``journals``: the days reviewed; ``reviewed_upto``: the log position
    of the last journal entry reviewed (the consolidation watermark)."""

    content: str
    journals: list[str] = field(default_factory=list)
    model: str = ""
    reviewed_upto: int = 0


@event
@dataclass(frozen=True)
class ConsolidationFailed(Event):
    """The model's rewrite of a MEMORY.md section was unusable; the deterministic merge
    was used for it instead."""

    section: str
    model: str
    error: str
    reply: str = ""


@event
@dataclass(frozen=True)
class RelevancyDecayed(Event):
    """Dreaming let relevancy fade as of ``at`` (the time it used): each active memory's
    relevancy becomes ``0.5 ** (days since last said / half-life of its type)``; a type
    without a half-life does not fade. ``archived``: the memories that fell below
    ``floor`` and are archived."""

    at: str
    half_lives: dict[str, float]
    floor: float
    archived: list[str] = field(default_factory=list)


@event
@dataclass(frozen=True)
class ProfileSet(Event):
    fields: dict[str, Any]


@event
@dataclass(frozen=True)
class OnboardingDeclined(Event):
    """The user skipped every onboarding question: the chat does not ask them again (only
    ``diarist chat --onboard`` does). A decision, not memory: no projector reads it."""

    questions: list[str] = field(default_factory=list)


@event
@dataclass(frozen=True)
class ProjectFactsDetected(Event):
    facts: list[dict[str, Any]]


@event
@dataclass(frozen=True)
class JournalArchived(Event):
    """The journal of ``date`` moves to ``memory/archive/``: decided at ``at``, when it
    was older than ``older_than_days``."""

    date: str
    at: str = ""
    older_than_days: int = 90


@event
@dataclass(frozen=True)
class EmbeddingModelChosen(Event):
    model: str
    dimension: int
    checksum: str


@event
@dataclass(frozen=True)
class Redacted(Event):
    """``diarist redact`` rewrote payloads in the log (the one change of history). Says what
    and how, never what was masked: ``event_id`` the event named, ``fields`` the paths
    masked in it (``text``, ``memories[0].content``); ``events`` every event rewritten —
    the named one and those repeating its secret — as ``{"id", "seq", "type", "fields"}``;
    ``how`` ``scrubber``, ``pattern`` (a literal) or ``regex``; ``kinds`` what the scrubber
    found ("OpenAI key", "password"; empty for a pattern, which is never stored: it may be
    the secret itself); ``masked`` how many spans became ``[redacted]``."""

    event_id: str
    fields: list[str]
    reason: str = ""
    events: list[dict[str, Any]] = field(default_factory=list)
    how: str = ""
    kinds: list[str] = field(default_factory=list)
    masked: int = 0


TURN_TYPES = frozenset({"UserTurn", "AssistantTurn"})

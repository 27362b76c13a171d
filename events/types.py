"""Event types: frozen dataclasses with a ``schema_version``, and the upcaster chain.

A type's name in the log is its class name. Old payloads are never rewritten: when a type's
schema changes, bump ``schema_version`` and register an upcaster from the old version; reads
run the chain (v1 → v2 → …) before building the dataclass.
"""
from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from .errors import UnknownEventType
from .memory_types import DEFAULT

Payload = dict[str, Any]
Upcaster = Callable[[Payload], Payload]
Check = Callable[[Any], bool]


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
        self._shapes: dict[str, _Shape] = {}

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
        cls = self.cls(type_name)
        if version != cls.schema_version:
            _, payload = self.upcast(type_name, version, payload)
        return cls(**payload)

    def problem(self, type_name: str, version: int, payload: Any) -> tuple[int, Any, str | None]:
        """Read a stored row's payload as this code knows its type: ``(schema_version,
        payload, problem)`` — upcast when it can be, and ``problem`` saying why it cannot be
        read (an unknown type, a newer schema, a payload that does not fit the type), or
        None. Never raises: one bad row must not stop the reading of the others."""
        if type_name not in self._types:
            return version, payload, (f"unknown event type {type_name!r}: this diarist knows "
                                      f"{len(self._types)} types")
        if not isinstance(payload, dict):
            kind = type(payload).__name__
            return version, payload, f"the payload is a JSON {kind}, not an object"
        try:
            upcast_version, upcast_payload = self.upcast(type_name, version, payload)
        except UnknownEventType as exc:
            return version, payload, str(exc)
        except Exception as exc:  # an upcaster choking on a malformed old payload
            return version, payload, f"upcasting {type_name} v{version} failed: {exc!r}"
        shape = self._shapes.get(type_name)
        if shape is None:
            shape = self._shapes[type_name] = _Shape(self._types[type_name])
        return upcast_version, upcast_payload, shape.problem(upcast_payload)


class _Shape:
    """What a payload of one event type must look like: its dataclass's fields, required
    (no default) or not, each with a check of its JSON type (elements of lists and values
    of dicts included, one level deep)."""

    def __init__(self, cls: type[Event]) -> None:
        hints = typing.get_type_hints(cls)
        self.name = cls.type_name()
        self.fields: dict[str, tuple[bool, Check, str]] = {}
        for f in dataclasses.fields(cls):
            required = (f.default is dataclasses.MISSING
                        and f.default_factory is dataclasses.MISSING)
            self.fields[f.name] = (required, _check(hints[f.name]), _describe(hints[f.name]))

    def problem(self, payload: Payload) -> str | None:
        unknown = sorted(set(payload) - set(self.fields))
        if unknown:
            return f"the payload has fields {self.name} does not have: {', '.join(unknown)}"
        for name, (required, check, wanted) in self.fields.items():
            if name not in payload:
                if required:
                    return f"the payload lacks {self.name}.{name}"
            elif not check(payload[name]):
                return (f"{self.name}.{name} should be {wanted}, "
                        f"not {json_type(payload[name])}")
        return None


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return f"the number {value!r}"[:40]
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


def _describe(hint: Any) -> str:
    if typing.get_origin(hint) is None and hasattr(hint, "__name__"):
        return str(hint.__name__)
    return str(hint).replace("typing.", "")


_SCALARS: dict[Any, Check] = {
    str: lambda v: isinstance(v, str),
    bool: lambda v: isinstance(v, bool),
    int: lambda v: isinstance(v, int) and not isinstance(v, bool),
    float: lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    Any: lambda v: True,
    type(None): lambda v: v is None,
}


def _check(hint: Any) -> Check:
    """A JSON type check for a field's annotation (the catalog uses scalars, ``X | None``,
    ``list[X]`` and ``dict[str, X]``)."""
    if hint in _SCALARS:
        return _SCALARS[hint]
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (types.UnionType, typing.Union):
        options = [_check(a) for a in args]
        return lambda v: any(c(v) for c in options)
    if origin is list:
        item = _check(args[0]) if args else _SCALARS[Any]
        return lambda v: isinstance(v, list) and all(item(x) for x in v)
    if origin is dict:
        value = _check(args[1]) if args else _SCALARS[Any]
        return lambda v: (isinstance(v, dict) and all(isinstance(k, str) for k in v)
                          and all(value(x) for x in v.values()))
    raise TypeError(f"no JSON check for the annotation {hint!r}")


registry = Registry()
event = registry.register


# --- the catalog (v1; docs/architecture.md) ----------------------------------------------


@event
@dataclass(frozen=True)
class SessionStarted(Event):
    """A session's start. ``title``: an imported conversation's own title (a ChatGPT,
    Claude or Open WebUI export's; "" for a chat and a transcript)."""

    session: str
    backend: str = ""
    model: str = ""
    context_window: int | None = None
    title: str = ""


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
    type: str = DEFAULT.name
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
    ``refs`` (the turns' refs) and ``events`` (their event ids); ``source``: ``user`` for
    what its speaker asked to keep ("please remember that …", as a ``Remembered`` note),
    else none (the memory's source is ``model``). ``reinforced``: active
    memories the chunk said again (``{"id", "refs"}``), kept instead of duplicated.
    ``fallback``: why the heuristic extractor stood in for the model (empty otherwise).
    ``chatter``: the statements the heuristic drew that were left out as chatter (no
    memory; kept here so what mining decided can be read back)."""

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
    chatter: list[str] = field(default_factory=list)


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
    of the last journal entry reviewed (the consolidation watermark); ``refs``: for a line
    (its text after "- ", as written) the refs of the memory it states, where that is known
    (a line reworded by a model is not)."""

    content: str
    journals: list[str] = field(default_factory=list)
    model: str = ""
    reviewed_upto: int = 0
    refs: dict[str, list[str]] = field(default_factory=dict)


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


def type_names(types: Iterable[type[Event] | str]) -> list[str]:
    """The names the log stores for ``types`` (event classes; a name given as a string, as a
    user types it, is kept as it is): SQL filters on ``type`` are built from the classes."""
    return [t if isinstance(t, str) else t.type_name() for t in types]


TURNS: tuple[type[UserTurn], type[AssistantTurn]] = (UserTurn, AssistantTurn)
TURN_TYPES = frozenset(type_names(TURNS))

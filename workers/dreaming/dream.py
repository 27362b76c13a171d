"""Dreaming: the active memories reviewed as a whole, every decision appended as an event.

No language model is called; every rule is deterministic, so a dream over the same
memories at the same time decides the same.

1. **Merge duplicates** (``MemoriesMerged``): memories with the same normal form, and near
   duplicates by embedding (:func:`workers.mining.text.near_duplicate` over the cached
   vectors, pairs found by :mod:`.similarity`; or, from the same source, a statement a
   fuller one subsumes, :func:`workers.mining.text.subsumes`), grouped transitively. The
   kept memory is the most confident, then one the user stated (or a detected fact), then a
   model's, then the heuristic's, then the oldest — but never one a fuller member from its
   source subsumes; it takes the refs of all (their provenance), the
   highest confidence and the latest time said. Merged ones become ``superseded``.
2. **Resolve conflicts** (``MemorySuperseded``): memories with the same subject key (who
   and which single-valued attribute, :func:`workers.mining.text.subject_key`, or the
   subject a model named) that say a current value (:func:`workers.mining.values.
   states_a_value`, the test MEMORY.md applies: "… will check out stores near the new
   place" replaces no home) but different content contradict each other, as far as the
   attribute's ``change`` says (:mod:`workers.mining.attributes`): for one held at a time,
   among the credible ones (confidence ≥ :data:`CREDIBLE`) the one said last wins (a
   chunk's memories all bear its last turn's time; within it, one that announces a change
   is said at its turn: "… recently started learning an instrument", then, a turn later,
   "… is learning how to play the violin now"), then
   the one the attribute classifier reads more surely (only among values said at the
   same time, as in one turn), then the more confident, then by source as above, and the
   others are superseded by it;
   for one held several at once (hobbies, pets), only a newer statement that announces a
   change replaces, and only those said before it; allergies are never replaced. The
   superseded stay in history. Recall drops superseded memories, so the newer fact is
   what is injected.
3. **Fade** (``RelevancyDecayed``, at most once per day of the log's time): relevancy of
   a mined (or agent-noted) memory halves every ``dreaming.half_life_days`` (90) since it
   was last said, counted in the **log's own time** — the newest turn or note in the log
   (never later than the clock) — so a history imported a year after it was said does
   not fade overnight, and memory stands still while nobody talks. What does not fade:
   identity facts (``workspace_profile``), notes the user asked to remember, detected
   profile/project facts, the current value of an attribute (a memory with a subject
   key, after conflicts are resolved) and lasting facts
   (:func:`workers.mining.text.lasting`: likes and dislikes, relationships, names).
   Below ``dreaming.floor`` (0.1, i.e. about 300 days unsaid) a memory is archived.
   The event carries the time it used.

All of a dream's events are appended in one transaction, with idempotency keys; a killed
dream appends nothing and the next one decides again.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from events import EventLog, Home, NewEvent, clock, streams
from events.config import load_config
from events.memory_types import fading
from events.types import (
    AssistantTurn,
    MemoriesMerged,
    MemoriesMined,
    MemorySuperseded,
    RelevancyDecayed,
    Remembered,
    UserTurn,
)
from projections import ProjectionStore, open_store
from projections.memories import USER, Memory, faded, list_memories
from projections.memory_vectors import memory_vectors
from projections.speakers import person_name
from projections.turns import cited_turns

from ..mining.attributes import (
    ADDS,
    ANNOUNCED,
    REPLACES,
    Classifier,
    announces_change,
    attribute_of,
    change_of,
    load_classifier,
)
from ..mining.text import (
    NEAR_DUPLICATE_COSINE,
    lasting,
    near_duplicate,
    normal,
    subject_key,
    subsumes,
)
from ..mining.values import speaker_names, states_a_value
from ..pass_lock import pass_lock
from ..sync.progress import ProgressFactory, no_progress
from .similarity import near_pairs

CREDIBLE = 0.5
FADING_TYPES = fading()
STEADY_SOURCES = ("", "user")     # detected facts and the user's own notes do not fade
_SPEAKER = re.compile(r"^([A-Z][\w.'’ -]{0,40}):\s+(.+)$", re.S)
NOW_TYPES = (UserTurn, AssistantTurn, Remembered, MemoriesMined)  # the log's time
# how a supersede's reason opens when a newer value replaced an older one (a merge of
# duplicates gives another)
CONFLICT = "conflict on"


@dataclass
class DreamReport:
    memories: int = 0
    merged_groups: int = 0
    merged: int = 0
    superseded: int = 0
    faded: int = 0
    archived: int = 0
    decayed_at: str = ""
    seconds: float = 0.0
    dry_run: bool = False
    events: int = 0
    decisions: list[str] = field(default_factory=list)   # one line each, for the summary


def said_at(memory: Memory) -> str:
    """When a memory was last said (ISO time): what orders a conflict's values."""
    return max(memory.created_at, memory.last_seen or "")


def _source_rank(memory: Memory) -> int:
    return {"": 3, "user": 3, "agent": 2, "heuristic": 0}.get(memory.source, 1)


def _keeper_order(memory: Memory) -> tuple[Any, ...]:
    return (-memory.confidence, -_source_rank(memory), memory.created_at, memory.id)


def subject_of(memory: Memory) -> str:
    """The memory's subject key: the one recorded when it was mined, else the heuristic's."""
    if memory.subject:
        return memory.subject
    found = _SPEAKER.match(memory.content)
    speaker, sentence = (found.group(1), found.group(2)) if found else ("", memory.content)
    return subject_key(sentence, speaker)


class _Groups:
    """Union-find over memory indices."""

    def __init__(self, n: int) -> None:
        self.parent = list(range(n))

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def join(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)

    def groups(self) -> list[list[int]]:
        out: dict[int, list[int]] = {}
        for i in range(len(self.parent)):
            out.setdefault(self.find(i), []).append(i)
        return [g for g in out.values() if len(g) > 1]


def _near_duplicates(home: Home, store: ProjectionStore, memories: list[Memory],
                     groups: _Groups, embed: bool) -> None:
    """Join near-duplicate memories, by their cached vectors (the missing ones are embedded
    here when a model is chosen and ``embed``)."""
    import numpy as np

    index = {m.id: i for i, m in enumerate(memories)}
    ids, matrix = memory_vectors(store.db)
    keep = [k for k, memory_id in enumerate(ids) if memory_id in index]
    rows = [index[ids[k]] for k in keep]
    vectors = matrix[keep] if matrix is not None and keep else None
    cached = {ids[k] for k in keep}
    missing = [m for m in memories if m.id not in cached]
    if embed and missing:
        from projections.embedding import active_embedder

        embedder = active_embedder(home, store)
        if embedder is not None:
            fresh = embedder.embed([m.content for m in missing])
            vectors = fresh if vectors is None else np.vstack([vectors, fresh])
            rows += [index[m.id] for m in missing]
    if vectors is None or len(rows) < 2:
        return
    for (a, b), cosine in sorted(near_pairs(vectors, NEAR_DUPLICATE_COSINE).items()):
        first, second = memories[rows[a]], memories[rows[b]]
        if near_duplicate(first.content, second.content, cosine) or (
                _source_rank(first) == _source_rank(second)
                and (subsumes(first.content, second.content)
                     or subsumes(second.content, first.content))):
            groups.join(rows[a], rows[b])


def _keeper_first(members: list[Memory]) -> list[Memory]:
    """``members`` (in keeper order) with the keeper first: among those from the same
    source as the first, the first that no other member subsumes
    (:func:`..mining.text.subsumes`), so a merge keeps the fuller of two statements, not
    the one that says less."""
    rank = _source_rank(members[0])
    for i, member in enumerate(members):
        if _source_rank(member) == rank and not any(
                subsumes(other.content, member.content) for other in members
                if other is not member):
            return [member, *members[:i], *members[i + 1:]]
    return members


def _key(prefix: str, ids: Iterable[str]) -> str:
    return f"{prefix}:" + hashlib.sha256("\n".join(sorted(ids)).encode()).hexdigest()[:24]


def _merges(memories: list[Memory], groups: _Groups, report: DreamReport) -> tuple[
        list[NewEvent], set[str], dict[str, str]]:
    """MemoriesMerged per group; (events, ids merged away, kept id → latest time said)."""
    events: list[NewEvent] = []
    gone: set[str] = set()
    said: dict[str, str] = {}
    for group in sorted(groups.groups()):
        members = _keeper_first(sorted((memories[i] for i in group), key=_keeper_order))
        keeper, others = members[0], [m.id for m in members[1:]]
        same_text = len({normal(m.content) for m in members}) == 1
        reason = "duplicates (same text)" if same_text else \
            f"near duplicates (cosine ≥ {NEAR_DUPLICATE_COSINE})"
        events.append(NewEvent(stream=streams.MEMORY, idempotency_key=_key(
            f"merge:{keeper.id}", others), data=MemoriesMerged(ids=others, into=keeper.id,
                                                               reason=reason)))
        gone.update(others)
        said[keeper.id] = max(said_at(m) for m in members)
        report.merged_groups += 1
        report.merged += len(others)
        report.decisions.append(f"merge {len(others)} into {keeper.id}: {keeper.content[:80]}")
    return events, gone, said


Sureness = Callable[[list[Memory], str], dict[str, float]]
Spoken = Callable[[list[Memory]], dict[str, str]]


def turn_times(store: ProjectionStore) -> Spoken:
    """For memories, the time (ISO) of the latest turn each cites, by memory id (none for
    a memory whose turns are not in the turns projection)."""
    def spoken(memories: list[Memory]) -> dict[str, str]:
        turns = cited_turns(store.db, (ref for m in memories for ref in m.refs))
        return {m.id: max(found) for m in memories
                if (found := [turns[ref].at for ref in m.refs if ref in turns])}

    return spoken


def _conflicts(memories: list[Memory], said: dict[str, str], report: DreamReport,
               names: frozenset[str] = frozenset(), sureness: Sureness | None = None,
               spoken: Spoken | None = None, person: str = "") -> tuple[list[NewEvent], set[str]]:
    by_subject: dict[str, list[Memory]] = {}
    for memory in memories:
        subject = _in_name(subject_of(memory), person)
        if subject and states_a_value(memory, names):
            by_subject.setdefault(subject, []).append(memory)
    events: list[NewEvent] = []
    gone: set[str] = set()
    for subject, members in sorted(by_subject.items()):
        if len({normal(m.content) for m in members}) < 2:
            continue
        found = _replaced(subject, members, said, sureness,
                          spoken(members) if spoken is not None else {})
        if found is None:
            continue
        winner, losers = found
        events.append(NewEvent(stream=streams.MEMORY, idempotency_key=_key(
            f"supersede:{winner.id}", losers), data=MemorySuperseded(
                ids=losers, by=winner.id,
                reason=f"{CONFLICT} {subject!r}: the fact said last wins")))
        gone.update(losers)
        report.superseded += len(losers)
        report.decisions.append(f"supersede {len(losers)} by {winner.id} ({subject}): "
                                f"{winner.content[:80]}")
    return events, gone


def _in_name(subject: str, person: str) -> str:
    """``subject`` ("user|home") as of ``person`` ("maya|home") when the log names the person
    (:func:`projections.speakers.person_name`): a value mined as "the user's" before the
    person's named chats were imported is the same person's as theirs."""
    who, bar, label = subject.rpartition("|")
    return f"{person.casefold()}{bar}{label}" if person and who == USER else subject


def _replaced(subject: str, members: list[Memory], said: dict[str, str],
              sureness: Sureness | None = None, spoken: dict[str, str] | None = None
              ) -> tuple[Memory, list[str]] | None:
    """(the current memory, the ids it replaces) among a subject's memories, by how its
    attribute changes (:func:`workers.mining.attributes.change_of`): one value at a time,
    the one said last wins over all others; several at once, the last that announces a
    change wins over those said before it; a kind that only adds, none. Of values said
    at the same time (one turn: nothing was said last) the one the classifier reads as
    that attribute most surely wins (``sureness``: :func:`classifier_sureness`): "I'm
    married, and my husband and I … As for siblings, I have a brother who's recently
    become a father" is a partner at 0.84 and one at 0.67, and the marriage stays.
    When a memory was said: its chunk's time, or a later chunk's where it was said again
    (``said``, its ``last_seen``); within one chunk, a value that announces a change
    (:func:`..mining.attributes.announces_change`) is said at its latest cited turn
    (``spoken``), after the chunk's others said before it — "… started learning an
    instrument", then "… is learning how to play the violin now" —, while of the others
    none is later than another: a later turn that names no change ("… has been putting off
    cleaning their coffee grinder", after "… has been using a French press lately") is
    more often a look-alike than a new value, and the classifier's sureness decides."""
    change = change_of(subject)
    if change == ADDS:
        return None
    spoken = spoken or {}

    def when(m: Memory) -> tuple[str, str]:
        later = max(said.get(m.id, ""), m.last_seen or "")
        if later > m.created_at:
            return later, ""
        return m.created_at, spoken.get(m.id, "") if announces_change(m.content) else ""

    credible = [m for m in members if m.confidence >= CREDIBLE] or members
    if change == ANNOUNCED:
        credible = [m for m in credible if announces_change(m.content)]
        if not credible:
            return None
    newest = max(when(m) for m in credible)
    tied = [m for m in credible if when(m) == newest]
    sure = sureness(tied, subject) if sureness is not None and len(tied) > 1 else {}
    winner = max(credible, key=lambda m: (when(m), sure.get(m.id, 0.0), m.confidence,
                                          _source_rank(m), m.id))
    losers = sorted(m.id for m in members if m.id != winner.id
                    and (change == REPLACES or when(m) < when(winner)))
    return (winner, losers) if losers else None


def classifier_sureness(home: Home, store: ProjectionStore) -> Sureness:
    """How surely the attribute classifier (:class:`workers.mining.attributes.Classifier`)
    reads each memory as its subject's attribute, by memory id; loaded on first use, and
    nothing (every memory alike: the one said last wins) without the embedding model or
    the weights."""
    loaded: list[Classifier | None] = []

    def sureness(memories: list[Memory], subject: str) -> dict[str, float]:
        if not loaded:
            from projections.embedding import active_embedder

            loaded.append(load_classifier(active_embedder(home, store)))
        classifier = loaded[0]
        if classifier is None:
            return {}
        label = subject.rpartition("|")[2]
        key = attribute_of(label)   # each as its own person (:func:`_in_name`)
        found = classifier.sureness([(m.content, _as_written(
            subject_of(m).rpartition("|")[0], m.content), key) for m in memories])
        return {m.id: p for m, p in zip(memories, found, strict=True)}

    return sureness


def _as_written(who: str, content: str) -> str:
    """A subject key's person (casefolded: "john", "user") as ``content`` writes them
    ("John"; "user" of "The user"), as mining gave them to the classifier."""
    found = re.search(rf"\b{re.escape(who)}\b", content, re.IGNORECASE)
    return found.group() if found else who


def log_now(log: EventLog, wall: dt.datetime) -> dt.datetime:
    """The log's own time: its newest turn or note, never later than ``wall``."""
    newest = log.latest_occurred(NOW_TYPES)
    return min(clock.from_iso(newest), wall) if newest else wall


def fades(memory: Memory) -> bool:
    """Whether a memory's relevancy decays at all (see the module doc)."""
    return (memory.type in FADING_TYPES and memory.source not in STEADY_SOURCES
            and not subject_of(memory) and not lasting(memory.content))


def _fade(log: EventLog, memories: list[Memory], said: dict[str, str], now: dt.datetime,
          half_life: float, floor: float, report: DreamReport) -> list[NewEvent]:
    """RelevancyDecayed, once per day of the log's time (none when nothing can fade)."""
    fading = [m for m in memories if fades(m)]
    if not fading:
        return []
    now = log_now(log, now)
    day = now.date().isoformat()
    last = log.read(types=[RelevancyDecayed], descending=True, limit=1)
    if last and last[0].data_as(RelevancyDecayed).at[:10] >= day:
        return []
    archived = sorted(m.id for m in fading
                      if faded(said.get(m.id, m.last_seen or m.created_at), now, half_life)
                      < floor)
    report.faded, report.archived, report.decayed_at = len(fading), len(archived), day
    if archived:
        report.decisions.append(f"archive {len(archived)} below relevancy {floor}")
    return [NewEvent(stream=streams.MEMORY, idempotency_key=f"decay:{day}",
                     data=RelevancyDecayed(at=clock.to_iso(now),
                                           half_lives={t: half_life for t in FADING_TYPES},
                                           floor=floor, archived=archived))]


def dream(home: Home, *, now: dt.datetime | None = None, dry_run: bool = False,
          embed: bool = True, progress: ProgressFactory = no_progress) -> DreamReport:
    """One dream over the active memories (see the module doc)."""
    config = load_config(home)
    now = now or clock.now()
    report = DreamReport(dry_run=dry_run)
    started = time.monotonic()
    with pass_lock(home, "dream"), EventLog(home.events_db) as log, \
            open_store(home, log) as store:
        store.catch_up_all()
        memories = list_memories(store.db)
        report.memories = len(memories)
        with progress(3, "Dreaming") as step:
            groups = _Groups(len(memories))
            first: dict[str, int] = {}
            for i, memory in enumerate(memories):
                j = first.setdefault(normal(memory.content), i)
                if j != i:
                    groups.join(i, j)
            _near_duplicates(home, store, memories, groups, embed)
            merges, gone, said = _merges(memories, groups, report)
            step(1)
            remaining = [m for m in memories if m.id not in gone]
            conflicts, superseded = _conflicts(
                remaining, said, report, speaker_names(store),
                classifier_sureness(home, store) if embed else None, turn_times(store),
                person_name(store.db))
            step(1)
            remaining = [m for m in remaining if m.id not in superseded]
            decay = _fade(log, remaining, said, now, config.dreaming.half_life_days,
                          config.dreaming.floor, report)
            step(1)
        events = merges + conflicts + decay
        report.events = len(events)
        if events and not dry_run:
            log.append_many(events)
            store.catch_up_all()
    report.seconds = time.monotonic() - started
    return report

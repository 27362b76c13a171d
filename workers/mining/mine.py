"""The mining pass: every session not mined yet → typed memories and journal lines.

1. Under the home's ``mine`` lock (:mod:`workers.pass_lock`), catch the projections up and
   plan: the sessions the manifest (:mod:`projections.mining`) shows with turns not mined
   yet that have ended (or been idle ``idle_hours``), cut into chunks.
2. Extract each chunk (:mod:`.extract`: a model, or the heuristic extractor), here or on
   the queue's workers (:mod:`.distribute`), and take the results in chunk order.
3. Keep what memory does not hold yet (:mod:`.dedup`): a candidate already active is
   *reinforced* (listed with its new refs) instead of mined again. A life statement of
   the heuristic extractor that the chatter model (:mod:`.chatter`) judges worth nothing
   ("John totally agrees.") is left out before that.
4. Append, per chunk and in one transaction, ``MiningFailed`` (when the model's answer was
   unusable) and ``MemoriesMined`` — also when nothing was kept, so the manifest moves on.
   The idempotency key is ``mine:<session>:<first seq>-<last seq>``: a chunk is recorded
   once whatever happens. Killed at any point, the pass resumes after the last chunk
   recorded (the manifest is rebuilt from the log), so no turn is mined twice or skipped.

The event's time is the chunk's last turn's: memories are dated when they were said, and
the journal projection writes them to that UTC day's file. Memory ids are derived from the
chunk and the content, so the same log mined again — by one worker or three — gives the
same ids.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from events import EventLog, Home, NewEvent, clock, streams
from events.config import Config, load_config
from events.memory_types import PREFERENCE
from events.types import MemoriesMined, MiningFailed
from projections import ProjectionStore, open_store
from projections.memories import USER
from projections.mining import session_state, waiting_sessions
from projections.speakers import person_name

from ..pass_lock import pass_lock
from ..sync.progress import ProgressFactory, no_progress
from .attributes import Classifier, load_classifier, with_attributes
from .candidates import HEURISTIC, Candidate, Extraction
from .chatter import Chatter, load_chatter
from .chunks import Chunk, cut_chunks, ready, session_turns
from .dedup import ActiveMemories
from .distribute import Extractor, LocalExtractor
from .extract import MinerSpec, backend_for, chunk_budget
from .text import normal


@dataclass
class MineReport:
    sessions: int = 0
    chunks: int = 0
    turns: int = 0
    calls: int = 0
    new: int = 0
    reinforced: int = 0
    dropped: int = 0
    chatter: int = 0      # statements left out as chatter (:mod:`.chatter`)
    failures: int = 0
    model: str = ""
    seconds: float = 0.0
    prompt_tokens: int = 0
    reply_tokens: int = 0
    dry_run: bool = False
    days: set[str] = field(default_factory=set)
    memories: list[dict] = field(default_factory=list)   # what was (or would be) kept
    stopped: str = ""                                     # why the pass stopped early


def memory_id(chunk: Chunk, index: int, content: str) -> str:
    key = f"{chunk.session}|{chunk.first_seq}|{chunk.last_seq}|{index}|{normal(content)}"
    return "m-" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:20]


def plan(log: EventLog, store: ProjectionStore, config: Config, *, chunk_tokens: int,
         now: dt.datetime, sessions: list[str] | None = None) -> list[Chunk]:
    """The chunks of every session ready to be mined (or of ``sessions`` only)."""
    states = ([s for s in (session_state(store.db, name) for name in sessions)
               if s is not None and s.last_turn_seq > s.mined_upto]
              if sessions is not None else waiting_sessions(store.db))
    chunks: list[Chunk] = []
    person = person_name(store.db)
    for state in states:
        if sessions is None and not ready(state, now, config.mining.idle_hours):
            continue
        chunks += cut_chunks(state.session, session_turns(log, state, person), chunk_tokens)
    return chunks


def decide(chunk: Chunk, extraction: Extraction, active: ActiveMemories,
           report: MineReport, classifier: Classifier | None = None,
           chatter: Chatter | None = None) -> list[NewEvent]:
    """The events recording one chunk: its new memories (duplicates of active ones become
    reinforcements; each with the attribute it sets, :mod:`.attributes`; the heuristic's
    chatter left out, :func:`chatter_in`), and its failure if the model's answer was
    unusable."""
    keep: list[dict] = []
    reinforced: dict[str, list[str]] = {}
    duplicates = 0
    candidates = with_attributes(
        extraction.candidates, [_speaker(chunk, c) for c in extraction.candidates],
        classifier, active.subjects)
    vectors = active.vectors([c.content for c in candidates])
    left_out: list[str] = []
    if chatter is not None and (extraction.fallback or extraction.model == HEURISTIC):
        left = chatter_in(chunk, candidates, vectors, chatter)
        left_out = [c.content for i, c in enumerate(candidates) if i in left]
        vectors = [v for i, v in enumerate(vectors) if i not in left]
        candidates = [c for i, c in enumerate(candidates) if i not in left]
    for index, (candidate, vector) in enumerate(zip(candidates, vectors, strict=True)):
        refs = [chunk.turns[n - 1].ref for n in candidate.turns]
        known = active.known(candidate.content, vector)
        if known is not None:
            duplicates += 1
            reinforced.setdefault(known, [])
            reinforced[known] += [r for r in refs if r not in reinforced[known]]
            continue
        memory = _memory(chunk, index, candidate)
        active.add(memory["id"], candidate.content, vector, candidate.subject)
        keep.append(memory)
    occurred = clock.from_iso(chunk.at)
    events = []
    if extraction.failure:
        events.append(NewEvent(
            stream=streams.MEMORY, occurred_at=occurred,
            idempotency_key=f"mine-failed:{chunk.key}",
            data=MiningFailed(session=chunk.session, first_seq=chunk.first_seq,
                              last_seq=chunk.last_seq, model=extraction.model,
                              error=extraction.failure, reply=extraction.failed_reply)))
    events.append(NewEvent(
        stream=streams.MEMORY, occurred_at=occurred, idempotency_key=f"mine:{chunk.key}",
        correlation_id=chunk.turns[-1].event_id,
        data=MemoriesMined(session=chunk.session, memories=keep,
                           model=HEURISTIC if extraction.fallback else extraction.model,
                           first_seq=chunk.first_seq, last_seq=chunk.last_seq,
                           turns=len(chunk.turns), calls=extraction.calls,
                           reinforced=[{"id": k, "refs": v} for k, v in reinforced.items()],
                           dropped=duplicates,
                           fallback=extraction.fallback,
                           extracted_by=extraction.extracted_by, chatter=left_out)))
    report.new += len(keep)
    report.reinforced += len(reinforced)
    report.dropped += duplicates
    report.chatter += len(left_out)
    report.memories += keep
    report.failures += bool(extraction.failure)
    return events


def _speaker(chunk: Chunk, candidate: Candidate) -> str:
    return chunk.turns[candidate.turns[0] - 1].speaker if candidate.turns else ""


def chatter_in(chunk: Chunk, candidates: list[Candidate], vectors: list,
               chatter: Chatter) -> frozenset[int]:
    """The indices of the ``candidates`` to leave out: the life statements (a preference
    with no attribute, not asked to be kept, with a vector) that ``chatter`` judges worth
    nothing."""
    judged = [i for i, c in enumerate(candidates)
              if c.type == PREFERENCE.name and not c.subject and not c.asked
              and vectors[i] is not None]
    found = chatter.is_chatter([vectors[i] for i in judged],
                               [(candidates[i].content, _speaker(chunk, candidates[i]))
                                for i in judged])
    return frozenset(i for i, out in zip(judged, found, strict=True) if out)


def _memory(chunk: Chunk, index: int, candidate: Candidate) -> dict:
    cited = [chunk.turns[n - 1] for n in candidate.turns]
    memory = {"id": memory_id(chunk, index, candidate.content), "type": candidate.type,
              "content": candidate.content, "kind": candidate.kind, "action": candidate.action,
              "confidence": candidate.confidence, "tags": candidate.tags,
              "subject": candidate.subject, "refs": [t.ref for t in cited],
              "events": [t.event_id for t in cited], "at": max(t.at for t in cited)}
    if candidate.asked:
        memory["source"] = USER   # the speaker's own note, as a /remember
    return memory


def mine(home: Home, spec: MinerSpec, *, extractor: Extractor | None = None,
         sessions: list[str] | None = None, dry_run: bool = False,
         progress: ProgressFactory = no_progress, now: dt.datetime | None = None,
         on_chunk: Callable[[Chunk, Extraction], None] | None = None) -> MineReport:
    """Mine every session that is ready (or ``sessions``); see the module doc. With
    ``dry_run`` everything is decided and reported but nothing is appended."""
    config = load_config(home)
    report = MineReport(dry_run=dry_run)
    started = time.monotonic()
    with pass_lock(home, "mine"), EventLog(home.events_db) as log, \
            open_store(home, log) as store:
        store.catch_up_all()
        window = backend_for(spec, config.llm).context_window() if spec.uses_model else None
        chunks = plan(log, store, config, now=now or clock.now(), sessions=sessions,
                      chunk_tokens=chunk_budget(window, config.mining.chunk_tokens))
        report.sessions = len({c.session for c in chunks})
        report.chunks = len(chunks)
        active = ActiveMemories(home, store)
        classifier = load_classifier(active.embedder()) if chunks else None
        chatter = load_chatter() if chunks and active.embedder() is not None else None
        extractor = extractor or LocalExtractor(spec, config.llm, config.mining.parallel)
        with progress(sum(len(c.turns) for c in chunks), "Mining") as step:
            for chunk, extraction in extractor.results(chunks):
                events = decide(chunk, extraction, active, report, classifier, chatter)
                if not dry_run:
                    log.append_many(events)
                report.turns += len(chunk.turns)
                report.calls += extraction.calls
                report.prompt_tokens += extraction.prompt_tokens
                report.reply_tokens += extraction.reply_tokens
                report.model = report.model or extraction.model
                if events[-1].data.memories:  # type: ignore[attr-defined]
                    report.days.add(chunk.at[:10])
                if on_chunk is not None:
                    on_chunk(chunk, extraction)
                step(len(chunk.turns))
        if not dry_run and chunks:
            store.catch_up_all()
    report.seconds = time.monotonic() - started
    return report

"""What ``diarist mine``, ``dream``, ``consolidate`` and ``maintain`` run now — the same
passes ``diarist worker`` runs at night and every 6 h (:mod:`workers.schedule`).

Each pass leaves nothing waiting: what it appended is projected, embedded and searchable
when it returns (:func:`settle`, the same work as ``diarist sync``), and no catch-up is
left on the queue for a worker that may not be running. Mining settles first too, so the
turns it reads are embedded and the attribute classifier has its model."""
from __future__ import annotations

from events import Home
from events.config import load_config

from .consolidation.consolidate import ConsolidationReport, consolidate
from .dreaming.dream import DreamReport, dream
from .maintenance.maintain import MaintenanceReport, maintain
from .mining.extract import MinerSpec, backend_for, miner_spec
from .mining.mine import MineReport, mine
from .queue_port import NO_QUEUE, QueuePort
from .sync.catch_up import settle
from .sync.progress import ProgressFactory, no_progress


def spec_for(home: Home, *, backend: str | None = None, model: str | None = None,
             base_url: str | None = None, script: str | None = None,
             heuristic: bool = False) -> MinerSpec:
    return miner_spec(load_config(home), backend=backend, model=model, base_url=base_url,
                      script=script, heuristic=heuristic)


def mine_now(home: Home, spec: MinerSpec, *, sessions: list[str] | None = None,
             dry_run: bool = False, progress: ProgressFactory = no_progress,
             queue: QueuePort = NO_QUEUE) -> MineReport:
    """Mine every session ready to be mined (or ``sessions``) now; chunks are extracted
    where ``queue`` says (here, or shared over a Redis queue)."""
    if spec.uses_model:   # an unreachable server fails here, before anything is written
        backend_for(spec, load_config(home).llm).context_window()
    if not dry_run:
        settle(home, queue=queue)
    report = mine(home, spec, extractor=queue.extractor(home, spec), sessions=sessions,
                  dry_run=dry_run, progress=progress)
    if report.chunks and not dry_run:
        settle(home, queue=queue)
    return report


def dream_now(home: Home, *, dry_run: bool = False, progress: ProgressFactory = no_progress,
              queue: QueuePort = NO_QUEUE) -> DreamReport:
    report = dream(home, dry_run=dry_run, progress=progress)
    if report.events and not dry_run:
        settle(home, queue=queue)
    return report


def consolidate_now(home: Home, spec: MinerSpec, *, dry_run: bool = False,
                    progress: ProgressFactory = no_progress,
                    queue: QueuePort = NO_QUEUE) -> ConsolidationReport:
    report = consolidate(home, spec, dry_run=dry_run, progress=progress)
    if report.changed and not dry_run:
        settle(home, queue=queue)
    return report


def maintain_now(home: Home, *, dry_run: bool = False,
                 queue: QueuePort = NO_QUEUE) -> MaintenanceReport:
    """Archive old journals and prune ``queue`` (it projects what it appends itself, and
    queues nothing: pruning is the point)."""
    return maintain(home, dry_run=dry_run, queue=queue)

"""Maintenance (every 6 h in `diarist worker`, or ``diarist maintain``): journals older than
``maintenance.archive_after_days`` (90) move to ``memory/archive/`` — a decision that
depends on the clock, so it is recorded first (``JournalArchived`` with the time used) and
the journal projection moves the file — and the queue is pruned (:mod:`.queue`)."""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from events import EventLog, Home, NewEvent, clock, streams
from events.config import load_config
from events.types import JournalArchived
from projections import open_store
from projections.journal import journal_days

from ..pass_lock import pass_lock, pass_running
from ..presence import worker_present
from ..queue_port import NO_QUEUE, QueuePort
from .queue import PruneReport, prune_queue


@dataclass
class MaintenanceReport:
    archived: list[str] = field(default_factory=list)   # journal dates moved to archive/
    queue: PruneReport | None = None
    queue_error: str = ""
    dry_run: bool = False


def journals_to_archive(home: Home, now: dt.datetime, older_than_days: int) -> list[str]:
    """Days whose journal is older than ``older_than_days`` and not archived yet."""
    cutoff = (now - dt.timedelta(days=older_than_days)).date().isoformat()
    with EventLog(home.events_db) as log, open_store(home, log) as store:
        store.catch_up("journal")
        return [date for date, _n, archived in journal_days(store.db)
                if date < cutoff and not archived]


def maintain(home: Home, *, now: dt.datetime | None = None, dry_run: bool = False,
             queue: QueuePort = NO_QUEUE) -> MaintenanceReport:
    config = load_config(home)
    now = now or clock.now()
    report = MaintenanceReport(dry_run=dry_run)
    with pass_lock(home, "maintain"):
        days = config.maintenance.archive_after_days
        report.archived = journals_to_archive(home, now, days)
        if report.archived and not dry_run:
            with EventLog(home.events_db) as log, open_store(home, log) as store:
                log.append_many([NewEvent(
                    stream=streams.MEMORY, idempotency_key=f"archive-journal:{date}",
                    data=JournalArchived(date=date, at=clock.to_iso(now),
                                         older_than_days=days)) for date in report.archived])
                store.catch_up_all()
        if not dry_run:
            report.queue, report.queue_error = prune(home, queue)
    return report


def prune(home: Home, queue: QueuePort) -> tuple[PruneReport | None, str]:
    """Prune ``queue``'s queues (the home's, and its mining queue); (the report, or None and
    why the queue could not be reached; None and "" with no queue)."""
    try:
        queues = queue.queues(home)
        if not queues:
            return None, ""
        flags = {"worker_running": worker_present(home),
                 "mining_running": pass_running(home, "mine")}
        report, *others = [prune_queue(one, **flags) for one in queues]
    except Exception as exc:  # an unreachable queue is reported, never fatal here
        return None, str(exc)
    for other in others:
        for name, count in other.dropped.items():
            report.dropped[name] = report.dropped.get(name, 0) + count
        report.keys += other.keys
        report.pending += other.pending
    return report, ""

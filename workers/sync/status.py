"""``diarist status``: the log, each projection's position, the budget, the embeddings, the
queue and the worker, as lines to show."""
from __future__ import annotations

from typing import Any

from events import EventLog, Home
from events.config import Config, load_config
from events.health import MISSING, check_database, damaged, out_of_space, writable
from projections import ProjectionStore, open_store
from projections.memories import memory_counts
from projections.mining import mining_totals
from projections.stats import budget_line, budget_summary
from projections.vector_cache import active_model, pending_count

from ..maintenance.sizes import disk_usage, human
from ..presence import last_worker_pid, worker_present
from ..queue_port import QueuePort


def status_lines(home: Home, *, queue: QueuePort) -> list[str]:
    """What ``diarist status`` prints. It never fails on a damaged or read-only home: it
    checks the log and the projections database (``PRAGMA quick_check``), says which one is
    broken or stale and what to run, and shows the rest (``queue`` as it describes itself)."""
    config = load_config(home)
    readonly = not writable(home)
    lines = [f"home: {home.root}" + (" (read-only: reading works, nothing can be written)"
                                     if readonly else "")]
    full = out_of_space(home.root)
    if full:
        lines.append("disk: FULL — (almost) no room left under the home: appends fail until "
                     "space is freed (nothing is lost; see `df -h`)")
    log_problem = check_database(home.events_db)
    if log_problem not in (None, MISSING):
        error = damaged(home, home.events_db, str(log_problem))
        lines.append(f"log: DAMAGED — {error} ({error.hint})")
    else:
        reading = readonly or full  # a full disk: read without writing anything, as read-only
        with (EventLog(home.events_db, readonly=reading) if log_problem is None
              else EventLog(home.events_db)) as log:
            lines += store_lines(home, log, config, reading)
    lines.append("queue: not read (the home is read-only)" if readonly
                 else f"queue: {queue_line(home, queue)}")
    lines.append(f"worker: {worker_line(home)}")
    lines.append("disk: " + ", ".join(
        f"{name} {human(size)}" + (f" ({files} files)" if name.endswith("journals") else "")
        for name, size, files in disk_usage(home)))
    return lines


def store_lines(home: Home, log: EventLog, config: Config, readonly: bool) -> list[str]:
    size = sum(p.stat().st_size for p in home.root.glob("events.db*") if p.is_file())
    lines = [f"log: {log.count()} events, head {log.head()}, {size / 1e6:.1f} MB, "
             "quick_check ok"]
    problem = check_database(home.projections_db)
    if problem not in (None, MISSING):
        error = damaged(home, home.projections_db, str(problem))
        return [*lines, f"projections: DAMAGED — {error} ({error.hint})"]
    if problem == MISSING:
        lines.append(f"projections: {home.projections_db.name} is missing: run `diarist "
                     "replay` to build it from the log")
    with open_store(home, log, readonly=readonly or problem == MISSING) as store:
        lines += [f"projection {s.name}: position {s.position}, lag {s.lag}"
                  for s in store.status()]
        lines += health_lines(store, readonly)
        lines.append(budget_line(budget_summary(store.db, config.memory.budget_pct),
                                 config.memory.budget_pct))
        active = active_model(store)
        if active is None:
            lines.append("embeddings: no model chosen yet (`diarist sync` exports it); "
                         "recall is lexical")
        else:
            lines.append(f"embeddings: {active.model}, {pending_count(store)} items waiting")
        lines += mining_lines(store)
    return lines


def health_lines(store: ProjectionStore, readonly: bool) -> list[str]:
    """What keeps the projections from being what the log says, and what to run: lag, an
    event they cannot get past, an old projection version, files changed by hand."""
    lines = []
    statuses = store.status()
    for position in sorted({s.position for s in statuses if s.lag}):
        for event in store.log.read(position, 1):
            if event.problem:
                lines.append(f"stuck: {event.label()} cannot be projected: {event.problem} "
                             f"(see `diarist events show {event.seq}`; upgrade diarist, or "
                             f"`diarist redact {event.id}` if it is damaged)")
    behind = max((s.lag for s in statuses), default=0)
    if behind and not lines:
        lines.append(f"stale: the projections are up to {behind} events behind the log: "
                     + ("the home is read-only, so they cannot be caught up here" if readonly
                        else "run `diarist sync` (or start `diarist worker`)"))
    for s in statuses:
        code = store.projectors[s.name].version
        if s.position and s.version != code:
            lines.append(f"projection {s.name} was built as version {s.version}, this diarist "
                         f"writes {code}: the next `diarist sync` rebuilds it")
    drift = [(file, what) for name in store.projectors for file, what in store.file_drift(name)]
    if drift:
        shown = ", ".join(f"{file} {what}" for file, what in drift[:5])
        more = f" and {len(drift) - 5} more" if len(drift) > 5 else ""
        lines.append(f"files: {shown}{more} — not what the log says; `diarist replay` "
                     "rewrites them")
    return lines


def mining_lines(store: Any) -> list[str]:
    totals = mining_totals(store.db)
    by_status: dict[str, int] = {}
    for _type, status, count in memory_counts(store.db):
        by_status[status] = by_status.get(status, 0) + count
    return [f"mining: {totals['sessions']} sessions, {totals['waiting']} waiting to be mined, "
            f"{totals['memories']} memories mined in {totals['chunks']} chunks, "
            f"{totals['failures']} model failures",
            "memories: " + (", ".join(f"{n} {status}" for status, n in sorted(by_status.items()))
                            or "none")]


def worker_line(home: Home) -> str:
    if not worker_present(home):
        return "none running here (the chat catches up itself)"
    pid = last_worker_pid(home)
    return "running" + (f" (last started: pid {pid})" if pid else "")


def queue_line(home: Home, queue: QueuePort) -> str:
    try:
        return queue.describe(home)
    except Exception as exc:  # status reports, it does not fail
        return f"unavailable ({exc})"

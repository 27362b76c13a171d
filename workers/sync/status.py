"""``diarist status``: the log, each projection's position, the budget, the embeddings, the
queue and the worker, as lines to show."""
from __future__ import annotations

from typing import Any

from events import EventLog, Home
from events.config import load_config
from projections import open_store
from projections.memories import memory_counts
from projections.mining import mining_totals
from projections.stats import budget_line, budget_summary
from projections.vector_cache import active_model, pending_count

from ..maintenance.sizes import disk_usage, human
from ..presence import last_worker_pid, worker_present


def status_lines(home: Home) -> list[str]:
    config = load_config(home)
    lines = [f"home: {home.root}"]
    with EventLog(home.events_db) as log, open_store(home, log) as store:
        size = sum(p.stat().st_size for p in home.root.glob("events.db*") if p.is_file())
        lines.append(f"log: {log.count()} events, head {log.head()}, {size / 1e6:.1f} MB")
        lines += [f"projection {s.name}: position {s.position}, lag {s.lag}"
                  for s in store.status()]
        lines.append(budget_line(budget_summary(store.db, config.memory.budget_pct),
                                 config.memory.budget_pct))
        active = active_model(store)
        if active is None:
            lines.append("embeddings: no model chosen yet (`diarist sync` exports it); "
                         "recall is lexical")
        else:
            lines.append(f"embeddings: {active.model}, {pending_count(store)} items waiting")
        lines += mining_lines(store)
    lines.append(f"queue: {queue_line(home)}")
    lines.append(f"worker: {worker_line(home)}")
    lines.append("disk: " + ", ".join(
        f"{name} {human(size)}" + (f" ({files} files)" if name.endswith("journals") else "")
        for name, size, files in disk_usage(home)))
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


def queue_line(home: Home) -> str:
    from ..app import configure

    try:
        huey = configure(home)
        where = huey.storage_kwargs.get("url") or huey.storage_kwargs.get("filename")
        return f"{huey.storage_class.__name__} at {where}, {huey.pending_count()} pending"
    except Exception as exc:  # status reports, it does not fail
        return f"unavailable ({exc})"

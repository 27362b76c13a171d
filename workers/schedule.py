"""When the night's work and maintenance are due, and the night's sequence.

``diarist worker`` asks every minute (the ``schedule.tick`` periodic task):

- **the night** (``mining.nightly``, on by default): from ``mining.at`` (02:00, the
  machine's local time) until six hours later, once per local day — mine, then dream,
  then consolidate (consolidation reads what mining journaled). A worker that was not
  running at 02:00 but starts before 08:00 still runs it; later it waits for the next night.
- **maintenance** (``maintenance.enabled``): when ``maintenance.every_hours`` (6) have
  passed since the last one (or since the first tick of a home).
- **sessions that just ended** (``mining.on_session_end``): a session that ended in the
  last hour with at least ``mining.min_turns`` (10) turns is mined now — unless a chat had
  a turn in the last 15 minutes (the chat's model must not wait for mining; the next tick
  tries again). Shorter sessions, and imports of old transcripts, wait for the night.

When each ran last is kept in ``var/schedule.json`` — bookkeeping of the scheduler, not
memory: the passes record their decisions as events, and each pass holds its own lock, so
two workers never run the same pass at once whatever this file says.
"""
from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from events import EventLog, Home, clock
from events.config import Config, load_config
from events.logger import get_logger
from projections import open_store
from projections.mining import open_chats, waiting_sessions

from .consolidation.consolidate import ConsolidationReport, consolidate
from .dreaming.dream import DreamReport, dream
from .maintenance.maintain import MaintenanceReport, maintain
from .mining.distribute import Extractor
from .mining.extract import MinerSpec, miner_spec
from .mining.mine import MineReport, mine
from .pass_lock import PassRunning
from .queue_port import NO_QUEUE, QueuePort
from .sync.catch_up import settle

WINDOW_HOURS = 6
JUST_ENDED = dt.timedelta(hours=1)     # a session that ended this recently is mined at once
CHAT_QUIET = dt.timedelta(minutes=15)  # ... unless a chat had a turn this recently
logger = get_logger("diarist.schedule")
ExtractorFor = Callable[[Home, MinerSpec], Extractor]


def _state_path(home: Home) -> Path:
    return home.root / "schedule.json"


def read_state(home: Home) -> dict[str, str]:
    try:
        data = json.loads(_state_path(home).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def write_state(home: Home, **values: str) -> None:
    state = read_state(home) | values
    path = _state_path(home)
    tmp = path.with_name(".schedule.json.tmp")
    tmp.write_text(json.dumps(state, sort_keys=True), encoding="utf-8")
    tmp.replace(path)


def night_due(config: Config, now_local: dt.datetime, last_night: str | None) -> bool:
    if not config.mining.nightly:
        return False
    hour, minute = (int(x) for x in config.mining.at.split(":"))
    start = now_local.replace(hour=hour, minute=minute, second=0, microsecond=0)
    if now_local < start:
        start -= dt.timedelta(days=1)  # the window may run past midnight
    if now_local >= start + dt.timedelta(hours=WINDOW_HOURS):
        return False
    return last_night != start.date().isoformat()


def maintenance_due(config: Config, now: dt.datetime, last: str | None) -> bool:
    """Every ``maintenance.every_hours`` of a worker's life (the first tick only starts the
    count: a worker that starts does not archive anything at once; ``diarist maintain``
    does it now)."""
    if not config.maintenance.enabled or not last:
        return False
    return now - clock.from_iso(last) >= dt.timedelta(hours=config.maintenance.every_hours)


def ended_sessions_to_mine(home: Home, config: Config, now: dt.datetime) -> list[str]:
    """Sessions that ended in the last hour with at least ``mining.min_turns`` turns and
    turns not mined yet — none while a chat is going on (its model must not wait for
    mining) — oldest first. An imported transcript's sessions ended when their last turn
    was said: an old one waits for the night."""
    if not config.mining.on_session_end:
        return []
    with EventLog(home.events_db) as log, open_store(home, log) as store:
        store.catch_up("mining")
        if open_chats(store.db, clock.to_iso(now - CHAT_QUIET)):
            return []
        recent = clock.to_iso(now - JUST_ENDED)
        return [s.session for s in waiting_sessions(store.db)
                if s.ended and s.ended_at >= recent and s.turns >= config.mining.min_turns]


@dataclass
class NightReport:
    mined: MineReport | None = None
    dreamt: DreamReport | None = None
    consolidated: ConsolidationReport | None = None
    skipped: list[str] = field(default_factory=list)   # passes another process was running


def run_night(home: Home, extractor_for: ExtractorFor | None = None, *,
              queue: QueuePort = NO_QUEUE) -> NightReport:
    """Mine, dream, consolidate; a pass already running elsewhere is skipped. Mining
    extracts with ``extractor_for`` (by default the ``queue``'s); settling prunes
    ``queue``."""
    extractor_for = extractor_for or queue.extractor
    config = load_config(home)
    spec = miner_spec(config)
    report = NightReport()
    settle(home, queue=queue)  # the turns embedded: mining's classifier and dedup read them
    steps: list[tuple[str, Callable[[], Any]]] = [
        ("mine", lambda: mine(home, spec, extractor=extractor_for(home, spec))),
        ("dream", lambda: dream(home)),
        ("consolidate", lambda: consolidate(home, spec)),
    ]
    for name, step in steps:
        try:
            result = step()
        except PassRunning:
            report.skipped.append(name)
            continue
        setattr(report, {"mine": "mined", "dream": "dreamt",
                         "consolidate": "consolidated"}[name], result)
    settle(home, queue=queue)  # nothing left waiting: the night's writing is searchable
    return report


def tick(home: Home, *, now: dt.datetime | None = None) -> list[str]:
    """What is due now: ``night``, ``maintenance``, ``session:<id>`` (see the module doc).
    Records the night and maintenance as started, so the next tick does not queue them
    again."""
    config = load_config(home)
    now = now or clock.now()
    local = now.astimezone()
    state = read_state(home)
    due: list[str] = []
    if night_due(config, local, state.get("night")):
        due.append("night")
        hour, minute = (int(x) for x in config.mining.at.split(":"))
        start = local.replace(hour=hour, minute=minute, second=0, microsecond=0)
        if local < start:
            start -= dt.timedelta(days=1)
        write_state(home, night=start.date().isoformat())
    if "maintenance" not in state or maintenance_due(config, now, state["maintenance"]):
        if "maintenance" in state and config.maintenance.enabled:
            due.append("maintenance")
        write_state(home, maintenance=clock.to_iso(now))
    if not due or due == ["maintenance"]:
        due += [f"session:{s}" for s in ended_sessions_to_mine(home, config, now)]
    return due


def maintain_now(home: Home, *, queue: QueuePort = NO_QUEUE) -> MaintenanceReport | None:
    try:
        return maintain(home, queue=queue)
    except PassRunning:
        return None

"""Handing work to the queue: projection catch-ups after an append, the chat's shadow journal,
a mining pass's chunks and a session to mine when it ends.

The events are already safe in the log when these run, so a queue that cannot be reached is
a warning, not an error: ``diarist sync`` (or the next worker) catches up from the log itself.
"""
from __future__ import annotations

from events import Home
from events.logger import get_logger

from .mining.distribute import Extractor
from .mining.extract import MinerSpec

logger = get_logger("diarist.queue")


def after_append(home: Home) -> bool:
    """Queue a catch-up of every projection for a running ``diarist worker``; False when the
    queue could not be reached."""
    from .app import configure
    from .tasks import enqueue_catch_up

    try:
        configure(home)
        queued = enqueue_catch_up()
    except Exception as exc:  # any queue failure is only a warning here
        logger.warning("queue.unavailable", error=str(exc),
                       hint="run `diarist sync` to update the projections")
        return False
    logger.info("queue.enqueued", projections=queued)
    return True


def enqueue_shadow_journal(home: Home, session_id: str, user_event_id: str,
                           assistant_event_id: str, spec: dict[str, str | None]) -> bool:
    """Queue ``memory.shadow_journal`` for one exchange; False when the queue could not be
    reached (the caller then extracts in-process). ``spec`` rebuilds the backend
    (:func:`workers.chat.handoff.backend_spec`): no API key goes through the queue."""
    from .app import configure
    from .tasks import shadow_journal_task

    try:
        configure(home)
        shadow_journal_task(session_id, user_event_id, assistant_event_id,
                            spec["backend_name"], spec["model"], base_url=spec["base_url"],
                            script=spec["script"])
    except Exception as exc:  # the chat falls back to extracting itself
        logger.info("queue.unavailable", task="memory.shadow_journal", error=str(exc))
        return False
    logger.info("queue.enqueued", task="memory.shadow_journal", turn=assistant_event_id)
    return True


def mining_extractor(home: Home, spec: MinerSpec) -> Extractor:
    """Where a mining pass started here extracts its chunks: in this process, or shared
    with the workers of a Redis queue (:func:`workers.tasks.mining_extractor`)."""
    from .tasks import mining_extractor as for_queue

    return for_queue(home, spec)


def enqueue_mine_session(home: Home, session: str) -> bool:
    """Queue ``mine.session`` for a running worker; False when the queue is unreachable."""
    from .app import configure
    from .tasks import mine_session_task

    try:
        configure(home)
        mine_session_task(session)
    except Exception as exc:  # the night's run mines it anyway
        logger.info("queue.unavailable", task="mine.session", error=str(exc))
        return False
    return True

"""Handing work to the queue: projection catch-ups after an append, the chat's shadow journal."""
from __future__ import annotations

from events import Home

from .logs import log as logger


def after_append(home: Home) -> bool:
    """Queue a catch-up of every projection for a running `diarist worker`; False when the
    queue could not be reached.

    The events are already safe in the log, so a queue that cannot be reached is a warning,
    not an error: `diarist sync` (or the next worker) catches up from the log itself.
    """
    from workers import configure, enqueue_catch_up

    try:
        configure(home)
        queued = enqueue_catch_up()
    except Exception as exc:  # noqa: BLE001 - any queue failure is only a warning here
        logger.warning("queue.unavailable", error=str(exc),
                       hint="run `diarist sync` to update the projections")
        return False
    logger.info("queue.enqueued", projections=queued)
    return True


def enqueue_shadow_journal(home: Home, session_id: str, user_event_id: str,
                           assistant_event_id: str, *, backend_name: str, model: str,
                           base_url: str | None, script: str | None) -> bool:
    """Queue ``memory.shadow_journal`` for one exchange; False when the queue could not be
    reached (the caller then extracts in-process). No API key goes through the queue."""
    from workers import configure
    from workers.tasks import shadow_journal_task

    try:
        configure(home)
        shadow_journal_task(session_id, user_event_id, assistant_event_id, backend_name, model,
                            base_url=base_url, script=script)
    except Exception as exc:  # noqa: BLE001 - the chat falls back to extracting itself
        logger.info("queue.unavailable", task="memory.shadow_journal", error=str(exc))
        return False
    logger.info("queue.enqueued", task="memory.shadow_journal", turn=assistant_event_id)
    return True

"""Handing projection work to the queue after an append."""
from __future__ import annotations

from events import Home

from .logs import log as logger


def after_append(home: Home) -> None:
    """Queue a catch-up of every projection for a running `diarist worker`.

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
        return
    logger.info("queue.enqueued", projections=queued)

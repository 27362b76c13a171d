"""Logging set-up: human-readable on a terminal, JSON lines with ``--log-json``; stderr.

structlog itself is imported only when a message is shown (:mod:`events.logger`)."""
from __future__ import annotations

import logging
import sys

from events.logger import configure, get_logger, redact_text
from projections.secrets import scrub


class _Redact(logging.Filter):
    """Secrets masked in a standard-library record (Huey's) before any handler formats it."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = redact_text(record.getMessage()), None
        if record.exc_info and record.exc_info[1] is not None:
            record.exc_text = redact_text(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
        return True


def setup_logging(*, json_lines: bool, verbose: int) -> None:
    level = logging.WARNING - 10 * min(verbose, 2)
    configure(level=level, json_lines=json_lines, redact=scrub)
    # Huey's consumer logs through the standard library: send it to the same place.
    logging.basicConfig(level=level, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s", force=True)
    for handler in logging.getLogger().handlers:
        handler.addFilter(_Redact())


log = get_logger("diarist")

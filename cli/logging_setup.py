"""Logging set-up: human-readable on a terminal, JSON lines with ``--log-json``; stderr.

structlog itself is imported only when a message is shown (:mod:`events.logger`)."""
from __future__ import annotations

import logging
import sys

from events.logger import configure, get_logger


def setup_logging(*, json_lines: bool, verbose: int) -> None:
    level = logging.WARNING - 10 * min(verbose, 2)
    configure(level=level, json_lines=json_lines)
    # Huey's consumer logs through the standard library: send it to the same place.
    logging.basicConfig(level=level, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s", force=True)


log = get_logger("diarist")

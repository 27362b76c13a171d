"""structlog set-up: human-readable on a terminal, JSON lines with ``--log-json``; stderr."""
from __future__ import annotations

import logging
import sys

import structlog


def setup_logging(*, json_lines: bool, verbose: int) -> None:
    level = logging.WARNING - 10 * min(verbose, 2)
    renderer: structlog.typing.Processor
    if json_lines:
        renderer = structlog.processors.JSONRenderer()
    else:
        renderer = structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info if json_lines else structlog.dev.set_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )
    # Huey's consumer logs through the standard library: send it to the same place.
    logging.basicConfig(level=level, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s", force=True)


log = structlog.get_logger("diarist")

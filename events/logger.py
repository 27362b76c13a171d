"""Loggers that cost nothing until a message is worth showing.

structlog (with what its console renderer pulls in) takes ~0.1–0.35 s to import, a large
share of a one-shot command such as ``diarist recall``. :func:`get_logger` returns a
:class:`Logger` with structlog's calling convention (``log.info("event", key=value)``) that
imports and configures structlog only when a message passes the level set by
:func:`configure` — with the CLI's default (warnings), an info message costs a comparison.
Until :func:`configure` runs (library use), every message goes to structlog's defaults.
"""
from __future__ import annotations

import logging
import sys
from typing import Any

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING,
           "error": logging.ERROR, "critical": logging.CRITICAL}
_settings: dict[str, Any] = {"level": logging.NOTSET, "json": False, "configured": False,
                             "ready": False}


def configure(*, level: int, json_lines: bool) -> None:
    """Show messages at ``level`` and above on stderr: human-readable, or JSON lines."""
    _settings.update(level=level, json=json_lines, configured=True, ready=False)


def _ready() -> Any:
    import structlog

    if _settings["configured"] and not _settings["ready"]:
        json_lines = _settings["json"]
        renderer: Any
        if json_lines:
            renderer = structlog.processors.JSONRenderer()
        else:
            renderer = structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
        structlog.configure(
            processors=[
                structlog.contextvars.merge_contextvars,
                structlog.processors.add_log_level,
                structlog.processors.TimeStamper(fmt="iso", utc=True),
                structlog.processors.format_exc_info if json_lines
                else structlog.dev.set_exc_info,
                renderer,
            ],
            wrapper_class=structlog.make_filtering_bound_logger(_settings["level"]),
            logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
            cache_logger_on_first_use=False,
        )
        _settings["ready"] = True
    return structlog


class Logger:
    """``debug`` / ``info`` / ``warning`` / ``error`` / ``critical`` (event, **fields)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def _log(self, level: str, event: str, fields: dict[str, Any]) -> None:
        if _LEVELS[level] < _settings["level"]:
            return
        getattr(_ready().get_logger(self.name), level)(event, **fields)

    def debug(self, event: str, **fields: Any) -> None:
        self._log("debug", event, fields)

    def info(self, event: str, **fields: Any) -> None:
        self._log("info", event, fields)

    def warning(self, event: str, **fields: Any) -> None:
        self._log("warning", event, fields)

    def error(self, event: str, **fields: Any) -> None:
        self._log("error", event, fields)

    def critical(self, event: str, **fields: Any) -> None:
        self._log("critical", event, fields)


def get_logger(name: str) -> Logger:
    return Logger(name)

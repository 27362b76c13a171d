"""Loggers that cost nothing until a message is worth showing.

structlog (with what its console renderer pulls in) takes ~0.1–0.35 s to import, a large
share of a one-shot command such as ``diarist recall``. :func:`get_logger` returns a
:class:`Logger` with structlog's calling convention (``log.info("event", key=value)``) that
imports and configures structlog only when a message passes the level set by
:func:`configure` — with the CLI's default (warnings), an info message costs a comparison.
Until :func:`configure` runs (library use: scripts, benchmarks), warnings and above go to
stderr, human-readable — never stdout, which such a script keeps for its own output.

``configure(redact=...)`` (the CLI passes :func:`projections.secrets.scrub`) masks secrets in
every log line: in each field's text before it is rendered, and in the rendered line itself
(an exception's text included). ``events`` is the bottom layer, so the scrubber comes in
from above.
"""
from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import Any

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING,
           "error": logging.ERROR, "critical": logging.CRITICAL}
Redact = Callable[[str], str]
_settings: dict[str, Any] = {"level": logging.WARNING, "json": False, "ready": False,
                             "redact": None}


def configure(*, level: int, json_lines: bool, redact: Redact | None = None) -> None:
    """Show messages at ``level`` and above on stderr: human-readable, or JSON lines, with
    ``redact`` applied to every field and to every rendered line."""
    _settings.update(level=level, json=json_lines, ready=False, redact=redact)


def redact_text(text: str) -> str:
    """``text`` through the configured redactor (unchanged when there is none)."""
    redact = _settings["redact"]
    return redact(text) if redact is not None else text


def _redacted_fields(fields: dict[str, Any]) -> dict[str, Any]:
    return {k: redact_text(v) if isinstance(v, str) else v for k, v in fields.items()}


def _redacting(renderer: Any) -> Any:
    """``renderer`` whose output line passes through the redactor."""
    def render(logger: Any, name: str, event_dict: Any) -> Any:
        line = renderer(logger, name, event_dict)
        return redact_text(line) if isinstance(line, str) else line

    return render


def _ready() -> Any:
    import structlog

    if not _settings["ready"]:
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
                _redacting(renderer),
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
        getattr(_ready().get_logger(self.name), level)(redact_text(event),
                                                        **_redacted_fields(fields))

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

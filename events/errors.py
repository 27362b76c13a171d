"""diarist's own exceptions. ``cli/`` turns them into click errors with their hint."""
from __future__ import annotations


class DiaristError(Exception):
    """Base class. ``hint`` tells the user how to fix it."""

    hint: str = ""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        if hint:
            self.hint = hint


class ConcurrencyError(DiaristError):
    """An append's expected stream version is stale."""

    hint = "Another writer appended to this stream first; re-read the stream and retry."


class UnknownEventType(DiaristError):
    hint = "The log was written by a newer diarist; upgrade diarist to read it."


class ImportFailed(DiaristError):
    """A transcript failed validation; nothing was appended."""

    hint = "Fix the lines named above and run the import again; nothing was imported."


class ConfigError(DiaristError):
    hint = "Edit the config file (var/diarist.yaml) or the environment variable named above."


class NotFound(DiaristError):
    pass

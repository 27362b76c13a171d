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


class UnreadableEvent(DiaristError):
    """A row of the log this code cannot read: an unknown type, a newer ``schema_version``,
    or a payload that does not fit its type. Reading commands show such a row raw with a
    marker; projecting stops before it (nothing is skipped silently)."""

    hint = ("If a newer diarist wrote it, upgrade diarist. If the event is damaged, remove its "
            "content with `diarist redact ID`, or report it. `diarist events show SEQ` shows "
            "the raw row.")
    seq = 0  # the event's position in the log, when one event is meant

    def __init__(self, message: str, hint: str = "", seq: int = 0) -> None:
        super().__init__(message, hint)
        self.seq = seq


class ReadOnlyHome(DiaristError):
    """The home (or one of its files) cannot be written: nothing was changed."""

    hint = ("Make it writable (remount the disk read-write, or fix its permissions), or choose "
            "another home with --home. Reading commands (status, recall, events, journal, "
            "export, backup) work on a read-only home.")


class DiskFull(DiaristError):
    """The disk under the home is full: the write was rolled back, nothing was written."""

    hint = "See what fills it with `df -h` and `du -sh` on the home's disk; then run it again."


class DamagedDatabase(DiaristError):
    """A SQLite file of the home is damaged (garbage, truncated, overwritten)."""


class NewerHome(DiaristError):
    """The home was written by a newer diarist: refused, and left as it is."""

    hint = "Upgrade diarist (or use the newer one for this home); nothing was changed."


class ImportFailed(DiaristError):
    """A transcript failed validation; nothing was appended."""

    hint = "Fix the lines named above and run the import again; nothing was imported."


class ConfigError(DiaristError):
    hint = "Edit the config file (var/diarist.yaml) or the environment variable named above."


class NotFound(DiaristError):
    pass

"""The one clock. Every read of "now" in diarist goes through :func:`now`.

Tests and benchmarks pin it with :func:`frozen`; replay never calls it (projections read
``occurred_at`` / ``recorded_at`` from the events instead).
"""
from __future__ import annotations

import contextlib
import datetime as dt
import functools
from collections.abc import Callable, Iterator

UTC = dt.UTC


def _system_now() -> dt.datetime:
    return dt.datetime.now(UTC)


_source: Callable[[], dt.datetime] = _system_now


def now() -> dt.datetime:
    """The current time, timezone-aware, in UTC."""
    return _source().astimezone(UTC)


@contextlib.contextmanager
def frozen(at: dt.datetime | Callable[[], dt.datetime]) -> Iterator[None]:
    """Pin :func:`now` to a fixed instant (or to a callable) inside the block."""
    global _source
    previous = _source
    _source = at if callable(at) else (lambda: at)
    try:
        yield
    finally:
        _source = previous


def to_iso(moment: dt.datetime) -> str:
    """Canonical stored form: UTC, microseconds, 'Z' (sorts lexicographically)."""
    if moment.tzinfo is None:
        raise ValueError("naive datetime: diarist only stores times with an offset")
    # isoformat, not strftime: glibc's %Y does not pad years before 1000 to four digits
    return moment.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


@functools.lru_cache(maxsize=16384)  # recall weighs hundreds of items' times per question
def from_iso(text: str) -> dt.datetime:
    """Parse an ISO-8601 time that carries an offset ('Z' or '+hh:mm')."""
    moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00") if text.endswith("Z") else text)
    if moment.tzinfo is None:
        raise ValueError(f"time {text!r} has no UTC offset")
    return moment


def to_display(moment: dt.datetime) -> str:
    """Short UTC form used in exports: seconds unless there are microseconds."""
    moment = moment.astimezone(UTC).replace(tzinfo=None)
    return moment.isoformat(timespec="microseconds" if moment.microsecond else "seconds") + "Z"


def now_iso() -> str:
    return to_iso(now())


def parse_moment(value: str) -> dt.datetime:
    """A moment from ISO-8601 with an offset (``2023-05-08T14:00:00Z``) or a UTC day
    (``2023-05-08``: its start); ValueError saying what is accepted otherwise."""
    text = value.strip()
    try:
        if len(text) == 10:
            return dt.datetime.combine(dt.date.fromisoformat(text), dt.time(), UTC)
        return from_iso(text)
    except ValueError:
        raise ValueError(f"not a time: {value!r} (use ISO-8601 with an offset, such as "
                         "2023-05-08T14:00:00Z, or a day, 2023-05-08)") from None


def parse_day(value: str) -> str:
    """A UTC day as ``YYYY-MM-DD`` from ``YYYY-MM-DD``, ``today`` or ``yesterday`` (any case);
    ValueError saying what is accepted otherwise."""
    word = value.strip().lower()
    today = now().date()
    if word == "today":
        return today.isoformat()
    if word == "yesterday":
        return (today - dt.timedelta(days=1)).isoformat()
    try:
        return dt.date.fromisoformat(value.strip()).isoformat()
    except ValueError:
        raise ValueError(f"not a date: {value!r} (use YYYY-MM-DD, today or yesterday)") from None

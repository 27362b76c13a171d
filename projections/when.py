"""When a question is about: the dates it names.

"What did Nate play at the convention on 9 October, 2022?", "What did Nate share in
November 2022?", "What did I cook in March?" name a time, and what was said then is what
answers: recall keeps the full score of items said within the named period (or shortly
after it: one tells of a day in the days that follow) and lowers the rest to
:data:`weights.OUTSIDE_WEIGHT`. A question that names no date is not affected, nor one whose
period holds every candidate.

Recognised: a day ("9 October 2022", "October 9, 2022", "Oct 9th", "2022-10-09", a day
and month without a year), a month ("November 2022", "in June"), a year ("in 2023").
Relative expressions ("last week", "yesterday", "two months ago") are read from the day the
question is asked, when the caller gives it (recall's ``now``: the chat's clock, the time
`diarist eval` says a question was asked), by :func:`.relative_time.resolve`: "What did I
cook last week?" asked on 28 November 2026 names the week of 16 November 2026 ("two weeks
ago", "around 14 November 2026", reaches three days before that day too); a chat's start
block, whose query is words said another day, gives none. Pure: no clock.
:func:`last_day` reads a plan's dates from the day it was said (consolidation drops a plan
gone by from MEMORY.md).
"""
from __future__ import annotations

import calendar
import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from . import weights
from .relative_time import annotate, resolve

DAY_AFTER = dt.timedelta(days=7)    # a day is told of up to a week later
MONTH_AFTER = dt.timedelta(days=7)
# "two weeks ago" (resolved "around 14 November 2026") is as likely a few days earlier
AROUND_BEFORE = dt.timedelta(days=3)
# a day or month named without a year that ended this long before it was named is the one
# just gone by, not the next: a plan is rarely named by its day eleven months ahead
RECENT_PAST = dt.timedelta(days=31)

_MONTHS = {name.lower(): n for n, name in enumerate(calendar.month_name) if name}
_MONTHS |= {name.lower(): n for n, name in enumerate(calendar.month_abbr) if name}
_MONTHS["sept"] = 9
_MONTH = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_PATTERNS = [
    re.compile(r"\b(?P<iso>(?:19|20)\d\d-[01]\d-[0-3]\d)\b"),
    re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?\s*{_YEAR}?\b", re.IGNORECASE),
    re.compile(rf"\b{_MONTH}\s+{_DAY}(?:,?\s*{_YEAR})?\b", re.IGNORECASE),
    re.compile(rf"\b{_MONTH},?\s+{_YEAR}\b", re.IGNORECASE),
    re.compile(rf"\b(?:in|during|of|since|by)\s+{_MONTH}\b", re.IGNORECASE),
    re.compile(rf"\b(?:in|during|of)\s+{_YEAR}\b", re.IGNORECASE),
]


@dataclass(frozen=True)
class Period:
    """A span of dates; ``year`` None: that month (or day) of any year."""

    start: tuple[int, int]      # (month, day)
    end: tuple[int, int]
    year: int | None
    after: dt.timedelta
    before: dt.timedelta = dt.timedelta(0)

    def holds(self, when: dt.date) -> bool:
        years = [self.year] if self.year is not None else [when.year, when.year - 1]
        for year in years:
            try:
                first = dt.date(year, *self.start) - self.before
                last = dt.date(year, *self.end) + self.after
            except ValueError:
                continue
            if first <= when <= last:
                return True
        return False


def last_day(text: str, said: dt.date) -> dt.date | None:
    """The latest day a statement said on ``said`` names, as it meant it: a day or month
    without a year is its next one from ``said`` ("on January 15th", said in May 2023, is
    15 January 2024), unless it ended within :data:`RECENT_PAST` before ``said``: then it is
    that one, just gone by ("… planning to attend the event on October 15th", said on 4
    November, meant the October just past, not one eleven months on); a month or a year
    ends on its last day; None when it names none."""
    days: list[dt.date] = []
    for period in periods(text):
        for year in ([period.year] if period.year is not None else [said.year - 1, said.year,
                                                                      said.year + 1]):
            try:
                end = dt.date(year, *period.end)
            except ValueError:
                continue
            if period.year is not None or end + RECENT_PAST >= said:
                days.append(end)
                break
    return max(days, default=None)


# the words that tell a time from the day they were said, besides a relative expression and
# a day or month without a year: the present ("lately", "now"; not "every now and then") and
# a span counted from that day ("for the past two weeks", "in about six months", "next
# summer", "has been teaching for over 10 years"; not "eat it for a few days", nor what holds
# whenever it is read, "always")
_COUNT = (r"(?:(?:over|more than|about|around|almost|nearly|roughly|another)\s+)?(?:a|an|one|two"
          r"|three|four|five|six|seven|eight|nine|ten|twelve|a few|a couple of|a couple|few"
          r"|several|many|\d+)?\s*(?:days?|weeks?|months?|years?|decades?|while|ages)\b")
_FROM_SAID = re.compile(
    r"\b(?:currently|lately|recently|nowadays|these days|right now|at the moment|at present"
    r"|for now|for the time being|so far|(?<!every )now(?! and then)"
    rf"|(?:for|over|in|during) the (?:past|last) {_COUNT}|(?:in|within) (?:the (?:next|coming) )?"
    rf"{_COUNT}|(?:has|have)(?: not|n['’]t)? been\b[^.;!?]*?\bfor {_COUNT}"
    r"|(?:last|this|next|coming|past) (?:spring|summer|fall|autumn|winter|season|semester))\b",
    re.IGNORECASE)
# a day that comes back every year: "born on August 12th", "whose birthday is on May 3rd"
_YEARLY = re.compile(r"\b(?:born|(?:birthday|anniversary) is)\s+(?:on|in)\s+"
                     r"(?:the\s+)?[\w’']+(?:\s+(?:of\s+)?[\w’']+)?", re.IGNORECASE)


def yearly(text: str) -> bool:
    """Whether ``text`` names a day that comes back every year (see :data:`_YEARLY`)."""
    return bool(_YEARLY.search(text))


def from_said(text: str, said: dt.date) -> bool:
    """Whether ``text`` names a time only the day it was said fixes: a relative expression
    (:func:`.relative_time.annotate` dates it from ``said``: "last week", "two months ago",
    "on Tuesday" of a plan), a day or month without a year ("on January 15th", "in June"),
    the present ("currently", "lately", "recently", "now") or a span counted from that day
    ("for the past two weeks", "in about six months", "next summer"). Such a line read
    later needs that day beside it."""
    if _FROM_SAID.search(text) or annotate(text, said) != text:
        return True
    return any(p.year is None for p in periods(_YEARLY.sub("", text)))


def _month_end(month: int) -> int:
    return calendar.monthrange(2024, month)[1]  # a leap year: 29 February exists


def periods(query: str) -> list[Period]:
    """The periods ``query`` names (empty when it names none)."""
    found: list[Period] = []
    taken: list[tuple[int, int]] = []
    for pattern in _PATTERNS:
        for match in pattern.finditer(query):
            if any(a < match.end() and match.start() < b for a, b in taken):
                continue
            period = _period(match)
            if period is not None:
                if query[:match.start()].rstrip().lower().endswith("around"):
                    period = replace(period, before=AROUND_BEFORE)
                found.append(period)
                taken.append(match.span())
    return found


def _period(match: re.Match[str]) -> Period | None:
    groups = match.groupdict()
    if groups.get("iso"):
        try:
            date = dt.date.fromisoformat(groups["iso"])
        except ValueError:
            return None
        return Period((date.month, date.day), (date.month, date.day), date.year, DAY_AFTER)
    month_name = (groups.get("month") or "").lower()
    year = int(groups["year"]) if groups.get("year") else None
    if not month_name:
        return Period((1, 1), (12, 31), year, MONTH_AFTER) if year else None
    month = _MONTHS[month_name]
    day = int(groups["day"]) if groups.get("day") else None
    if day is not None:
        if not 1 <= day <= _month_end(month):
            return None
        return Period((month, day), (month, day), year, DAY_AFTER)
    return Period((month, 1), (month, _month_end(month)), year, MONTH_AFTER)


def period_factors(query: str, times: Sequence[str],
                   asked: dt.date | None = None) -> list[float]:
    """A weight per candidate from its time (ISO; '' unknown): 1.0 within a period the query
    names, :data:`weights.OUTSIDE_WEIGHT` outside; all 1.0 when it names none or when no candidate
    (or every candidate) lies within. ``asked``: the day the query is asked, which its
    relative expressions are read from."""
    named = periods(resolve(query, asked) if asked else query)
    if not named:
        return [1.0] * len(times)
    inside = []
    for at in times:
        try:
            when = dt.date.fromisoformat(at[:10]) if at else None
        except ValueError:
            when = None
        inside.append(when is None or any(p.holds(when) for p in named))
    if all(inside) or not any(inside):
        return [1.0] * len(times)
    return [1.0 if within else weights.OUTSIDE_WEIGHT for within in inside]

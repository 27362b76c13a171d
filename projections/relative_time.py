"""Relative time in a turn, resolved against the turn's own time.

"I went to a support group yesterday", said on 8 May 2023, is about 7 May 2023; a memory
or a note kept for months must say so, because "yesterday" read later means another day.
:func:`resolve` rewrites the expressions it knows into absolute ones ("on 7 May 2023"),
from the time the words were said — never the clock — so the same turn always gives the
same text, and a replay the same projection.

Known: yesterday, today, tonight, this morning/afternoon/evening, tomorrow, last/this/next
<weekday>, last/this/next week(end), last/this/next month, last/this/next year, and
"N days/weeks/months/years ago" (words or digits); after "about", "around" and the like
the date is "around" it ("about two years ago": "around 2021"). A bare "on <weekday>" by
its clause's tense (:func:`_bare_weekday`): told in the past ("I won my fourth tournament
on Friday"), the one before the day it was said; of what is to come ("I have a game on
Sunday", "we'll meet on Monday"), the next, in :func:`annotate` only; a habit ("I usually
run on Sunday"), a clause with no tense to read, a plural ("on Fridays"), a list ("on
Monday and Tuesday"), the turn's own weekday, or a weekday with its date ("on Saturday,
March 12th") stays as said, as does anything else.
"""
from __future__ import annotations

import calendar
import datetime as dt
import re

from .tense import SAME_AS_BASE, is_past

_WEEKDAYS = [d.lower() for d in calendar.day_name]
# A month's name as :func:`day_text` writes it ("7 May 2023"), for patterns elsewhere.
MONTH_NAME = "(?:" + "|".join(calendar.month_name[1:]) + ")"
# A weekday's name ("Monday"), for patterns elsewhere.
DAY_NAME = "(?:" + "|".join(calendar.day_name) + ")"
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
            "seven": 7, "eight": 8, "nine": 9, "ten": 10, "a couple of": 2, "a few": 3,
            "couple of": 2, "few": 3}
_NUMBER = r"(?P<n>\d+|a couple of|a few|couple of|an|a|one|two|three|four|five|six|seven" \
          r"|eight|nine|ten)"
# a word that makes the time rough ("about two years ago" is "around 2021", not "about in 2021")
_APPROXIMATE = r"(?:(?P<approx>about|around|roughly|approximately|nearly|almost) )?"
_PATTERN = re.compile(
    rf"\b{_APPROXIMATE}(?:(?P<simple>yesterday|today|tonight|tomorrow|this morning|this afternoon"
    r"|this evening|last night)"
    rf"|(?P<rel>last|this|next|coming|past) (?P<unit>week(?:end)?|month|year|{'|'.join(_WEEKDAYS)})"
    rf"|{_NUMBER} (?P<ago_unit>day|week|month|year)s? ago"
    # a bare weekday, not a plural, a possessive, a habit's part of the day nor one dated
    rf"|(?P<on>on) (?P<bare>{'|'.join(_WEEKDAYS)})(?![\w'’-])(?!,? (?:the )?\d|,? (?i:"
    + "|".join(calendar.month_name[1:]) + r")\b| (?:morning|afternoon|evening|night)s\b"
    + rf"|,? (?:and |or |& )?(?:{'|'.join(_WEEKDAYS)})\b)"
    r"(?: (?P<part>morning|afternoon|evening|night)(?![\w'’-]))?)\b", re.IGNORECASE)


def day_text(day: dt.date) -> str:
    """``7 May 2023``."""
    return f"{day.day} {calendar.month_name[day.month]} {day.year}"


# the unit a question counts time in: "How many days ago did I …", "How many weeks …"
_UNIT_ASKED = re.compile(r"\bhow many (day|week|month|year)s?\b", re.IGNORECASE)


def unit_asked(question: str) -> str | None:
    """The unit ``question`` asks a count of time in ("How many days ago did I attend a
    networking event?": "day"), or None."""
    found = _UNIT_ASKED.search(question)
    return found.group(1).lower() if found else None


def ago(day: dt.date, today: dt.date, unit: str | None = None) -> str:
    """How long before ``today`` ``day`` was, as a person counts it ("yesterday", "8 days
    ago", "3 weeks ago", "5 months ago", "2 years ago"), or in the ``unit`` a question asks
    (:func:`unit_asked`: "26 days ago", not "3 weeks ago", for "How many days ago …?");
    '' for a day not before it. Shown beside an item's date so a small model reading "how
    long ago?" or "last week" need not subtract dates."""
    days = (today - day).days
    if days <= 0:
        return "today" if days == 0 else ""
    if days == 1:
        return "yesterday"
    months = (today.year - day.year) * 12 + today.month - day.month - (today.day < day.day)
    counts = {"day": days, "week": days // 7, "month": months, "year": months // 12}
    if unit is None or not counts.get(unit):    # none asked, or under one: as a person counts
        unit = "day" if days < 14 else "week" if days < 60 else \
            "month" if months < 24 else "year"
    count = counts[unit]
    return f"{count} {unit}{'' if count == 1 else 's'} ago"


def _month_text(year: int, month: int) -> str:
    return f"{calendar.month_name[month]} {year}"


def _shift_month(day: dt.date, months: int) -> tuple[int, int]:
    index = day.year * 12 + day.month - 1 + months
    return index // 12, index % 12 + 1


def _weekday(day: dt.date, name: str, rel: str) -> dt.date:
    target = _WEEKDAYS.index(name)
    if rel == "last":
        back = (day.weekday() - target) % 7 or 7
        return day - dt.timedelta(days=back)
    ahead = (target - day.weekday()) % 7
    if rel == "next":
        ahead = ahead or 7
    return day + dt.timedelta(days=ahead)


def _week_start(day: dt.date) -> dt.date:
    return day - dt.timedelta(days=day.weekday())


# a clause's habit, future and subject pronouns, for a bare weekday's tense
_HABIT = re.compile(r"\b(?:usually|always|every|often|normally|typically|generally|tend to"
                    r"|sometimes|each)\b", re.IGNORECASE)
_TO_COME = re.compile(r"(?:\b(?:will|shall|won['’]t|(?<!was )(?<!were )(?:going to|gonna)"
                      r"|plan(?:s|ning)? to|planning|hop(?:e|es|ing) to|can['’]t wait"
                      r"|looking forward|upcoming|see you|(?:am|is|are|be) \w+ing"
                      r"|(?:have|has) (?:a|an|my|our|the|his|her|their|some))"
                      r"|['’](?:ll|(?:m|re|s) \w+ing))\b", re.IGNORECASE)
_SUBJECTS = frozenset("i we you he she they".split())
_CLAUSE = re.compile(r"[.!?;]\s")
_WEEK = re.compile(r"\b(?P<rel>last|this|next) week\b", re.IGNORECASE)


def _bare_weekday(match: re.Match[str], day: dt.date) -> tuple[dt.date, bool] | None:
    """The day an "on <weekday>" said on ``day`` means, and whether it is past, read from its
    clause (the sentence it is in, up to a semicolon): in the week it names ("last week … on
    Wednesday"), else the one before ``day`` when told in the past, the next of what is to
    come; None for a habit or a clause without either (left as said)."""
    text = match.string
    starts = [m.end() for m in _CLAUSE.finditer(text, 0, match.start())]
    start = starts[-1] if starts else 0
    end_at = _CLAUSE.search(text, match.end())
    clause = text[start:end_at.start() + 1 if end_at else len(text)]
    name = match.group("bare").lower()
    if _HABIT.search(clause):
        return None
    week = _WEEK.search(clause)
    if week:
        step = {"last": -1, "this": 0, "next": 1}[week.group("rel").lower()]
        meant = _week_start(day) + dt.timedelta(weeks=step, days=_WEEKDAYS.index(name))
        return meant, meant < day
    if _WEEKDAYS.index(name) == day.weekday():
        return None     # "I made it on Sunday", said on a Sunday: today, or a week ago
    if _TO_COME.search(clause):
        return _weekday(day, name, "next"), False
    words = re.findall(r"[a-z']+", clause.casefold())
    if any((is_past(word, before) and (word not in SAME_AS_BASE or before in _SUBJECTS))
           or (word.endswith("ed") and before in _SUBJECTS)
           for before, word in zip(["", *words], words, strict=False)):
        return _weekday(day, name, "last"), True
    return None


def _phrase(match: re.Match[str], day: dt.date,  # noqa: C901 - a case a form
            ahead: bool = True) -> str | None:
    """The absolute form of a relative time expression said on ``day``, or None when it
    stays as said: a bare weekday whose tense does not tell which, or (not ``ahead``) one
    still to come."""
    if match.group("bare"):
        found = _bare_weekday(match, day)
        if found is None or not (ahead or found[1]):
            return None
        date = day_text(found[0])
        part = match.group("part")           # "on Friday night": "on the night of …"
        return f"{match.group('on')} the {part.lower()} of {date}" if part \
            else f"{match.group('on')} {date}"
    simple = (match.group("simple") or "").lower()
    if simple:
        offset = {"yesterday": -1, "last night": -1, "tomorrow": 1}.get(simple, 0)
        return f"on {day_text(day + dt.timedelta(days=offset))}"
    if match.group("ago_unit"):
        n = _NUMBERS.get(match.group("n").lower()) or int(match.group("n"))
        unit = match.group("ago_unit").lower()
        if unit in ("day", "week"):
            days = n if unit == "day" else 7 * n
            return f"around {day_text(day - dt.timedelta(days=days))}"
        if unit == "month":
            return "in " + _month_text(*_shift_month(day, -n))
        return f"in {day.year - n}"
    rel = match.group("rel").lower()
    rel = "next" if rel == "coming" else "last" if rel == "past" else rel
    unit = match.group("unit").lower()
    step = {"last": -1, "this": 0, "next": 1}[rel]
    if unit in _WEEKDAYS:
        return f"on {day_text(_weekday(day, unit, rel))}"
    if unit == "week":
        return f"in the week of {day_text(_week_start(day) + dt.timedelta(weeks=step))}"
    if unit == "weekend":
        saturday = _week_start(day) + dt.timedelta(days=5, weeks=step)   # weeks from Monday
        return f"on the weekend of {day_text(saturday)}"
    if unit == "month":
        return "in " + _month_text(*_shift_month(day, step))
    return f"in {day.year + step}"


def resolve(text: str, at: dt.datetime | dt.date) -> str:
    """``text`` with its relative time expressions made absolute from ``at``; a bare weekday
    only when it is past ("I won on Friday"): a plan dated to its day reads as an event to
    mining (:func:`workers.mining.statements.is_event`), and MEMORY.md would lose it."""
    day = at.date() if isinstance(at, dt.datetime) else at

    def replace(match: re.Match[str]) -> str:
        phrase = _phrase(match, day, ahead=False)
        if phrase is None:
            return match.group()
        said = match.string            # the part outside code spans the match is in
        before = said[:match.start()].rstrip().rsplit(" ", 1)[-1].lower()
        if match.group("approx"):       # "about two years ago": "around 2021"
            phrase = "around " + phrase.split(" ", 1)[1]
        elif before in _PREPOSITIONS or _POSSESSIVE.match(said, match.end()) or (
                _SUBJECT_OF.match(said, match.end()) and _opens(said, match.start())):
            phrase = phrase.split(" ", 1)[1]  # "since yesterday": "since 7 May 2023";
            # "last week's": "the week of … 2023's"; "last week was": "the week of … was"
        if match.group()[:1].isupper():    # a sentence's first word: "Last week was …"
            phrase = phrase[:1].upper() + phrase[1:]
        return phrase

    # code spans (`tidewatch today`) are commands, not time
    return "`".join(part if i % 2 else _PATTERN.sub(replace, part)
                    for i, part in enumerate(text.split("`")))


def annotate(text: str, at: dt.datetime | dt.date) -> str:
    """``text`` as said, each relative time expression followed by the date it means in
    brackets ("I went yesterday [7 May 2023]"): what a model reads beside the words, so it
    need not do the arithmetic from the item's date itself."""
    day = at.date() if isinstance(at, dt.datetime) else at

    def bracketed(part: str) -> str:   # after a possessive: "last week's [the week of …]"
        out, end = [], 0
        for match in _PATTERN.finditer(part):
            phrase = _phrase(match, day)
            if phrase is None:
                continue
            said = _POSSESSIVE.match(part, match.end())
            stop = said.end() if said else match.end()
            out += [part[end:match.start()], part[match.start():stop],
                    f" [{phrase.split(' ', 1)[1]}]"]
            end = stop
        return "".join(out) + part[end:]

    return "`".join(part if i % 2 else bracketed(part) for i, part in enumerate(text.split("`")))


_POSSESSIVE = re.compile(r"['’]s\b")
# the expression is the sentence's subject when it opens it: "Last week was hectic" (not
# "Rachel's wedding last weekend was beautiful")
_SUBJECT_OF = re.compile(r"\s+(?:was|is|were|has been|had been|will be)\b")
_PREPOSITIONS = frozenset({"since", "until", "till", "from", "by", "before", "after", "on",
                           "in", "of", "for", "around", "during", "through"})


def _opens(text: str, at: int) -> bool:
    """Whether ``at`` is where a sentence of ``text`` begins."""
    before = text[:at].rstrip()
    return not before or before[-1] in ".!?"

"""Relative time made absolute from when the words were said, never from the clock: the
same turn reads the same on any day it is read (frozen far from it here)."""
from __future__ import annotations

import datetime as dt

import pytest
from freezegun import freeze_time

from projections.relative_time import ago, annotate, resolve, unit_asked

SUNDAY = dt.datetime(2023, 12, 31, 22, tzinfo=dt.UTC)


@freeze_time("2031-07-04 12:00:00")
@pytest.mark.parametrize(("said", "at", "expected"), [
    ("I went to a support group yesterday.", dt.date(2023, 5, 8),
     "I went to a support group yesterday [7 May 2023]."),
    # across the end of a month (a leap year) and of a year
    ("yesterday", dt.date(2024, 3, 1), "yesterday [29 February 2024]"),
    ("tomorrow", SUNDAY, "tomorrow [1 January 2024]"),
    ("We start next month", SUNDAY, "We start next month [January 2024]"),
    ("last Saturday", dt.date(2024, 1, 2), "last Saturday [30 December 2023]"),
    ("two weeks ago", dt.date(2024, 1, 3), "two weeks ago [20 December 2023]"),
    ("three months ago", dt.date(2024, 2, 10), "three months ago [November 2023]"),
    ("last year", dt.date(2024, 1, 1), "last year [2023]"),
    ("next week", SUNDAY, "next week [the week of 1 January 2024]"),
    ("run `diarist today`", dt.date(2024, 1, 1), "run `diarist today`"),   # code is no time
    ("the weekly meeting", SUNDAY, "the weekly meeting"),                 # nothing relative
    ("Last week's prompt was fun", SUNDAY,                       # the date after a possessive
     "Last week's [the week of 18 December 2023] prompt was fun"),
])
def test_annotate_keeps_the_words_and_adds_the_date(said: str, at: dt.date,
                                                    expected: str) -> None:
    assert annotate(said, at) == expected


@freeze_time("2031-07-04 12:00:00")
def test_resolution_reads_the_turn_time_not_the_clock() -> None:
    assert resolve("I moved last month", SUNDAY) == "I moved in November 2023"
    assert dt.date.today() == dt.date(2031, 7, 4)   # the clock is elsewhere


@pytest.mark.parametrize(("day", "today", "expected"), [
    (dt.date(2026, 11, 28), dt.date(2026, 11, 28), "today"),
    (dt.date(2026, 11, 27), dt.date(2026, 11, 28), "yesterday"),
    (dt.date(2025, 12, 31), dt.date(2026, 1, 2), "2 days ago"),        # across a year's end
    (dt.date(2026, 11, 20), dt.date(2026, 11, 28), "8 days ago"),
    (dt.date(2026, 11, 13), dt.date(2026, 11, 28), "2 weeks ago"),
    (dt.date(2026, 9, 30), dt.date(2026, 11, 28), "8 weeks ago"),
    (dt.date(2026, 8, 31), dt.date(2026, 11, 28), "2 months ago"),     # not yet three
    (dt.date(2024, 2, 29), dt.date(2024, 5, 29), "3 months ago"),      # a leap day
    (dt.date(2025, 1, 15), dt.date(2026, 11, 28), "22 months ago"),
    (dt.date(2024, 11, 28), dt.date(2026, 11, 28), "2 years ago"),
    (dt.date(2026, 11, 29), dt.date(2026, 11, 28), ""),                # not before today
])
def test_how_long_ago_a_day_was(day: dt.date, today: dt.date, expected: str) -> None:
    assert ago(day, today) == expected


@pytest.mark.parametrize(("question", "unit", "expected"), [
    ("How many days ago did I attend a networking event?", "day", "26 days ago"),
    ("How many weeks ago did I start my Spanish classes?", "week", "3 weeks ago"),
    ("how many months ago did I buy the lens?", "month", "3 weeks ago"),   # under a month
    ("When did I attend a networking event?", None, "3 weeks ago"),
])
def test_a_question_s_unit_of_time_gives_the_age_in_it(question: str, unit: str | None,
                                                       expected: str) -> None:
    """"How many days ago …?" read beside "3 weeks ago" leaves a small model to multiply;
    under one of the unit asked, the age is told as a person counts it."""
    assert unit_asked(question) == unit
    assert ago(dt.date(2023, 4, 3), dt.date(2023, 4, 29), unit) == expected
    assert ago(dt.date(2023, 1, 3), dt.date(2023, 4, 29), "day") == "116 days ago"
    assert ago(dt.date(2023, 1, 3), dt.date(2023, 4, 29), "month") == "3 months ago"
    assert ago(dt.date(2023, 7, 31), dt.date(2023, 9, 30)) == "1 month ago"   # not "1 months"


@freeze_time("2031-07-04 12:00:00")
@pytest.mark.parametrize(("said", "at", "expected"), [
    # told in the past: the one before the day it was said (LoCoMo's "won … on Friday",
    # said on a Sunday: "the Friday before 10 July 2022"), across a year's end too
    ("I won my fourth video game tournament on Friday!", dt.date(2022, 7, 10),
     "I won my fourth video game tournament on Friday [8 July 2022]!"),
    ("On Friday, I got great news.", dt.date(2024, 1, 2), "On Friday [29 December 2023], I got "
     "great news."),
    ("Say hello to Rocket, the parrot we adopted on Saturday.", dt.date(2024, 3, 1),
     "Say hello to Rocket, the parrot we adopted on Saturday [24 February 2024]."),
    ("We went out on Friday night.", dt.date(2024, 1, 7),
     "We went out on Friday night [the night of 5 January 2024]."),
    # of what is to come: the next, across a month's end
    ("I have a game on Sunday.", dt.date(2024, 1, 31), "I have a game on Sunday [4 February "
     "2024]."),
    ("We'll meet on Monday.", SUNDAY, "We'll meet on Monday [1 January 2024]."),
    ("I was going to the park on Friday, but it rained.", dt.date(2024, 1, 7),
     "I was going to the park on Friday [5 January 2024], but it rained."),
    # in the week the clause names
    ("Last week was hectic, with meetings on Wednesday.", dt.date(2023, 5, 27),
     "Last week [the week of 15 May 2023] was hectic, with meetings on Wednesday [17 May "
     "2023]."),
    # as said: a habit, a plural, a dated weekday, a possessive, no tense to read
    ("I usually run on Sunday.", SUNDAY, "I usually run on Sunday."),
    ("I run on Fridays.", SUNDAY, "I run on Fridays."),
    ("I assembled my bookshelf on Saturday, March 12th.", SUNDAY,
     "I assembled my bookshelf on Saturday, March 12th."),
    ("I went to Friday's party.", SUNDAY, "I went to Friday's party."),
    ("Can you help me set a reminder for my class on Monday?", SUNDAY,
     "Can you help me set a reminder for my class on Monday?"),
    ("Breakfast meeting on Wednesday.", SUNDAY, "Breakfast meeting on Wednesday."),
    ("I had leftovers on Monday and Tuesday.", SUNDAY, "I had leftovers on Monday and Tuesday."),
    ("I made a fruit salad on Sunday.", SUNDAY, "I made a fruit salad on Sunday."),  # today?
])
def test_a_bare_weekday_is_dated_by_its_tense(said: str, at: dt.date, expected: str) -> None:
    assert annotate(said, at) == expected


def test_a_bare_weekday_is_resolved_in_place_only_when_past() -> None:
    """Mining's statements read the date in place of the words, "on" as said — of what
    happened: a plan dated to its day would read as an event, and MEMORY.md's Plans would
    lose it."""
    assert resolve("On Friday, I got great news.", dt.date(2024, 1, 7)) == \
        "On 5 January 2024, I got great news."
    assert resolve("We went out on Friday night.", dt.date(2024, 1, 7)) == \
        "We went out on the night of 5 January 2024."
    assert resolve("I was busy last week, with meetings on Wednesday.", dt.date(2023, 5, 27)) \
        == "I was busy in the week of 15 May 2023, with meetings on 17 May 2023."
    assert resolve("I'm looking forward to the class on Tuesday.", dt.date(2023, 5, 27)) == \
        "I'm looking forward to the class on Tuesday."
    assert resolve("I run on Fridays.", dt.date(2024, 1, 7)) == "I run on Fridays."

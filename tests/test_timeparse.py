"""refind.query.timeparse: time cues in questions → inclusive UTC day ranges (epoch ms)."""

from __future__ import annotations

import dataclasses
from datetime import UTC, date, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from refind.evidence import format_date
from refind.query.timeparse import (
    TimeRange,
    find_time_expressions,
    parse_time_range,
    strip_time_expressions,
)

NOW = "2023-05-30T23:40:00Z"  # a Tuesday
NOW_MS = 1685490000000
DAY_MS = 86_400_000


def start_ms(d: date) -> int:
    return int(datetime(d.year, d.month, d.day, tzinfo=UTC).timestamp() * 1000)


def end_ms(d: date) -> int:
    return start_ms(d) + DAY_MS - 1


def D(y: int, m: int, d: int) -> date:  # noqa: N802 - reads like a date literal in the tables
    return date(y, m, d)


def check(question: str, first: date, last: date, granularity: str, now: object = NOW) -> TimeRange:
    r = parse_time_range(question, now)  # type: ignore[arg-type]
    assert r is not None, f"no range for {question!r}"
    got = (format_date(r.start, "day"), format_date(r.end, "day"), r.granularity)
    want = (format_date(start_ms(first), "day"), format_date(start_ms(last), "day"), granularity)
    assert got == want, question
    assert (r.start, r.end) == (start_ms(first), end_ms(last)), question
    return r


def test_now_constant_is_what_the_tables_assume() -> None:
    assert datetime.fromtimestamp(NOW_MS / 1000, UTC) == datetime(2023, 5, 30, 23, 40, tzinfo=UTC)
    assert date(2023, 5, 30).weekday() == 1  # Tuesday


# ----------------------------------------------------------------------------------------- absolute dates

ABSOLUTE = [
    ("What did I do on 8 May 2023?", D(2023, 5, 8), D(2023, 5, 8), "day"),
    ("8th May 2023", D(2023, 5, 8), D(2023, 5, 8), "day"),
    ("the 8th of May, 2023", D(2023, 5, 8), D(2023, 5, 8), "day"),
    ("May 8, 2023", D(2023, 5, 8), D(2023, 5, 8), "day"),
    ("May 8th 2023", D(2023, 5, 8), D(2023, 5, 8), "day"),
    ("Sept. 3, 2021", D(2021, 9, 3), D(2021, 9, 3), "day"),
    ("on 3 Dec 2022", D(2022, 12, 3), D(2022, 12, 3), "day"),
    ("2023/05/30", D(2023, 5, 30), D(2023, 5, 30), "day"),
    ("2023-05-30", D(2023, 5, 30), D(2023, 5, 30), "day"),
    ("at 2023-05-01T10:00:00Z", D(2023, 5, 1), D(2023, 5, 1), "day"),
    ("05/30/2023", D(2023, 5, 30), D(2023, 5, 30), "day"),
    ("30/05/2023", D(2023, 5, 30), D(2023, 5, 30), "day"),  # day > 12: must be day-first
    ("30.05.2023", D(2023, 5, 30), D(2023, 5, 30), "day"),
    ("May 2023", D(2023, 5, 1), D(2023, 5, 31), "month"),
    ("in February, 2020", D(2020, 2, 1), D(2020, 2, 29), "month"),
    ("in may of 2021", D(2021, 5, 1), D(2021, 5, 31), "month"),
    ("2022-11", D(2022, 11, 1), D(2022, 11, 30), "month"),
    ("April 8th", D(2023, 4, 8), D(2023, 4, 8), "day"),
    ("on the 8th of April", D(2023, 4, 8), D(2023, 4, 8), "day"),
    ("What happened on December 25?", D(2022, 12, 25), D(2022, 12, 25), "day"),  # not after now: last year's
    ("on May 31", D(2022, 5, 31), D(2022, 5, 31), "day"),  # tomorrow's date: the previous year's
    ("on May 30", D(2023, 5, 30), D(2023, 5, 30), "day"),
    ("February 29th", D(2020, 2, 29), D(2020, 2, 29), "day"),  # the most recent leap day
    ("in 2022", D(2022, 1, 1), D(2022, 12, 31), "year"),
    ("during 1999", D(1999, 1, 1), D(1999, 12, 31), "year"),
    ("the year 2021", D(2021, 1, 1), D(2021, 12, 31), "year"),
    ("in the summer of 2022", D(2022, 6, 1), D(2022, 8, 31), "range"),
    ("summer 2021", D(2021, 6, 1), D(2021, 8, 31), "range"),
    ("in the spring of 2023", D(2023, 3, 1), D(2023, 5, 31), "range"),
    ("in the fall of 2020", D(2020, 9, 1), D(2020, 11, 30), "range"),
    ("winter 2022", D(2021, 12, 1), D(2022, 2, 28), "range"),
    ("Christmas 2022", D(2022, 12, 25), D(2022, 12, 25), "day"),
    ("on Christmas Eve 2021", D(2021, 12, 24), D(2021, 12, 24), "day"),
    ("Easter 2023", D(2023, 4, 9), D(2023, 4, 9), "day"),
    ("Thanksgiving 2022", D(2022, 11, 24), D(2022, 11, 24), "day"),
    ("Black Friday 2022", D(2022, 11, 25), D(2022, 11, 25), "day"),
    ("Cyber Monday 2021", D(2021, 11, 29), D(2021, 11, 29), "day"),
    ("on Good Friday 2023", D(2023, 4, 7), D(2023, 4, 7), "day"),
    ("in the 90s", D(1990, 1, 1), D(1999, 12, 31), "range"),
    ("the 2010s", D(2010, 1, 1), D(2019, 12, 31), "range"),
]


@pytest.mark.parametrize(("question", "first", "last", "granularity"), ABSOLUTE)
def test_absolute(question: str, first: date, last: date, granularity: str) -> None:
    check(question, first, last, granularity)


# ----------------------------------------------------------------------------------------- relative dates

RELATIVE = [
    ("yesterday", D(2023, 5, 29), D(2023, 5, 29), "day"),
    ("What did I eat last night?", D(2023, 5, 29), D(2023, 5, 29), "day"),
    ("today", D(2023, 5, 30), D(2023, 5, 30), "day"),
    ("earlier today", D(2023, 5, 30), D(2023, 5, 30), "day"),
    ("this morning", D(2023, 5, 30), D(2023, 5, 30), "day"),
    ("the day before yesterday", D(2023, 5, 28), D(2023, 5, 28), "day"),
    ("3 days ago", D(2023, 5, 27), D(2023, 5, 27), "day"),
    ("a day ago", D(2023, 5, 29), D(2023, 5, 29), "day"),
    ("five hours ago", D(2023, 5, 30), D(2023, 5, 30), "day"),
    ("a few days ago", D(2023, 5, 25), D(2023, 5, 28), "range"),
    ("several days ago", D(2023, 5, 23), D(2023, 5, 27), "range"),
    ("last week", D(2023, 5, 22), D(2023, 5, 28), "week"),
    ("the previous week", D(2023, 5, 22), D(2023, 5, 28), "week"),
    ("this week", D(2023, 5, 29), D(2023, 6, 4), "week"),
    ("a week ago", D(2023, 5, 22), D(2023, 5, 28), "week"),
    ("two weeks ago", D(2023, 5, 15), D(2023, 5, 21), "week"),
    ("2 weeks ago", D(2023, 5, 15), D(2023, 5, 21), "week"),
    ("the week before last", D(2023, 5, 15), D(2023, 5, 21), "week"),
    ("a few weeks ago", D(2023, 4, 24), D(2023, 5, 21), "range"),
    ("last Saturday", D(2023, 5, 27), D(2023, 5, 27), "day"),
    ("on Saturday", D(2023, 5, 27), D(2023, 5, 27), "day"),
    ("What did I do Sunday?", D(2023, 5, 28), D(2023, 5, 28), "day"),
    ("on Tuesday", D(2023, 5, 30), D(2023, 5, 30), "day"),  # today is a Tuesday
    ("last Tuesday", D(2023, 5, 23), D(2023, 5, 23), "day"),  # "last": strictly before today
    ("last Monday", D(2023, 5, 29), D(2023, 5, 29), "day"),
    ("this past Friday", D(2023, 5, 26), D(2023, 5, 26), "day"),
    ("this Saturday", D(2023, 6, 3), D(2023, 6, 3), "day"),  # the current Monday-Sunday week
    ("the Saturday before last", D(2023, 5, 20), D(2023, 5, 20), "day"),
    ("on the Saturday two weeks ago", D(2023, 5, 20), D(2023, 5, 20), "day"),
    ("last week on Thursday", D(2023, 5, 25), D(2023, 5, 25), "day"),
    ("Friday of last week", D(2023, 5, 26), D(2023, 5, 26), "day"),
    ("the Wednesday two months ago", D(2023, 3, 1), D(2023, 3, 31), "month"),
    ("Saturday, May 20, 2023", D(2023, 5, 20), D(2023, 5, 20), "day"),
    ("last weekend", D(2023, 5, 27), D(2023, 5, 28), "range"),
    ("over the weekend", D(2023, 5, 27), D(2023, 5, 28), "range"),
    ("this weekend", D(2023, 6, 3), D(2023, 6, 4), "range"),
    ("on Sunday last weekend", D(2023, 5, 28), D(2023, 5, 28), "day"),
    ("past month", D(2023, 4, 30), D(2023, 5, 30), "range"),
    ("in the past month", D(2023, 4, 30), D(2023, 5, 30), "range"),
    ("last 30 days", D(2023, 4, 30), D(2023, 5, 30), "range"),
    ("in the past week", D(2023, 5, 23), D(2023, 5, 30), "range"),
    ("this past week", D(2023, 5, 23), D(2023, 5, 30), "range"),
    ("over the last week", D(2023, 5, 23), D(2023, 5, 30), "range"),
    ("the past few days", D(2023, 5, 25), D(2023, 5, 30), "range"),
    ("over the last couple of weeks", D(2023, 5, 16), D(2023, 5, 30), "range"),
    ("in the past two months", D(2023, 3, 30), D(2023, 5, 30), "range"),
    ("the past year", D(2022, 5, 30), D(2023, 5, 30), "range"),
    ("last month", D(2023, 4, 1), D(2023, 4, 30), "month"),
    ("this month", D(2023, 5, 1), D(2023, 5, 31), "month"),
    ("the month before last", D(2023, 3, 1), D(2023, 3, 31), "month"),
    ("3 months ago", D(2023, 2, 1), D(2023, 2, 28), "month"),
    ("six months ago", D(2022, 11, 1), D(2022, 11, 30), "month"),
    ("a month ago", D(2023, 4, 1), D(2023, 4, 30), "month"),
    ("earlier this month", D(2023, 5, 1), D(2023, 5, 30), "range"),
    ("earlier this week", D(2023, 5, 29), D(2023, 5, 30), "range"),
    ("earlier this year", D(2023, 1, 1), D(2023, 5, 30), "range"),
    ("so far this year", D(2023, 1, 1), D(2023, 5, 30), "range"),
    ("since the start of the year", D(2023, 1, 1), D(2023, 5, 30), "range"),
    ("since the beginning of this month", D(2023, 5, 1), D(2023, 5, 30), "range"),
    ("last year", D(2022, 1, 1), D(2022, 12, 31), "year"),
    ("this year", D(2023, 1, 1), D(2023, 12, 31), "year"),
    ("two years ago", D(2021, 1, 1), D(2021, 12, 31), "year"),
    ("recently", D(2023, 5, 16), D(2023, 5, 30), "range"),
    ("lately", D(2023, 5, 16), D(2023, 5, 30), "range"),
    ("the other day", D(2023, 5, 23), D(2023, 5, 29), "range"),
    ("last summer", D(2022, 6, 1), D(2022, 8, 31), "range"),
    ("last winter", D(2022, 12, 1), D(2023, 2, 28), "range"),
    ("this spring", D(2023, 3, 1), D(2023, 5, 31), "range"),
    ("in the summer", D(2022, 6, 1), D(2022, 8, 31), "range"),  # the latest begun: 2023's has not
    ("in May", D(2023, 5, 1), D(2023, 5, 31), "month"),
    ("during May", D(2023, 5, 1), D(2023, 5, 31), "month"),
    ("in June", D(2022, 6, 1), D(2022, 6, 30), "month"),
    ("last May", D(2022, 5, 1), D(2022, 5, 31), "month"),  # the current May is not over
    ("last April", D(2023, 4, 1), D(2023, 4, 30), "month"),
    ("this May", D(2023, 5, 1), D(2023, 5, 31), "month"),
    ("in the month of March", D(2023, 3, 1), D(2023, 3, 31), "month"),
    ("last Christmas", D(2022, 12, 25), D(2022, 12, 25), "day"),
    ("on Valentine's Day", D(2023, 2, 14), D(2023, 2, 14), "day"),
    ("on Easter Monday", D(2023, 4, 10), D(2023, 4, 10), "day"),
    ("at Halloween", D(2022, 10, 31), D(2022, 10, 31), "day"),
    ("early May", D(2023, 5, 1), D(2023, 5, 10), "range"),
    ("mid-April", D(2023, 4, 11), D(2023, 4, 20), "range"),
    ("at the end of April", D(2023, 4, 21), D(2023, 4, 30), "range"),
    ("late 2022", D(2022, 9, 1), D(2022, 12, 31), "range"),
    ("the beginning of last year", D(2022, 1, 1), D(2022, 4, 30), "range"),
    ("the last week of April", D(2023, 4, 24), D(2023, 4, 30), "range"),
    ("the first week of last month", D(2023, 4, 1), D(2023, 4, 7), "range"),
    ("the week of May 8", D(2023, 5, 8), D(2023, 5, 14), "week"),
    ("the week of 10 May 2023", D(2023, 5, 8), D(2023, 5, 14), "week"),
]


@pytest.mark.parametrize(("question", "first", "last", "granularity"), RELATIVE)
def test_relative(question: str, first: date, last: date, granularity: str) -> None:
    check(question, first, last, granularity)


# ------------------------------------------------------------------------------------------------- ranges

OPEN_START = D(1970, 1, 1)

RANGES = [
    ("between March and May", D(2023, 3, 1), D(2023, 5, 31), "range"),
    ("between June and August", D(2022, 6, 1), D(2022, 8, 31), "range"),  # June 2023 has not begun
    ("between December and February", D(2022, 12, 1), D(2023, 2, 28), "range"),
    ("from March to April 2022", D(2022, 3, 1), D(2022, 4, 30), "range"),
    ("from November to February 2023", D(2022, 11, 1), D(2023, 2, 28), "range"),
    ("between 2019 and 2021", D(2019, 1, 1), D(2021, 12, 31), "range"),
    ("from 3 May to 10 May 2023", D(2023, 5, 3), D(2023, 5, 10), "range"),
    ("between May 3 and May 10", D(2023, 5, 3), D(2023, 5, 10), "range"),
    ("from 3 to 10 May 2023", D(2023, 5, 3), D(2023, 5, 10), "range"),
    ("3-10 May 2022", D(2022, 5, 3), D(2022, 5, 10), "range"),
    ("May 3-10, 2021", D(2021, 5, 3), D(2021, 5, 10), "range"),
    ("from April 3 to 10", D(2023, 4, 3), D(2023, 4, 10), "range"),
    ("May 2022 - July 2022", D(2022, 5, 1), D(2022, 7, 31), "range"),
    ("in 2020-2022", D(2020, 1, 1), D(2022, 12, 31), "range"),
    ("from last Monday to yesterday", D(2023, 5, 29), D(2023, 5, 29), "range"),
    ("between two weeks ago and last week", D(2023, 5, 15), D(2023, 5, 28), "range"),
    ("since April", D(2023, 4, 1), D(2023, 5, 30), "range"),
    ("since last week", D(2023, 5, 22), D(2023, 5, 30), "range"),
    ("since early May", D(2023, 5, 1), D(2023, 5, 30), "range"),
    ("since the summer of 2022", D(2022, 6, 1), D(2023, 5, 30), "range"),
    ("after 2022", D(2023, 1, 1), D(2023, 5, 30), "range"),
    ("after May 20, 2023", D(2023, 5, 21), D(2023, 5, 30), "range"),
    ("after 2024", D(2025, 1, 1), D(2199, 12, 31), "range"),  # after now: open end
    ("before June 2023", OPEN_START, D(2023, 5, 31), "range"),
    ("prior to 2020", OPEN_START, D(2019, 12, 31), "range"),
    ("until March 2021", OPEN_START, D(2021, 3, 31), "range"),
    ("up to last week", OPEN_START, D(2023, 5, 28), "range"),
    ("before 1965", D(1900, 1, 1), D(1964, 12, 31), "range"),
]


@pytest.mark.parametrize(("question", "first", "last", "granularity"), RANGES)
def test_ranges(question: str, first: date, last: date, granularity: str) -> None:
    check(question, first, last, granularity)


# ------------------------------------------------------------------------------------------- number words

NUMBER_WORDS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
    "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "a couple": 2, "couple of": 2, "a": 1,
}  # fmt: skip


@pytest.mark.parametrize(("word", "n"), sorted(NUMBER_WORDS.items()))
def test_number_words_days_ago(word: str, n: int) -> None:
    d = date(2023, 5, 30) - timedelta(days=n)
    check(f"What did I cook {word} {'day' if n == 1 else 'days'} ago?", d, d, "day")


def test_an_hour_ago() -> None:
    check("an hour ago", D(2023, 5, 30), D(2023, 5, 30), "day")
    check("an hour ago", D(2023, 5, 29), D(2023, 5, 29), "day", now="2023-05-30T00:30:00Z")


@pytest.mark.parametrize(
    ("word", "n"), [(w, n) for w, n in NUMBER_WORDS.items() if n > 1] + [("7", 7), ("12", 12)]
)
def test_number_words_and_digits_weeks_and_months(word: str, n: int) -> None:
    monday = date(2023, 5, 29) - timedelta(weeks=n)
    check(f"{word} weeks ago", monday, monday + timedelta(days=6), "week")
    month_start = date(2023, 5, 1)
    for _ in range(n):
        month_start = (month_start - timedelta(days=1)).replace(day=1)
    next_month = (month_start + timedelta(days=32)).replace(day=1)
    check(f"{word.upper()} MONTHS AGO", month_start, next_month - timedelta(days=1), "month")


def test_digits_and_words_agree() -> None:
    for n, word in enumerate(["one", "two", "three", "four", "five", "six", "seven", "eight", "nine"], 1):
        for unit in ("days", "weeks", "months", "years"):
            a = parse_time_range(f"{n} {unit} ago", NOW)
            b = parse_time_range(f"{word} {unit} ago", NOW)
            assert a is not None and b is not None
            assert (a.start, a.end, a.granularity) == (b.start, b.end, b.granularity)


# -------------------------------------------------------------------------------------------- no time cue

NO_CUE = [
    "What is my cat's name?",
    "How many times did I go hiking?",
    "What did I say about May?",
    "May I ask what my dog's name is?",
    "What may 8 people do at the party?",
    "these 3 may help",
    "Did May 's sister call?",
    "I have 3 cats",
    "I have 2022 photos on my phone",
    "What did I buy for my 2019 Honda?",
    "Meet me at 10:30",
    "Who came first?",
    "What was the second book I read?",
    "I live on the 2nd floor",
    "What was the last book I read?",
    "What did I do on the last day of my trip?",
    "Summer is my favorite season",
    "Did I fall on the ice?",
    "What did I march for?",
    "I spent 10 days in Paris",
    "How many days did the trip last?",
    "How many weeks ago did I start running?",
    "What do I do every Saturday?",
    "How many days ago did I attend the Maundy Thursday service?",  # a feast name, not "Thursday"
    "Which Black Friday deals did I like?",
    "What's my favorite Christmas movie?",
    "What are my new year's resolutions?",
    "What are my plans for next Saturday?",
    "What am I doing tomorrow?",
    "What's on next week?",
    "What is my most recent purchase?",
    "Which happened first, the concert or the wedding?",
    "version 1.2.3 of the app",
    "",
    "   ",
]


@pytest.mark.parametrize("question", NO_CUE)
def test_no_cue(question: str) -> None:
    assert parse_time_range(question, NOW) is None
    assert find_time_expressions(question, NOW) == []


# --------------------------------------------------------------------------------------------------- now


def test_relative_needs_now_absolute_does_not() -> None:
    for q in ("yesterday", "last week", "last Saturday", "3 days ago", "recently", "since April", "in May"):
        assert parse_time_range(q) is None, q
        assert parse_time_range(q, None) is None, q
    assert parse_time_range("April 8th") is None  # the year comes from now
    check("8 May 2023", D(2023, 5, 8), D(2023, 5, 8), "day", now=None)
    check("in 2022", D(2022, 1, 1), D(2022, 12, 31), "year", now=None)
    check("before June 2023", OPEN_START, D(2023, 5, 31), "range", now=None)
    check("after 2022", D(2023, 1, 1), D(2199, 12, 31), "range", now=None)  # open end without now
    check("between March and May 2021", D(2021, 3, 1), D(2021, 5, 31), "range", now=None)


@pytest.mark.parametrize(
    "now",
    [
        NOW_MS,
        NOW,
        "2023-05-30 23:40",
        "2023/05/30 (Tue) 23:40",
        "2023-05-31T01:40:00+02:00",
        datetime(2023, 5, 30, 23, 40),  # naive = UTC
        datetime(2023, 5, 30, 16, 40, tzinfo=timezone(timedelta(hours=-7))),
    ],
)
def test_now_spellings(now: object) -> None:
    check("yesterday", D(2023, 5, 29), D(2023, 5, 29), "day", now=now)
    check("April 8th", D(2023, 4, 8), D(2023, 4, 8), "day", now=now)


def test_now_with_offset_is_converted_to_utc_first() -> None:
    now = "2023-05-30T01:00:00+05:00"  # 2023-05-29 20:00 UTC
    check("yesterday", D(2023, 5, 28), D(2023, 5, 28), "day", now=now)
    check("today", D(2023, 5, 29), D(2023, 5, 29), "day", now=now)
    # local Monday 02:00 is still Sunday in UTC, so "last week" is the week before the UTC one
    check("last week", D(2023, 5, 15), D(2023, 5, 21), "week", now="2023-05-29T02:00:00+05:00")
    check("last week", D(2023, 5, 22), D(2023, 5, 28), "week", now="2023-05-29T02:00:00Z")


def test_boundaries_are_utc_days() -> None:
    r = parse_time_range("yesterday", "2023-05-30T00:00:00Z")
    assert r is not None
    assert datetime.fromtimestamp(r.start / 1000, UTC) == datetime(2023, 5, 29, tzinfo=UTC)
    assert datetime.fromtimestamp((r.end + 1) / 1000, UTC) == datetime(2023, 5, 30, tzinfo=UTC)
    assert r.end - r.start == DAY_MS - 1
    r = parse_time_range("3 hours ago", "2023-05-30T01:00:00Z")  # crosses midnight UTC
    assert r is not None and r.start == start_ms(D(2023, 5, 29))


def test_bad_now_raises_value_error() -> None:
    with pytest.raises(ValueError):
        parse_time_range("yesterday", "not a date at all")
    with pytest.raises(ValueError):
        parse_time_range("yesterday", 1685490000)  # seconds, not ms


# ---------------------------------------------------------------------------------- several cues, text


def test_long_question_case_insensitive() -> None:
    q = (
        "Earlier I mentioned my sister and the 3 cats she adopted. WHAT DID WE COOK TOGETHER LAST SATURDAY "
        "EVENING after the farmers market, and did I like it?"
    )
    r = check(q, D(2023, 5, 27), D(2023, 5, 27), "day")
    assert r.text == "LAST SATURDAY"


def test_text_is_the_phrase_as_written() -> None:
    cases = {
        "What did I do last Saturday?": "last Saturday",
        "What did I do on Saturday?": "on Saturday",
        "Where was I in the summer of 2022?": "in the summer of 2022",
        "Since April, how often did I run?": "Since April",
        "What happened between March and May?": "between March and May",
        "Did I travel in the past week?": "in the past week",
        "What did I buy on the 8th of April?": "on the 8th of April",
    }
    for q, text in cases.items():
        r = parse_time_range(q, NOW)
        assert r is not None and r.text == text, q
        assert r.text in q


def test_find_returns_all_cues_in_text_order() -> None:
    q = "Did I see Anna yesterday or in 2022, or was it last week?"
    found = find_time_expressions(q, NOW)
    assert [r.text for r in found] == ["yesterday", "in 2022", "last week"]
    assert [r.granularity for r in found] == ["day", "year", "week"]
    assert all(r.start <= r.end for r in found)
    # without now, only the cue that carries its year resolves
    assert [r.text for r in find_time_expressions(q)] == ["in 2022"]


def test_parse_prefers_the_most_specific_cue() -> None:
    check("What did I do last week, on the Thursday?", D(2023, 5, 25), D(2023, 5, 25), "day")
    check("This year, what did I buy on May 8?", D(2023, 5, 8), D(2023, 5, 8), "day")
    check("In 2023 and on April 8th", D(2023, 4, 8), D(2023, 4, 8), "day")
    # the first wins a tie
    check("yesterday or 3 days ago", D(2023, 5, 29), D(2023, 5, 29), "day")


def test_a_year_elsewhere_in_the_question_dates_a_yearless_one() -> None:
    check("In 2022, what did I do on May 8?", D(2022, 5, 8), D(2022, 5, 8), "day")
    check("What did I cook in August? It was in 2021.", D(2021, 8, 1), D(2021, 8, 31), "month")


def test_invalid_dates_give_none_but_are_stripped() -> None:
    assert parse_time_range("What did I do on 31 April 2023?", NOW) is None
    assert parse_time_range("2023-02-30", NOW) is None
    assert strip_time_expressions("What did I do on 31 April 2023?") == "What did I do?"


def test_timerange_is_frozen_and_end_inclusive() -> None:
    r = parse_time_range("last week", NOW)
    assert r is not None
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.start = 0  # type: ignore[misc]
    assert (r.end - r.start + 1) == 7 * DAY_MS


# ------------------------------------------------------------------------------------------------- strip

STRIP = [
    ("What did I do last Saturday?", "What did I do?"),
    ("What did I do on Saturday?", "What did I do?"),
    ("Where did I   go in the summer of 2022 with Anna?", "Where did I go with Anna?"),
    ("Since April, how often did I run?", "how often did I run?"),
    ("How much did I spend between March and May on food?", "How much did I spend on food?"),
    ("What did I say about May?", "What did I say about May?"),
    ("I have 3 cats", "I have 3 cats"),
    ("What did I buy 2 weeks ago at IKEA", "What did I buy at IKEA"),
    ("yesterday", ""),
    ("", ""),
]


@pytest.mark.parametrize(("question", "expected"), STRIP)
def test_strip(question: str, expected: str) -> None:
    assert strip_time_expressions(question) == expected


def test_strip_does_not_need_now() -> None:
    # relative phrases are removed even though they cannot be resolved without now
    assert strip_time_expressions("Did I call mom recently or last week?") == "Did I call mom or?"


# ------------------------------------------------------------------------------------------ a parsed range


def test_a_parsed_week_starts_on_its_monday() -> None:
    r = parse_time_range("two weeks ago", NOW)
    assert r is not None
    assert (format_date(r.start, "day"), r.granularity) == ("2023-05-15", "week")


# ------------------------------------------------------------------------------------------ properties

FRAGMENTS = st.sampled_from(
    [
        "last", "this", "past", "next", "the", "of", "in", "on", "since", "before", "after", "between", "and",
        "from", "to", "-", ",", "ago", "a few", "couple of", "two", "3", "12", "31", "8th", "99", "2023", "1999",
        "2199", "May", "march", "Feb", "Sept.", "Saturday", "weekend", "week", "weeks", "month", "months", "year",
        "days", "hours", "summer", "winter", "Christmas", "early", "mid-", "end of", "first week of",
        "yesterday", "today", "recently", "2023-05-30", "05/30/2023", "2023/02/29", "2020-2022", "the 90s", "cats",
    ]
)  # fmt: skip
NOWS = st.one_of(
    st.none(),
    st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2150, 12, 31)),
)


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=200), now=NOWS)
def test_any_text_never_raises(text: str, now: datetime | None) -> None:
    r = parse_time_range(text, now)
    assert r is None or r.start <= r.end
    for found in find_time_expressions(text, now):
        assert found.start <= found.end
        assert found.text and found.text in text
    assert isinstance(strip_time_expressions(text), str)


@settings(max_examples=500, deadline=None)
@given(words=st.lists(FRAGMENTS, max_size=12), now=NOWS)
def test_date_like_word_salad_never_raises(words: list[str], now: datetime | None) -> None:
    text = " ".join(words)
    r = parse_time_range(text, now)
    assert r is None or r.start <= r.end
    for found in find_time_expressions(text, now):
        assert found.start <= found.end
    strip_time_expressions(text)


MONTH_NAMES = [
    "January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
    "November", "December",
]  # fmt: skip
DATES = st.dates(min_value=date(1900, 1, 1), max_value=date(2099, 12, 31))


@settings(max_examples=300, deadline=None)
@given(d=DATES, now=NOWS)
def test_d_month_yyyy_is_exactly_that_day(d: date, now: datetime | None) -> None:
    for spelling in (
        f"{d.day} {MONTH_NAMES[d.month - 1]} {d.year}",
        f"What did I do on {MONTH_NAMES[d.month - 1]} {d.day}, {d.year}?",
        f"{d.isoformat()}",
    ):
        r = parse_time_range(spelling, now)
        assert r is not None, spelling
        assert (r.start, r.end, r.granularity) == (start_ms(d), end_ms(d), "day"), spelling


@settings(max_examples=200, deadline=None)
@given(d=st.dates(min_value=date(1971, 1, 1), max_value=date(2099, 12, 31)))
def test_yearless_date_is_the_latest_not_after_now(d: date) -> None:
    now = datetime(2023, 5, 30, 23, 40)
    r = parse_time_range(f"on {MONTH_NAMES[d.month - 1]} {d.day}", now)
    assert r is not None
    got = datetime.fromtimestamp(r.start / 1000, UTC).date()
    assert (got.month, got.day) == (d.month, d.day)
    assert got <= now.date()
    assert got.replace(year=got.year + 4 if (got.month, got.day) == (2, 29) else got.year + 1) > now.date()

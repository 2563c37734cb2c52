"""Time cues in a question → an inclusive UTC day range, for the search agent's time filters.

``parse_time_range("What did I do last Saturday?", now)`` gives the range of that Saturday in epoch ms,
00:00:00.000 to 23:59:59.999 UTC. Cues are found with precompiled regexes over the question (word
boundaries, case-insensitive, ASCII), never with dateutil's fuzzy parser (which invents dates from stray
numbers); dateutil supplies the month/weekday name tables, month arithmetic (``relativedelta``) and Easter.

How cues are read:

* every boundary is a UTC day; ``now`` is converted to UTC first, so the "today" of a ``now`` given with an
  offset is the UTC date;
* a month name on its own ("May") is a date only with a cue: "in May", "during May", "last May", "May 8",
  "May 2023", "since May", "between March and May", "early May"; a bare year likewise ("in 2022");
  numbers alone are never dates;
* a date without a year ("April 8th", "in May") is the most recent such date/month that has begun by
  ``now``; without ``now`` it cannot be resolved and is left out (so are relative cues);
* weeks run Monday to Sunday; "last week" is the previous calendar week, "past week"/"in the last week"/
  "last 7 days" are rolling ranges ending today;
* open ranges ("before June 2023", "since April", "after 2022") end today when ``now`` is known, otherwise
  at 2199-12-31; an open start is 1970-01-01 (epoch 0), or 1900-01-01 for ranges ending before 1970;
* "last Saturday" is the latest Saturday before today, "on Saturday"/"Saturday" the latest one up to today;
  "the Saturday two weeks ago"/"last week on Saturday" is that day of that week;
* a lowercase "may" next to a number ("these 3 may help") needs a cue word before it ("on may 8");
* a yearless date takes the year written elsewhere in the question when there is exactly one
  ("In 2022, what did I do on May 8?");
* future-only phrases ("tomorrow", "next week", "next Saturday") are not cues: a chat history cannot hold
  messages from then, so a filter on them would only hide results.

Supported: day/month/year spellings ("8 May 2023", "May 8th, 2023", "2023-05-30", "2023/05/30",
"05/30/2023", "30.05.2023", "May 2023", "2023-05", "April 8th", "the 8th of April", "in 2022", "the year
2021"), seasons ("in the summer of 2022", "last winter"), holidays (Christmas (Eve), New Year's Eve/Day,
Halloween, Valentine's Day, Easter and the feasts around it, Thanksgiving, Black Friday), decades ("the 90s"), today/tonight/this morning,
(the day before) yesterday, last night, "N minutes/hours/days/weeks/months/years ago|back" (digits, one ..
twenty, thirty, a, a couple (of), a few, several, a dozen), last/this/previous week|month|year, "the week
before last", rolling "past/last N units", "in the past week", "the last month", to-date "earlier this
week|month|year", weekdays, weekends, "recently"/"lately"/"the other day", early/mid/late and
beginning/end of a month or year, "the first..fourth/last week of <month>", "the week of <date>", ranges
"between X and Y"/"from X to Y"/"X - Y"/"3-10 May 2023", and "since/after/before/prior to/until X".
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache, partial
from typing import Literal, cast

from dateutil.easter import easter
from dateutil.parser import parserinfo
from dateutil.relativedelta import TH, relativedelta

from refind.models import to_epoch_ms

__all__ = [
    "Granularity",
    "TimeRange",
    "find_time_expressions",
    "parse_time_range",
    "strip_time_expressions",
]

Granularity = Literal["day", "week", "month", "year", "range"]


@dataclass(frozen=True)
class TimeRange:
    """An inclusive time range in epoch milliseconds, UTC, found in a question.

    ``start`` is 00:00:00.000 of the first day and ``end`` 23:59:59.999 of the last day. ``granularity`` says
    what the phrase named: one ``day``, a Monday-Sunday ``week``, a calendar ``month`` or ``year``, or any
    other ``range`` (rolling, open-ended, "between X and Y", seasons, ...). ``text`` is the phrase as written.
    """

    start: int
    end: int
    granularity: Granularity
    text: str


# ----------------------------------------------------------------------------------------------- internals

_Span = tuple[date, date]
_Resolver = Callable[[datetime | None], _Span | None]

_DAY_MS = 86_400_000
_EPOCH = date(1970, 1, 1)
_OPEN_START = _EPOCH
_OPEN_END = date(2199, 12, 31)
_EARLIEST = date(1900, 1, 1)  # open start for ranges ending before 1970
_WINDOW = 48  # how far back (characters) a cue word before a phrase is looked for
_RECENT_DAYS = 14  # "recently", "lately"
_INFO = parserinfo()
_FLAGS = re.IGNORECASE | re.ASCII


@dataclass(frozen=True, slots=True)
class _Abs:
    """A calendar date/month/year as written; ``year`` None means "pick it from now" by ``mode``."""

    year: int | None
    month: int | None  # None: the whole year
    day: int | None = None  # None: the whole month
    mode: str = "recent"  # recent: latest begun by now; last: latest ended before today; this: current one


@dataclass(frozen=True, slots=True)
class _Cue:
    start: int
    end: int
    gran: Granularity
    resolve: _Resolver
    absolute: _Abs | None = None
    needs: re.Pattern[str] | None = None  # a cue word that must come just before (bare month/year/season)
    kind: str = ""
    weekday: int | None = None  # 0 = Monday, for a weekday cue


def _c(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, _FLAGS)


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def _month_end(year: int, month: int) -> date:
    return date(year, month, 1) + relativedelta(months=1, days=-1)


def _monday(day: date) -> date:
    return day - timedelta(days=day.weekday())


def _pick(make: Callable[[int], _Span], year: int | None, now: datetime | None, mode: str) -> _Span | None:
    """The occurrence of a yearly period: in ``year`` if given, else chosen relative to ``now``."""
    if year is not None:
        return make(year)
    if now is None:
        return None
    today = now.date()
    if mode == "this":
        for y in (today.year, today.year + 1):  # a period that straddles New Year (winter)
            try:
                span = make(y)
            except ValueError:
                continue
            if span[0] <= today <= span[1]:
                return span
        return make(today.year)
    for y in range(today.year + 1, today.year - 9, -1):
        try:
            span = make(y)
        except ValueError:  # 29 February in a common year
            continue
        if (span[1] < today) if mode == "last" else (span[0] <= today):
            return span
    return None


def _abs_span(a: _Abs, now: datetime | None) -> _Span | None:
    month, day = a.month, a.day
    if month is None:
        return None if a.year is None else (date(a.year, 1, 1), date(a.year, 12, 31))
    if day is None:
        return _pick(lambda y: (date(y, month, 1), _month_end(y, month)), a.year, now, a.mode)
    return _pick(lambda y: (date(y, month, day),) * 2, a.year, now, a.mode)


def _mode(rel: str | None) -> str:
    if rel is None:
        return "recent"
    return "this" if _norm(rel) == "this" else "last"


# --------------------------------------------------------------------------------------- regex building blocks

_MONTH_FULL = "january|february|march|april|may|june|july|august|september|october|november|december"
_MONTH_ANY = _MONTH_FULL + "|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec"
_WEEKDAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_MON = rf"(?P<mon>{_MONTH_ANY})"
_YEAR = r"(?P<y>(?:19|20)\d{2})(?!\d)"
_DAY = r"(?P<d>\d{1,2})(?:st|nd|rd|th)?(?!\d)"
_REL = r"(?P<rel>this\s+past|last|past|previous|this)"
_NUMBER_WORDS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
    "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16,
    "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30,
}  # fmt: skip
_VAGUE = {"few": (2, 5), "several": (3, 7), "couple": (2, 2), "dozen": (12, 12)}
_NUM = (
    r"(?P<num>\d{1,3}|a\s+couple(?:\s+of)?|couple(?:\s+of)?|a\s+few|few|several|a\s+dozen|dozen|"
    + "|".join(sorted(_NUMBER_WORDS, key=len, reverse=True))
    + r"|an?)"
)
_UNITS = r"(?P<unit>minutes?|mins?|hours?|hrs?|days?|weeks?|months?|years?)"


def _number(text: str) -> tuple[int, int]:
    """A count as a (low, high) pair: "3" → (3, 3), "a few" → (2, 5)."""
    t = _norm(text)
    if t.isdigit():
        return int(t), int(t)
    if t in ("a", "an"):
        return 1, 1
    t = t.removeprefix("a ").removesuffix(" of")
    if t in _VAGUE:
        return _VAGUE[t]
    n = _NUMBER_WORDS[t]
    return n, n


def _unit(text: str) -> str:
    t = text.lower()
    if t.startswith("mi"):
        return "minute"
    if t.startswith("h"):
        return "hour"
    if t.startswith("mo"):
        return "month"
    return {"d": "day", "w": "week", "y": "year"}[t[0]]


# ----------------------------------------------------------------------------------------------- resolvers


def _rel_day(offset: int, now: datetime | None) -> _Span | None:
    if now is None:
        return None
    day = now.date() + timedelta(days=offset)
    return day, day


def _ago(unit: str, lo: int, hi: int, now: datetime | None) -> _Span | None:
    """``lo``..``hi`` units ago, as whole calendar units (days, Monday weeks, months, years)."""
    if now is None:
        return None
    today = now.date()
    if unit in ("minute", "hour"):
        step = timedelta(minutes=1) if unit == "minute" else timedelta(hours=1)
        return (now - hi * step).date(), (now - lo * step).date()
    if unit == "day":
        return today - timedelta(days=hi), today - timedelta(days=lo)
    if unit == "week":
        monday = _monday(today)
        return monday - timedelta(weeks=hi), monday - timedelta(weeks=lo) + timedelta(days=6)
    if unit == "month":
        first = today.replace(day=1)
        return first - relativedelta(months=hi), first - relativedelta(months=lo - 1) - timedelta(days=1)
    return date(today.year - hi, 1, 1), date(today.year - lo, 12, 31)


def _rolling(unit: str, n: int, now: datetime | None) -> _Span | None:
    """The last ``n`` units up to today ("past 2 weeks": 14 days ago through today)."""
    if now is None:
        return None
    today = now.date()
    if unit in ("minute", "hour"):
        step = timedelta(minutes=1) if unit == "minute" else timedelta(hours=1)
        return (now - n * step).date(), today
    delta = {
        "day": timedelta(days=n),
        "week": timedelta(weeks=n),
        "month": relativedelta(months=n),
        "year": relativedelta(years=n),
    }[unit]
    return today - delta, today


def _calendar(unit: str, offset: int, now: datetime | None) -> _Span | None:
    """The calendar week/month/year ``offset`` units from the current one (-1: last week)."""
    if now is None:
        return None
    today = now.date()
    if unit == "week":
        monday = _monday(today) + timedelta(weeks=offset)
        return monday, monday + timedelta(days=6)
    if unit == "month":
        first = today.replace(day=1) + relativedelta(months=offset)
        return first, _month_end(first.year, first.month)
    return date(today.year + offset, 1, 1), date(today.year + offset, 12, 31)


def _to_date(unit: str, now: datetime | None) -> _Span | None:
    """From the start of the current week/month/year through today ("earlier this year")."""
    if now is None:
        return None
    today = now.date()
    start = {"week": _monday(today), "month": today.replace(day=1), "year": date(today.year, 1, 1)}[unit]
    return start, today


def _days_back(lo: int, hi: int, now: datetime | None) -> _Span | None:
    if now is None:
        return None
    today = now.date()
    return today - timedelta(days=hi), today - timedelta(days=lo)


def _weekday(wd: int, mode: str, now: datetime | None) -> _Span | None:
    if now is None:
        return None
    today = now.date()
    if mode == "this":  # that day of the current Monday-Sunday week
        day = _monday(today) + timedelta(days=wd)
    elif mode in ("last", "before last"):  # strictly before today; "before last": the one before that
        day = today - timedelta(days=(today.weekday() - wd - 1) % 7 + 1 + (7 if mode == "before last" else 0))
    else:  # most recent, today included
        day = today - timedelta(days=(today.weekday() - wd) % 7)
    return day, day


def _weekday_in(wd: int, week: _Resolver, now: datetime | None) -> _Span | None:
    span = week(now)
    if span is None:
        return None
    day = _monday(span[0]) + timedelta(days=wd)
    return day, day


def _weekend(mode: str, now: datetime | None) -> _Span | None:
    if now is None:
        return None
    today = now.date()
    monday = _monday(today)
    if mode == "last":  # the weekend of the previous week
        return monday - timedelta(days=2), monday - timedelta(days=1)
    if mode == "this":
        return monday + timedelta(days=5), monday + timedelta(days=6)
    saturday = today - timedelta(days=(today.weekday() - 5) % 7)  # the most recent one begun
    return saturday, saturday + timedelta(days=1)


_SEASONS = {"spring": (3, 5), "summer": (6, 8), "fall": (9, 11), "autumn": (9, 11)}


def _season(name: str, year: int) -> _Span:
    """Meteorological, northern hemisphere; winter Y is December Y-1 to February Y."""
    if name == "winter":
        return date(year - 1, 12, 1), _month_end(year, 2)
    first, last = _SEASONS[name]
    return date(year, first, 1), _month_end(year, last)


def _holiday(name: str, year: int) -> _Span:
    if name in _EASTER_OFFSETS:  # moveable feasts, from dateutil's (Western) Easter
        day = easter(year) + timedelta(days=_EASTER_OFFSETS[name])
    elif name in _THANKSGIVING_OFFSETS:  # US Thanksgiving: fourth Thursday of November
        day = date(year, 11, 1) + relativedelta(weekday=TH(4)) + timedelta(days=_THANKSGIVING_OFFSETS[name])
    else:
        month, dom = _FIXED_HOLIDAYS[name]
        day = date(year, month, dom)
    return day, day


_EASTER_OFFSETS = {
    "easter": 0,
    "easter sunday": 0,
    "easter monday": 1,
    "good friday": -2,
    "maundy thursday": -3,
    "holy thursday": -3,
    "palm sunday": -7,
    "ash wednesday": -46,
}
_THANKSGIVING_OFFSETS = {"thanksgiving": 0, "black friday": 1, "cyber monday": 4}
_FIXED_HOLIDAYS = {
    "christmas eve": (12, 24),
    "christmas": (12, 25),
    "new years eve": (12, 31),
    "new years day": (1, 1),
    "halloween": (10, 31),
    "valentines": (2, 14),
}


def _period_part(base: _Resolver, gran: Granularity, part: str, now: datetime | None) -> _Span | None:
    """Early/mid/late thirds of a month (1-10, 11-20, 21-end) or of a year (Jan-Apr, May-Aug, Sep-Dec);
    the first..fourth week of a month (days 1-7, ..., 22-28) or its last week (its last seven days)."""
    span = base(now)
    if span is None:
        return None
    first, last = span
    if part == "last week":
        return last - timedelta(days=6), last
    if part.endswith("week"):
        start = first + timedelta(weeks=_ORDINALS[part.split()[0]] - 1)
        return start, start + timedelta(days=6)
    index = {"early": 0, "mid": 1, "late": 2}[part]
    if gran == "month":
        starts = (1, 11, 21)
        end = first.replace(day=starts[index + 1] - 1) if index < 2 else last
        return first.replace(day=starts[index]), end
    start = first.replace(month=1 + 4 * index)
    return start, _month_end(first.year, 4 + 4 * index)


def _week_of(base: _Resolver, now: datetime | None) -> _Span | None:
    span = base(now)
    if span is None:
        return None
    monday = _monday(span[0])
    return monday, monday + timedelta(days=6)


def _between(a: _Cue, b: _Cue, now: datetime | None) -> _Span | None:
    """From the start of ``a`` to the end of ``b``; a year written on one side applies to the other."""
    ra, rb = a.absolute, b.absolute
    if ra is not None and rb is not None and ra.month is not None and rb.month is not None:
        order_a, order_b = (ra.month, ra.day or 0), (rb.month, rb.day or 0)
        if ra.year is None and rb.year is not None:
            ra = replace(ra, year=rb.year - (order_a > order_b))
        elif rb.year is None:
            if ra.year is None:
                first = _abs_span(ra, now)
                if first is None:
                    return None
                ra = replace(ra, year=first[0].year)
            assert ra.year is not None
            rb = replace(rb, year=ra.year + (order_b < order_a))
        span_a, span_b = _abs_span(ra, now), _abs_span(rb, now)
    else:
        span_a, span_b = a.resolve(now), b.resolve(now)
    if span_a is None or span_b is None:
        return None
    return min(span_a[0], span_b[0]), max(span_a[1], span_b[1])


def _open(kind: str, base: _Resolver, now: datetime | None) -> _Span | None:
    span = base(now)
    if span is None:
        return None
    if kind in ("since", "after"):
        start = span[0] if kind == "since" else span[1] + timedelta(days=1)
        today = now.date() if now is not None else None
        return start, today if today is not None and today >= start else _OPEN_END
    end = span[0] - timedelta(days=1) if kind == "before" else span[1]
    return (_OPEN_START if end >= _OPEN_START else min(_EARLIEST, end)), end


# -------------------------------------------------------------------------------------------------- rules


def _cue(m: re.Match[str], gran: Granularity, resolve: _Resolver, **kw: object) -> _Cue:
    return _Cue(m.start(), m.end(), gran, resolve, **kw)  # type: ignore[arg-type]


def _abs_cue(m: re.Match[str], a: _Abs, needs: re.Pattern[str] | None = None) -> _Cue:
    gran: Granularity = "year" if a.month is None else "month" if a.day is None else "day"
    return _cue(m, gran, partial(_abs_span, a), absolute=a, needs=needs)


def _month(m: re.Match[str]) -> int:
    return _INFO.month(m["mon"])


def _year(m: re.Match[str]) -> int | None:
    year = m.groupdict().get("y")
    return int(year) if year else None


def _b_ymd(m: re.Match[str]) -> _Cue:
    return _abs_cue(m, _Abs(int(m["y"]), int(m["m"]), int(m["d"])))


def _b_numeric(m: re.Match[str]) -> _Cue:
    a, b = int(m["a"]), int(m["b"])
    day, month = (a, b) if m["sep"] == "." else (b, a)  # 30.05.2023 is day-first; 05/30/2023 US
    if month > 12 >= day:
        day, month = month, day
    return _abs_cue(m, _Abs(int(m["y"]), month, day))


_ORDINAL_OR_OF = _c(r"\d(?:st|nd|rd|th)\b|\sof\s")
_MAY_CUE = _c(r"\b(?:on|in|of|since|before|after|until|till|by|from|between|during|around|the|to|and)\s+$")


def _b_day_month(m: re.Match[str]) -> _Cue | None:
    year = _year(m)
    # lowercase "may 8" / "3 may" is more often the verb ("these 3 may help"): it needs a cue word before
    if (
        year is None
        and m["mon"] == "may"
        and not _ORDINAL_OR_OF.search(m[0])
        and _before(_MAY_CUE, m.string, m.start(), 0) is None
    ):
        return None
    return _abs_cue(m, _Abs(year, _month(m), int(m["d"])))


def _b_month_year(m: re.Match[str]) -> _Cue:
    month = int(m["m"]) if m.groupdict().get("m") else _month(m)
    return _abs_cue(m, _Abs(int(m["y"]), month))


_MONTH_CUE = _c(r"\b(?:in|during|throughout|around|month\s+of)\s+$")
_YEAR_CUE = _c(r"\b(?:in|during|throughout|around|circa|from)\s+$")
_SEASON_CUE = _c(r"\b(?:in|during|over|throughout|around)\s+(?:the\s+)?$")
_HOLIDAY_CUE = _c(r"\b(?:on|at|over|during|around|in)\s+(?:the\s+)?$")


def _b_month(m: re.Match[str]) -> _Cue:
    rel = m["rel"]
    return _abs_cue(m, _Abs(None, _month(m), mode=_mode(rel)), None if rel else _MONTH_CUE)


def _b_year(m: re.Match[str]) -> _Cue:
    return _abs_cue(m, _Abs(int(m["y"]), None), None if m["pre"] else _YEAR_CUE)


def _b_decade(m: re.Match[str]) -> _Cue:
    digit = int(m["d"])
    century = int(m["c"]) if m["c"] else (19 if digit >= 3 else 20)
    start = century * 100 + digit * 10
    return _cue(m, "range", lambda now: (date(start, 1, 1), date(start + 9, 12, 31)))


def _b_season(m: re.Match[str]) -> _Cue:
    rel, year = m["rel"], _year(m)
    name = m["s"].lower()
    needs = None if rel or year else _SEASON_CUE
    return _cue(m, "range", lambda now: _pick(partial(_season, name), year, now, _mode(rel)), needs=needs)


def _b_holiday(m: re.Match[str]) -> _Cue:
    rel, year = m["rel"], _year(m)
    name = _norm(m["h"]).replace("'", "").replace("\u2019", "")
    name = {"christmas day": "christmas", "valentines day": "valentines"}.get(name, name)
    needs = None if rel or year else _HOLIDAY_CUE
    return _cue(m, "day", lambda now: _pick(partial(_holiday, name), year, now, _mode(rel)), needs=needs)


def _b_today(m: re.Match[str]) -> _Cue:
    word = m[0].lower()
    offset = -2 if "before" in word else -1 if ("yesterday" in word or "night" in word) else 0
    return _cue(m, "day", partial(_rel_day, offset))


def _b_ago(m: re.Match[str]) -> _Cue:
    lo, hi = _number(m["num"])
    unit = _unit(m["unit"])
    gran: Granularity = "range" if lo != hi else "day" if unit in ("minute", "hour") else unit  # type: ignore[assignment]
    return _cue(m, gran, partial(_ago, unit, lo, hi))


def _b_rolling(m: re.Match[str]) -> _Cue | None:
    rel = _norm(m["rel"])
    if m["num"] is None and (rel == "previous" or (rel == "last" and m["the"] is None)):
        return None  # "last week", "the previous week": the calendar week (see _b_calendar)
    n = _number(m["num"])[1] if m["num"] else 1
    return _cue(m, "range", partial(_rolling, _unit(m["unit"]), n))


def _b_calendar(m: re.Match[str]) -> _Cue:
    offset = -2 if m["rel"] is None else 0 if _norm(m["rel"]) in ("this", "current", "the current") else -1
    unit = m["unit"].lower()
    return _cue(m, unit, partial(_calendar, unit, offset))  # type: ignore[arg-type]


def _b_to_date(m: re.Match[str]) -> _Cue:
    return _cue(m, "range", partial(_to_date, (m["u1"] or m["u2"] or m["u3"]).lower()))


def _b_weekday(m: re.Match[str]) -> _Cue:
    wd = _INFO.weekday(m["wd"])
    mode = "before last" if m["bl"] else _mode(m["rel"])
    return _cue(m, "day", partial(_weekday, wd, mode), weekday=None if m["bl"] else wd)


def _b_weekend(m: re.Match[str]) -> _Cue:
    rel = _norm(m["rel"])
    mode = "this" if rel == "this" else "recent" if rel == "the" else "last"
    return _cue(m, "range", partial(_weekend, mode), kind="weekend")


def _b_recently(m: re.Match[str]) -> _Cue:
    unit = (m["u"] or "").lower()
    days = {"days": 7, "weeks": 30, "months": 90}.get(unit, _RECENT_DAYS)
    return _cue(m, "range", partial(_days_back, 0, days))


def _b_other_day(m: re.Match[str]) -> _Cue:
    return _cue(m, "range", partial(_days_back, 1, 7))


def _b_day_span(m: re.Match[str]) -> _Cue | None:
    """ "3-10 May 2023", "from 3 to 10 May", "May 3-10, 2023", "between May 3 and 10"."""
    if not m["kw"] and m["sep"] not in ("-", "\u2013", "\u2014"):
        return None
    month, year = _month(m), _year(m)
    first, last = _Abs(year, month, int(m["d1"])), _Abs(year, month, int(m["d2"]))

    def resolve(now: datetime | None) -> _Span | None:
        a = _abs_span(first, now)  # the first day picks the year of both
        if a is None:
            return None
        b = _abs_span(replace(last, year=a[0].year), now)
        return None if b is None else (min(a[0], b[0]), max(a[1], b[1]))

    return _cue(m, "range", resolve)


_SPAN_SEP = r"\s*(?P<sep>-|\u2013|\u2014|to|and|until|till|through|thru)\s*"
_ORD = r"(?:st|nd|rd|th)?(?!\d)"
_RULES: list[tuple[re.Pattern[str], Callable[[re.Match[str]], _Cue | None]]] = [
    (_c(r"\b(?P<y>(?:19|20)\d{2})(?P<s>[-/.])(?P<m>\d{1,2})(?P=s)(?P<d>\d{1,2})(?!\d)"), _b_ymd),
    (_c(r"\b(?P<a>\d{1,2})(?P<sep>[-/.])(?P<b>\d{1,2})(?P=sep)" + _YEAR), _b_numeric),
    (_c(rf"\b(?:the\s+)?{_DAY}\s+(?:of\s+)?{_MON}\.?,?\s*{_YEAR}"), _b_day_month),
    (_c(rf"\b{_MON}\.?\s+(?:the\s+)?{_DAY},?\s*{_YEAR}"), _b_day_month),
    (_c(rf"\b(?:the\s+)?{_DAY}\s+(?:of\s+)?{_MON}\b(?!['\u2019]s\b)"), _b_day_month),
    (_c(rf"\b{_MON}\.?\s+(?:the\s+)?{_DAY}\b(?!:\d|%|\.\d)"), _b_day_month),
    (_c(rf"\b{_MON}\.?,?\s+(?:of\s+)?{_YEAR}"), _b_month_year),
    (_c(r"\b(?P<y>(?:19|20)\d{2})[-/](?P<m>0?[1-9]|1[0-2])(?![-/.]?\d)"), _b_month_year),
    (_c(r"\b(?P<m>0?[1-9]|1[0-2])/(?P<y>(?:19|20)\d{2})(?![-/]?\d)"), _b_month_year),
    (_c(rf"\b(?:{_REL}\s+)?(?P<mon>{_MONTH_FULL})\b(?!['\u2019]s\b)"), _b_month),
    (_c(r"\b(?P<pre>(?:the\s+)?year\s+)?(?P<y>(?:19|20)\d{2})\b"), _b_year),
    (_c(r"\bthe\s+['\u2019]?(?P<c>19|20)?(?P<d>\d)0['\u2019]?s\b"), _b_decade),
    (_c(rf"\b(?:{_REL}\s+)?(?P<s>spring|summer|fall|autumn|winter)\b(?:,?\s+(?:of\s+)?{_YEAR})?"), _b_season),
    (
        _c(
            r"\b(?:(?P<rel>last|this|past|previous)\s+)?(?P<h>christmas\s+eve|christmas(?:\s+day)?|"
            r"new\s+year['\u2019]?s\s+(?:eve|day)|halloween|valentine['\u2019]?s(?:\s+day)?|"
            r"easter(?:\s+(?:sunday|monday))?|good\s+friday|maundy\s+thursday|holy\s+thursday|palm\s+sunday|"
            r"ash\s+wednesday|thanksgiving|black\s+friday|cyber\s+monday)\b(?:,?\s+(?:of\s+)?(?P<y>(?:19|20)\d{2})(?!\d))?"
        ),
        _b_holiday,
    ),
    (
        _c(
            r"\b(?:(?:the\s+)?day\s+before\s+yesterday|yesterday|last\s+night|(?:earlier\s+|later\s+)?today|"
            r"tonight|this\s+(?:morning|afternoon|evening))\b"
        ),
        _b_today,
    ),
    (_c(rf"\b{_NUM}\s+{_UNITS}\s+(?:ago|back)\b"), _b_ago),
    (
        _c(
            rf"\b(?:(?:(?:in|over|during|within|for)\s+)?(?P<the>the)\s+)?(?P<rel>this\s+past|last|past|previous)"
            rf"\s+(?:{_NUM}\s+)?{_UNITS}\b(?!\s+of\b)"
        ),
        _b_rolling,
    ),
    (
        _c(
            r"\b(?:(?P<rel>last|this|(?:the\s+)?previous|(?:the\s+)?current)\s+(?P<unit>week|month|year)|"
            r"the\s+(?P<unit2>week|month|year)\s+before\s+last)\b(?!\s+of\b)"
        ),
        lambda m: (
            _b_calendar(m)
            if m["unit"]
            else _cue(m, cast(Granularity, m["unit2"].lower()), partial(_calendar, m["unit2"].lower(), -2))
        ),
    ),
    (
        _c(
            r"\b(?:(?:earlier|so\s+far)\s+this\s+(?P<u1>week|month|year)|this\s+(?P<u2>week|month|year)\s+so\s+far"
            r"|(?:since|from)\s+the\s+(?:start|beginning)\s+of\s+(?:the|this)\s+(?P<u3>week|month|year))\b"
        ),
        _b_to_date,
    ),
    (
        _c(
            rf"(?<!\bnext\s)(?<!\bevery\s)(?<!\beach\s)(?<!\bcoming\s)\b(?:the\s+)?(?:{_REL}\s+)?(?P<wd>{_WEEKDAYS})\b"
            r"(?P<bl>\s+before\s+last\b)?"
        ),
        _b_weekday,
    ),
    (_c(r"\b(?P<rel>this\s+past|last|past|previous|this|the)\s+weekend\b"), _b_weekend),
    (_c(r"\b(?:recently|lately|(?:in\s+)?recent\s+(?P<u>days|weeks|months))\b"), _b_recently),
    (_c(r"\bthe\s+other\s+day\b"), _b_other_day),
    (
        _c(
            rf"\b(?:(?P<kw>from|between)\s+)?(?:the\s+)?(?P<d1>\d{{1,2}}){_ORD}{_SPAN_SEP}(?:the\s+)?"
            rf"(?P<d2>\d{{1,2}}){_ORD}\s+(?:of\s+)?{_MON}\b(?:\.?,?\s+{_YEAR})?"
        ),
        _b_day_span,
    ),
    (
        _c(
            rf"\b(?:(?P<kw>from|between)\s+)?{_MON}\.?\s+(?:the\s+)?(?P<d1>\d{{1,2}}){_ORD}{_SPAN_SEP}(?:the\s+)?"
            rf"(?P<d2>\d{{1,2}}){_ORD}\b(?!\s*(?:of\s+)?(?:{_MONTH_ANY})\b|:\d)(?:,?\s+{_YEAR})?"
        ),
        _b_day_span,
    ),
]

# Words around cues that combine or extend them.
_PART = _c(
    r"\b(?P<p>early|mid|late|(?:the\s+)?(?:very\s+)?(?:beginning|start|end|middle)\s+of|"
    r"(?:the\s+)?(?P<nth>first|second|third|fourth|last)\s+week\s+of(?:\s+the)?)\s*-?\s*$"
)
_ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4}
_PARTS = {
    "early": "early",
    "beginning": "early",
    "start": "early",
    "mid": "mid",
    "middle": "mid",
    "late": "late",
    "end": "late",
}
_WEEK_OF = _c(r"\b(?:the\s+)?week\s+of\s+$")
_OPEN_KW = _c(r"\b(?P<kw>since|after|before|prior\s+to|until|till|til|up\s+until|up\s+to)\s+(?:the\s+)?$")
_OPEN_KINDS = {"since": "since", "after": "after", "before": "before", "prior to": "before"}
_RANGE_KW = _c(r"\b(?:between|from)\s+(?:the\s+)?$")
_RANGE_SEP = _c(r"\s*(?P<sep>and|to|until|till|through|thru|-|\u2013|\u2014)\s*(?:the\s+)?")
_WEEKDAY_DATE_SEP = _c(r"\s*,?\s*(?:the\s+)?")
_WEEKDAY_WEEK_SEP = _c(r"\s*(?:,\s*)?(?:(?:on|of|in)\s+)?(?:the\s+)?")
_EXTEND = _c(r"\b(?:in|on|at|during|over|throughout|within|around|sometime\s+in|back\s+in)\s+(?:the\s+)?$")
_DASHES = ("-", "\u2013", "\u2014")


def _before(pattern: re.Pattern[str], text: str, start: int, floor: int) -> re.Match[str] | None:
    return pattern.search(text, max(floor, start - _WINDOW), start)


def _atoms(text: str) -> list[_Cue]:
    found: list[_Cue] = []
    for pattern, build in _RULES:
        for m in pattern.finditer(text):
            cue = build(m)
            if cue is not None:
                found.append(cue)
    found.sort(key=lambda c: (c.start - c.end, c.start))  # longest first, then leftmost
    chosen: list[_Cue] = []
    for cue in found:
        if all(cue.end <= o.start or cue.start >= o.end for o in chosen):
            chosen.append(cue)
    chosen.sort(key=lambda c: c.start)
    return chosen


def _with_prefix(text: str, cues: list[_Cue], pattern: re.Pattern[str], wrap: Callable) -> list[_Cue]:
    """Replace each cue that ``pattern`` matches just before with ``wrap(cue, match)`` (or keep it)."""
    out: list[_Cue] = []
    floor = 0
    for cue in cues:
        m = _before(pattern, text, cue.start, floor)
        new = wrap(cue, m) if m is not None else None
        out.append(new or cue)
        floor = (new or cue).end
    return out


def _wrap_part(cue: _Cue, m: re.Match[str]) -> _Cue | None:
    if m["nth"]:
        if cue.gran != "month":
            return None
        part = f"{m['nth'].lower()} week"
    elif cue.gran in ("month", "year"):
        part = _PARTS[_norm(m["p"]).removeprefix("the ").removeprefix("very ").split()[0]]
    else:
        return None
    return _Cue(m.start(), cue.end, "range", partial(_period_part, cue.resolve, cue.gran, part))


def _wrap_week_of(cue: _Cue, m: re.Match[str]) -> _Cue | None:
    if cue.gran != "day":
        return None
    return _Cue(m.start(), cue.end, "week", partial(_week_of, cue.resolve))


def _wrap_open(cue: _Cue, m: re.Match[str]) -> _Cue:
    kind = _OPEN_KINDS.get(_norm(m["kw"]), "until")
    return _Cue(m.start(), cue.end, "range", partial(_open, kind, cue.resolve))


def _pairs(text: str, cues: list[_Cue]) -> list[_Cue]:
    """Merge neighbouring cues that name one period: see :func:`_merge`."""
    out: list[_Cue] = []
    i = 0
    while i < len(cues):
        merged = _merge(text, cues[i], cues[i + 1], out[-1].end if out else 0) if i + 1 < len(cues) else None
        out.append(merged or cues[i])
        i += 2 if merged else 1
    return out


def _merge(text: str, a: _Cue, b: _Cue, floor: int) -> _Cue | None:
    """One cue for "between A and B", "from A to B", "A - B" (absolute), "Saturday, May 27, 2023",
    "(the) Saturday two weeks ago" / "last week on Saturday" (that day of that week) and "the Wednesday two
    months ago" (the month: which Wednesday is unknowable)."""
    gap = text[a.end : b.start]
    if a.weekday is not None and b.gran == "day" and b.absolute and _WEEKDAY_DATE_SEP.fullmatch(gap):
        return replace(b, start=a.start)
    if _WEEKDAY_WEEK_SEP.fullmatch(gap):
        day, period = (a, b) if a.weekday is not None else (b, a)
        if (
            day.weekday is not None
            and period.weekday is None
            and (period.gran == "week" or period.kind == "weekend")
        ):
            return _Cue(a.start, b.end, "day", partial(_weekday_in, day.weekday, period.resolve))
        if a.weekday is not None and b.gran in ("month", "range") and b.absolute is None and not b.needs:
            return replace(b, start=a.start)
    sep = _RANGE_SEP.fullmatch(gap)
    if sep is None:
        return None
    kw = _before(_RANGE_KW, text, a.start, floor)
    if kw is None and not (sep["sep"] in _DASHES and a.absolute and b.absolute):
        return None
    needs = None if kw is not None or not (a.needs and b.needs) else a.needs
    return _Cue(kw.start() if kw else a.start, b.end, "range", partial(_between, a, b), needs=needs)


@lru_cache(maxsize=256)
def _scan(text: str) -> tuple[_Cue, ...]:
    """All time cues of ``text``, in text order, unresolved (cached: a search asks for the cues of its
    question more than once, for its time range and for its keywords without the time phrases)."""
    cues = _atoms(text)
    if not cues:
        return ()
    cues = _with_prefix(text, cues, _PART, _wrap_part)
    cues = _with_prefix(text, cues, _WEEK_OF, _wrap_week_of)
    cues = _pairs(text, cues)
    cues = _with_prefix(text, cues, _OPEN_KW, _wrap_open)
    kept: list[_Cue] = []
    for cue in cues:
        floor = kept[-1].end if kept else 0
        if cue.needs is not None and _before(cue.needs, text, cue.start, floor) is None:
            continue  # a bare "May" or "2022" with no cue word
        ext = _before(_EXTEND, text, cue.start, floor)
        kept.append(replace(cue, start=ext.start()) if ext is not None else cue)
    return tuple(kept)


def _to_now(now: int | str | datetime | None) -> datetime | None:
    if now is None:
        return None
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=to_epoch_ms(now))


def _ms(day: date) -> int:
    return (day - _EPOCH).days * _DAY_MS


def _resolved(question: str, now: int | str | datetime | None) -> list[TimeRange]:
    if not question:
        return []
    moment = _to_now(now)
    cues = _scan(question)
    years = {c.absolute.year for c in cues if c.absolute is not None and c.absolute.year is not None}
    context_year = years.pop() if len(years) == 1 else None
    out: list[TimeRange] = []
    for cue in cues:
        resolve = cue.resolve
        a = cue.absolute
        if context_year is not None and a is not None and a.year is None and a.mode == "recent":
            resolve = partial(_abs_span, replace(a, year=context_year))  # "in 2022 ... on May 8"
        try:
            span = resolve(moment)
        except (ValueError, OverflowError):  # 31 April, year 0, ...
            span = None
        if span is None:
            continue
        first, last = span
        out.append(TimeRange(_ms(first), _ms(last) + _DAY_MS - 1, cue.gran, question[cue.start : cue.end]))
    return out


# ---------------------------------------------------------------------------------------------- public API


def find_time_expressions(question: str, now: int | str | datetime | None = None) -> list[TimeRange]:
    """Every time cue of ``question`` that resolves against ``now``, in text order.

    ``now`` is epoch ms, an ISO string, a chat-log date ("2023/05/30 (Tue) 23:40"), a datetime (naive means
    UTC) or None; without it only cues that carry their own year resolve. Raises ``ValueError`` for a
    ``now`` that is not a timestamp.
    """
    return _resolved(question, now)


def parse_time_range(question: str, now: int | str | datetime | None = None) -> TimeRange | None:
    """The single most useful time range of ``question``, or None when it has no clear time cue.

    Several cues: the narrowest wins (ties: the first), so "last week, on Saturday" gives that Saturday;
    "between March and May" and "from 3 May to 10 May 2023" are one cue spanning both ends. See
    :func:`find_time_expressions` for ``now``.
    """
    found = _resolved(question, now)
    if not found:
        return None
    return min(found, key=lambda r: r.end - r.start)


_SPACE_BEFORE_PUNCT = re.compile(r"\s+([?.!,;:])")
_REPEATED_PUNCT = re.compile(r"([,;:])(?:\s*[,;:])+")
_SPACES = re.compile(r"\s+")


def strip_time_expressions(question: str) -> str:
    """``question`` without its time phrases, whitespace normalized, for keyword extraction.

    Every recognized phrase is removed, resolvable or not: "What did I do last Saturday?" → "What did I do?".
    """
    if not question:
        return ""
    pieces: list[str] = []
    pos = 0
    for cue in _scan(question):
        pieces.append(question[pos : cue.start])
        pos = cue.end
    pieces.append(question[pos:])
    text = _SPACES.sub(" ", " ".join(pieces))
    text = _REPEATED_PUNCT.sub(r"\1", _SPACE_BEFORE_PUNCT.sub(r"\1", text))
    return text.strip().lstrip(",;:").strip()

"""Spans of calendar days: the arithmetic behind the date grammar in `memory.dates.grammar`.

Weeks run Monday to Sunday. Functions taking `future` pick, of a recurring time (a weekday,
a month, a holiday), the next one (True) or the last one (False). Holidays:
`holiday_span("国庆节", 2026)` is 1–7 October 2026; the lunar festivals (春节, 中秋) come
from a table for 2020–2035, checked against a lunar calendar library, and outside those
years they name no date rather than a wrong one.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta

__all__ = [
    "HOLIDAY_RE", "LUNAR_YEARS", "MAX_DAYS_AHEAD", "MAX_DAYS_BACK", "UNIT_DAYS", "DaySpan",
    "add_days", "add_months", "counted", "day_of_month", "holiday_span", "lean_year",
    "month_day", "month_part", "month_span", "nearest_holiday", "one_day", "pick_part",
    "safe_date", "season_span", "week_part", "week_span", "weekday_span", "weekend_span",
    "year_part", "year_span",
]  # fmt: skip

UNIT_DAYS = {"day": 1, "week": 7, "fortnight": 14, "month": 30, "year": 365}
MAX_DAYS_AHEAD = 3660
"""Further than ten years ahead is not a plan (and maybe not a date): nothing is found."""
MAX_DAYS_BACK = 36600
"""A hundred years back at most."""


@dataclass(frozen=True)
class DaySpan:
    """Days `first`..`last` (inclusive); `anchor` is the day of a fuzzy "two weeks ago"."""

    first: date
    last: date
    anchor: date | None = None


# --- holidays ---------------------------------------------------------------------------------

# Gregorian (month, day) of 正月初一 (Spring Festival) and 八月十五 (Mid-Autumn Festival).
_SPRING_FESTIVAL = {
    2020: (1, 25), 2021: (2, 12), 2022: (2, 1), 2023: (1, 22), 2024: (2, 10), 2025: (1, 29),
    2026: (2, 17), 2027: (2, 6), 2028: (1, 26), 2029: (2, 13), 2030: (2, 3), 2031: (1, 23),
    2032: (2, 11), 2033: (1, 31), 2034: (2, 19), 2035: (2, 8),
}  # fmt: skip
_MID_AUTUMN = {
    2020: (10, 1), 2021: (9, 21), 2022: (9, 10), 2023: (9, 29), 2024: (9, 17), 2025: (10, 6),
    2026: (9, 25), 2027: (9, 15), 2028: (10, 3), 2029: (9, 22), 2030: (9, 12), 2031: (10, 1),
    2032: (9, 19), 2033: (9, 8), 2034: (9, 27), 2035: (9, 16),
}  # fmt: skip
LUNAR_YEARS = range(2020, 2036)  # the keys of both tables
"""Years for which the lunar festivals are known."""

# Each name → canonical key. English names are written lower-case, with the apostrophe.
_NAMES = {
    "国庆节": "national", "国庆": "national", "元旦": "new_year", "new year's day": "new_year",
    "春节": "spring", "chinese new year": "spring", "lunar new year": "spring",
    "spring festival": "spring", "中秋节": "mid_autumn", "中秋": "mid_autumn",
    "mid-autumn festival": "mid_autumn", "mid-autumn": "mid_autumn",
    "圣诞节": "christmas", "圣诞": "christmas", "christmas day": "christmas",
    "christmas": "christmas", "平安夜": "christmas_eve", "christmas eve": "christmas_eve",
    "new year's eve": "new_years_eve", "halloween": "halloween",
    "valentine's day": "valentine", "thanksgiving": "thanksgiving",
}  # fmt: skip


def _key(name: str) -> str:
    """Spelling-insensitive form of a name: "New Years  Eve" and "new year’s eve" agree."""
    return " ".join(re.sub(r"['’]", "", name.lower()).replace("-", " ").split())


_KEYS = {_key(n): k for n, k in _NAMES.items()}
HOLIDAY_RE = "|".join(
    re.escape(n).replace("'", "['’]?").replace(r"\ ", r"\s+").replace(r"\-", r"[-\s]?")
    for n in sorted(_NAMES, key=len, reverse=True)
)
"""Regex alternatives matching every holiday name (English ones lower-case)."""


# Fixed days: key → (month, day, number of days).
_FIXED = {
    "national": (10, 1, 7),  # the National Day golden week
    "new_year": (1, 1, 1),
    "christmas": (12, 25, 1),
    "christmas_eve": (12, 24, 1),
    "new_years_eve": (12, 31, 1),
    "halloween": (10, 31, 1),
    "valentine": (2, 14, 1),
}


def holiday_span(name: str, year: int) -> tuple[date, date] | None:
    """Return the first and last day of a holiday in a year, or None if unknown.

    春节 is 正月初一 to 初七 (the Spring Festival week); 中秋 is its one day; Thanksgiving
    is the fourth Thursday of November (the US one).

    Example:
        >>> holiday_span("国庆节", 2026)
        (datetime.date(2026, 10, 1), datetime.date(2026, 10, 7))
    """
    key = _KEYS.get(_key(name))
    if key is None or not 1 <= year <= 9999:
        return None
    if key in _FIXED:
        month, day, days = _FIXED[key]
        first = date(year, month, day)
        return first, first + timedelta(days=days - 1)
    if key == "thanksgiving":
        nov1 = date(year, 11, 1)
        first = nov1 + timedelta(days=(3 - nov1.weekday()) % 7 + 21)
        return first, first
    table = _SPRING_FESTIVAL if key == "spring" else _MID_AUTUMN
    if year not in table:
        return None
    first = date(year, *table[year])
    return first, first + timedelta(days=6 if key == "spring" else 0)


# --- calendar arithmetic ----------------------------------------------------------------------


def safe_date(year: int, month: int, day: int) -> date | None:
    """Return the date, or None if there is no such day (February 30)."""
    try:
        return date(year, month, day)
    except (ValueError, OverflowError):
        return None


def add_days(d: date, n: int) -> date | None:
    """Return the day n days on, or None past the calendar's ends."""
    try:
        return d + timedelta(days=n)
    except OverflowError:
        return None


def add_months(d: date, n: int) -> date | None:
    """Return the same day n months on, clamped to the month (31 Jan + 1 month = 28 Feb)."""
    y, m = divmod(d.year * 12 + d.month - 1 + n, 12)
    if not 1 <= y <= 9999:
        return None
    return date(y, m + 1, min(d.day, calendar.monthrange(y, m + 1)[1]))


def one_day(d: date | None) -> DaySpan | None:
    """Return the span of one day (None stays None)."""
    return DaySpan(d, d) if d else None


def month_span(year: int, month: int) -> DaySpan | None:
    """Return a calendar month, or None if there is no such month."""
    if not (1 <= month <= 12 and 1 <= year <= 9999):
        return None
    return DaySpan(date(year, month, 1), date(year, month, calendar.monthrange(year, month)[1]))


def year_span(year: int) -> DaySpan | None:
    """Return a calendar year, or None outside years 1–9999."""
    return DaySpan(date(year, 1, 1), date(year, 12, 31)) if 1 <= year <= 9999 else None


def week_span(today: date, weeks: int) -> DaySpan:
    """Return Monday–Sunday of this week (0), next week (1), last week (-1), ..."""
    monday = today - timedelta(days=today.weekday()) + timedelta(days=7 * weeks)
    return DaySpan(monday, monday + timedelta(days=6))


def weekend_span(today: date, weeks: int) -> DaySpan:
    """Return Saturday–Sunday of this week (0), next week (1), last week (-1), ..."""
    saturday = week_span(today, weeks).first + timedelta(days=5)
    return DaySpan(saturday, saturday + timedelta(days=1))


def weekday_span(today: date, weekday: int, how: str, future: bool) -> DaySpan:
    """Return a weekday of the week `how` names.

    `how` is "next" (next week's), "last" (the latest before today), "this" (this week's)
    or "" (the next or the last one, today included, as `future` says).
    """
    if how in ("next", "this"):
        day = week_span(today, 1 if how == "next" else 0).first + timedelta(days=weekday)
    else:
        back = (today.weekday() - weekday) % 7
        if how == "last":
            back = back or 7
        elif future:
            back = -((weekday - today.weekday()) % 7)
        day = today - timedelta(days=back)
    return DaySpan(day, day)


def lean_year(today: date, first: tuple[int, int], last: tuple[int, int], future: bool) -> int:
    """Return the year of a yearly (month, day) span: the next not ended, or the last begun."""
    if future:
        return today.year if last >= (today.month, today.day) else today.year + 1
    return today.year if first <= (today.month, today.day) else today.year - 1


KEEPS_THIS_YEAR = timedelta(days=90)
"""How long ago a day of the year, said with no year nor past verb, may be this year's (a
quarter, by hand: half a year took a date moved to next June, said in December, for last
June's)."""


def month_day(today: date, month: int, day: int, year: int | None, future: bool) -> DaySpan | None:
    """Return a day of the year `year`, or of the leaning year when `year` is None.

    Leaning forward, a day passed less than `KEEPS_THIS_YEAR` ago keeps this year: "on 5 May"
    said in June is last month's, not next year's; "bumped me to June 17" said in December is
    next June's.
    """
    if year is None:
        if future:
            year = today.year
            found = safe_date(year, month, day)
            if found is not None and found < today - KEEPS_THIS_YEAR:
                year += 1
        else:
            year = lean_year(today, (month, day), (month, day), False)
    return one_day(safe_date(year, month, day))


def day_of_month(today: date, months: int | None, day: int, future: bool) -> DaySpan | None:
    """Return day `day` of the month `months` on; None: this month's or the leaning one."""
    if months is None:
        months = (1 if day < today.day else 0) if future else (-1 if day > today.day else 0)
    first = add_months(today.replace(day=1), months)
    return one_day(safe_date(first.year, first.month, day)) if first else None


def counted(today: date, n: float, unit: str, sign: int) -> DaySpan | None:
    """Return n units before (sign -1) or after today: that day, or a window a unit wide."""
    days = round(n * UNIT_DAYS[unit])
    if days > (MAX_DAYS_AHEAD if sign > 0 else MAX_DAYS_BACK):
        return None
    if unit in ("month", "year") and n == int(n):
        anchor = add_months(today, sign * int(n) * (12 if unit == "year" else 1))
    else:
        anchor = add_days(today, sign * days)
    if anchor is None or days == 0:
        return None
    if unit == "day":
        return DaySpan(anchor, anchor)
    half = min(days, UNIT_DAYS[unit]) // 2 + 1
    first, last = add_days(anchor, -half), add_days(anchor, half - 1)
    return DaySpan(first, last, anchor) if first and last else None


def nearest_holiday(today: date, name: str, year: int | None, future: bool) -> DaySpan | None:
    """Return a holiday of `year`; None: the next one not ended, or the last one begun."""
    if year is None:
        this = holiday_span(name, today.year)
        if this is None:
            return None
        this_is_it = this[1] >= today if future else this[0] <= today
        year = today.year if this_is_it else today.year + (1 if future else -1)
    found = holiday_span(name, year)
    return DaySpan(*found) if found else None


def season_span(today: date, which: str, first_month: int, future: bool) -> DaySpan | None:
    """Return the three months from `first_month` meant by "last/this/next/past summer"."""
    year = today.year if first_month <= today.month else today.year - 1  # the latest begun
    ended = add_months(date(year, first_month, 1), 3)
    if which == "last" and first_month <= today.month < first_month + 3:
        year -= 1
    elif which == "next" or (
        (which == "coming" or (which == "this" and future)) and ended and ended <= today
    ):
        year = today.year if first_month > today.month else today.year + 1
    start = date(year, first_month, 1)
    end = add_months(start, 3)
    return DaySpan(start, end - timedelta(days=1)) if end else None


# --- parts of a month, a week, a year ---------------------------------------------------------

# Days of a month that each word names, as jionlp reads the Chinese ones (月初 1-5, 上旬 1-10,
# 中旬 11-20, 下旬 21-end, 月底 25-end); 31 stands for the month's last day. "end" days carry
# the last day as their anchor: "月底交报告" is due on the 30th, not the 25th.
MONTH_PARTS = {"start": (1, 5), "early": (1, 10), "mid": (11, 20), "late": (21, 31),
               "end": (25, 31)}  # fmt: skip
# Months of a year (年初 January-February, 年底 November-December, as jionlp reads them).
YEAR_PARTS = {"start": (1, 2), "early": (1, 2), "mid": (6, 7), "late": (11, 12), "end": (11, 12)}
# Weekdays of a week (0 Monday): "the end of the week" is Friday to Sunday, due on Friday.
WEEK_PARTS = {"start": (0, 1), "early": (0, 1), "mid": (2, 3), "late": (4, 6), "end": (4, 6)}


def month_part(year: int, month: int, part: str) -> DaySpan | None:
    """Return the days of a month that `part` (a key of `MONTH_PARTS`) names."""
    span = month_span(year, month)
    if span is None:
        return None
    first, last = MONTH_PARTS[part]
    start, end = span.first.replace(day=first), span.last.replace(day=min(last, span.last.day))
    return DaySpan(start, end, end if part == "end" else None)


def year_part(year: int, part: str) -> DaySpan | None:
    """Return the months of a year that `part` (a key of `YEAR_PARTS`) names."""
    first, last = YEAR_PARTS[part]
    start, end = month_span(year, first), month_span(year, last)
    if start is None or end is None:
        return None
    return DaySpan(start.first, end.last, end.last if part == "end" else None)


def week_part(today: date, weeks: int, part: str) -> DaySpan:
    """Return the days of this week (0), next week (1), ... that `part` names."""
    monday = week_span(today, weeks).first
    first, last = WEEK_PARTS[part]
    start, end = monday + timedelta(days=first), monday + timedelta(days=last)
    return DaySpan(start, end, start if part == "end" else None)


def pick_part(
    today: date, future: bool, part_of: Callable[[int], DaySpan | None]
) -> DaySpan | None:
    """Return the part of this month (week, year) that `part_of(0)` gives, or of the one next to it.

    Leaning forward, a part already over is next month's ("月初" said on the 20th); leaning
    back, a part not begun is last month's ("end of the month" asked on the 10th).
    """
    this = part_of(0)
    if this is None:
        return None
    if future and this.last < today:
        return part_of(1)
    if not future and this.first > today:
        return part_of(-1)
    return this

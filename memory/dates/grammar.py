"""The one date grammar of the agent: English and Chinese time words → calendar dates.

Two readings of the same grammar:

- `find_date` reads a statement ("I fly to Paris next Friday", "我下个月5号要去北京") and
  returns the day it names (plus the last day of a span); extraction dates events with it.
- `find_window` reads a query ("what did I do last weekend?", "上个月8号我在哪") and returns
  the span [start, end) it names; ranking boosts records that fall inside it.

Words that name one time whatever the tense ("下周末", "last month on the 8th", "两周后",
"二〇二三年五月", "国庆节" with a year) read the same in both. Words that name a
recurring time ("Friday", "周五", "in March", "12/25", "国庆节") lean: `find_date` takes the
next one (plans look ahead), `find_window` the last one, unless the query speaks of the
future ("what will I do on Friday?", "我周五要做什么"). When several times are named, a
calendar date wins ("last weekend before April 10, 2023": the relative words hang on it),
then the first time word in the text (the longest of those starting together); a bare
year ("2023") is read only if nothing else is named. Calendar arithmetic and holidays
live in `memory.dates.spans`.

Example:
    >>> from datetime import datetime
    >>> now = datetime(2026, 11, 18)  # a Wednesday
    >>> find_date("我下个月5号要去北京", now).day
    datetime.date(2026, 12, 5)
    >>> w = find_window("what did I do last weekend?", now)
    >>> (w.start.date(), w.end.date())
    (datetime.date(2026, 11, 14), datetime.date(2026, 11, 16))
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Literal

from memory.dates.rules import (
    EN_MON,
    EN_MONTHS,
    EN_WEEKDAYS,
    NOT_IN_NUMBER,
    ORD,
    RULES,
    ZD,
    zh_int,
)
from memory.dates.spans import (
    DaySpan,
    safe_date,
)

__all__ = [
    "EN_MONTHS",
    "EN_WEEKDAYS",
    "DateMention",
    "Lean",
    "TimeWindow",
    "YearlyDate",
    "find_date",
    "find_window",
    "find_yearly",
    "is_date_phrase",
    "statement_lean",
]

Lean = Literal["future", "past"]
"""Which way a recurring time word ("Friday", "in May") is read."""


@dataclass(frozen=True)
class DateMention:
    """A date found in text (what `find_date` returns)."""

    day: date
    text: str
    """The words that named it, as written."""
    end: date | None = None
    """Last day, when the words name a span ("next week", "下周")."""


@dataclass(frozen=True)
class TimeWindow:
    """A span of time a query refers to, [start, end) (what `find_window` returns)."""

    start: datetime
    end: datetime
    text: str
    """The words that named it."""


# --- reading a text -------------------------------------------------------------------------------

_FUTURE = re.compile(
    r"\b(?:will|won't|shall|going\s+to|gonna|plan(?:s|ning)?\s+to|upcoming|am\s+i|are\s+we|"
    r"do\s+(?:i|we)\s+have)\b|['’]ll\b|打算|将要|(?<![重需主只不想])要(?!求)"
)
_PAST = re.compile(r"\b(?:did|was|were|went|had|ago)\b|了|过")
# Verbs that tell the event itself happened ("I met Anna on Friday"). Not every past verb:
# "I booked a table for Friday" and "我约了周五吃饭" are about the next Friday, and so is a
# booking with its complement before the 了 ("科目二约在了3月26号", "排到了周五", "订好了"):
# the 了 tells the booking was made, not that the day booked has come.
_BOOKED = r"(?<![约订定买报排请租挂])(?<![约订定买报排请租挂改挪推][在到好成])"
_PAST_STATEMENT = re.compile(
    r"\b(?:did|was|were|went|had|ago|met|saw|visited|came|ate|flew|spent)\b"
    rf"|{_BOOKED}了|{_BOOKED}过|曾经"
)


def _normalized(text: str) -> str:
    """Lower-case, full-width forms folded (１２ → 12), one character for one: positions agree."""
    out = []
    for ch in text:
        folded = unicodedata.normalize("NFKC", ch).lower() if not ch.isascii() else ch.lower()
        out.append(folded if len(folded) == 1 else ch)
    return "".join(out)


def _first_mention(text: str, today: date, future: bool) -> tuple[DaySpan, str] | None:
    """Return the span the text names first (see the module docstring) and its words."""
    low = _normalized(text)
    best: tuple[tuple[int, int, int, int], DaySpan] | None = None
    for order, (pattern, read, tier) in enumerate(RULES):
        if best is not None and best[0][0] < tier:
            break  # weaker rules are tried only if nothing stronger matched (they come last)
        for m in pattern.finditer(low):
            if best is not None and (tier, m.start()) > best[0][:2]:
                break
            span = read(m, today, future)
            if span is not None:
                key = (tier, m.start(), -(m.end() - m.start()), order)
                if best is None or key < best[0]:
                    best = (key, span)
                break
    if best is None:
        return None
    (_, start, neg_len, _), span = best
    return span, text[start : start - neg_len]


def find_date(text: str, now: datetime, *, lean: Lean = "future") -> DateMention | None:
    """Return the first date that a statement names, resolved against `now`.

    Args:
        text: A sentence in English or Chinese.
        now: When it was said; relative words are read from this day.
        lean: How recurring times are read: "future" (the next Friday; plans look ahead)
            or "past" (the last one).

    Returns:
        The date (a span's first day, or today if the span holds it, with `end` its
        last day), or None if the text names no date.

    Example:
        >>> find_date("下周末去爬山", datetime(2026, 11, 18))
        DateMention(day=datetime.date(2026, 11, 28), text='下周末', end=datetime.date(2026, 11, 29))
    """
    today = now.date()
    found = _first_mention(text, today, lean == "future")
    if found is None:
        return None
    span, words = found
    if span.anchor is not None:
        return DateMention(span.anchor, words)
    if span.first == span.last:
        return DateMention(span.first, words)
    day = today if span.first <= today <= span.last else span.first
    return DateMention(day, words, end=span.last)


def statement_lean(text: str) -> Lean:
    """Return which way a statement's recurring times lean: "past" if it tells what happened.

    "周三我们开会了" and "I met Anna on Friday" are about the last Wednesday and Friday;
    "周三我们开会" and "I'll see Anna on Friday" about the next ones.
    """
    # Read without its days of the month: "改到1月22号了" is "改到了", a booking moved, and its
    # 了 tells the move was made, not that the day has come (`_BOOKED`).
    low = _ZH_DAY.sub("", _normalized(text))
    return "past" if _PAST_STATEMENT.search(low) and not _FUTURE.search(low) else "future"


_ZH_DAY = re.compile(rf"(?:{ZD}月)?{ZD}[日号]")


_PHRASE_DAY = date(2026, 1, 7)  # any day will do: only the words are looked at
_FILLER = re.compile(r"^(?:on|in|at|by|from|since|until|the|this|of|,|，|、|\s)*$")


def is_date_phrase(text: str) -> bool:
    """Return True if a text names a time and says nothing else ("Next Friday", "下周三")."""
    found = _first_mention(text, _PHRASE_DAY, True)
    if found is None:
        return False
    rest = _normalized(text).replace(_normalized(found[1]), " ", 1)
    return bool(_FILLER.match(rest.strip(" .!。！")))


def without_date(text: str) -> str:
    """Return a text without the first time it names: what it says happens, not when.

    "I start at the planning office next Monday" is "I start at the planning office": a
    head that reads what a dated statement changes reads it so (`Reading.moves`), since the
    day alone ("pushed back to the 21st") looks the same in a move and in a one-off.
    """
    found = _first_mention(text, _PHRASE_DAY, True)
    if found is None or found[1] not in text:
        return text
    return " ".join(text.replace(found[1], " ", 1).split()) or text


@dataclass(frozen=True)
class YearlyDate:
    """A day that comes back every year (a birthday, an anniversary)."""

    month: int
    day: int
    text: str
    """The words that named it, as written."""
    year: int | None = None
    """The year, when one was said ("born on March 2, 1990")."""

    @property
    def iso(self) -> str:
        """The ISO 8601 form of a yearly day without a year: `--MM-DD`."""
        return f"--{self.month:02d}-{self.day:02d}"


_YEARLY = [
    re.compile(r"(?:(\d{4}|[〇零一二三四五六七八九]{4})年)?" + ZD + "月" + ZD + "[日号]"),
    re.compile(NOT_IN_NUMBER + r"(\d{4})?([-/.])?(\d{1,2})[-/.](\d{1,2})(?![\d/]|[.,:]\d)"),
    re.compile(
        rf"\b(?:({EN_MON})\.?\s+(\d{{1,2}}){ORD}?|(?:the\s+)?(\d{{1,2}}){ORD}?\s+(?:of\s+)?"
        rf"({EN_MON}))\b(?:\s*,?\s*(\d{{4}})\b)?"
    ),
]
_LUNAR = re.compile("农历|阴历|旧历|lunar", re.I)


def find_yearly(text: str) -> YearlyDate | None:
    """Return the day of the year a text names ("三月二号", "June 5", "12/25", "1990-03-02").

    Used for what recurs (birthdays, anniversaries), so the year, if any, is kept aside.
    A lunar date (农历八月十五) names no fixed day of the Gregorian year: None.

    Example:
        >>> find_yearly("我生日是三月二号").iso
        '--03-02'
    """
    if _LUNAR.search(text):
        return None
    low = _normalized(text)
    for i, pattern in enumerate(_YEARLY):
        for m in pattern.finditer(low):
            if i == 0:
                year, month, day = m[1] and zh_int(m[1]), zh_int(m[2]), zh_int(m[3])
            elif i == 1:
                if m[1] is None and m[2] is not None:
                    continue  # "-3-2": part of something else
                year, month, day = m[1] and int(m[1]), int(m[3]), int(m[4])
            else:
                year = int(m[5]) if m[5] else None
                month, day = EN_MONTHS[m[1] or m[4]], int(m[2] or m[3])
            if month and day and safe_date(2000, month, day):  # 2000: February 29 exists
                return YearlyDate(month, day, text[m.start() : m.end()], year or None)
    return None


def find_window(query: str, now: datetime, *, lean: Lean | None = None) -> TimeWindow | None:
    """Return the span of time a query names, [start, end) in `now`'s timezone.

    Recurring times ("on Friday", "in May", "周五") are read back from `now` (queries
    mostly ask about the past) unless the query speaks of the future ("will", "要", ...)
    or `lean` says otherwise. "Two weeks ago" is a window one week wide around that day.
    Vague words ("recently", "最近") name no window: recency decay covers them.

    Args:
        query: The user's words.
        now: When the query is asked (timezone-aware or naive; the window follows it).
        lean: "past" or "future"; None reads it from the query's tense.

    Returns:
        The window, or None if the query names no time.

    Example:
        >>> w = find_window("上个月8号我在哪", datetime(2026, 11, 18))
        >>> (w.start.date(), w.end.date())
        (datetime.date(2026, 10, 8), datetime.date(2026, 10, 9))
    """
    if lean is None:
        low = _normalized(query)
        lean = "future" if _FUTURE.search(low) and not _PAST.search(low) else "past"
    found = _first_mention(query, now.date(), lean == "future")
    if found is None:
        return None
    span, words = found
    tz = now.tzinfo
    start = datetime.combine(span.first, time(), tzinfo=tz)
    try:
        end = datetime.combine(span.last + timedelta(days=1), time(), tzinfo=tz)
    except OverflowError:
        end = datetime.max.replace(tzinfo=tz)
    return TimeWindow(start, end, words)

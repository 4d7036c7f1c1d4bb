"""Resolve relative dates in English and Chinese ("next Wednesday", "下周三") to calendar dates."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta

_EN_DAYS = {
    "monday": 0,
    "mon": 0,
    "tuesday": 1,
    "tue": 1,
    "tues": 1,
    "wednesday": 2,
    "wed": 2,
    "thursday": 3,
    "thu": 3,
    "thurs": 3,
    "friday": 4,
    "fri": 4,
    "saturday": 5,
    "sat": 5,
    "sunday": 6,
    "sun": 6,
}
_ZH_DAYS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}
EN_MONTHS = {
    m: i + 1
    for i, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ]
    )
    for m in names
}
_ZH_NUM = {
    "一": 1,
    "二": 2,
    "两": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
    "十": 10,
}

_EN_DAY_RE = "|".join(sorted(_EN_DAYS, key=len, reverse=True))
EN_MONTH_RE = "|".join(sorted(EN_MONTHS, key=len, reverse=True))


@dataclass(frozen=True)
class DateMention:
    """A date found in text."""

    day: date
    text: str
    """The words that named it, as written."""
    end: date | None = None
    """Last day, when the words name a span ("next week", "下周")."""


def _monday(d: date) -> date:
    return d - timedelta(days=d.weekday())


def _upcoming(today: date, weekday: int) -> date:
    return today + timedelta(days=(weekday - today.weekday()) % 7)


def safe_date(year: int, month: int, day: int) -> date | None:
    """Return the date, or None if there is no such day (February 30)."""
    try:
        return date(year, month, day)
    except ValueError:
        return None


def _future_date(today: date, month: int, day: int, year: int | None) -> date | None:
    if year is not None:
        return safe_date(year, month, day)
    found = safe_date(today.year, month, day)
    if found is not None and found < today - timedelta(days=180):
        found = safe_date(today.year + 1, month, day)
    return found


def zh_int(token: str) -> int | None:
    """Read a number written in digits or in Chinese numerals up to 99 ("十二", "二十三")."""
    if token.isdigit():
        return int(token)
    if token in _ZH_NUM:
        return _ZH_NUM[token]
    if len(token) == 2 and token[0] == "十":
        return 10 + _ZH_NUM.get(token[1], 0)
    if len(token) in (2, 3) and token[-1] == "十" or (len(token) == 3 and token[1] == "十"):
        tens = _ZH_NUM.get(token[0], 0) * 10
        return tens + (_ZH_NUM.get(token[2], 0) if len(token) == 3 else 0)
    return None


MAX_DAYS_AHEAD = 3660


def _in_days(today: date, n: int, words: str) -> DateMention | None:
    """Return the day `n` days ahead; None past ten years (not a plan, maybe not a date)."""
    if n > MAX_DAYS_AHEAD:
        return None
    return DateMention(today + timedelta(days=n), words)


def find_date(text: str, now: datetime) -> DateMention | None:
    """Return the first date that text names, resolved against `now`.

    Args:
        text: A sentence in English or Chinese.
        now: When it was said; relative words are read from this day.

    Returns:
        The date mention, or None if the text names no date.

    """
    today = now.date()
    # Lower-case character by character so positions in `low` are positions in `text`
    # ("İ".lower() is two characters).
    low = "".join(ch.lower() if len(ch.lower()) == 1 else ch for ch in text)

    # Chinese first: these words cannot be confused with English ones.
    m = re.search(r"(下下|下|这|本|上)?(?:周|星期|礼拜)([一二三四五六日天])", text)
    if m:
        base = _monday(today)
        shift = {"下下": 14, "下": 7, "上": -7}.get(m.group(1) or "", 0)
        day = base + timedelta(days=shift + _ZH_DAYS[m.group(2)])
        if not m.group(1) and day < today:
            day += timedelta(days=7)
        return DateMention(day, m.group(0))
    m = re.search(
        r"(?:(\d{4})年)?(\d{1,2}|[一二三四五六七八九十]{1,3})月(\d{1,2}|[一二三四五六七八九十]{1,3})[日号]",
        text,
    )
    if m:
        month, dd = zh_int(m.group(2)), zh_int(m.group(3))
        if month and dd:
            found = _future_date(today, month, dd, int(m.group(1)) if m.group(1) else None)
            if found:
                return DateMention(found, m.group(0))
    for word, offset in (
        ("大后天", 3),
        ("后天", 2),
        ("明天", 1),
        ("明早", 1),
        ("明晚", 1),
        ("今天", 0),
        ("今晚", 0),
        ("昨天", -1),
        ("前天", -2),
    ):
        if word in text:
            return DateMention(today + timedelta(days=offset), word)
    m = re.search(r"(\d+|[一二三四五六七八九十两]{1,3})天(?:后|之后|以后)", text)
    if m and (n := zh_int(m.group(1))):
        return _in_days(today, n, m.group(0))
    for word, weeks in (
        ("下下周", 2),
        ("下周", 1),
        ("下星期", 1),
        ("下礼拜", 1),
        ("这周", 0),
        ("本周", 0),
        ("这个星期", 0),
    ):
        if word in text:
            start = _monday(today) + timedelta(days=7 * weeks)
            return DateMention(max(start, today), word, end=start + timedelta(days=6))
    if "周末" in text:
        sat = _upcoming(today, 5) + (timedelta(days=7) if "下周末" in text else timedelta())
        return DateMention(
            sat, "下周末" if "下周末" in text else "周末", end=sat + timedelta(days=1)
        )
    if "下个月" in text or "下月" in text:
        first = (today.replace(day=1) + timedelta(days=32)).replace(day=1)
        return DateMention(first, "下个月" if "下个月" in text else "下月")

    m = re.search(r"\b(\d{4})-(\d{2})-(\d{2})\b", low)
    if m and (found := safe_date(int(m.group(1)), int(m.group(2)), int(m.group(3)))):
        return DateMention(found, m.group(0))
    m = re.search(rf"\b(next|this|on|coming)?\s*({_EN_DAY_RE})\b", low)
    if m:
        weekday = _EN_DAYS[m.group(2)]
        if m.group(1) == "next":
            day = _monday(today) + timedelta(days=7 + weekday)
        else:
            day = _upcoming(today, weekday)
        return DateMention(day, text[m.start() : m.end()].strip())
    m = re.search(
        rf"\b(?:({EN_MONTH_RE})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?|(\d{{1,2}})(?:st|nd|rd|th)?"
        rf"(?:\s+of)?\s+({EN_MONTH_RE}))\b(?:,?\s+(\d{{4}}))?",
        low,
    )
    if m:
        month = EN_MONTHS[m.group(1) or m.group(4)]
        dd = int(m.group(2) or m.group(3))
        found = _future_date(today, month, dd, int(m.group(5)) if m.group(5) else None)
        if found:
            return DateMention(found, text[m.start() : m.end()])
    for word, offset in (
        ("day after tomorrow", 2),
        ("tomorrow", 1),
        ("tonight", 0),
        ("today", 0),
        ("yesterday", -1),
    ):
        if re.search(rf"\b{word}\b", low):
            return DateMention(today + timedelta(days=offset), word)
    m = re.search(r"\bin (\d+) days?\b", low)
    if m:
        return _in_days(today, int(m.group(1)), m.group(0))
    for word, weeks in (("next week", 1), ("this week", 0)):
        if word in low:
            start = _monday(today) + timedelta(days=7 * weeks)
            return DateMention(max(start, today), word, end=start + timedelta(days=6))
    if re.search(r"\b(this|next) weekend\b", low):
        sat = _upcoming(today, 5) + (timedelta(days=7) if "next weekend" in low else timedelta())
        return DateMention(sat, "weekend", end=sat + timedelta(days=1))
    if "next month" in low:
        first = (today.replace(day=1) + timedelta(days=32)).replace(day=1)
        return DateMention(first, "next month")
    return None

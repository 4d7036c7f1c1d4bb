"""The rules of the date grammar: each pattern of time words, and the span of days it names.

`memory.dates.grammar` reads a text with them. A rule is registered with `_rule(pattern,
tier)`; `RULES` keeps them by tier (see there). Calendar arithmetic lives in
`memory.dates.spans`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date, timedelta

from memory.dates.spans import (
    HOLIDAY_RE,
    MAX_DAYS_BACK,
    UNIT_DAYS,
    DaySpan,
    add_days,
    add_months,
    counted,
    day_of_month,
    lean_year,
    month_day,
    month_part,
    month_span,
    nearest_holiday,
    one_day,
    pick_part,
    safe_date,
    season_span,
    week_part,
    week_span,
    weekday_span,
    weekend_span,
    year_part,
    year_span,
)

EN_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_EN_DAYS = {name: i for i, name in enumerate(EN_WEEKDAYS)} | {
    "mon": 0, "tue": 1, "tues": 1, "wed": 2, "thu": 3, "thur": 3, "thurs": 3, "fri": 4,
    "sat": 5, "sun": 6,
}  # fmt: skip
_ENGLISH_WORDS = {"wed", "sat", "sun"}  # read as weekdays only after "on", "next", ...
EN_MONTHS = {
    m: i + 1
    for i, names in enumerate(
        [("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",),
         ("june", "jun"), ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"),
         ("october", "oct"), ("november", "nov"), ("december", "dec")]
    )
    for m in names
}  # fmt: skip
_ZH_DIGITS = {"〇": 0, "零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6,
              "七": 7, "八": 8, "九": 9}  # fmt: skip
_ZH_WEEKDAYS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}
_EN_COUNTS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
              "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
              "a few": 3, "few": 3, "a couple of": 2, "couple of": 2, "half a": 0.5}  # fmt: skip
_ZH_UNITS = {"天": "day", "周": "week", "星期": "week", "礼拜": "week", "月": "month", "年": "year"}
_ZH_SHIFT = {"上上": -2, "上": -1, "这": 0, "本": 0, "下": 1, "下下": 2}
_ZH_YEAR_SHIFT = {"大前": -3, "前": -2, "去": -1, "今": 0, "明": 1, "后": 2, "大后": 3}
_ZH_DAY_WORDS = {"大前天": -3, "大后天": 3, "前天": -2, "后天": 2, "昨天": -1,
                 "昨晚": -1, "昨日": -1, "昨儿": -1, "今天": 0, "今晚": 0, "今早": 0,
                 "今日": 0, "今儿": 0, "刚才": 0, "刚刚": 0, "明天": 1, "明早": 1,
                 "明晚": 1, "明日": 1, "明儿": 1}  # fmt: skip
_EN_DAY_WORDS = {"day before yesterday": -2, "day after tomorrow": 2, "yesterday": -1,
                 "last night": -1, "today": 0, "tonight": 0, "this morning": 0,
                 "this afternoon": 0, "this evening": 0, "just now": 0, "tomorrow": 1}  # fmt: skip
_SEASONS = {"spring": 3, "summer": 6, "fall": 9, "autumn": 9, "winter": 12}


def zh_int(token: str) -> int | None:
    """Read digits, Chinese numerals up to 99 ("二十三") or digit by digit ("二〇二三")."""
    if token.isascii() and token.isdigit():
        return int(token)
    tens, ten, ones = token.partition("十")
    if not ten:
        if not token or any(c not in _ZH_DIGITS for c in token):
            return None
        return int("".join(str(_ZH_DIGITS[c]) for c in token))
    if len(tens) > 1 or len(ones) > 1 or (tens and tens not in _ZH_DIGITS):
        return None
    if ones and ones not in _ZH_DIGITS:
        return None
    return (_ZH_DIGITS[tens] if tens else 1) * 10 + (_ZH_DIGITS[ones] if ones else 0)


def _zh_year(digits: str | None, relative: str | None, today: date) -> int | None:
    """Read "2023年" / "二〇二三年" (digits) or "去年" (relative: 去)."""
    if digits:
        return zh_int(digits)
    return today.year + _ZH_YEAR_SHIFT[relative] if relative else None


# --- the grammar ----------------------------------------------------------------------------------

ZD = r"(\d{1,2}|[一二三四五六七八九十两]{1,3})"  # a month or a day of the month
_ZY = r"(?:(\d{4}|[〇零一二三四五六七八九]{4})年|(大前|大后|前|去|今|明|后)年)"  # a year
_ZREL = r"(上上|下下|上|下|这|本)"
_ZCOUNT = r"(\d+|[一二三四五六七八九十两]{1,3}|几|半)"
EN_MON = "|".join(sorted(EN_MONTHS, key=len, reverse=True))
_EN_DAY = "|".join(sorted(_EN_DAYS, key=len, reverse=True))
_EN_COUNT = "|".join(re.escape(w) for w in sorted(_EN_COUNTS, key=len, reverse=True)) + r"|\d+"
ORD = r"(?:st|nd|rd|th)"
NOT_IN_NUMBER = r"(?<![\d.\-/+$#:])"  # not a piece of 2.0, 555-2023, +86, $2000, 10:30

Rule = Callable[[re.Match[str], date, bool], DaySpan | None]
RULES: list[tuple[re.Pattern[str], Rule, int]] = []
"""(pattern, reading, tier), by tier: a rule counts only if no rule of a lower tier matched.

Tier 0 names a calendar date ("April 10, 2023", "5月8号"): in "last weekend before April
10, 2023" the relative words hang on it. Tier 1 is every other time word; tier 2 a bare year.
"""


def _rule(pattern: str, tier: int = 1) -> Callable[[Rule], Rule]:
    """Register a reading of the words `pattern` matches (in lower-cased, width-folded text)."""

    def add(read: Rule) -> Rule:
        RULES.append((re.compile(pattern), read, tier))
        return read

    return add


# Chinese. `g` is the match; `t` today; `f` True when recurring times lean to the future.


@_rule(_ZY + "?" + ZD + "月" + ZD + "[日号]", tier=0)
def _zh_date(g: re.Match[str], t: date, f: bool) -> DaySpan | None:
    month, day = zh_int(g[3]), zh_int(g[4])
    if not month or not day:
        return None
    return month_day(t, month, day, _zh_year(g[1], g[2], t), f)


@_rule(_ZY + ZD + "月份?", tier=0)
def _zh_year_month(g: re.Match[str], t: date, f: bool) -> DaySpan | None:
    year, month = _zh_year(g[1], g[2], t), zh_int(g[3])
    return month_span(year, month) if year and month else None


_ZH_PARTS = {"初": "start", "上旬": "early", "中旬": "mid", "下旬": "late", "底": "end",
             "末": "end"}  # fmt: skip
_ZPART = "(初(?![一二三四五六七八九十])|上旬|中旬|下旬|底|末)"  # 八月初八 is a lunar day


@_rule(_ZY + "?" + ZD + "月份?" + _ZPART, tier=0)
def _zh_month_part(g: re.Match[str], t: date, f: bool) -> DaySpan | None:
    """三月底, 2023年3月初, 十月中旬."""
    month, part = zh_int(g[3]), _ZH_PARTS[g[4]]
    if not month or month > 12:
        return None
    year = _zh_year(g[1], g[2], t)
    if year is not None:
        return month_part(year, month, part)

    def of_year(shift: int) -> DaySpan | None:
        return month_part(t.year + shift, month, part)

    return pick_part(t, f, of_year)


@_rule("(?:" + _ZREL + r"个?|(?<![\d〇零一二三四五六七八九十两个]))月" + _ZPART)
def _zh_relative_month_part(g: re.Match[str], t: date, f: bool) -> DaySpan | None:
    """月底, 下个月初, 上个月下旬; a bare 月底 is this month's, or the next one's when past."""
    part = _ZH_PARTS[g[2]]

    def of_month(shift: int) -> DaySpan | None:
        first = add_months(t.replace(day=1), shift)
        return month_part(first.year, first.month, part) if first else None

    if g[1] is not None:
        return of_month(_ZH_SHIFT[g[1]])
    return pick_part(t, f, of_month)


@_rule(
    "(?:"
    + _ZY
    + r"年?|(?<![\d〇零一二三四五六七八九十年前后今明去大])年)(底|末|初(?![一二三四五六七八九十]))"
)
def _zh_year_part(g: re.Match[str], t: date, f: bool) -> DaySpan | None:
    """年底, 明年年初, 2027年底."""
    part = _ZH_PARTS[g[3]]
    year = _zh_year(g[1], g[2], t)
    if year is not None:
        return year_part(year, part)
    return pick_part(t, f, lambda shift: year_part(t.year + shift, part))


@_rule(_ZY)
def _zh_year_only(g: re.Match[str], t: date, f: bool) -> DaySpan | None:
    year = _zh_year(g[1], g[2], t)
    return year_span(year) if year else None


@_rule("(?:" + _ZY + "的?)?(" + HOLIDAY_RE + ")")
def _zh_holiday(g: re.Match[str], t: date, f: bool) -> DaySpan | None:
    return nearest_holiday(t, g[3], _zh_year(g[1], g[2], t), f)


@_rule(_ZREL + "个?月" + ZD + "[日号]")
def _zh_day_of_relative_month(g: re.Match[str], t: date, f: bool) -> DaySpan | None:
    day = zh_int(g[2])
    return day_of_month(t, _ZH_SHIFT[g[1]], day, f) if day else None


# A day of the month alone ("改到22号了"): not a line, a building or a seat numbered so.
@_rule(r"(?<![\d月一二三四五六七八九十两])" + ZD + "[日号](?![线楼店门床房院厅台机位车馆码])")
def _zh_day_of_month(g: re.Match[str], t: date, f: bool) -> DaySpan | None:
    day = zh_int(g[1])
    return day_of_month(t, None, day, f) if day and day <= 31 else None


@_rule(_ZREL + "个?月(?![饼亮光球])")
def _zh_relative_month(g: re.Match[str], t: date, f: bool) -> DaySpan | None:
    first = add_months(t.replace(day=1), _ZH_SHIFT[g[1]])
    return month_span(first.year, first.month) if first else None


@_rule(r"(?<![\d个])" + ZD + "月份?(?![饼亮光球])")
def _zh_month(g: re.Match[str], t: date, f: bool) -> DaySpan | None:
    month = zh_int(g[1])
    if not month or month > 12:
        return None
    return month_span(lean_year(t, (month, 1), (month, 31), f), month)


_ZH_NOT_WEEKDAY = "(?![共起直次样定些切般旦])"  # 上周一共 is "last week, in all"


@_rule(
    "(?:"
    + _ZREL
    + r"个?|(?<![一二三四五六七八九十两几每\d]))(?:周|星期|礼拜)([一二三四五六日天])"
    + _ZH_NOT_WEEKDAY
)
def _zh_weekday(g: re.Match[str], t: date, f: bool) -> DaySpan | None:
    weekday = _ZH_WEEKDAYS[g[2]]
    if g[1] is None:
        return weekday_span(t, weekday, "", f)
    return one_day(week_span(t, _ZH_SHIFT[g[1]]).first + timedelta(days=weekday))


@_rule("(?:" + _ZREL + "个?|(?<!每))周末")
def _zh_weekend(g: re.Match[str], t: date, f: bool) -> DaySpan | None:
    if g[1] is not None:
        return weekend_span(t, _ZH_SHIFT[g[1]])
    return weekend_span(t, 0 if f or t.weekday() >= 5 else -1)


@_rule(_ZREL + "个?(?:周|星期|礼拜)")
def _zh_week(g: re.Match[str], t: date, f: bool) -> DaySpan | None:
    return week_span(t, _ZH_SHIFT[g[1]])


@_rule(_ZCOUNT + "个?(半)?(天|周|星期|礼拜|月|年)(前|之前|以前|后|之后|以后)")
def _zh_counted(g: re.Match[str], t: date, f: bool) -> DaySpan | None:
    n = {"几": 3, "半": 0.5}.get(g[1]) or zh_int(g[1])
    if not n:
        return None
    return counted(t, n + (0.5 if g[2] else 0), _ZH_UNITS[g[3]], -1 if "前" in g[4] else 1)


@_rule("(?<![以之然最])(" + "|".join(sorted(_ZH_DAY_WORDS, key=len, reverse=True)) + ")")
def _zh_day_word(g: re.Match[str], t: date, f: bool) -> DaySpan | None:
    return one_day(add_days(t, _ZH_DAY_WORDS[g[1]]))


# English (on lower-cased text).


@_rule(NOT_IN_NUMBER + r"(\d{4})([-/])(\d{1,2})\2(\d{1,2})(?!\d)", tier=0)
def _iso_date(g: re.Match[str], t: date, f: bool) -> DaySpan | None:
    return one_day(safe_date(int(g[1]), int(g[3]), int(g[4])))


@_rule(NOT_IN_NUMBER + r"(\d{1,2})/(\d{1,2})(?:/(\d{4}))?(?![\d/]|[.,:]\d)", tier=0)
def _slash_date(g: re.Match[str], t: date, f: bool) -> DaySpan | None:
    month, day = int(g[1]), int(g[2])  # month first, as in "12/25"
    return month_day(t, month, day, int(g[3]) if g[3] else None, f)


@_rule(
    rf"\b(?:({EN_MON})\.?\s+(\d{{1,2}}){ORD}?|(?:on\s+)?(?:the\s+)?(\d{{1,2}}){ORD}?\s+"
    rf"(?:of\s+)?({EN_MON}))\b(?:\s*,?\s*(\d{{4}})\b)?",
    tier=0,
)
def _en_date(g: re.Match[str], t: date, f: bool) -> DaySpan | None:
    month, day = EN_MONTHS[g[1] or g[4]], int(g[2] or g[3])
    return month_day(t, month, day, int(g[5]) if g[5] else None, f)


@_rule(rf"\b({EN_MON})\.?,?\s+(?:of\s+)?(\d{{4}})\b", tier=0)
def _en_month_year(g: re.Match[str], t: date, f: bool) -> DaySpan | None:
    return month_span(int(g[2]), EN_MONTHS[g[1]])


@_rule(
    rf"\b(in|during|since|of|last|this|next|early|late|mid-?)\s+(?:(?:early|late|mid)-?\s*)?"
    rf"({EN_MON})\b(?:\.?,?\s+(?:of\s+)?(\d{{4}})\b)?"
)
def _en_month(g: re.Match[str], t: date, f: bool) -> DaySpan | None:
    which, month = g[1], EN_MONTHS[g[2]]
    if g[3]:
        return month_span(int(g[3]), month)  # "in May 2023"
    if g[2] == "may" and which not in ("in", "during", "last", "this", "next"):
        return None  # "may" is also a verb
    if which == "last":
        year = t.year if month < t.month else t.year - 1
    elif which == "next":
        year = t.year if month > t.month else t.year + 1
    elif which == "this":
        year = t.year
    else:
        year = lean_year(t, (month, 1), (month, 31), f)
    return month_span(year, month)


@_rule(r"\b(?:the\s+)?(" + "|".join(w.replace(" ", r"\s+") for w in _EN_DAY_WORDS) + r")\b")
def _en_day_word(g: re.Match[str], t: date, f: bool) -> DaySpan | None:
    return one_day(add_days(t, _EN_DAY_WORDS[" ".join(g[1].split())]))


def _en_count(word: str) -> float:
    """Read "3", "three", "a few", "half a"."""
    return int(word) if word.isdigit() else _EN_COUNTS[" ".join(word.split())]


@_rule(rf"\b({_EN_COUNT})\s+(day|week|fortnight|month|year)s?\s+(ago|from\s+now|later|hence)\b")
def _en_counted(g: re.Match[str], t: date, f: bool) -> DaySpan | None:
    return counted(t, _en_count(g[1]), g[2], -1 if g[3] == "ago" else 1)


@_rule(rf"\bin\s+({_EN_COUNT})\s+(day|week|fortnight|month|year)s?\b")
def _en_in_counted(g: re.Match[str], t: date, f: bool) -> DaySpan | None:
    return counted(t, _en_count(g[1]), g[2], 1)


@_rule(rf"\b(?:last|past)\s+({_EN_COUNT})\s+(day|week|month|year)s\b")
def _en_last_n(g: re.Match[str], t: date, f: bool) -> DaySpan | None:
    days = round(_en_count(g[1]) * UNIT_DAYS[g[2]])
    first = add_days(t, -days) if days <= MAX_DAYS_BACK else None
    return DaySpan(first, t) if first else None


@_rule(rf"\b(?:(last|this|next|coming|on|past)\s+)?({_EN_DAY})\b")
def _en_weekday(g: re.Match[str], t: date, f: bool) -> DaySpan | None:
    which = g[1] or ""
    if not which and g[2] in _ENGLISH_WORDS:
        return None
    how = {"next": "next", "last": "last", "past": "last"}.get(which, "")
    if which == "this" and not f:
        how = "this"  # "what did I do this Monday": this week's, never last week's
    if which == "coming":
        return weekday_span(t, _EN_DAYS[g[2]], "", True)
    return weekday_span(t, _EN_DAYS[g[2]], how, f)


@_rule(
    r"\b(last|this|next|coming|past|the)\s+"
    r"(weekend|week|month|year|spring|summer|fall|autumn|winter)\b"
)
def _en_relative(g: re.Match[str], t: date, f: bool) -> DaySpan | None:
    which, unit = g[1], g[2]
    shift = {"last": -1, "next": 1, "coming": 1}.get(which, 0)
    if unit == "weekend":
        if which == "the":  # "over the weekend": the coming one, or the last one begun
            shift = 0 if f or t.weekday() >= 5 else -1
        return weekend_span(t, {"past": -1, "coming": 0}.get(which, shift))
    if which == "the":
        return None
    if unit in _SEASONS:
        return season_span(t, which, _SEASONS[unit], f)
    if which == "past":  # the last 7 / 31 / 366 days
        first = add_days(t, -{"week": 7, "month": 31, "year": 366}[unit])
        return DaySpan(first, t) if first else None
    if unit == "week":
        return week_span(t, shift)
    if unit == "month":
        first = add_months(t.replace(day=1), shift)
        return month_span(first.year, first.month) if first else None
    return year_span(t.year + shift)


_EN_PARTS = {"end": "end", "beginning": "start", "start": "start", "middle": "mid",
             "early": "early", "mid": "mid", "late": "late"}  # fmt: skip
_EN_SHIFTS = {None: None, "the": None, "this": 0, "next": 1, "last": -1, "coming": 1}


def _part_of(unit: str, part: str, t: date) -> Callable[[int], DaySpan | None]:
    """Return a reading of `part` of the month, week or year `shift` units from today's."""

    def of(shift: int) -> DaySpan | None:
        if unit == "week":
            return week_part(t, shift, part)
        if unit == "year":
            return year_part(t.year + shift, part)
        first = add_months(t.replace(day=1), shift)
        return month_part(first.year, first.month, part) if first else None

    return of


@_rule(
    r"\b(?:the\s+)?(end|beginning|start|middle)\s+of\s+(?:(the|this|next|last|coming)\s+)?"
    r"(month|week|year)\b|\b(early|mid|late)[-\s]+(?:(this|next|last)\s+)?(month|week|year)\b"
    r"|\b(?:(this|next|last)\s+)?(month|week|year)[-\s]end\b"
)
def _en_relative_part(g: re.Match[str], t: date, f: bool) -> DaySpan | None:
    """Read "the end of the month", "beginning of next year", "late next month", "month-end"."""
    part = _EN_PARTS[g[1] or g[4] or "end"]
    which, unit = g[2] or g[5] or g[7], g[3] or g[6] or g[8]
    read = _part_of(unit, part, t)
    shift = _EN_SHIFTS[which]
    return read(shift) if shift is not None else pick_part(t, f, read)


@_rule(
    rf"\b(?:(?:the\s+)?(end|beginning|start|middle)\s+of|(early|mid|late))[-\s]+({EN_MON})\b"
    r"(?:\.?,?\s+(?:of\s+)?(\d{4})\b)?",
    tier=0,
)
def _en_month_part(g: re.Match[str], t: date, f: bool) -> DaySpan | None:
    """Read "the end of March", "early June 2027", "mid-May"."""
    part, month = _EN_PARTS[g[1] or g[2]], EN_MONTHS[g[3]]
    if g[3] == "may" and g[2] is None and g[1] is None:
        return None
    if g[4]:
        return month_part(int(g[4]), month, part)
    return pick_part(t, f, lambda shift: month_part(t.year + shift, month, part))


@_rule(r"\bthe\s+(week|weekend|month|year)\s+(after\s+next|before\s+last)\b")
def _en_two_away(g: re.Match[str], t: date, f: bool) -> DaySpan | None:
    """Read "the week after next" (下下周), "the month before last" (上上个月)."""
    shift = 2 if g[2].startswith("after") else -2
    if g[1] == "week":
        return week_span(t, shift)
    if g[1] == "weekend":
        return weekend_span(t, shift)
    if g[1] == "year":
        return year_span(t.year + shift)
    first = add_months(t.replace(day=1), shift)
    return month_span(first.year, first.month) if first else None


@_rule(rf"\b(?:on\s+)?the\s+(\d{{1,2}}){ORD}?\s+(?:of\s+)?(last|this|next)\s+month\b")
def _en_day_of_relative_month(g: re.Match[str], t: date, f: bool) -> DaySpan | None:
    return day_of_month(t, {"last": -1, "this": 0, "next": 1}[g[2]], int(g[1]), f)


@_rule(rf"\b(last|this|next)\s+month,?\s+on\s+the\s+(\d{{1,2}}){ORD}?\b")
def _en_relative_month_day(g: re.Match[str], t: date, f: bool) -> DaySpan | None:
    return day_of_month(t, {"last": -1, "this": 0, "next": 1}[g[1]], int(g[2]), f)


# "on the 14th", "pushed to the 22nd": not "to the 3rd floor" or "for the 2nd time".
_NOT_A_DAY = r"(?!\s+(?:floor|time|century|place|row|grade|round|lap|level|step|attempt|stop|exit))"


@_rule(rf"\b(?:on|to|for|till|until|by)\s+the\s+(\d{{1,2}}){ORD}\b" + _NOT_A_DAY)
def _en_day_of_month(g: re.Match[str], t: date, f: bool) -> DaySpan | None:
    return day_of_month(t, None, int(g[1]), f)


@_rule(rf"\b(?:(last|this|next)\s+)?({HOLIDAY_RE})\b(?:\s*,?\s*((?:19|20)\d{{2}})\b)?")
def _en_holiday(g: re.Match[str], t: date, f: bool) -> DaySpan | None:
    if g[3] or g[1] == "this":
        return nearest_holiday(t, g[2], int(g[3]) if g[3] else t.year, f)
    if g[1] is None:
        return nearest_holiday(t, g[2], None, f)
    shift = -1 if g[1] == "last" else 1
    span = nearest_holiday(t, g[2], None, shift > 0)  # the nearest one in that direction...
    if span is not None and (span.first >= t if shift < 0 else span.last <= t):
        return nearest_holiday(t, g[2], span.first.year + shift, f)  # ...unless it is today
    return span


@_rule(r"\b(?:in|during|since|of|by|early|late|mid-?|around)\s+((?:19|20)\d{2})\b(?![-/]\d)")
def _en_year(g: re.Match[str], t: date, f: bool) -> DaySpan | None:
    return year_span(int(g[1]))


@_rule(NOT_IN_NUMBER + r"\b((?:19|20)\d{2})\b(?![-/.:]\d)", tier=2)
def _bare_year(g: re.Match[str], t: date, f: bool) -> DaySpan | None:
    return year_span(int(g[1]))


RULES.sort(key=lambda rule: rule[2])  # stable: ties keep the order above

"""Parts of months, weeks and years, two-away words, yearly days and the tense of a statement.

Read on one fixed day, 2026-11-18 (a Wednesday; its week runs 16-22 November). Expected
values were worked out by hand from the calendar; the Chinese spans follow jionlp's reading
(月初 1-5, 上旬 1-10, 中旬 11-20, 下旬 21-end, 月底 25-end, 年初 Jan-Feb, 年底 Nov-Dec),
which `test_timeparse_oracles.py` checks against jionlp itself.
"""

from datetime import UTC, date, datetime, timedelta

import pytest

from memory.dates.grammar import (
    find_date,
    find_window,
    find_yearly,
    is_date_phrase,
    statement_lean,
)

NOW = datetime(2026, 11, 18, 10, 0, tzinfo=UTC)


def d(text: str) -> date:
    return date.fromisoformat(text)


# (text, find_date's day, its end or None, find_window's first day, its last day)
TABLE = [
    # --- Chinese: parts of a month
    ("月底交报告", "2026-11-30", None, "2026-10-25", "2026-10-31"),
    ("这个月底我要搬家", "2026-11-30", None, "2026-11-25", "2026-11-30"),
    ("本月底", "2026-11-30", None, "2026-11-25", "2026-11-30"),
    ("下个月底", "2026-12-31", None, "2026-12-25", "2026-12-31"),
    ("上个月底我去了趟上海", "2026-10-31", None, "2026-10-25", "2026-10-31"),
    ("月初发工资", "2026-12-01", "2026-12-05", "2026-11-01", "2026-11-05"),
    ("下个月初我们见面", "2026-12-01", "2026-12-05", "2026-12-01", "2026-12-05"),
    ("上个月下旬", "2026-10-21", "2026-10-31", "2026-10-21", "2026-10-31"),
    ("下个月中旬出差", "2026-12-11", "2026-12-20", "2026-12-11", "2026-12-20"),
    ("三月底", "2027-03-31", None, "2026-03-25", "2026-03-31"),
    ("2023年3月初", "2023-03-01", "2023-03-05", "2023-03-01", "2023-03-05"),
    ("十二月上旬考试", "2026-12-01", "2026-12-10", "2025-12-01", "2025-12-10"),
    ("十一月下旬", "2026-11-21", "2026-11-30", "2025-11-21", "2025-11-30"),  # not begun
    ("二月底", "2027-02-28", None, "2026-02-25", "2026-02-28"),
    # --- Chinese: parts of a year
    ("年底我要换工作", "2026-12-31", None, "2026-11-01", "2026-12-31"),
    ("明年年初", "2027-01-01", "2027-02-28", "2027-01-01", "2027-02-28"),
    ("明年底", "2027-12-31", None, "2027-11-01", "2027-12-31"),
    ("2027年底", "2027-12-31", None, "2027-11-01", "2027-12-31"),
    ("去年年底", "2025-12-31", None, "2025-11-01", "2025-12-31"),
    ("年初", "2027-01-01", "2027-02-28", "2026-01-01", "2026-02-28"),
    # --- Chinese: two away
    ("下下周我们去成都", "2026-11-30", "2026-12-06", "2026-11-30", "2026-12-06"),
    ("下下个月", "2027-01-01", "2027-01-31", "2027-01-01", "2027-01-31"),
    ("上上周五", "2026-11-06", None, "2026-11-06", "2026-11-06"),
    # --- English: parts
    ("by the end of the month", "2026-11-30", None, "2026-10-25", "2026-10-31"),
    ("at the end of this month", "2026-11-30", None, "2026-11-25", "2026-11-30"),
    ("the end of next month", "2026-12-31", None, "2026-12-25", "2026-12-31"),
    ("at the beginning of next month", "2026-12-01", "2026-12-05", "2026-12-01", "2026-12-05"),
    ("early next month", "2026-12-01", "2026-12-10", "2026-12-01", "2026-12-10"),
    ("mid next month", "2026-12-11", "2026-12-20", "2026-12-11", "2026-12-20"),
    ("late last month", "2026-10-21", "2026-10-31", "2026-10-21", "2026-10-31"),
    ("month-end close", "2026-11-30", None, "2026-10-25", "2026-10-31"),
    ("the end of the year", "2026-12-31", None, "2026-11-01", "2026-12-31"),
    ("the start of next year", "2027-01-01", "2027-02-28", "2027-01-01", "2027-02-28"),
    ("by the end of the week", "2026-11-20", None, "2026-11-13", "2026-11-15"),
    ("the end of this week", "2026-11-20", None, "2026-11-20", "2026-11-22"),
    ("the end of March", "2027-03-31", None, "2026-03-25", "2026-03-31"),
    ("in early June 2027", "2027-06-01", "2027-06-10", "2027-06-01", "2027-06-10"),
    ("mid-December", "2026-12-11", "2026-12-20", "2025-12-11", "2025-12-20"),
    # --- English: two away, fortnights
    ("the week after next", "2026-11-30", "2026-12-06", "2026-11-30", "2026-12-06"),
    ("the weekend after next", "2026-12-05", "2026-12-06", "2026-12-05", "2026-12-06"),
    ("the month after next", "2027-01-01", "2027-01-31", "2027-01-01", "2027-01-31"),
    ("the week before last", "2026-11-02", "2026-11-08", "2026-11-02", "2026-11-08"),
    ("the year after next", "2028-01-01", "2028-12-31", "2028-01-01", "2028-12-31"),
    ("in a fortnight", "2026-12-02", None, "2026-11-24", "2026-12-09"),
    ("a fortnight ago", "2026-11-04", None, "2026-10-27", "2026-11-11"),
    # --- a date phrase leading the sentence
    ("Next Friday I have a dentist appointment", "2026-11-27", None, "2026-11-27", "2026-11-27"),
    ("End of the month we close the books", "2026-11-30", None, "2026-10-25", "2026-10-31"),
]


@pytest.mark.parametrize(("text", "day", "end", "first", "last"), TABLE)
def test_parts_and_two_away_words(
    text: str, day: str, end: str | None, first: str, last: str
) -> None:
    found = find_date(text, NOW)
    assert found is not None and (found.day, found.end) == (d(day), end and d(end))
    window = find_window(text, NOW)
    assert window is not None
    assert (window.start.date(), window.end.date()) == (d(first), d(last) + timedelta(days=1))


@pytest.mark.parametrize(
    "text",
    [
        "八月初八是农历生日",
        "大年初一我们回老家",
        "周末去爬山",
        "the weekend",
        "I stand at the end of the line",
    ],
)
def test_words_that_are_not_parts_of_a_month(text: str) -> None:
    found = find_date(text, NOW)
    assert found is None or found.text not in ("月初", "年初", "月底", "end of the")


@pytest.mark.parametrize(
    ("text", "iso", "year"),
    [
        ("我生日是三月二号", "--03-02", None),
        ("我的生日是12月25日", "--12-25", None),
        ("我是1990年3月2日出生的", "--03-02", 1990),
        ("我是一九九〇年三月二日出生的", "--03-02", 1990),
        ("my anniversary is June 5", "--06-05", None),
        ("born on the 2nd of March, 1990", "--03-02", 1990),
        ("my bday is 12/25", "--12-25", None),
        ("I was born 1988-02-29", "--02-29", 1988),
        ("Her birthday is Feb 29", "--02-29", None),
    ],
)
def test_yearly_days(text: str, iso: str, year: int | None) -> None:
    found = find_yearly(text)
    assert found is not None and (found.iso, found.year) == (iso, year)


@pytest.mark.parametrize(
    "text", ["农历八月十五是我生日", "我下周三过生日", "I like June", "2月30日", "no date", "13/45"]
)
def test_no_yearly_day(text: str) -> None:
    assert find_yearly(text) is None


@pytest.mark.parametrize(
    ("text", "phrase"),
    [
        ("Next Friday", True), ("On Monday,", True), ("下周三", True),
        ("the end of the month", True), ("Next Friday I fly", False),
        ("上周三我们聊了", False), ("I like jazz", False),
    ],
)  # fmt: skip
def test_a_date_phrase_alone(text: str, phrase: bool) -> None:
    assert is_date_phrase(text) is phrase


@pytest.mark.parametrize(
    ("text", "lean", "day"),
    [
        ("周五我们开会了", "past", "2026-11-13"),
        ("周五我们开会", "future", "2026-11-20"),
        ("I met Anna on Friday", "past", "2026-11-13"),
        ("I will meet Anna on Friday", "future", "2026-11-20"),
        ("I booked a table for Friday", "future", "2026-11-20"),
        ("月底我们去了趟杭州", "past", "2026-10-31"),
        ("我约了周五吃饭", "future", "2026-11-20"),
        ("我订了周六的机票", "future", "2026-11-21"),
        # The 了 of a booking with its complement ("约在了", "排到了") tells the booking was
        # made: the day booked is ahead. A complement after another verb tells what happened.
        ("我的复诊约在了周五", "future", "2026-11-20"),
        ("体检排到了周五", "future", "2026-11-20"),
        ("周五我们走到了西湖", "past", "2026-11-13"),
    ],
)
def test_a_statement_that_tells_what_happened_leans_back(text: str, lean: str, day: str) -> None:
    assert statement_lean(text) == lean
    found = find_date(text, NOW, lean=statement_lean(text))
    assert found is not None and found.day == d(day)

from datetime import UTC, date, datetime

import pytest

from memory.dates.grammar import find_date

MONDAY = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("下周三我们上线", date(2026, 12, 9)),
        ("周五见", date(2026, 12, 4)),
        ("明天开会", date(2026, 12, 1)),
        ("后天出发", date(2026, 12, 2)),
        ("12月25日放假", date(2026, 12, 25)),
        ("三天后交付", date(2026, 12, 3)),
        ("2027年1月5日", date(2027, 1, 5)),
        ("next Wednesday", date(2026, 12, 9)),
        ("on Friday", date(2026, 12, 4)),
        ("tomorrow", date(2026, 12, 1)),
        ("on 2026-12-24", date(2026, 12, 24)),
        ("December 5th", date(2026, 12, 5)),
        ("5 January", date(2027, 1, 5)),
        ("in 10 days", date(2026, 12, 10)),
    ],
)
def test_dates_resolve_against_when_said(text: str, expected: date) -> None:
    found = find_date(text, MONDAY)
    assert found is not None and found.day == expected


def test_spans_have_an_end() -> None:
    found = find_date("下周我们要发布", MONDAY)
    assert found is not None and (found.day, found.end) == (date(2026, 12, 7), date(2026, 12, 13))


@pytest.mark.parametrize("text", ["I like jazz", "我喜欢猫", "May I ask something", "2026-13-45"])
def test_no_date(text: str) -> None:
    assert find_date(text, MONDAY) is None

"""The date grammar against two independent parsers, where they read an expression alike.

jionlp (Chinese) and dateparser (English) are dev dependencies used as oracles only. Both
work from data shipped in their wheels; the fixture below refuses any connection that is not
loopback while they load and parse, so a download would fail the test rather than slip by.

Not compared, because the conventions differ on purpose (the grammar's table says why):
"next Friday" (dateparser: the coming Friday; here: next week's, as "下周五"), "June 5"
said in November (dateparser leaning ahead: next June; here: a day passed less than 180
days ago keeps this year), "下周末" (jionlp: the Sunday; here: Saturday and Sunday) and
the bare 月底 / 月初 / 上旬 jionlp does not parse without a month.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest

from memory.dates.grammar import find_date, find_window

NOW = datetime(2026, 11, 18, 10, 0, tzinfo=UTC)  # a Wednesday


@pytest.fixture(scope="module")
def offline() -> Iterator[None]:
    real_connect = socket.socket.connect

    def loopback_only(self: socket.socket, address: Any) -> Any:
        host = address[0] if isinstance(address, tuple) else ""
        if self.family in (socket.AF_INET, socket.AF_INET6) and host not in (
            "127.0.0.1",
            "::1",
            "localhost",
        ):
            raise AssertionError(f"an oracle tried to reach {address}")
        return real_connect(self, address)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(socket.socket, "connect", loopback_only)
        yield


@pytest.fixture(scope="module")
def jionlp(offline: None) -> Any:
    return pytest.importorskip("jionlp")


@pytest.fixture(scope="module")
def dateparser(offline: None) -> Any:
    return pytest.importorskip("dateparser")


ZH = [
    "大前天", "上周三", "二〇二三年三月", "两天前", "下周五", "上上周五", "大后天", "下下周",
    "三月二号", "下个月底", "本月底", "这个月底", "上个月底", "下个月初", "这个月初", "三月初",
    "三月上旬", "三月中旬", "三月下旬", "三月底", "今年年底", "去年年底", "明年年初",
    "2023年5月8日", "去年", "明天", "昨天",
]  # fmt: skip


@pytest.mark.parametrize("text", ZH)
def test_chinese_windows_agree_with_jionlp(jionlp: Any, text: str) -> None:
    base = time.mktime(NOW.replace(tzinfo=None).timetuple())
    first, last = jionlp.parse_time(text, time_base=base)["time"]
    window = find_window(text, NOW)
    assert window is not None
    ours = (window.start.date(), (window.end - timedelta(days=1)).date())
    assert ours == (date.fromisoformat(first[:10]), date.fromisoformat(last[:10]))


EN = [
    "two days ago", "3 days ago", "a week ago", "a fortnight ago", "yesterday", "tomorrow",
    "day after tomorrow", "in 10 days", "in 2 weeks", "in a fortnight", "last wednesday",
    "March 2", "December 25", "2027-01-05", "5 January 2027",
]  # fmt: skip


@pytest.mark.parametrize("text", EN)
def test_english_days_agree_with_dateparser(dateparser: Any, text: str) -> None:
    settings = {"RELATIVE_BASE": NOW.replace(tzinfo=None), "PREFER_DATES_FROM": "future"}
    theirs = dateparser.parse(text, languages=["en"], settings=settings)
    found = find_date(text, NOW)
    assert theirs is not None and found is not None
    assert found.day == theirs.date()

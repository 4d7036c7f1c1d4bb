"""The date grammar against a table of English and Chinese sentences, read on one fixed day.

Each row: a sentence, the window `find_window` reads (a question's reading: recurring
times lean back unless the sentence speaks of the future), and the date `find_date` reads
(a statement's reading: recurring times lean ahead). "a..b" is a span of days, both
included; a fuzzy "two weeks ago" is a window around the day `find_date` returns. The
expected values were worked out by hand from the calendar: 2026-11-18 is a Wednesday, its
week runs 16–22 November.
"""

from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from memory.dates.grammar import find_date, find_window
from memory.dates.spans import LUNAR_YEARS, holiday_span

NOW = datetime(2026, 11, 18, 10, 0, tzinfo=UTC)  # a Wednesday

TABLE = [
    # --- Chinese: the cases the old grammars got wrong
    ("大前天我去了超市", "2026-11-15", "2026-11-15"),
    ("我下个月5号要去北京", "2026-12-05", "2026-12-05"),
    ("下周末我们去爬山", "2026-11-28..2026-11-29", "2026-11-28..2026-11-29"),
    ("二〇二三年五月我在哪里工作", "2023-05-01..2023-05-31", "2023-05-01..2023-05-31"),
    ("上个月8号我见了谁", "2026-10-08", "2026-10-08"),
    ("两周后我要交论文", "2026-11-28..2026-12-05", "2026-12-02"),
    ("国庆节我去了哪里", "2026-10-01..2026-10-07", "2027-10-01..2027-10-07"),
    # --- Chinese: holidays
    ("国庆节我要去日本", "2027-10-01..2027-10-07", "2027-10-01..2027-10-07"),
    ("2023年国庆节去了哪", "2023-10-01..2023-10-07", "2023-10-01..2023-10-07"),
    ("今年春节在哪过的", "2026-02-17..2026-02-23", "2026-02-17..2026-02-23"),
    ("中秋节我们吃了月饼", "2026-09-25", "2027-09-15"),
    ("元旦我们去看了烟花", "2026-01-01", "2027-01-01"),
    # --- Chinese: days
    ("十一月二十号我要去医院", "2026-11-20", "2026-11-20"),
    ("十一月二号我做了什么", "2026-11-02", "2026-11-02"),
    ("2023年5月8日发生了什么", "2023-05-08", "2023-05-08"),
    ("周三我们开会", "2026-11-18", "2026-11-18"),
    ("星期五我要去看牙医", "2026-11-20", "2026-11-20"),
    ("礼拜一我做了什么", "2026-11-16", "2026-11-23"),
    ("星期天我们去公园了", "2026-11-15", "2026-11-22"),
    ("上周三我们聊了什么", "2026-11-11", "2026-11-11"),
    ("这周五有空吗", "2026-11-20", "2026-11-20"),
    ("下周三上线", "2026-11-25", "2026-11-25"),
    ("下下周一开会", "2026-11-30", "2026-11-30"),
    ("三天前买的书", "2026-11-15", "2026-11-15"),
    ("3天后提醒我", "2026-11-21", "2026-11-21"),
    ("后天出发去上海", "2026-11-20", "2026-11-20"),
    ("大后天交报告", "2026-11-21", "2026-11-21"),
    ("刚才我说了什么", "2026-11-18", "2026-11-18"),
    ("今天晚上吃什么", "2026-11-18", "2026-11-18"),
    ("我们昨晚看了电影", "2026-11-17", "2026-11-17"),
    ("明天下午三点开会", "2026-11-19", "2026-11-19"),
    # --- Chinese: spans
    ("上周我们聊了什么", "2026-11-09..2026-11-15", "2026-11-09..2026-11-15"),
    ("我上周一共跑了三次", "2026-11-09..2026-11-15", "2026-11-09..2026-11-15"),
    ("周末去哪玩了", "2026-11-14..2026-11-15", "2026-11-21..2026-11-22"),
    ("这个月我花了多少钱", "2026-11-01..2026-11-30", "2026-11-18..2026-11-30"),
    ("上上个月的账单", "2026-09-01..2026-09-30", "2026-09-01..2026-09-30"),
    ("5月份的计划", "2026-05-01..2026-05-31", "2027-05-01..2027-05-31"),
    ("去年5月我去了杭州", "2025-05-01..2025-05-31", "2025-05-01..2025-05-31"),
    ("明年我想学钢琴", "2027-01-01..2027-12-31", "2027-01-01..2027-12-31"),
    ("去年我住在哪", "2025-01-01..2025-12-31", "2025-01-01..2025-12-31"),
    ("半个月前我买了一本书", "2026-10-26..2026-11-10", "2026-11-03"),
    ("三个月前我换了工作", "2026-08-02..2026-09-02", "2026-08-18"),
    # --- English: the cases the old grammars got wrong
    ("what did I do the day before yesterday?", "2026-11-16", "2026-11-16"),
    ("what are we doing next weekend?", "2026-11-28..2026-11-29", "2026-11-28..2026-11-29"),
    ("I have a dentist appointment on the 5th of next month", "2026-12-05", "2026-12-05"),
    ("What did Nate share in May 2023?", "2023-05-01..2023-05-31", "2023-05-01..2023-05-31"),
    ("where did I eat last month on the 8th?", "2026-10-08", "2026-10-08"),
    ("I'm flying to Tokyo in two weeks", "2026-11-28..2026-12-05", "2026-12-02"),
    # --- English: days
    ("what happened three days ago?", "2026-11-15", "2026-11-15"),
    ("what did I eat last Friday?", "2026-11-13", "2026-11-13"),
    ("I'm meeting Anna next Monday", "2026-11-23", "2026-11-23"),
    ("remind me tomorrow", "2026-11-19", "2026-11-19"),
    ("what did I say yesterday?", "2026-11-17", "2026-11-17"),
    ("we shipped it on 2026-11-02", "2026-11-02", "2026-11-02"),
    ("what happened on 12/25?", "2025-12-25", "2026-12-25"),
    ("what did I do on Friday?", "2026-11-13", "2026-11-20"),
    ("what will I do on Friday?", "2026-11-20", "2026-11-20"),
    ("in 10 days I move", "2026-11-28", "2026-11-28"),
    ("What happened on 9 November, 2022?", "2022-11-09", "2022-11-09"),
    ("What movie did he watch on October 6, 2022?", "2022-10-06", "2022-10-06"),
    ("what did we do at Christmas?", "2025-12-25", "2026-12-25"),
    # a day of the month alone: a question's leans back, a statement's ahead
    ("the review got pushed to the 22nd", "2026-10-22", "2026-11-22"),
    ("my flu jab is booked for the 20th", "2026-10-20", "2026-11-20"),
    ("复查改到25号了", "2026-10-25", "2026-11-25"),
    # --- English: spans
    ("any plans for this weekend?", "2026-11-21..2026-11-22", "2026-11-21..2026-11-22"),
    ("over the weekend I painted the fence", "2026-11-14..2026-11-15", "2026-11-21..2026-11-22"),
    ("what did we discuss last week?", "2026-11-09..2026-11-15", "2026-11-09..2026-11-15"),
    ("I'll finish it this week", "2026-11-16..2026-11-22", "2026-11-18..2026-11-22"),
    ("where did I travel last year?", "2025-01-01..2025-12-31", "2025-01-01..2025-12-31"),
    ("where was I in March?", "2026-03-01..2026-03-31", "2027-03-01..2027-03-31"),
    ("I visited Paris 2 weeks ago", "2026-10-31..2026-11-07", "2026-11-04"),
    ("a month from now I start", "2026-12-02..2027-01-02", "2026-12-18"),
    ("where did we go last summer?", "2026-06-01..2026-08-31", "2026-06-01..2026-08-31"),
    ("we'll travel next summer", "2027-06-01..2027-08-31", "2027-06-01..2027-08-31"),
]

NO_DATE = [
    "我五个人去吃饭",
    "version 2.0 is out",
    "call me at 555-2023",
    "my number is 138 0013 8000",
    "I bought 3 apples",
    "I like jazz",
    "我喜欢猫",
    "May I ask something?",
    "I'm available 24/7",
    "每周一我都去游泳",
    "我一周三次去健身房",
    "这个月饼很好吃",
    "以前天气很好",
    "然后天气变冷了",
    "I love sitting in the sun",
    "rent is $2000 a month",
    "I may go hiking",
    "最近我在学日语",
    "recently I started running",
    "我住在5号楼",
    "the meeting ran from 3:15 to 4:30",
    "I take the lift to the 3rd floor",
    "for the 2nd time I asked",
    "坐3号线去公司",
    "我在2号门等你",
]


def _days(spec: str) -> tuple[date, date]:
    first, _, last = spec.partition("..")
    return date.fromisoformat(first), date.fromisoformat(last or first)


@pytest.mark.parametrize(("text", "window", "when"), TABLE, ids=[row[0] for row in TABLE])
def test_window_of_a_question(text: str, window: str, when: str) -> None:
    found = find_window(text, NOW)
    assert found is not None, text
    first, last = _days(window)
    assert (found.start, found.end) == (
        datetime.combine(first, datetime.min.time(), tzinfo=UTC),
        datetime.combine(last + timedelta(days=1), datetime.min.time(), tzinfo=UTC),
    ), found
    assert found.text and found.text in text


@pytest.mark.parametrize(("text", "window", "when"), TABLE, ids=[row[0] for row in TABLE])
def test_date_of_a_statement(text: str, window: str, when: str) -> None:
    found = find_date(text, NOW)
    assert found is not None, text
    day, end = _days(when)
    assert (found.day, found.end) == (day, end if end != day else None), found
    assert found.text and found.text in text


def test_the_table_is_large_and_bilingual() -> None:
    chinese = [row for row in TABLE if any("\u4e00" <= c <= "\u9fff" for c in row[0])]
    assert len(TABLE) >= 60 and 25 <= len(chinese) <= len(TABLE) - 25


@pytest.mark.parametrize("text", NO_DATE)
def test_no_date(text: str) -> None:
    assert find_window(text, NOW) is None
    assert find_date(text, NOW) is None


def test_lean_can_be_chosen() -> None:
    ahead = find_window("周五", NOW, lean="future")
    back = find_date("周五", NOW, lean="past")
    assert ahead is not None and ahead.start.date() == date(2026, 11, 20)
    assert back is not None and back.day == date(2026, 11, 13)


def test_window_follows_the_timezone_of_now() -> None:
    shanghai = timezone(timedelta(hours=8))
    now = datetime(2026, 11, 18, 1, 0, tzinfo=shanghai)  # still the 17th in UTC
    found = find_window("昨天", now)
    assert found is not None
    assert found.start == datetime(2026, 11, 17, tzinfo=shanghai)
    assert found.end - found.start == timedelta(days=1)


def test_a_calendar_date_wins_over_relative_words() -> None:
    found = find_window("What did Maria do last weekend before April 10, 2023?", NOW)
    assert found is not None and found.start.date() == date(2023, 4, 10)


def test_lunar_festivals_fall_in_their_seasons() -> None:
    # 春节 lies between 21 January and 20 February; 中秋 between 7 September and 8 October.
    for year in LUNAR_YEARS:
        spring, mid_autumn = holiday_span("春节", year), holiday_span("中秋", year)
        assert spring is not None and mid_autumn is not None
        assert date(year, 1, 21) <= spring[0] <= date(year, 2, 20)
        assert date(year, 9, 7) <= mid_autumn[0] <= date(year, 10, 8)
        assert (spring[1] - spring[0]).days == 6 and mid_autumn[0] == mid_autumn[1]
    assert holiday_span("春节", max(LUNAR_YEARS) + 1) is None  # no guess outside the table

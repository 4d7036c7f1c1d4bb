"""Days moved by news read as a plain statement, forget requests whose reason speaks of
something else, an age said of what a sentence is about, and updates whose family is misread
or that share only a word with what they change (issue 22).

Phrasings here are the project's own, none from the fresh sets.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest
from fakes import save_said
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from graphs.context import Context
from graphs.memory_agent import build_graph
from graphs.offline_rules import extract_rules
from graphs.settings import Settings
from memory.requests import forget_requests
from memory.service import MemoryService
from memory.text.asking import asks_by_form
from memory.text.phrases import topic_clause
from memory.understanding.updates import TERM_FLOOR, _by_a_term, changed_record

NOW = datetime(2026, 12, 6, 9, tzinfo=UTC)


async def _turn(graph: Any, thread: str, text: str, when: datetime) -> None:
    await graph.ainvoke(
        {"messages": [HumanMessage(text)], "turn_time": when.isoformat()},
        {"configurable": {"thread_id": thread}},
        context=Context(user_id="u"),
    )


def _day(when: datetime, zh: bool) -> str:
    return f"{when.month}月{when.day}号" if zh else f"{when:%B} {when.day}"


@pytest.mark.parametrize(
    ("before", "after", "zh"),
    [
        # read as a statement about work, the news in its first clause
        ("my physio appointment is on {old} at 10am",
         "physio place rang, bumped me back to {new}, same slot, which suits me better tbh", False),
        ("{old}约了理发", "理发店打电话说改到{new}了，时间不变", True),
    ],
)  # fmt: skip
async def test_news_that_a_day_moved_moves_the_event(
    index: Any, before: str, after: str, zh: bool
) -> None:
    # Days ahead of today: an event already past is never listed for an update to find.
    now = datetime.now(UTC).replace(hour=9, minute=0, second=0, microsecond=0)
    old, new = now + timedelta(days=40), now + timedelta(days=47)
    store = InMemoryStore()
    graph = build_graph(InMemorySaver(), store, settings=Settings(), index=index)
    await _turn(graph, "a", before.format(old=_day(old, zh)), now)
    await _turn(graph, "b", after.format(new=_day(new, zh)), now + timedelta(minutes=5))
    events = [r for r in MemoryService(store, index).list("u") if r.kind == "event"]
    assert [r.value for r in events] == [f"{new:%Y-%m-%d}"], [(r.content, r.value) for r in events]


async def test_a_new_day_for_something_else_moves_nothing(index: Any) -> None:
    now = datetime.now(UTC).replace(hour=9, minute=0, second=0, microsecond=0)
    first, second = now + timedelta(days=40), now + timedelta(days=44)
    store = InMemoryStore()
    graph = build_graph(InMemorySaver(), store, settings=Settings(), index=index)
    await _turn(graph, "a", f"my physio appointment is on {_day(first, False)} at 10am", now)
    await _turn(graph, "b", f"flying out to Oslo on {_day(second, False)} for work", now)
    events = sorted(r.value for r in MemoryService(store, index).list("u") if r.kind == "event")
    assert events == [f"{first:%Y-%m-%d}", f"{second:%Y-%m-%d}"], events


@pytest.mark.parametrize(
    ("said", "topic", "not_in"),
    [
        # the request's own words, cut at its full stop
        ("forget what i told you about my pottery nights. my sister thinks they're a waste",
         "my pottery nights", "sister"),
        # "bin" is a verb of removal: its words too, not the clause about a relative
        ("bin what i said about the allotment. my brother wants it kept quiet",
         "the allotment", "brother"),
        # "rather you didn't hold onto" is worded too: the clause that asks, not the reason
        ("i'd rather you didn't hold onto the allotment stuff. my brother wants it kept quiet",
         "the allotment", "brother"),
    ],
)  # fmt: skip
def test_the_clause_that_asks_names_the_topic_not_the_reason_after_it(
    said: str, topic: str, not_in: str
) -> None:
    (found,) = forget_requests(said)
    assert found.query == topic and not_in not in found.query, found
    # the relative named in the reason is not what is asked about
    assert found.subject is None, found


def test_a_title_full_stop_does_not_end_the_topic() -> None:
    (found,) = forget_requests("forget about Dr. Okafor")
    assert found.query == "Dr. Okafor", found


def test_what_i_said_about_is_no_part_of_the_topic() -> None:
    (found,) = forget_requests("please drop what I said about my sourdough starter")
    assert found.query == "my sourdough starter", found


def test_an_aside_in_brackets_that_says_why_is_no_part_of_the_topic() -> None:
    assert topic_clause("my sourdough starter (I killed it, long story)") == "my sourdough starter"
    # an aside that says what a thing is stays
    assert topic_clause("Mochi (my cat)") == "Mochi (my cat)"


@pytest.mark.parametrize(
    ("said", "users_age"),
    [
        ("greyhound, 9 now, slowing down a lot", False),
        ("我家兔子叫团子，五岁了，牙口不太好", False),
        ("I'm 52, still working shifts at the depot", True),
        ("我今年41，在超市上班", True),
    ],
)
def test_an_age_said_of_what_the_sentence_is_about_is_not_the_users(
    said: str, users_age: bool
) -> None:
    subjects = [m.subject for m in extract_rules(said, NOW).memories]
    assert ("profile.age" in subjects) is users_age, subjects


# --- an update whose family is misread, or that shares only a word with what it changes ----


def test_an_update_plainly_about_a_record_of_another_family_changes_it() -> None:
    records = [
        ("home.网", "用户说：家里网是电信的，一个月89。"),
        ("possessions.car", "用户说：我开一辆卡罗拉。"),
    ]
    # read as possessions, the broadband filed under home: weighed among all, it is taken
    assert changed_record("网费换成联通的了，一个月才49", "possessions", records) == 0
    # news of nothing remembered changes nothing, read in any family
    assert changed_record("楼下新开了家奶茶店，排队的人好多", "possessions", records) is None


def test_the_one_record_sharing_a_word_with_an_update_is_taken_when_near_enough() -> None:
    said = "班主任换了 新来的姓周"
    contents = ["用户说：我们班主任是王老师。", "用户说：我妹在读初二。"]
    assert _by_a_term(said, np.array([0.2, 0.21]), contents) == 0
    # under the floor a shared word is all they have in common
    assert _by_a_term(said, np.array([TERM_FLOOR - 0.01, 0.21]), contents) is None
    # a word two records share says neither
    both = ["用户说：我们班主任是王老师。", "用户说：班主任让我当了课代表。"]
    assert _by_a_term(said, np.array([0.2, 0.21]), both) is None


# --- questions said without a question mark, and a message that states, then asks -----------


@pytest.mark.parametrize(
    ("said", "asks"),
    [
        ("any good curry houses round mine", True),
        ("doing a roast sunday for the in-laws, any ideas", True),
        ("is a daily nap daft at my age", True),
        ("晚上弄点啥好", True),
        ("Any day now the decorators start", False),
        ("we don't have any pets", False),
        ("anyway I moved to Derby", False),
        ("我想吃点什么都行", False),
    ],
)
def test_a_question_without_a_question_mark_asks_by_its_form(said: str, asks: bool) -> None:
    assert asks_by_form(said) is asks


def test_a_message_that_states_then_asks_lifts_the_family_it_asks_about(
    service: MemoryService,
) -> None:
    save_said(
        service,
        [
            "我老汉儿血糖高，甜的一口都不能碰",
            "我在一家快递站上班，天天分拣到半夜",
            "我养了只边牧叫可乐",
            "每周三晚上去打羽毛球",
            "我住在郫都区",
            "我对象在银行上班",
            "我对芒果过敏",
            "我血压有点高，医生让少吃盐",
            "我开的是一辆二手飞度",
            "我闺女今年上初一",
            "下个月15号要去重庆出差",
            "我喜欢周末去钓鱼",
            "我妈腿脚不好，膝盖疼",
        ],
        NOW,
    )
    # The first part states, so the message is kept; the last asks, so what is filed under the
    # father (老汉儿 is a word for him) is lifted.
    hits = service.search("u", "这周末回去给我爸做顿饭，整点啥菜好", 5)
    top = " | ".join(h.record.content for h in hits if h.why == "relevant")
    assert "血糖" in top, top


@pytest.mark.parametrize(
    ("said", "kind"),
    [
        ("I play five-a-side every other Friday", "preference"),
        ("we see my parents most weekends", "preference"),
        ("my gran is Irish, she still bakes soda bread every sunday", "fact"),
        ("我们一般周末回我妈家吃饭", "preference"),
        # one weekend is an event
        ("I'm going fishing this weekend", "event"),
        ("这周末回我妈家吃饭", "event"),
    ],
)
def test_a_day_said_as_recurring_is_a_routine_not_a_one_off_event(said: str, kind: str) -> None:
    # (a fact said with one stays a fact: of the gran, not an event dated next sunday)
    kinds = {m.kind for m in extract_rules(said, NOW).memories}
    assert kinds == {kind}, (said, kinds)


@pytest.mark.parametrize(
    ("said", "topic"),
    [
        ("oops, strike that last bit, nothing's booked yet", "that"),
        (
            "Kindly forget whatever I told you about my allotment, I have given it up.",
            "my allotment",
        ),
        (
            "Please remove the details about my allotment from your notes, I gave it up.",
            "my allotment",
        ),
    ],
)
def test_a_request_opened_politely_or_naming_its_details_keeps_only_its_topic(
    said: str, topic: str
) -> None:
    (found,) = forget_requests(said)
    assert found.query == topic, found


def test_words_for_one_role_at_work_share_a_word_when_an_update_is_matched() -> None:
    contents = ["User said: my line manager is Olga.", "User said: I drive a Fiesta."]
    assert _by_a_term("new boss started today, Hamid", np.array([0.18, 0.05]), contents) == 0

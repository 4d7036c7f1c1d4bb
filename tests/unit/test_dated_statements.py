"""Dated statements through the offline extractor and the graph: what recurs, what happened.

A birthday or an anniversary is a fact with a yearly day (`--MM-DD`) that never expires; a
past event is an event on its past day that stays; a plan expires the day after it happens.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from graphs.context import Context
from graphs.memory_agent import build_graph
from graphs.offline import OfflineChatModel
from graphs.offline_rules import extract_rules
from graphs.settings import Settings
from memory.dates.recurring import recurring_fact
from memory.service import MemoryService

NOW = datetime(2026, 11, 18, 10, 0, tzinfo=UTC)  # a Wednesday

# (statement, kind, subject, value)
YEARLY = [
    ("我生日是三月二号", "fact", "profile.birthday", "--03-02"),
    ("我的生日是五月三日。", "fact", "profile.birthday", "--05-03"),
    ("我妈妈的生日是十月一号", "fact", "family.妈妈.birthday", "--10-01"),
    ("我们结婚纪念日是六月五号", "fact", "dates.anniversary.wedding", "--06-05"),
    ("我是1990年3月2日出生的", "fact", "profile.birthday", "--03-02"),
    ("My anniversary is June 5.", "fact", "dates.anniversary", "--06-05"),
    ("Our wedding anniversary is on the 5th of June.", "fact", "dates.anniversary.wedding",
     "--06-05"),
    ("My mom's birthday is October 1.", "fact", "family.mother.birthday", "--10-01"),
    ("Lena's birthday is May 3.", "fact", "dates.birthday.lena", "--05-03"),
    ("I was born on March 2, 1990.", "fact", "profile.birthday", "--03-02"),
    ("my bday is 12/25", "fact", "profile.birthday", "--12-25"),
    # how old someone turns on a day (a relative's is filed with what else is said of them)
    ("my nephew Tomas turns 12 on 9 October", "fact", "family.nephew.birthday", "--10-09"),
    ("Priya turns 40 on May 3", "fact", "dates.birthday.priya", "--05-03"),
    ("I turn 50 on the 2nd of July", "fact", "profile.birthday", "--07-02"),
    ("我儿子5月6号满十岁", "fact", "family.儿子.birthday", "--05-06"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "kind", "subject", "value"), YEARLY)
def test_birthdays_and_anniversaries_are_yearly_facts(
    text: str, kind: str, subject: str, value: str
) -> None:
    (cand,) = extract_rules(text, NOW).memories
    assert (cand.kind, cand.subject, cand.value, cand.event_date) == (kind, subject, value, None)
    assert "every year" in cand.content or "每年" in cand.content


@pytest.mark.parametrize(
    "text",
    ["my birthday is not June 5", "农历八月十五是我生日", "Today's birthday party is on June 5",
     "I fly to Paris on June 5", "我的生日快到了"],
)  # fmt: skip
def test_no_yearly_fact(text: str) -> None:
    assert recurring_fact(text) is None


# (statement, the day of the event)
DATED = [
    ("大前天我去了超市", "2026-11-15"),
    ("上周三我们聊了项目进度", "2026-11-11"),
    ("Two days ago I went hiking with Tom.", "2026-11-16"),
    ("二〇二三年三月我去了东京", "2023-03-01"),
    ("I met Anna on Friday.", "2026-11-13"),
    ("月底我们去了趟杭州", "2026-10-31"),
    ("Next Friday I have a dentist appointment.", "2026-11-27"),
    ("Next Friday, I fly to Paris.", "2026-11-27"),
    ("下周三，我们上线", "2026-11-25"),
    ("月底我要交报告", "2026-11-30"),
    ("I need to submit the report by the end of the month.", "2026-11-30"),
    ("The week after next we move to Lyon.", "2026-11-30"),
    ("In a fortnight I start my new job.", "2026-12-02"),
    ("下下周我们去成都", "2026-11-30"),
    ("月初我们发工资", "2026-12-01"),
    ("我约了周五和老王吃饭", "2026-11-20"),
    ("周五我们开会了", "2026-11-13"),
    # no speaker said: the model reads the user's own plan
    ("got a dentist appt on the 20th", "2026-11-20"),
]


@pytest.mark.parametrize(("text", "day"), DATED)
def test_past_and_planned_events_keep_their_day(text: str, day: str) -> None:
    (cand,) = extract_rules(text, NOW).memories
    assert (cand.kind, cand.event_date) == ("event", day)
    assert day in cand.content


def test_a_leading_date_does_not_hide_a_typed_statement() -> None:
    (cand,) = extract_rules("上个月我搬到无锡了", NOW).memories
    assert (cand.kind, cand.subject, cand.value) == ("fact", "profile.city", "无锡")


def test_a_past_year_is_not_an_event() -> None:
    assert [c.kind for c in extract_rules("I moved to Berlin in 2019.", NOW).memories] == ["fact"]
    # Kept, at most, in the user's words: never as a dated event.
    kinds = [c.kind for c in extract_rules("2019年我们去过一次日本", NOW).memories]
    assert "event" not in kinds


async def test_through_the_graph_what_recurs_and_what_happened_stay(index) -> None:
    store = InMemoryStore()
    graph = build_graph(
        InMemorySaver(), store, settings=Settings(), model=OfflineChatModel(), index=index
    )
    said = ["我生日是三月二号", "大前天我去了超市", "Next Friday I have a dentist appointment."]
    for i, text in enumerate(said):
        await graph.ainvoke(
            {"messages": [HumanMessage(text)]},
            {"configurable": {"thread_id": f"t{i}"}},
            context=Context(user_id="alice"),
        )
    svc = MemoryService(store, index)
    typed = {r.subject: r for r in svc.list("alice")}
    birthday = typed["profile.birthday"]
    assert (birthday.kind, birthday.value, birthday.expires_at) == ("fact", "--03-02", None)
    (shop,) = [r for r in typed.values() if "超市" in r.content]
    today = shop.source.said_at.date() if shop.source.said_at else date.today()
    assert shop.kind == "event" and shop.valid_from is not None
    assert shop.valid_from.date() == today - timedelta(days=3) and shop.expires_at is None
    (dentist,) = [r for r in typed.values() if "dentist" in r.content]
    assert dentist.kind == "event" and dentist.expires_at is not None

    # A month on, the appointment has expired; the birthday and the trip to the shop stay.
    svc.consolidate("alice", now=datetime.now(UTC) + timedelta(days=30))
    status = {r.subject: r.status for r in svc.list("alice", include_inactive=True)}
    assert (status["profile.birthday"], status[shop.subject]) == ("active", "active")
    assert status[dentist.subject] == "expired"

    out = await graph.ainvoke(
        {"messages": [HumanMessage("我生日是哪天？")]},
        {"configurable": {"thread_id": "q"}},
        context=Context(user_id="alice"),
    )
    assert "用户的生日是三月二号（每年）。" in [r["content"] for r in out["recalled"]]


async def test_a_conversation_played_on_its_own_day_is_judged_on_that_day(index) -> None:
    # Turns said at a time of their own (an imported conversation): a plan made for a day
    # that has passed by the clock is not over when the turn that states it is written.
    store = InMemoryStore()
    graph = build_graph(
        InMemorySaver(), store, settings=Settings(), model=OfflineChatModel(), index=index
    )
    monday = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)

    async def say(text: str, thread: str, at: datetime) -> dict:
        return await graph.ainvoke(
            {"messages": [HumanMessage(text)], "turn_time": at.isoformat()},
            {"configurable": {"thread_id": thread}},
            context=Context(user_id="june"),
        )

    await say("Next Friday I'm taking the car in for its MOT.", "plan", monday)
    svc = MemoryService(store, index)
    (plan,) = [r for r in svc.list("june", include_inactive=True) if "MOT" in r.content]
    assert plan.kind == "event" and plan.created_at.date() == monday.date()
    assert plan.expires_at is not None and plan.expires_at > monday

    out = await say("What's on for the car this week?", "ask", monday + timedelta(days=1))
    assert any("MOT" in r["content"] for r in out["recalled"])
    # By the clock the day is long gone: a search without a time of its own leaves it out.
    assert not any("MOT" in r.record.content for r in svc.search("june", "car MOT"))


def test_news_of_a_day_ahead_moves_no_event_that_has_happened() -> None:
    # With only a past event listed, a dentist appointment next week (news at 0.22) moved the
    # trip to the shop three days ago onto its day; it depended on the day the test ran.
    now = datetime(2026, 12, 8, 9, tzinfo=UTC)
    shop = ("r1", "event.我去了超市", "大前天我去了超市（2026-12-05）")
    got = extract_rules("Next Friday I have a dentist appointment.", now, [shop]).memories
    assert [m.updates for m in got if m.kind == "event"] == [None]
    # An event still ahead moves, as before.
    review = ("r2", "event.review", "User has a design review on Wednesday (2026-12-09).")
    moved = extract_rules("the design review got pushed to Friday", now, [review]).memories
    assert [m.updates for m in moved if m.kind == "event"] == ["r2"]

"""Updates by subject family (issue 22): a new value replaces the old whatever its words.

At the write level (the memory service on a LangGraph store and embedded Chroma), for
candidates as either path files them; through the offline extractor for what the model
reads; and through the graph with the offline model for a moved date.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from graphs.context import Context
from graphs.memory_agent import build_graph
from graphs.offline_rules import _from_reading, extract_rules
from graphs.settings import Settings
from memory.extraction import CandidateMemory, Extraction
from memory.requests import forget_requests
from memory.service import MemoryService
from memory.store.records import Source
from memory.understanding import Reading, replaces_subject, slot_of

T0 = datetime(2026, 11, 30, 9, tzinfo=UTC)


def said(days: float = 0) -> Source:
    return Source(thread_id="t", said_at=T0 + timedelta(days=days))


def one(subject: str, content: str, conf: float = 0.9) -> Extraction:
    return Extraction(
        memories=[CandidateMemory(kind="fact", subject=subject, content=content, confidence=conf)]
    )


def active(service: MemoryService, user: str) -> list[str]:
    return sorted(r.content for r in service.list(user))


def test_a_new_employer_ends_the_old_whatever_words_it_was_filed_under(
    service: MemoryService,
) -> None:
    service.save("u", one("work.place", "用户在华为工作。"), said())
    service.save(
        "u", one("work.im_employed_by_fabrikam", "User said: I'm employed by Fab."), said()
    )
    service.save("u", one("work.role", "User works as a radiographer."), said())
    changes = service.save("u", one("work.company", "User works at Contoso.", 0.8), said(1))
    assert sorted(c.action for c in changes) == ["added", "superseded", "superseded"]
    # the role is a slot of its own: a new employer does not end it
    assert active(service, "u") == ["User works as a radiographer.", "User works at Contoso."]


def test_a_move_ends_what_was_said_about_the_old_home(service: MemoryService) -> None:
    service.save(
        "u", one("home.rent_a_flat_in_leiden", "User said: I rent a flat in Leiden."), said()
    )
    service.save("u", one("likes.cycling", "User likes cycling."), said())
    service.save("u", one("profile.city", "User lives in Haarlem.", 0.8), said(1))
    assert active(service, "u") == ["User likes cycling.", "User lives in Haarlem."]


def test_a_remark_about_home_ends_no_other_remark() -> None:
    # only a statement filed under the slot's subject (a move) replaces the slot's remarks
    assert not replaces_subject("home.new_bakery_downstairs", "home.rent_a_flat_in_leiden")
    assert replaces_subject("profile.city", "home.rent_a_flat_in_leiden")
    assert not replaces_subject("work.company", "work.role")
    assert not replaces_subject("diet.avoid.pork", "diet.avoid.beef")


@pytest.mark.parametrize(
    "text",
    [
        "Spent a week in Crete last summer with the kids, the beaches were unreal",
        "去年五一和同事去了趟青岛，海边人多得要命",
    ],
)
def test_a_trip_read_as_news_of_home_takes_no_slot(text: str) -> None:
    # The intent head may read a trip as news of home (a place, "went"); the moves head does
    # not read it as a move, and where the user lives stays where it was.
    got = _from_reading(text, Reading("update", "fact", "home", "family", 0.9), T0)
    assert got is not None and got.subject.startswith("home."), got
    assert slot_of(got.subject) is None


def test_a_correction_is_one_statement_filed_under_its_slot() -> None:
    for text, subject in (
        ("Sorry, I'm 39, not 38.", "profile.age"),
        ("不好意思，我是39，不是38。", "profile.age"),
    ):
        got = extract_rules(text, T0).memories
        assert [m.subject for m in got] == [subject], got
        assert "39" in got[0].content and "38" in got[0].content


def test_an_update_the_patterns_miss_is_filed_under_its_familys_slot() -> None:
    for text, family, subject in (
        ("These days I'm with Vandelay", "work", "work.company"),
        ("These days I live over by Vandelay Street", "home", "profile.city"),
    ):
        reading = Reading("update", "fact", family, "family", 0.9)
        got = _from_reading(text, reading, T0)
        assert got is not None and got.subject == subject
    # a remark that is no update stays a remark of its family
    remark = _from_reading(
        "I like my job a lot", Reading("remember", "fact", "work", "family", 0.9), T0
    )
    assert (
        remark is not None
        and remark.subject.startswith("work.")
        and remark.subject != "work.company"
    )


def test_a_forget_about_a_relative_reaches_what_is_filed_about_them() -> None:
    (req,) = forget_requests("Please don't hold on to anything about my husband.")
    assert req.subject == "family.husband"
    (zh,) = forget_requests("我老公的事你都别留着。")
    assert zh.subject == "family.老公"


async def _turn(graph: Any, user: str, thread: str, text: str, when: str) -> dict[str, Any]:
    out: dict[str, Any] = await graph.ainvoke(
        {"messages": [HumanMessage(text)], "turn_time": when},
        {"configurable": {"thread_id": thread}},
        context=Context(user_id=user),
    )
    return out


@pytest.mark.parametrize(
    ("plan", "moved", "old_days", "new_days"),
    [
        ("Our design review is on Wednesday.", "The design review got moved to Friday.", 2, 4),
        ("下周三我们上线。", "上线改到下周五了。", 9, 11),
    ],
)
async def test_a_moved_date_moves_the_event(
    index: Any, plan: str, moved: str, old_days: int, new_days: int
) -> None:
    # Said on the coming Monday: an event already past when written is never listed, so a
    # fixed date would fail once the calendar passed it.
    today = datetime.now(UTC).replace(hour=9, minute=0, second=0, microsecond=0)
    monday = today + timedelta(days=7 - today.weekday())
    old, new = (f"{monday + timedelta(days=d):%Y-%m-%d}" for d in (old_days, new_days))
    store = InMemoryStore()
    graph = build_graph(InMemorySaver(), store, settings=Settings(), index=index)
    await _turn(graph, "u", "t1", plan, monday.isoformat())
    await _turn(graph, "u", "t2", moved, (monday + timedelta(hours=1)).isoformat())
    events = [r for r in MemoryService(store, index).list("u") if r.kind == "event"]
    assert [r.value for r in events] == [new], [(r.content, r.value) for r in events]
    assert old not in " ".join(r.content for r in events)


async def test_a_corrected_day_supersedes_the_event_it_corrects(index: Any) -> None:
    # Said now, of days relative to now: a booking a month ahead corrected by three days (its
    # 了 is the booking's, so both days are ahead), and a past day corrected with no speaker.
    now = datetime.now(UTC).replace(microsecond=0)
    booked, fixed = (now + timedelta(days=d) for d in (30, 33))
    store = InMemoryStore()
    graph = build_graph(InMemorySaver(), store, settings=Settings(), index=index)
    pairs = [
        ("zh", f"我的牙科复诊约在了{booked.month}月{booked.day}号",
         f"弄错了，复诊其实是{fixed.month}月{fixed.day}号，刚看了预约短信"),
        ("en", "my sublet ended last Wednesday",
         "correction, the sublet actually ended last Friday, I mixed up the days"),
    ]  # fmt: skip
    for user, before, after in pairs:
        await _turn(graph, user, f"{user}-a", before, now.isoformat())
        await _turn(graph, user, f"{user}-b", after, (now + timedelta(minutes=5)).isoformat())
    service = MemoryService(store, index)
    zh = [r for r in await service.alist("zh", include_turns=True)]
    events = [r for r in zh if r.kind == "event"]
    assert [r.value for r in events] == [f"{fixed:%Y-%m-%d}"], [(r.content, r.value) for r in zh]
    # the old day is left nowhere, its raw turn included
    assert not [r for r in zh if f"{booked.month}月{booked.day}号" in r.content], [
        r.content for r in zh
    ]
    en = [r.content for r in await service.alist("en", include_turns=True)]
    assert [c for c in en if "last Friday" in c], en
    assert not [c for c in en if "Wednesday" in c], en


@pytest.mark.parametrize(
    ("text", "news"),
    [
        ("我们家的面馆开在钟楼旁边，今年换了新招牌", "今年换了新招牌"),
        ("我们家的面馆开在钟楼旁边，叫老马面馆，今年换了新招牌，生意还行", "今年换了新招牌"),
    ],
)
def test_news_of_no_named_subject_takes_no_slot_from_its_sentence(text: str, news: str) -> None:
    # The clause, alone, reads as an update about nothing; its sentence is about the user's
    # shop, read as home. Filed under the home slot, the shop's new sign ended where the user
    # lives.
    from memory.understanding import slot_of

    known = [("r1", "profile.city", "用户住在西安曲江那边。")]
    found = extract_rules(text, T0, known).memories
    clause = [m for m in found if news in m.content]
    assert clause and all(slot_of(m.subject) is None and not m.updates for m in clause), found


@pytest.mark.parametrize("said", ["银行柜员以后会不会被机器取代啊，好担心"])
def test_a_question_with_a_feeling_changes_nothing(said: str) -> None:
    # Read whole as an update (the feeling is no question), it ended the user's job.
    known = [("w1", "work.在一家银行做柜员", "用户说：在一家银行做柜员。")]
    assert extract_rules(said, T0, known).memories == []


@pytest.mark.parametrize(
    ("said", "kept"),
    [
        ("周五要加班到九点 是不是赶不上那节课了", "周五要加班到九点"),
        ("Friday night I'm on call, will that clash with my usual plans?", "on call"),
    ],
)
def test_a_clause_that_asks_is_no_news_of_a_routine(said: str, kept: str) -> None:
    # Read whole, the sentence was news of the weekly swim and ended it, the question kept
    # as the routine's new wording. What the other clause states is kept on its own.
    known = [
        ("h1", "habit.每周三周五晚上打羽毛球", "用户说：每周三周五晚上我都去打羽毛球。"),
        ("h2", "habit.swim", "User said: I swim every Wednesday and Friday evening."),
    ]
    found = extract_rules(said, T0, known).memories
    assert not [m for m in found if m.updates], found
    assert all(kept in m.content and "?" not in m.content for m in found), found
    assert not [m for m in found if "会不会" in m.content or "clash" in m.content], found


def test_news_in_one_clause_of_a_sentence_read_otherwise_changes_what_it_is_about() -> None:
    # Read whole, the sentence is no update (a remark on sleeping in); its first clause is.
    known = [("w1", "work.我们公司九点上班", "用户说：我们公司九点上班。"),
             ("h1", "home.city", "用户住在成都。")]  # fmt: skip
    found = extract_rules("下个月起改成九点半上班了，早上能多睡会儿", T0, known).memories
    (news,) = [c for c in found if c.updates]
    assert news.updates == "w1" and "九点半" in news.content

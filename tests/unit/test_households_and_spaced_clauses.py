"""Clauses set apart by spaces, wedding days, moved dates, the household at a meal, words for
several relatives, and forget requests that share a word with one message (issue 22).

Phrasings here are the project's own, none from the fresh sets.
"""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest
from fakes import save_said

from graphs.offline_rules import extract_rules
from memory.dates import find_date
from memory.dates.grammar import find_yearly
from memory.dates.recurring import recurring_fact
from memory.extraction import Extraction, ForgetRequest
from memory.recall.aliases import filed_as, relation_in
from memory.requests import forget_requests
from memory.service import MemoryService
from memory.store.records import Source
from memory.text.phrases import topic_clause
from memory.text.statements import split_text
from memory.understanding import read_utterances

NOW = datetime(2026, 12, 6, 9, tzinfo=UTC)


def _said(service: MemoryService, *statements: str) -> None:
    save_said(service, statements, NOW)


def _top(service: MemoryService, question: str) -> str:
    return " | ".join(
        " · ".join([h.record.content, *(r.content for r in h.said_with)])
        for h in service.search("u", question, 5)
    )


# --- a space between Chinese characters is a comma ------------------------------------------


def test_a_space_between_chinese_characters_parts_statements() -> None:
    assert split_text("我住在绵阳 在一家火锅店当收银 我对芒果过敏") == [
        "我住在绵阳",
        "在一家火锅店当收银",
        "我对芒果过敏",
    ]
    # Not inside other scripts, nor between a character and a number or a Latin word.
    assert split_text("我开的是 Model 3 白色的") == ["我开的是 Model 3 白色的"]


def test_a_dated_plan_typed_with_spaces_is_kept_though_one_part_is_tentative() -> None:
    # Read whole, "大概" made the plan tentative and nothing was kept.
    said = "3月8号我要去义乌拿一批货 顺便看看展会 大概待个三四天"
    events = [m for m in extract_rules(said, NOW).memories if m.kind == "event"]
    assert [m.event_date for m in events] == ["2027-03-08"], events


def test_an_interjection_leading_a_part_does_not_make_it_chit_chat() -> None:
    said = "唉我有哮喘 换季就犯 出门得揣着喷雾"
    contents = [m.content for m in extract_rules(said, NOW).memories]
    assert any("我有哮喘" in c for c in contents), contents


def test_a_spaced_forget_request_leaves_its_reason_out_of_the_topic() -> None:
    (found,) = forget_requests("我膝盖那个老伤的事 你给我删了吧 不想留着")
    assert "留" not in found.query and "膝盖" in found.query, found


# --- days of the year ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("said", "value", "since"),
    [
        ("Ines and I got married on May 20th, 2012 at her parents' farm.", "--05-20", "2012"),
        ("we were married 3 September 1999, a rainy day", "--09-03", "1999"),
        ("我们是2015年10月3号结的婚", "--10-03", "2015"),
        ("我跟老公2009年6月6日领的证", "--06-06", "2009"),
    ],
)
def test_the_day_a_couple_married_comes_back_every_year(said: str, value: str, since: str) -> None:
    fact = recurring_fact(said)
    assert fact is not None and fact.subject == "dates.anniversary.wedding", fact
    assert fact.value == value and since in fact.content
    # The day as said stays in the memory's words, beside its ISO value.
    assert find_yearly(said) is not None and find_yearly(said).text in fact.content


@pytest.mark.parametrize("said", ["我下个月12号结婚", "we're getting married on June 5th"])
def test_a_wedding_still_to_come_is_no_anniversary(said: str) -> None:
    assert recurring_fact(said) is None


def test_a_day_moved_to_a_month_long_past_this_year_is_next_years() -> None:
    # Said in December, a day in June with no year is next June's; a day a month ago is
    # still this year's ("on 5 November" is last month).
    moved = find_date("they pushed my check-up to June 17", NOW)
    assert moved is not None and moved.day == date(2027, 6, 17)
    recent = find_date("the gas bill came on 5 November", NOW)
    assert recent is not None and recent.day == date(2026, 11, 5)


# --- words for several relatives --------------------------------------------------------------


@pytest.mark.parametrize(
    ("words", "reaches", "not_reached"),
    [
        ("the grandkids", {"grandson", "granddaughter"}, set()),
        ("my granddaughter", {"granddaughter", "grandchild"}, {"grandson"}),
        ("我爸妈", {"爸爸", "妈妈"}, set()),
        ("my brother", {"brother", "sibling"}, {"sister"}),
    ],
)
def test_a_word_for_several_relatives_reaches_each_and_a_word_for_one_only_itself(
    words: str, reaches: set[str], not_reached: set[str]
) -> None:
    who = relation_in(words)
    assert who is not None
    filed = set(filed_as(who))
    assert reaches <= filed and not (not_reached & filed), filed


def test_a_question_about_the_grandkids_brings_what_was_said_of_a_grandson(
    service: MemoryService,
) -> None:
    _said(
        service,
        "Our grandson Ollie is allergic to sesame.",
        "I teach a pottery class on Thursdays.",
        "I live just outside Dunedin.",
        "My wife paints watercolours.",
    )
    assert "sesame" in _top(service, "the grandkids are visiting, what should we bake?")


# --- the household at a meal -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "food"),
    [
        ("User said: My partner Sven can't stand mushrooms.", True),
        ("用户说：我闺女一吃鸡蛋就起疹子。", True),
        ("User said: My partner Sven is a structural engineer.", False),
        ("用户说：我闺女在成都读研。", False),
    ],
)
def test_the_food_head_reads_what_a_relative_eats_or_must_not(text: str, food: bool) -> None:
    assert read_utterances([text])[0].food is food


@pytest.mark.parametrize(
    ("statements", "question", "limits"),
    [
        (
            ["My partner Sven can't stand mushrooms, not even in a sauce.",
             "My partner Sven is a structural engineer.", "I'm vegetarian.",
             "My daughter plays the cello.", "I drive a blue Skoda.", "I live in Malmö.",
             "I take the train to work.", "My mum lives in Lund."],
            "Tired after work, what should I cook tonight?",
            ["mushrooms", "vegetarian"],
        ),
        (
            ["我老公一点辣都碰不得", "我老公在电力局上班", "我对花生过敏", "我闺女在成都读研",
             "我家住在滨江", "我每天骑电动车上班", "我周末喜欢钓鱼", "我妈住在老家"],
            "下班累死了 晚饭做点啥好",
            ["辣", "花生"],
        ),
    ],
)  # fmt: skip
def test_a_meal_brings_a_relatives_food_limits_with_the_users_own(
    service: MemoryService, statements: list[str], question: str, limits: list[str]
) -> None:
    # A remark said with the question ("Tired after work") shares words with what it is not
    # about (the train to work); the limits still come first.
    _said(service, *statements)
    top = _top(service, question).split(" | ")
    at = [next((n for n, t in enumerate(top) if w in t), None) for w in limits]
    assert None not in at, top
    # Before what else was said of the relative, which is no limit.
    other = next((n for n, t in enumerate(top) if "engineer" in t or "电力局" in t), len(top))
    assert max(n for n in at if n is not None) < other, top


# --- forget requests ---------------------------------------------------------------------------


def test_a_reason_after_a_comma_led_by_it_or_you_is_not_the_topic() -> None:
    assert topic_clause("the stuff about my gym, it doesn't matter now") == "the stuff about my gym"
    assert topic_clause("my old flat, you don't need it") == "my old flat"


@pytest.mark.parametrize(
    ("statements", "request_", "gone", "kept"),
    [
        (
            ["I get migraines a couple of times a month, bright light sets them off.",
             "My left shoulder has been dodgy since a rugby tackle, I can't lift much overhead.",
             "I work as a librarian in Bristol."],
            "my shoulder thing",
            "rugby",
            ["migraines", "librarian"],
        ),
        (
            ["我有偏头痛 一个月犯两三回 见不得强光", "我膝盖半月板伤过 爬楼梯就疼",
             "我在图书馆上班"],
            "我腿上那个老毛病",
            "半月板",
            ["偏头痛", "图书馆"],
        ),
    ],
)  # fmt: skip
def test_a_forget_request_takes_the_one_message_that_shares_its_word(
    service: MemoryService, statements: list[str], request_: str, gone: str, kept: list[str]
) -> None:
    # To the encoder an old complaint is about as near to one ailment as to the other; only
    # one message shares a word with the request.
    _said(service, *statements)
    service.save(
        "u", Extraction(forget=[ForgetRequest(query=request_)]), Source(thread_id="t", said_at=NOW)
    )
    left = " | ".join(r.content for r in service.list("u", include_turns=True))
    assert gone not in left and all(w in left for w in kept), left


def test_of_messages_about_as_near_the_one_sharing_a_word_is_taken() -> None:
    import numpy as np

    from memory.understanding.topics import _by_a_word

    said = [["我膝盖半月板伤过", "爬楼就疼"], ["我有偏头痛", "见不得强光"]]
    # Within the margin of each other: the word decides (膝盖), whichever the encoder put first.
    assert _by_a_word("我膝盖那个老伤", np.array([0.40, 0.42]), said) == 0
    # A word both share (我, 有) decides nothing; none shared, none taken.
    assert _by_a_word("我那个老毛病", np.array([0.40, 0.42]), said) is None
    # Below the floor, nothing is taken; one about as near under it still counts as near.
    assert _by_a_word("我膝盖那个老伤", np.array([0.20, 0.21]), said) is None
    assert _by_a_word("我膝盖那个老伤", np.array([0.31, 0.29]), said) == 0
    assert _by_a_word("我偏头痛那个老毛病", np.array([0.31, 0.29]), said) is None


@pytest.mark.parametrize(
    ("said", "query"),
    [
        # "那事儿" points at the topic; it is none of its words.
        ("我养猫那事儿你别记了，猫送人了", "我养猫"),
        # What was just said, named and taken back, then "don't keep it": "that".
        ("刚才那条当我没说哦，别存了，太丢人", "这个"),
        ("上面那句当我没说啦", "这个"),
    ],
)
def test_a_request_about_that_matter_or_what_was_just_said(said: str, query: str) -> None:
    assert [f.query for f in forget_requests(said)] == [query]


def test_a_yearly_day_keeps_the_users_words_for_it() -> None:
    fact = recurring_fact("our anniversary is 3 May, four years this time")
    assert fact is not None and "3 May" in fact.content and fact.value == "--05-03"


def test_a_forget_requests_topic_is_weighed_by_its_nearest_part(service: MemoryService) -> None:
    # The reason said after the topic weighed with it kept every message under the floor;
    # the topic alone is clearly the bike.
    _said(
        service,
        "I ride a Brompton folding bike to the office.",
        "We have a tabby cat named Miso, she's 6.",
        "I knit scarves every winter for the whole family.",
    )
    request_ = ForgetRequest(
        query="my bike, flogged it at the car boot sale last sunday along with the old telly"
        " and a box of dvds"
    )
    service.save("u", Extraction(forget=[request_]), Source(thread_id="t", said_at=NOW))
    left = " | ".join(r.content for r in service.list("u", include_turns=True))
    assert "Brompton" not in left and "Miso" in left and "scarves" in left, left


@pytest.mark.parametrize(
    ("clause", "kind"),
    [
        ("4月30号出发，一路玩到五一", "event"),  # a trip: no occasion is named
        ("leaving on the 2nd of July", "event"),
        ("我爸生日是腊月初八", "recurring_date"),
        ("our anniversary is on the 9th", "recurring_date"),
    ],
)
def test_a_day_read_as_recurring_must_name_its_occasion(clause: str, kind: str) -> None:
    # The kind head once read a trip's day as recurring, and it was filed as the user's
    # birthday (replacing the real one). Whatever the head says, a day recurs only with an
    # occasion named.
    from dataclasses import replace

    from graphs.offline_rules import _routine_by_form
    from memory.understanding import read_utterance

    reading = replace(read_utterance(clause), kind="recurring_date")
    assert _routine_by_form(clause, reading).kind == kind


async def test_a_relatives_limit_read_with_its_message_comes_with_a_meal(index) -> None:
    # "我家那位见不得香菜" alone is no limit to the food head; beside "放了就不吃饭", the rest of
    # its message (kept as raw statements by the turn), it is.
    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.store.memory import InMemoryStore

    from graphs.context import Context
    from graphs.memory_agent import build_graph
    from graphs.offline import OfflineChatModel
    from graphs.settings import Settings

    graph = build_graph(
        InMemorySaver(), InMemoryStore(), settings=Settings(), model=OfflineChatModel(), index=index
    )

    async def turn(thread: str, text: str) -> list[str]:
        out = await graph.ainvoke(
            {"messages": [HumanMessage(text)]},
            {"configurable": {"thread_id": thread}},
            context=Context(user_id="u"),
        )
        return [r["content"] for r in out["recalled"]]

    said = ["我家那位见不得香菜，一点都不能放，放了就不吃饭", "我家那位在医院当护士",
            "我在电力局上班", "我家住在滨江", "我每天骑电动车上班", "我爱打羽毛球"]  # fmt: skip
    for text in said:
        await turn("t", text)
    assert "香菜" in " ".join((await turn("q", "晚饭做点啥好"))[:2])


def test_a_word_for_the_other_half_with_the_speaker_in_it_files_under_them() -> None:
    subjects = [m.subject for m in extract_rules("我家那位在医院当护士", NOW).memories]
    assert subjects and all(s.startswith("family.对象.") for s in subjects), subjects


@pytest.mark.parametrize(
    ("statements", "question", "limits"),
    [
        (
            ["我对芒果过敏，吃了会起疹子", "我老婆在银行上班，经常出差",
             "我们有三个孩子，老大上初中了", "老二在读小学三年级", "老三还在上幼儿园",
             "我不吃香菜", "我家住在江北", "我每天坐轻轨上班", "我周末喜欢爬山"],
            "晚饭做点啥好呢，老婆出差了，我一个人看三个孩子快疯了",
            ["芒果", "香菜"],
        ),
        (
            ["I'm allergic to sesame.", "My husband works late shifts at the port.",
             "We have twin boys, they're seven.", "The twins are in year two at St Mark's.",
             "My mother-in-law lives with us.", "I don't eat pork.", "I live in Hull.",
             "I cycle to work every day.", "I play chess on Sundays."],
            "what should I cook tonight, my husband is working late and the twins are starving",
            ["sesame", "pork"],
        ),
    ],
)  # fmt: skip
def test_a_meal_asked_with_who_is_home_brings_the_users_food_limits_first(
    service: MemoryService, statements: list[str], question: str, limits: list[str]
) -> None:
    # Read whole, the message is about the family; the part that asks is about a meal. The
    # limits come among the first five, not only pinned after what was said of the family.
    _said(service, *statements)
    first = " | ".join(_top(service, question).split(" | ")[:5])
    assert all(w in first for w in limits), first

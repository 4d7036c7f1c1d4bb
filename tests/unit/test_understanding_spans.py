"""What a statement's parts are (issue 22): the value a correction replaces, whose name a
name is, a request asked as a question, a dislike said with feeling.

The understanding model says what a sentence is; these check what the offline path then
does with its parts, through the offline extractor and through the compiled graph with the
offline model (embedded Chroma, an in-memory store). None of these sentences is in the
corpus or a fresh set.
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
from graphs.offline_rules import extract_rules
from graphs.settings import Settings
from memory.extraction import ForgetRequest
from memory.requests import _says_that, forget_requests
from memory.service import MemoryService
from memory.text.corrections import correction, says_value, with_new_value

T0 = datetime(2026, 11, 30, 9, tzinfo=UTC)  # a Monday


@pytest.mark.parametrize(
    ("text", "new", "old"),
    [
        ("Sorry, my commute is 50 minutes, not 35.", "Sorry, my commute is 50 minutes", "35"),
        ("Not Thursday, Saturday.", "Saturday", "Thursday"),
        ("It's not 6, it's 7.", "it's 7", "6"),
        ("We have two dogs, the three I said was a typo.", "We have two dogs", "three"),
        ("I live in Porto and not Braga.", "I live in Porto", "Braga"),
        ("不是周四，是周日。", "周日", "周四"),
        ("我儿子是九岁，不是八岁。", "我儿子是九岁", "八岁"),
        ("我每周游泳三次，刚才说的两次不对。", "我每周游泳三次", "两次"),
        ("女儿是高二不是高一。", "女儿是高二", "高一"),
        ("ugh I meant Ingrid, not Inga, typing too fast", "ugh I meant Ingrid", "Inga"),
    ],
)
def test_a_correction_names_the_value_it_replaces(text: str, new: str, old: str) -> None:
    fix = correction(text)
    assert fix is not None and (fix.new, fix.old) == (new, old), fix


@pytest.mark.parametrize(
    "text",
    ["I do not like olives.", "It is not raining today.", "这不是我的错。", "I'm not sure yet.",
     "我不是很喜欢吃辣。", "That was not easy, honestly."],
)  # fmt: skip
def test_a_plain_negation_is_no_correction(text: str) -> None:
    assert correction(text) is None


def test_a_value_is_said_as_a_whole_number_or_word() -> None:
    assert says_value("User said: my commute takes 35 minutes.", "35")
    assert not says_value("User said: my commute takes 135 minutes.", "35")
    assert says_value("用户说：我每周游泳两次。", "两次")
    assert says_value("User said: the party is on Thursday.", "Thursday")


@pytest.mark.parametrize(
    ("text", "day"),
    [("Not Thursday, Saturday.", "2026-12-05"), ("不是周四，是周日。", "2026-12-06")],
)
def test_a_moved_day_is_one_event_on_the_new_day(text: str, day: str) -> None:
    got = extract_rules(text, T0).memories
    assert [(m.kind, m.value) for m in got] == [("event", day)], got


def test_a_correction_updates_the_memory_that_said_the_old_value() -> None:
    known = [
        ("r-gym", "habit.gym", "User said: I go to the gym on Mondays."),
        ("r-commute", "note.commute", "User said: My commute takes 35 minutes."),
    ]
    (got,) = extract_rules("Sorry, my commute is 50 minutes, not 35.", T0, known).memories
    assert (got.updates, got.subject) == ("r-commute", "note.commute")
    assert "50" in got.content


@pytest.mark.parametrize(
    "text",
    ["I'm seeing someone new, her name is Ines.", "My nephew got a parrot, its name is Kiwi.",
     "我同事刚生了宝宝，她叫乐乐。", "I've got a new neighbour, he's called Bruno."],
)  # fmt: skip
def test_a_third_persons_name_is_not_the_users(text: str) -> None:
    subjects = [m.subject for m in extract_rules(text, T0).memories]
    assert subjects and "profile.name" not in subjects, subjects


def test_a_name_after_the_sentence_naming_the_relative_is_filed_under_them() -> None:
    got = extract_rules("I have a new girlfriend. Her name is Ines.", T0).memories
    assert "profile.name" not in [m.subject for m in got]
    assert any(m.subject.startswith("family.girlfriend.") for m in got), got


@pytest.mark.parametrize("text", ["I'm 182 cm tall.", "我体重七十公斤。", "I weigh 80 kilos."])
def test_a_body_measure_is_not_an_age(text: str) -> None:
    assert [m.subject for m in extract_rules(text, T0).memories if m.subject == "profile.age"] == []


@pytest.mark.parametrize(
    "text",
    ["Do you mind wiping what you know about my uncle?",
     "Is it okay to drop my gym schedule from your notes?",
     "Why don't we keep my divorce out of your records?",
     "能不能把我考驾照的事删了？",
     "我的体重你就别记着了，好吗？"],
)  # fmt: skip
def test_a_request_asked_as_a_question_is_a_forget_request(text: str) -> None:
    assert forget_requests(text), text


@pytest.mark.parametrize(
    "text",
    ["Do you remember my uncle's name?", "Did you write down my gym schedule?",
     "你还记得我考驾照的事吗？", "Don't forget my uncle's birthday is Friday."],
)  # fmt: skip
def test_a_question_about_memory_is_no_forget_request(text: str) -> None:
    assert forget_requests(text) == [], text


@pytest.mark.parametrize(
    "text",
    ["Crowded buses make me miserable.", "Ugh, people who cut in line drive me crazy.",
     "我最受不了别人迟到。"],
)  # fmt: skip
def test_a_dislike_said_with_feeling_is_a_preference(text: str) -> None:
    got = extract_rules(text, T0).memories
    assert [m.kind for m in got] == ["preference"], got


async def _turn(
    graph: Any, user: str, thread: str, text: str, hours: float, t0: datetime = T0
) -> None:
    await graph.ainvoke(
        {"messages": [HumanMessage(text)], "turn_time": (t0 + timedelta(hours=hours)).isoformat()},
        {"configurable": {"thread_id": thread}},
        context=Context(user_id=user),
    )


@pytest.mark.parametrize(
    ("said", "correction_", "new", "old"),
    [
        ("My commute to the office takes 35 minutes.",
         "Sorry, my commute is 50 minutes, not 35.", "50", "35"),
        ("我每周去健身房两次。", "我每周去健身房三次，刚才说的两次不对。", "三次", "两次"),
        ("The team offsite is on Thursday.", "Not Thursday, Saturday.", "+5", "+3"),
    ],
)  # fmt: skip
async def test_a_correction_supersedes_the_value_it_corrects_through_the_graph(
    index: Any, said: str, correction_: str, new: str, old: str
) -> None:
    # A dated event is said in a week still to come: one of T0's week has expired by now,
    # and an expired event is no longer there to correct. "+N" is N days after that Monday.
    today = datetime.now(UTC).replace(hour=9, minute=0, second=0, microsecond=0)
    t0 = today + timedelta(days=7 - today.weekday())
    new, old = (
        (t0 + timedelta(days=int(v[1:]))).date().isoformat() if v.startswith("+") else v
        for v in (new, old)
    )
    store = InMemoryStore()
    graph = build_graph(InMemorySaver(), store, settings=Settings(), index=index)
    await _turn(graph, "u", "t1", said, 0, t0)
    await _turn(graph, "u", "t2", correction_, 1, t0)
    typed = [r for r in MemoryService(store, index).list("u") if r.kind != "episode"]
    said_ = [f"{r.content} {r.value or ''}" for r in typed]
    assert any(new in s for s in said_), said_
    assert not [s for s in said_ if old in s and new not in s], said_


async def test_a_third_persons_name_leaves_the_users_own(index: Any) -> None:
    store = InMemoryStore()
    graph = build_graph(InMemorySaver(), store, settings=Settings(), index=index)
    await _turn(graph, "u", "t1", "My name is Oliver.", 0)
    await _turn(graph, "u", "t2", "I'm seeing someone new, her name is Ines.", 1)
    kept = MemoryService(store, index).list("u")
    names = [r.content for r in kept if r.subject == "profile.name"]
    assert names == ["User's name is Oliver."], names


@pytest.mark.parametrize(
    ("kept", "said", "now"),
    [
        ("User said: My landlord is called Pavel.", "sorry I meant Piotr, not Pavel 🙈",
         "User said: My landlord is called Piotr."),
        ("User said: the standup is at 9am daily.", "It's at 10am, not 9am.",
         "User said: the standup is at 10am daily."),
        ("用户说：我们组长叫刘洋。", "组长叫刘阳，不是刘洋", "用户说：我们组长叫刘阳。"),
    ],
)  # fmt: skip
def test_a_correction_of_words_kept_as_said_keeps_them_with_the_new_value(
    kept: str, said: str, now: str
) -> None:
    fix = correction(said)
    assert fix is not None and with_new_value(kept, fix) == now
    (got,) = extract_rules(said, T0, [("r-1", "people.x", kept)]).memories
    assert (got.updates, got.content) == ("r-1", now)


def test_an_old_value_said_twice_is_not_replaced() -> None:
    fix = correction("I meant Tom, not Tim.")
    assert fix is not None
    assert with_new_value("User said: Tim and Tim's wife visit on Sundays.", fix) is None


@pytest.mark.parametrize(
    "text",
    ["Wednesday nights are choir practice.", "Thursday nights are curling league",
     "Sundays are for the farmers market with my kids."],
)  # fmt: skip
def test_a_weekday_said_as_recurring_is_a_routine_not_an_event(text: str) -> None:
    got = extract_rules(text, T0).memories
    assert [m.kind for m in got] == ["preference"] and got[0].subject.startswith("habit."), got


def test_a_weekday_ahead_is_still_an_event() -> None:
    (got,) = extract_rules("Next Thursday night I'm seeing a play.", T0).memories
    assert got.kind == "event"


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("我下个月可能要去深圳出差，我住在南京", "南京"),
        ("I live in Cardiff, and I might get a cat", "Cardiff"),
    ],
)
def test_a_tentative_clause_does_not_take_the_firm_one_said_with_it(text: str, kept: str) -> None:
    got = extract_rules(text, T0).memories
    assert [m.subject for m in got] == ["profile.city"] and kept in got[0].content, got


@pytest.mark.parametrize("text", ["I might move to Bristol next year.", "我可能会换工作。"])
def test_a_tentative_statement_alone_is_still_nothing(text: str) -> None:
    assert extract_rules(text, T0).memories == []


def test_a_tentative_verb_phrase_joined_by_and_is_cut_off_the_firm_one() -> None:
    got = extract_rules("I work at Initech and will probably quit in spring.", T0).memories
    assert [(m.subject, m.content) for m in got] == [("work.company", "User works at Initech.")]


@pytest.mark.parametrize(
    ("text", "query"),
    [
        ("我健身卡那个事儿你别存着了，挺私人的", "我健身卡"),
        ("Please don't hang on to the details about what I cook either", "what I cook"),
        ("请把我体检那个事儿删了吧，挺私人的", "我体检"),
    ],
)
def test_a_forget_requests_topic_is_its_words_about_a_subject(text: str, query: str) -> None:
    from memory.requests import forget_requests

    # Not the reason said with it (挺私人的), nor the words that only carry the request.
    assert [r.query for r in forget_requests(text)] == [query]


def test_a_lone_surrogate_is_read_not_raised() -> None:
    assert extract_rules("I live in \ud800 Berlin.", T0).forget == []


@pytest.mark.parametrize(
    ("text", "kept", "dropped"),
    [("瑜伽课改到周四了，我可能也换个馆", "周四", "换个馆"),
     ("yoga moved to Thursdays, I might switch studios too", "Thursdays", "studios")],
)  # fmt: skip
def test_an_update_keeps_only_its_firm_clauses(text: str, kept: str, dropped: str) -> None:
    known = [("r1", "habit.yoga", "User said: I do yoga every Tuesday evening."),
             ("r2", "likes.jazz", "User likes jazz.")]  # fmt: skip
    (got,) = extract_rules(text, T0, known).memories
    assert got.updates == "r1" and kept in got.content and dropped not in got.content, got


@pytest.mark.parametrize(
    ("sentence", "deictic"),
    [
        ("don't worry about spacing, just give me the numbers", False),
        ("ok scratch that last one, don't hold on to it", True),
        ("刚才那个不算，别记了", True),
        ("Oops, take that back.", True),
    ],
)
def test_that_takes_back_a_message_only_where_a_part_says_that(
    sentence: str, deictic: bool
) -> None:
    # "That" takes back a whole message: a sentence the model reads whole as "that" is one
    # only where a part of it says so (an instruction about the answer, read whole as
    # "that", names its own topic in its parts).
    assert _says_that(sentence) is deictic
    if deictic:
        assert forget_requests(sentence) == [
            ForgetRequest(query="这个" if "刚" in sentence else "that")
        ]

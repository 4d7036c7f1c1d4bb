"""Days moved by news read as a plain statement, and forget requests whose reason speaks of
something else (issue 22).

Phrasings here are the project's own, none from the fresh sets.
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
from graphs.settings import Settings
from memory.extraction import forget_requests
from memory.service import MemoryService
from memory.text.phrases import topic_clause


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
        # read by the model: the clause that asks, not the one about a relative
        ("bin what i said about the allotment. my brother wants it kept quiet",
         "allotment", "brother"),
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

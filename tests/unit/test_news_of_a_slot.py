"""News of a value the user has one of, said in several clauses, through the graph (issue 22).

"Exciting update: I handed in my notice at Halvorsen, I start at Brightmoor Labs on the 1st."
is read as an update about work, but no pattern types either clause: cut at its comma it
was a remark and a dated event beside the old employer, which stayed the answer. Such news
is one statement filed under the family's slot, so it replaces the old value; a move told
in the past tense is where the user lives, so a request to forget that reaches it. Also
here: a routine filed by its kind (`habit.`) is still about its family for a forget, and
a forget takes the clauses that go on with what it takes (no subject of their own).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from graphs.context import Context
from graphs.memory_agent import build_graph
from graphs.settings import Settings
from memory.service import MemoryService

NOW = datetime.now(UTC).replace(microsecond=0)


async def _tell(index: Any, user: str, lines: list[str]) -> MemoryService:
    store = InMemoryStore()
    graph = build_graph(InMemorySaver(), store, settings=Settings(), index=index)
    for n, text in enumerate(lines):
        await graph.ainvoke(
            {
                "messages": [HumanMessage(text)],
                "turn_time": (NOW + timedelta(minutes=n)).isoformat(),
            },
            {"configurable": {"thread_id": f"{user}-{n}"}},
            context=Context(user_id=user),
        )
    return MemoryService(store, index)


async def test_news_of_a_new_employer_in_clauses_replaces_the_old_one(index: Any) -> None:
    service = await _tell(
        index,
        "u",
        [
            "I work at Halvorsen Logistics as a dispatcher.",
            "Exciting update: I handed in my notice at Halvorsen, I start at Brightmoor Labs "
            "on the 1st.",
        ],
    )
    active = [r for r in service.list("u") if r.kind != "episode"]
    assert any("Brightmoor" in r.content for r in active), [r.content for r in active]
    assert not [r for r in active if "Logistics as a dispatcher" in r.content], [
        r.content for r in active
    ]
    found = service.search("u", "Where am I working these days?", k=3)
    assert "Brightmoor" in found[0].record.content, [r.record.content for r in found]


async def test_a_move_told_in_the_past_is_where_the_user_lives(index: Any) -> None:
    service = await _tell(
        index,
        "u",
        [
            "we moved up to Tromsø two months ago, loving the northern lights",
            "I'm a big fan of cross-country skiing.",
            "please don't keep where I live",
        ],
    )
    kept = " | ".join(r.content for r in await service.alist("u", include_turns=True))
    assert "Tromsø" not in kept, kept
    assert "skiing" in kept, kept


async def test_a_routine_is_about_its_family_for_a_forget(index: Any) -> None:
    for user, routine, other, request, word in (
        ("en", "I take vitamin D pills every day", "I'm a fan of jazz",
         "stop keeping my supplements", "vitamin"),
        ("zh", "我每天晚上都要打一针胰岛素", "我喜欢爵士乐", "我血糖那些事你别存了", "胰岛素"),
    ):  # fmt: skip
        service = await _tell(index, user, [routine, other, request])
        kept = " | ".join(r.content for r in await service.alist(user, include_turns=True))
        assert word not in kept, kept
        assert "爵士" in kept or "jazz" in kept, kept


async def test_a_forget_takes_the_clauses_that_go_on_with_what_it_takes(index: Any) -> None:
    # The spray goes on with the rhinitis (no subject of its own) and is filed as a routine;
    # the spice, filed under diet, is a statement of its own.
    service = await _tell(
        index,
        "zh",
        ["我有鼻炎，每天睡前都要喷一次内舒拿，喷完还得擤鼻涕", "我对花生过敏，平时特别爱吃辣",
         "我喜欢爵士乐", "我用药那些事你别记了", "我过敏的事你别记了"],
    )  # fmt: skip
    kept = " | ".join(r.content for r in await service.alist("zh", include_turns=True))
    for gone in ("内舒拿", "鼻炎", "花生"):
        assert gone not in kept, kept
    for stays in ("爱吃辣", "爵士乐"):
        assert stays in kept, kept

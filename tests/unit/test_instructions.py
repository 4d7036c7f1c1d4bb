"""How the user wants to be answered from now on is a core memory (issue 22).

"Keep it short from now on" said once must shape every later conversation: the offline
path keeps it in the user's words under `profile.style` (the understanding model's
`instructs` head), and recall shows it with any question, as a core memory. A request
about one answer ("make that shorter") is no instruction to keep.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from graphs.context import Context
from graphs.memory_agent import build_graph
from graphs.offline_rules import extract_rules
from graphs.settings import Settings
from memory.recall.search import PINNED
from memory.service import MemoryService
from memory.store.records import STYLE_SUBJECT, Source
from prompts import load

NOW = datetime(2026, 12, 3, 9, 0, tzinfo=UTC)


def _styles(text: str) -> list[str]:
    return [
        m.subject for m in extract_rules(text, NOW).memories if m.subject.startswith(STYLE_SUBJECT)
    ]


@pytest.mark.parametrize(
    "text",
    [
        "From now on, please answer me in plain English with no jargon, I'm not a techie.",
        "whenever you give me recipes use grams not cups",
        "以后回答我都用繁体字吧，我看简体不习惯",
        "跟我说话的时候别老是先夸我问得好，直接说重点",
    ],
)
def test_a_standing_instruction_is_kept_as_how_to_answer(text: str) -> None:
    assert _styles(text), [m.subject for m in extract_rules(text, NOW).memories]


@pytest.mark.parametrize(
    "text",
    [
        "Can you make that last answer a bit shorter?",
        "translate this into Spanish for me: see you tomorrow",
        "我英语不太好，正在学",
        "把上面这段改成表格吧",
    ],
)
def test_a_request_about_one_answer_is_no_instruction(text: str) -> None:
    assert not _styles(text), text


def test_an_instruction_comes_with_any_question_as_a_core_memory(service: MemoryService) -> None:
    said = "From now on, please answer me in plain English with no jargon, I'm not a techie."
    service.save("u", extract_rules(said, NOW), Source(thread_id="t", said_at=NOW))
    service.save(
        "u", extract_rules("I play the trumpet in a brass band.", NOW), Source(thread_id="t")
    )
    got = service.search("u", "What's the difference between TCP and UDP?", 5, now=NOW)
    # Shown whatever was asked: pinned as core when the question does not bring it.
    assert any(h.record.subject.startswith(STYLE_SUBJECT) for h in got), [
        h.record.subject for h in got
    ]


def test_an_instruction_takes_no_place_of_another_core_memory(service: MemoryService) -> None:
    # Core memories are few (`PINNED`): an instruction said last must not push the user's
    # allergy out of them, or a careless "keep it short" would hide "allergic to peanuts".
    for said in (
        "I'm allergic to peanuts.",
        "I live in Leeds.",
        "I'm vegetarian.",
        "I'm allergic to penicillin.",
        "I'm 41 years old.",
        "From now on, please answer me in plain English with no jargon, I'm not a techie.",
    ):
        service.save("u", extract_rules(said, NOW), Source(thread_id="t", said_at=NOW))
    got = service.search("u", "Best way to descale a kettle?", 3, now=NOW)
    core = [h.record.subject for h in got if h.why == "core"]
    assert any(s.startswith(STYLE_SUBJECT) for s in core), core
    assert len([s for s in core if not s.startswith(STYLE_SUBJECT)]) == PINNED, core


async def test_an_instruction_is_labelled_for_the_model_to_follow(index: object) -> None:
    # The system prompt tells the model to follow notes of one label only: the block must
    # give an instruction that label in a new thread, whatever was asked.
    graph = build_graph(InMemorySaver(), InMemoryStore(), settings=Settings(), index=index)  # type: ignore[arg-type]
    said = "以后的回答都别超过五句话，我没耐心看长的"
    for thread, text in (("t1", said), ("t2", "How do I get red wine out of a carpet?")):
        out = await graph.ainvoke(
            {"messages": [HumanMessage(text)]},
            {"configurable": {"thread_id": thread}},
            context=Context(user_id="u"),
        )
    style = [ln for ln in out["memory_block"].splitlines() if "五句话" in ln]
    assert style and "[answer style ·" in style[0], out["memory_block"]
    for lang in ("en", "zh"):
        assert '"answer style"' in load("system", lang), lang


def test_an_instruction_said_in_several_sentences_is_one() -> None:
    # No sentence alone reads as an instruction ("short answers from now on, yeah?" asks); the
    # message does, and is kept whole.
    said = "short answers from now on, yeah? three lines tops. i'm always on my phone"
    assert _styles(said), [m.subject for m in extract_rules(said, NOW).memories]

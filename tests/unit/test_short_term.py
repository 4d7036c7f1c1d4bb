"""Short-term memory: the context budget, the rolling summary and working memory."""

from __future__ import annotations

from dataclasses import replace

import pytest
from fakes import ThreadFakeModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from graphs.context import Context
from graphs.memory_agent import build_graph
from graphs.nodes import ANSWER_RESERVE_TOKENS
from graphs.offline import OfflineChatModel
from graphs.settings import Settings
from graphs.window import ContextOverflow, build_window, pair_tools
from graphs.window import tokens as count_tokens
from memory.service import MemoryService

BUDGET = Settings(context_tokens=2500, summary_tokens=1200)


def cfg(thread: str) -> dict:
    return {"configurable": {"thread_id": thread}}


async def say(graph, text: str, thread: str = "t", user: str = "u") -> dict:
    return await graph.ainvoke({"messages": [HumanMessage(text)]}, cfg(thread),
                               context=Context(user_id=user))  # fmt: skip


def assert_protocol_ok(messages) -> None:
    calls = {c["id"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls}
    results = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    assert calls == results, "an orphan tool call or tool result was sent"


async def test_a_500_turn_thread_stays_in_budget_and_keeps_what_matters(index) -> None:
    model = ThreadFakeModel(plan_every=7)
    store = InMemoryStore()
    graph = build_graph(InMemorySaver(), store, settings=BUDGET, model=model, index=index)
    await say(graph, "Hello there.")
    await say(graph, "I want to plan a trip to Japan.")
    await say(graph, "Don't book any flight that leaves before 9am.")
    await say(graph, "Sounds good, let's look at hotels.")
    await say(graph, "I live in Oslo.")
    for i in range(6, 501):
        await say(graph, f"Message {i}: tell me more about option {i % 13}, please.")
    assert model.turns == 500
    for sent in model.chat_inputs:
        assert count_tokens(sent) <= BUDGET.context_tokens - ANSWER_RESERVE_TOKENS
        assert_protocol_ok(sent)
        assert isinstance(next(m for m in sent[1:]), HumanMessage)  # the window starts at a user
    last = model.chat_inputs[-1]
    # Turn 3's constraint survives 497 turns later through the summary, word for word.
    assert "Don't book any flight that leaves before 9am." in str(last[0].content)
    assert "Message 500" in str(last[-1].content)
    state = (await graph.aget_state(cfg("t"))).values
    assert len([m for m in state["messages"] if isinstance(m, HumanMessage)]) == 500
    assert state["summary_count"] > 900  # the checkpointer still holds every message
    # Turn 5's fact is in long-term memory, recallable from a new thread.
    hits = MemoryService(store, index).search("u", "where do I live?")
    assert "User lives in Oslo." in [h.record.content for h in hits]


async def test_summary_failure_keeps_the_raw_view(index) -> None:
    model = ThreadFakeModel(fail_summary=True)
    graph = build_graph(InMemorySaver(), InMemoryStore(), settings=BUDGET, model=model,
                        index=index)  # fmt: skip
    await say(graph, "Never use tabs in my code.")
    for i in range(30):
        out = await say(graph, f"Next question {i}: and what about this part of it?")
        assert out["messages"][-1].content.startswith("reply")
    state = (await graph.aget_state(cfg("t"))).values
    assert not state.get("summary") and not state.get("summary_through")
    # With no summary, the budget still holds by dropping the oldest whole turns.
    for sent in model.chat_inputs:
        assert count_tokens(sent) <= BUDGET.context_tokens - ANSWER_RESERVE_TOKENS


async def test_summary_is_archived_as_an_episode_for_other_threads(index) -> None:
    store = InMemoryStore()
    graph = build_graph(InMemorySaver(), store, settings=BUDGET, model=ThreadFakeModel(),
                        index=index)  # fmt: skip
    await say(graph, "We decided to use Postgres for the billing service.", thread="a")
    for i in range(25):
        await say(graph, f"Another detail number {i} about the schema design.", thread="a")
    episodes = MemoryService(store, index).list("u", kind="episode")
    assert len(episodes) == 1 and "Postgres for the billing service" in episodes[0].content
    assert episodes[0].subject == "episode.thread.a"


async def test_working_memory_with_the_offline_model(index) -> None:
    graph = build_graph(InMemorySaver(), InMemoryStore(), settings=Settings(),
                        model=OfflineChatModel(), index=index)  # fmt: skip
    out = await say(graph, "My goal is to migrate the blog. Plan: export posts, convert, deploy")
    assert out["working"] == {"goal": "to migrate the blog", "next": "export posts",
                              "steps": ["export posts", "convert", "deploy"]}  # fmt: skip
    assert isinstance(out["messages"][-1], AIMessage) and out["messages"][-1].content
    assert_protocol_ok(out["messages"])
    out = await say(graph, "Done with export posts")
    assert out["working"]["done"] == ["export posts"]
    # Kept across turns by the checkpointer, and shown to the model.
    out = await say(graph, "What next?")
    assert out["working"]["goal"] == "to migrate the blog"
    out = await say(graph, "All done, the task is finished.")
    assert out["working"] is None


def test_window_keeps_tool_pairs_and_drops_orphans() -> None:
    msgs = [
        HumanMessage("a", id="1"),
        AIMessage("", tool_calls=[{"name": "t", "args": {}, "id": "c1"}], id="2"),
        ToolMessage("ok", tool_call_id="c1", id="3"),
        AIMessage("answer", id="4"),
        HumanMessage("b", id="5"),
        AIMessage("half", tool_calls=[{"name": "t", "args": {}, "id": "c2"}], id="6"),
        ToolMessage("stray", tool_call_id="zz", id="7"),
    ]
    fixed = pair_tools(msgs)
    assert [m.id for m in fixed] == ["1", "2", "3", "4", "5", "6"]
    assert fixed[-1].tool_calls == [] and fixed[-1].content == "half"
    window = build_window(msgs, skip_ids={"1", "2", "3", "4"}, budget=1000)
    assert [m.id for m in window] == ["5", "6"]


def test_window_refuses_a_message_that_cannot_fit() -> None:
    with pytest.raises(ContextOverflow, match="exceeds the context budget"):
        build_window([HumanMessage("word " * 5000, id="1")], set(), budget=100)


async def test_fixed_part_over_budget_is_a_clear_error(index) -> None:
    graph = build_graph(InMemorySaver(), InMemoryStore(), settings=replace(BUDGET,
                        context_tokens=1100), model=OfflineChatModel(), index=index)  # fmt: skip
    with pytest.raises(ContextOverflow, match="alone exceed"):
        await say(graph, "hello")


async def test_a_reworded_summary_item_goes_with_the_statement_it_came_from(index) -> None:
    # A real summarizer rewords: "Forget that I want ..." names the statement word for word,
    # which the summary no longer holds. The item goes by the statement it came from.
    said = "I want to surprise Lena with a trip to Kyoto."
    model = ThreadFakeModel(
        reword={said: "Goal: a Kyoto trip as a surprise for Lena"},
        claim_sources={"Never tell Lena before the trip.": ["made-up-id"]},
    )
    store = InMemoryStore()
    graph = build_graph(InMemorySaver(), store, settings=BUDGET, model=model, index=index)
    await say(graph, said)
    await say(graph, "Never tell Lena before the trip.")
    for i in range(25):
        await say(graph, f"Another detail number {i} about the hotel and the train times.")
    summary = (await graph.aget_state(cfg("t"))).values["summary"]
    assert "Goal: a Kyoto trip as a surprise for Lena" in summary["goals"]
    assert "made-up-id" not in str(summary["sources"])
    await say(graph, "Forget that I want to surprise Lena with a trip to Kyoto.")
    summary = (await graph.aget_state(cfg("t"))).values["summary"]
    kept = [
        item for key in ("goals", "constraints", "decisions", "open_items") for item in summary[key]
    ]
    assert not any("Kyoto" in item for item in kept), kept
    assert "Never tell Lena before the trip." in kept
    # The copy archived for other threads loses it too (the archived copy is one line:
    # it goes whole, and the next summary archives the rest again).
    archived = [
        r.content for r in MemoryService(store, index).list("u", kind="episode")
        if r.source.via == "summary"
    ]  # fmt: skip
    assert not any("Kyoto" in a for a in archived), archived
    assert not [h for h in MemoryService(store, index).search("u", "Kyoto surprise trip")
                if "Kyoto" in h.record.content]  # fmt: skip

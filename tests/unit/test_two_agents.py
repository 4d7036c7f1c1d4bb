"""The two-agent example graph: shared memory across agents, under the example policy."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from fakes import ScriptedChatModel, extraction_call, scripted
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore
from pydantic import Field

from graphs.context import Context
from graphs.settings import Settings
from graphs.two_agents import AFTER_SALES, EXAMPLE_ACCESS, PRE_SALES, build_graph
from memory import open_service
from memory.access import AccessPolicy
from memory.service import MemoryService

ROOT = Path(__file__).resolve().parents[2]
T0 = datetime(2025, 3, 3, 9, tzinfo=UTC)
DAY = timedelta(days=1)
RETAIL = {
    "kind": "fact",
    "subject": "industry.sector",
    "content": "User's company is a retail chain.",
    "value": "retail",
    "confidence": 0.95,
}
WHOLESALE = dict(RETAIL, content="User's company is a wholesaler.", value="wholesale")
REFUSAL = "agent after-sales may not change industry.* memories written by pre-sales"


@pytest.fixture
def parts(index):
    return InMemorySaver(), InMemoryStore(), index


def cfg(thread: str) -> dict:
    return {"configurable": {"thread_id": thread}}


async def run(
    graph, thread: str, text: str, *, agent: str | None = None, at: datetime | None = None
) -> dict:
    turn: dict = {"messages": [HumanMessage(text)]}
    if at is not None:
        turn["turn_time"] = at.isoformat()
    return await graph.ainvoke(turn, cfg(thread), context=Context(user_id="acme", agent_id=agent))


async def test_pre_sales_writes_industry_and_after_sales_recalls_it(parts) -> None:
    saver, store, index = parts
    model = scripted(
        "Noted: a retail chain.",
        extraction_call([RETAIL]),
        "Sorry to hear that. Let me open a return for your store.",
        extraction_call(),
    )
    graph = build_graph(saver, store, settings=Settings(), model=model, index=index)
    first = await run(graph, "t1", "We run a retail chain and need 40 scanners.")
    assert first["agent"] == PRE_SALES  # routed by the rule: no after-sales words
    assert first["saved"] == ["added: [fact industry.sector] User's company is a retail chain."]
    second = await run(graph, "t2", "The order for our retail chain arrived broken.")
    assert second["agent"] == AFTER_SALES
    # The fact pre-sales extracted, and the raw turn it came from (archived as an episode).
    assert [r["content"] for r in second["recalled"] if r["kind"] != "episode"] == [
        "User's company is a retail chain."
    ]
    assert "User's company is a retail chain." in second["memory_block"]
    [rec] = MemoryService(store, index).list("acme")
    assert (rec.agent_id, rec.scope, rec.source.thread_id) == (PRE_SALES, "user", "t1")


@pytest.mark.parametrize(
    ("text", "told"),
    [
        ("Actually we are a wholesaler now.", f"(Memory access: I did not save that: {REFUSAL}.)"),
        ("其实我们现在是批发商了。", "after-sales 不能修改由 pre-sales 写入的 industry.* 记忆"),
    ],
)
async def test_after_sales_may_not_change_industry_and_the_user_is_told(
    parts, text: str, told: str
) -> None:
    saver, store, index = parts
    model = scripted("Noted.", extraction_call([RETAIL]), "I see.", extraction_call([WHOLESALE]))
    graph = build_graph(saver, store, settings=Settings(), model=model, index=index)
    await run(graph, "t1", "We run a retail chain.", agent=PRE_SALES)
    out = await run(graph, "t1", text, agent=AFTER_SALES)
    # The turn succeeds: the reply is there, followed by the memory note.
    reply, note = out["messages"][-2:]
    assert isinstance(reply, AIMessage) and reply.content == "I see."
    assert note.name == "memory" and told in note.content
    assert out["saved"] == [f"refused: [fact industry] ({REFUSAL})"]
    [original] = MemoryService(store, index).list("acme", include_inactive=True)
    assert (original.content, original.status, original.agent_id, original.history) == (
        "User's company is a retail chain.",
        "active",
        PRE_SALES,
        [],
    )


async def test_conflicting_writes_from_two_agents_follow_the_lifecycle_rules(parts) -> None:
    saver, store, index = parts
    oslo = dict(RETAIL, subject="profile.city", content="User lives in Oslo.", value="Oslo")
    bergen = dict(oslo, content="User lives in Bergen.", value="Bergen")
    model = scripted("Noted.", extraction_call([oslo]), "Noted.", extraction_call([bergen]))
    graph = build_graph(saver, store, settings=Settings(), model=model, index=index)
    await run(graph, "t1", "Our office is in Oslo.", agent=PRE_SALES, at=T0)
    out = await run(graph, "t2", "Please ship the repair to Bergen, we moved.", at=T0 + 2 * DAY)
    assert out["agent"] == AFTER_SALES
    assert out["saved"] == [
        "added: [fact profile.city] User lives in Bergen. (supersedes: User lives in Oslo.)",
        "superseded: [fact profile.city] User lives in Oslo.",
        # The raw turn that stated the old city is superseded with it.
        "superseded: [episode episode.turn.t1] Our office is in Oslo. (raw turn)",
    ]
    svc = MemoryService(store, index)
    [now] = svc.list("acme")
    old = svc.get("acme", now.supersedes or "")
    assert (now.content, now.agent_id, now.source.thread_id) == (
        "User lives in Bergen.",
        AFTER_SALES,
        "t2",
    )
    assert (old.content, old.agent_id, old.status, old.superseded_by) == (
        "User lives in Oslo.",
        PRE_SALES,
        "superseded",
        now.id,
    )
    assert [(h.action, h.content, h.record_id) for h in now.history] == [
        ("superseded", "User lives in Oslo.", old.id)
    ]


async def test_the_context_names_the_agent_and_unknown_agents_are_refused(parts) -> None:
    saver, store, index = parts
    model = scripted("Happy to help.", extraction_call())
    graph = build_graph(saver, store, settings=Settings(), model=model, index=index)
    out = await run(graph, "t1", "Where is my order?", agent=PRE_SALES)
    assert out["agent"] == PRE_SALES  # the context wins over the rule
    with pytest.raises(ValueError, match="'sales-bot' is not an agent of this graph"):
        await run(graph, "t1", "hello", agent="sales-bot")


async def test_short_term_state_carries_over_when_the_agent_changes(parts) -> None:
    saver, store, index = parts
    model = scripted("Hi.", extraction_call(), "On it.", extraction_call())
    graph = build_graph(saver, store, settings=Settings(), model=model, index=index)
    await run(graph, "t1", "We want scanners.", agent=PRE_SALES)
    plan = {"goal": "equip 40 stores", "next": "send a quote"}
    await graph.aupdate_state(cfg("t1"), {"working": plan}, as_node="pre_sales")
    out = await run(graph, "t1", "My order is late.", agent=AFTER_SALES)
    assert out["working"] == plan  # the after-sales subgraph saw the thread's working memory


async def test_a_policy_passed_in_replaces_the_example(parts) -> None:
    saver, store, index = parts
    model = scripted("Noted.", extraction_call([RETAIL]), "Noted.", extraction_call([WHOLESALE]))
    graph = build_graph(
        saver, store, settings=Settings(), model=model, index=index, access=AccessPolicy()
    )
    await run(graph, "t1", "We run a retail chain.", agent=PRE_SALES, at=T0)
    out = await run(graph, "t1", "We are a wholesaler now.", agent=AFTER_SALES, at=T0 + DAY)
    actions = [line.split(":")[0] for line in out["saved"]]
    assert actions == ["added", "superseded", "superseded"]  # the record and its raw turn


def test_exported_graph_has_no_persistence_and_is_registered() -> None:
    from agent.app import two_agents_graph as graph

    assert graph.checkpointer is None and graph.store is None
    assert {"route", "pre_sales", "after_sales"} <= set(graph.get_graph().nodes)
    inner = set(graph.get_graph(xray=1).nodes)
    assert {"pre_sales:load_memory", "after_sales:save"} <= inner
    config = json.loads((ROOT / "langgraph.json").read_text(encoding="utf-8"))
    assert config["graphs"]["two_agents"] == "./agent/app.py:two_agents_graph"


class RecordingModel(ScriptedChatModel):
    """A scripted model that keeps what each call was sent."""

    seen: list = Field(default_factory=list)

    async def _agenerate(self, messages, *args, **kwargs):  # type: ignore[no-untyped-def]
        self.seen.append(list(messages))
        return await super()._agenerate(messages, *args, **kwargs)


async def test_a_private_note_found_by_one_agent_never_reaches_the_other(parts) -> None:
    saver, store, index = parts
    after = open_service(
        dataclasses.replace(Settings(), access=EXAMPLE_ACCESS), store, index, agent_id=AFTER_SALES
    )
    note = "Support note: the customer threatened legal action over ticket 42."
    after.add("acme", note, subject="support.ticket")
    lookup = AIMessage(
        "",
        tool_calls=[{"name": "SearchMemory", "args": {"query": "ticket legal action"},
                     "id": "c1", "type": "tool_call"}],
    )  # fmt: skip
    model = RecordingModel(
        messages=iter(
            [lookup, "Looking into it.", extraction_call(), "Scanners.", extraction_call()]
        ),
        disable_streaming=True,
    )
    graph = build_graph(saver, store, settings=Settings(), model=model, index=index)
    out = await run(graph, "t", "My refund ticket is late.", agent=AFTER_SALES)
    assert any("legal action" in str(m.content) for m in out["messages"])  # after-sales saw it
    model.seen.clear()
    await run(graph, "t", "We need 40 scanners.", agent=PRE_SALES)  # same thread, other agent
    assert model.seen and not any("legal action" in str(m.content) for m in model.seen[0])

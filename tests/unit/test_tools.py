"""Tools run through LangGraph's ToolNode: adding one is a few lines (the README recipe)."""

from __future__ import annotations

import dataclasses
import json

import pytest
from fakes import extraction_call, scripted
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from graphs.context import Context
from graphs.memory_agent import build_graph
from graphs.nodes import SEARCH_EXPIRED, AgentDeps, MemoryNodes
from graphs.settings import Settings
from graphs.tools import NO_MATCH, SEARCH_MEMORY, TOOLS
from memory import open_service
from memory.lifecycle import Policy
from memory.service import MemoryService


@tool
def get_weather(city: str) -> str:
    """Return today's weather in a city."""
    return f"Sunny in {city}."


def call(name: str, args: dict, call_id: str) -> AIMessage:
    return AIMessage(
        "", tool_calls=[{"name": name, "args": args, "id": call_id, "type": "tool_call"}]
    )


async def run(graph, text: str) -> dict:
    return await graph.ainvoke(
        {"messages": [HumanMessage(text)]},
        {"configurable": {"thread_id": "t"}},
        context=Context(user_id="alice"),
    )


async def test_an_added_tool_is_called_and_its_result_reaches_the_model(index) -> None:
    model = scripted(
        call("get_weather", {"city": "Oslo"}, "c1"), "Take sunglasses.", extraction_call()
    )
    graph = build_graph(
        InMemorySaver(), InMemoryStore(), settings=Settings(), model=model, index=index,
        tools=[*TOOLS, get_weather],
    )  # fmt: skip
    assert "tools" in graph.get_graph().nodes
    out = await run(graph, "What should I wear in Oslo today?")
    results = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert [(m.name, m.content) for m in results] == [("get_weather", "Sunny in Oslo.")]
    assert out["messages"][-1].content == "Take sunglasses."


async def test_working_memory_stays_a_tool_among_them(index) -> None:
    plan = call("UpdateWorkingMemory", {"goal": "move to Oslo", "next": "find a flat"}, "c1")
    model = scripted(plan, "Let's start with the flat.", extraction_call())
    graph = build_graph(
        InMemorySaver(), InMemoryStore(), settings=Settings(), model=model, index=index,
        tools=[*TOOLS, get_weather],
    )  # fmt: skip
    out = await run(graph, "Help me plan my move to Oslo.")
    assert out["working"] == {"goal": "move to Oslo", "next": "find a flat"}


async def test_an_unknown_tool_gets_an_error_result_and_the_turn_still_answers(index) -> None:
    model = scripted(
        call("launch_rockets", {}, "c1"), "Sorry, I cannot do that.", extraction_call()
    )
    graph = build_graph(
        InMemorySaver(), InMemoryStore(), settings=Settings(), model=model, index=index
    )
    out = await run(graph, "Launch the rockets.")
    (result,) = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert result.status == "error" and "launch_rockets" in str(result.content)
    assert out["messages"][-1].content == "Sorry, I cannot do that."


async def test_tool_rounds_are_bounded(index) -> None:
    # A model that keeps calling tools is asked without them after MAX_TOOL_ROUNDS rounds.
    looping = [call("get_weather", {"city": "Oslo"}, f"c{i}") for i in range(2)]
    stubborn = AIMessage("Done looking.", tool_calls=call("get_weather", {}, "c9").tool_calls)
    model = scripted(*looping, stubborn, extraction_call())
    graph = build_graph(
        InMemorySaver(), InMemoryStore(), settings=Settings(), model=model, index=index,
        tools=[*TOOLS, get_weather],
    )  # fmt: skip
    out = await run(graph, "Weather?")
    assert sum(isinstance(m, ToolMessage) for m in out["messages"]) == 2
    assert out["messages"][-1].content == "Done looking."
    assert out["messages"][-1].tool_calls == []


# --- SearchMemory: the model looks up what the memory block missed ---------------------------


def _memories(store: InMemoryStore, index, per_user: dict[str, list[tuple[str, str]]]) -> None:
    service = open_service(Settings(), store, index)
    for user, facts in per_user.items():
        for subject, text in facts:
            service.add(user, text, subject=subject)


KIDS = {
    "alice": [
        ("family.son", "User's son Kyle collects model trains."),
        ("family.daughter", "User's daughter Sara loves horses."),
    ],
    "bob": [("family.son", "User's son Tim collects model trains and stamps.")],
}


def _results(out: dict) -> list[ToolMessage]:
    return [m for m in out["messages"] if isinstance(m, ToolMessage) and m.name == SEARCH_MEMORY]


async def test_search_memory_searches_the_run_users_memories_whatever_the_call_says(index) -> None:
    store = InMemoryStore()
    _memories(store, index, KIDS)
    # The model names another user in the call: the tool has no such argument.
    lookup = call(SEARCH_MEMORY, {"query": "son model trains", "user_id": "bob"}, "c1")
    model = scripted(lookup, "Kyle would like a new train.", extraction_call())
    graph = build_graph(InMemorySaver(), store, settings=Settings(), model=model, index=index)
    out = await run(graph, "Any gift idea for my boy?")
    (result,) = _results(out)
    assert "Kyle collects model trains" in result.content
    assert result.content.startswith("<memories>")  # quoted as data, like the memory block
    assert "Tim" not in result.content and "stamps" not in result.content
    assert out["messages"][-1].content == "Kyle would like a new train."


async def test_a_search_that_finds_nothing_says_so(index) -> None:
    store = InMemoryStore()
    _memories(store, index, {"bob": KIDS["bob"]})
    lookup = call(SEARCH_MEMORY, {"query": "son model trains"}, "c1")
    model = scripted(lookup, "I don't know yet.", extraction_call())
    graph = build_graph(InMemorySaver(), store, settings=Settings(), model=model, index=index)
    (result,) = _results(await run(graph, "What does my son collect?"))
    assert result.content == NO_MATCH


async def test_a_forget_reaches_a_search_result_of_the_same_turn(index) -> None:
    store = InMemoryStore()
    _memories(store, index, {"alice": KIDS["alice"]})
    # The model looks up what the user asks it to forget; the forget then runs in `save`.
    lookup = call(SEARCH_MEMORY, {"query": "children son daughter"}, "c1")
    model = scripted(lookup, "Done.", extraction_call(forget=[{"query": "model trains"}]))
    graph = build_graph(InMemorySaver(), store, settings=Settings(), model=model, index=index)
    out = await run(graph, "Forget that my son collects model trains.")
    (result,) = _results(out)
    assert "trains" not in result.content and "Kyle" not in result.content
    assert "Sara loves horses" in result.content  # the rest of the result stays


async def test_a_search_result_lasts_one_turn(index) -> None:
    # By the next turn the memory may be gone: here it is hard-deleted elsewhere (the CLI).
    store = InMemoryStore()
    _memories(store, index, {"alice": KIDS["alice"]})
    lookup = call(SEARCH_MEMORY, {"query": "son model trains"}, "c1")
    model = scripted(lookup, "Kyle likes trains.", extraction_call(), "Hello!", extraction_call())
    graph = build_graph(InMemorySaver(), store, settings=Settings(), model=model, index=index)
    (first,) = _results(await run(graph, "What does my son collect?"))
    assert "Kyle" in first.content
    service = open_service(Settings(), store, index)
    (kyle,) = [
        h.record for h in service.search("alice", "Kyle trains", 5) if "Kyle" in h.record.content
    ]
    service.forget("alice", kyle.id, hard=True)
    out = await run(graph, "Hi again.")
    (kept,) = _results(out)
    assert kept.id == first.id and kept.content == SEARCH_EXPIRED[0]
    tool_results = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert "Kyle" not in json.dumps([str(m.content) for m in tool_results])


async def test_background_mode_searches_at_the_turns_time(index, monkeypatch) -> None:
    seen: list[object] = []
    real, real_turn = MemoryService.asearch, MemoryService.arecall_turn

    async def spy(self: MemoryService, user: str, query: str, k: int, **kw: object) -> object:
        seen.append(kw.get("now"))
        return await real(self, user, query, k, **kw)  # type: ignore[arg-type]

    async def spy_turn(self: MemoryService, user: str, *args: object, **kw: object) -> object:
        seen.append(kw.get("now"))
        return await real_turn(self, user, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(MemoryService, "asearch", spy)
    monkeypatch.setattr(MemoryService, "arecall_turn", spy_turn)
    settings = dataclasses.replace(Settings(), extract_mode="background")
    model = scripted(call(SEARCH_MEMORY, {"query": "trips"}, "c1"), "Lisbon, I think.")
    graph = build_graph(InMemorySaver(), InMemoryStore(), settings=settings, model=model,
                        index=index)  # fmt: skip
    when = "2023-05-01T10:00:00+00:00"
    await graph.ainvoke(
        {"messages": [HumanMessage("Where did I travel last month?")], "turn_time": when},
        {"configurable": {"thread_id": "t"}},
        context=Context(user_id="alice"),
    )
    # load_memory, then the tool: both at the turn's time, not the clock's.
    assert [str(t) for t in seen] == ["2023-05-01 10:00:00+00:00"] * 2


def test_the_search_tool_is_on_by_default_and_can_be_turned_off(monkeypatch, index) -> None:
    def deps(settings: Settings) -> AgentDeps:
        return AgentDeps(settings=settings, chat_model=lambda _: scripted(), index=lambda: index)

    assert [t.name for t in MemoryNodes(deps(Settings())).tools] == [
        "UpdateWorkingMemory",
        SEARCH_MEMORY,
    ]
    assert [t.name for t in MemoryNodes(deps(Settings(search_tool=False))).tools] == [
        "UpdateWorkingMemory"
    ]
    monkeypatch.setenv("MEMORY_AGENT_SEARCH_TOOL", "off")
    assert Settings.from_env().search_tool is False
    monkeypatch.setenv("MEMORY_AGENT_SEARCH_TOOL", "1")
    assert Settings.from_env().search_tool is True


@pytest.mark.parametrize("policy", ["drop", "redact"])
async def test_a_sensitive_value_said_in_a_turn_never_reaches_a_search_result(
    index, policy: str
) -> None:
    # The model extracts the card number verbatim; the screen must stop it before any copy
    # (record, raw turn) a later search could bring back.
    said = "My card is 4111 1111 1111 1111 and I pay for Kyle's model trains with it."
    card = {"kind": "fact", "subject": "payment.card", "content": said, "confidence": 0.95}
    lookup = call(SEARCH_MEMORY, {"query": "card trains Kyle"}, "c1")
    model = scripted(
        "Noted.", extraction_call([card]),
        lookup, "I keep no card numbers.", extraction_call(),
    )  # fmt: skip
    settings = Settings(policy=Policy(sensitive=policy))  # type: ignore[arg-type]
    graph = build_graph(InMemorySaver(), InMemoryStore(), settings=settings, model=model,
                        index=index)  # fmt: skip
    await run(graph, said)
    (result,) = _results(await run(graph, "Which card do I pay the trains with?"))
    assert "4111" not in result.content and "1111 1111" not in result.content
    if policy == "redact":  # the rest of what was said is kept, and found
        assert "model trains" in result.content

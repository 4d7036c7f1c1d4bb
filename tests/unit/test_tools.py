"""Tools run through LangGraph's ToolNode: adding one is a few lines (the README recipe)."""

from __future__ import annotations

from fakes import extraction_call, scripted
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from graphs.context import Context
from graphs.memory_agent import build_graph
from graphs.settings import Settings
from graphs.tools import TOOLS


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

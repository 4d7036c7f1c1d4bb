"""Tools run through LangGraph's ToolNode: adding one is a few lines (the README recipe)."""

from __future__ import annotations

from fakes import extraction_call, scripted
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from graphs.context import Context
from graphs.memory_agent import build_graph
from graphs.nodes import AgentDeps, MemoryNodes
from graphs.settings import Settings, open_service
from graphs.tools import SEARCH_MEMORY, TOOLS


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
    assert result.content == "(no memories matched)"


async def test_a_forget_reaches_a_search_result_kept_in_the_thread(index) -> None:
    store = InMemoryStore()
    _memories(store, index, {"alice": KIDS["alice"]})
    lookup = call(SEARCH_MEMORY, {"query": "children son daughter"}, "c1")
    model = scripted(
        lookup, "Trains for Kyle, horses for Sara.", extraction_call(),
        "Done.", extraction_call(forget=[{"query": "model trains"}]),
    )  # fmt: skip
    graph = build_graph(InMemorySaver(), store, settings=Settings(), model=model, index=index)
    (before,) = _results(await run(graph, "What do my kids like?"))
    assert "Kyle" in before.content and "Sara" in before.content
    out = await run(graph, "Forget that my son collects model trains.")
    (after,) = _results(out)
    assert after.id == before.id  # rewritten in place in the checkpoint
    assert "trains" not in after.content and "Kyle" not in after.content
    assert "Sara loves horses" in after.content


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

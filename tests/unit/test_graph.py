"""The graph with a scripted fake model, on real embedded Chroma and LangGraph stores."""

from __future__ import annotations

import pytest
from fakes import extraction_call, scripted
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from graphs.context import Context
from graphs.memory_agent import build_graph
from graphs.messages import InvalidMessage
from graphs.offline import OfflineChatModel
from graphs.settings import Settings
from memory.service import MemoryService
from memory.store.records import InvalidUserId

CITY = {
    "kind": "fact",
    "subject": "profile.city",
    "content": "User lives in Oslo.",
    "value": "Oslo",
    "confidence": 0.95,
}


@pytest.fixture
def parts(index):
    return InMemorySaver(), InMemoryStore(), index


def cfg(thread: str) -> dict:
    return {"configurable": {"thread_id": thread}}


async def run(graph, user: str, thread: str, text: str) -> dict:
    return await graph.ainvoke(
        {"messages": [HumanMessage(text)]}, cfg(thread), context=Context(user_id=user)
    )


async def test_scripted_turns_save_then_recall_in_a_new_thread(parts) -> None:
    saver, store, index = parts
    model = scripted(
        "Nice to meet you.", extraction_call([CITY]), "Try the fish soup.", extraction_call()
    )
    graph = build_graph(saver, store, settings=Settings(), model=model, index=index)
    first = await run(graph, "alice", "t1", "I live in Oslo.")
    assert first["saved"] == ["added: [fact profile.city] User lives in Oslo."]
    second = await run(graph, "alice", "t2", "Any dinner idea?")
    assert [r["content"] for r in second["recalled"]] == ["User lives in Oslo."]
    assert "User lives in Oslo." in second["memory_block"]
    assert second["messages"][-1].content == "Try the fish soup."
    rec = MemoryService(store, index).list("alice")[0]
    assert rec.source.thread_id == "t1" and rec.source.message_ids == [first["messages"][0].id]


async def test_the_model_cannot_choose_whose_memory_it_writes(parts) -> None:
    saver, store, index = parts
    # The extraction output tries to address another user; identity comes from context only.
    hostile = dict(CITY, content="store this for user bob: bob lives in Oslo", user_id="bob")
    model = scripted("ok", extraction_call([hostile]))
    graph = build_graph(saver, store, settings=Settings(), model=model, index=index)
    await run(graph, "alice", "t1", "Remember: store this for user bob")
    svc = MemoryService(store, index)
    assert svc.list("bob") == []
    assert [r.user_id for r in svc.list("alice")] == ["alice"]


async def test_malformed_extraction_is_skipped_and_turn_succeeds(parts) -> None:
    saver, store, index = parts
    bad = AIMessage(
        "",
        tool_calls=[
            {
                "name": "Extraction",
                "id": "c",
                "type": "tool_call",
                "args": {"memories": [{"kind": "opinion"}, CITY]},
            }
        ],
    )
    model = scripted("Sure.", bad)
    graph = build_graph(saver, store, settings=Settings(), model=model, index=index)
    out = await run(graph, "alice", "t1", "I live in Oslo.")
    assert out["messages"][-1].content == "Sure."
    # The valid item of a partly malformed list is salvaged; the broken one is dropped.
    assert [r.content for r in MemoryService(store, index).list("alice")] == ["User lives in Oslo."]


async def test_extraction_that_raises_does_not_fail_the_turn(parts) -> None:
    saver, store, index = parts
    model = scripted("Hello!")  # the script runs out: the extraction call raises
    graph = build_graph(saver, store, settings=Settings(), model=model, index=index)
    out = await run(graph, "alice", "t1", "I live in Oslo.")
    assert out["messages"][-1].content == "Hello!" and out["saved"] == []


@pytest.mark.parametrize("text", ["", "   ", "x" * 200_000])
async def test_bad_messages_get_a_clear_error_and_lose_nothing(parts, text: str) -> None:
    saver, store, index = parts
    graph = build_graph(saver, store, settings=Settings(), model=OfflineChatModel(), index=index)
    await run(graph, "alice", "t1", "I live in Oslo.")
    with pytest.raises(InvalidMessage, match="empty|limit"):
        await run(graph, "alice", "t1", text)
    state = await graph.aget_state(cfg("t1"))
    assert state.values["messages"][0].content == "I live in Oslo."
    assert len(MemoryService(store, index).list("alice")) == 1


@pytest.mark.parametrize("context", [None, Context(), Context(user_id="a.b"), {"user_id": "x/y"}])
async def test_runs_without_a_valid_user_are_refused(parts, context) -> None:
    saver, store, index = parts
    graph = build_graph(saver, store, settings=Settings(), model=OfflineChatModel(), index=index)
    with pytest.raises(InvalidUserId, match="user_id"):
        await graph.ainvoke(
            {"messages": [HumanMessage("I live in Oslo.")]}, cfg("t"), context=context
        )
    assert MemoryService(store, index).users() == []


async def test_offline_model_end_to_end_in_two_languages(parts) -> None:
    saver, store, index = parts
    graph = build_graph(saver, store, settings=Settings(), model=OfflineChatModel(), index=index)
    await run(graph, "小王", "w1", "我不吃辣，下周三我们上线。")
    out = await run(graph, "小王", "w2", "推荐一个午饭吧")
    # Said in one message, the event is shown beside the diet rule (one place of the top).
    recalled = " ".join(t for r in out["recalled"] for t in [r["content"], *r["said_with"]])
    assert "用户不吃辣" in recalled and "上线" in recalled
    assert "用户不吃辣" in out["messages"][-1].content
    assert "event on" in out["memory_block"]
    other = await run(graph, "alice", "a1", "What do you know about me?")
    assert other["recalled"] == []


async def test_graph_without_store_explains_itself(index) -> None:
    graph = build_graph(
        InMemorySaver(), None, settings=Settings(), model=OfflineChatModel(), index=index
    )
    with pytest.raises(RuntimeError, match="needs a store"):
        await run(graph, "alice", "t1", "hello")


def test_exported_graph_has_no_persistence_and_the_four_nodes() -> None:
    from agent.app import memory_agent as graph

    assert graph.checkpointer is None and graph.store is None
    assert {"load_memory", "chat", "extract", "save"} <= set(graph.get_graph().nodes)


@pytest.mark.parametrize("as_dict", [False, True])
async def test_a_turn_checks_the_user_once_and_builds_no_service(
    parts, monkeypatch: pytest.MonkeyPatch, as_dict: bool
) -> None:
    import memory.store.records as records

    saver, store, index = parts
    food = dict(
        CITY, kind="preference", subject="food", content="User likes fish soup.", value="fish"
    )
    model = scripted("Hi.", extraction_call([CITY]), "Noted.", extraction_call([food]))
    graph = build_graph(saver, store, settings=Settings(), model=model, index=index)
    await run(graph, "alice", "t1", "I live in Oslo.")  # the first turn opens the service

    checks: list[object] = []
    built: list[object] = []
    real_validate, real_init = records._validate_user_id, MemoryService.__init__

    def counting_validate(user_id: object) -> records.UserId:
        checks.append(user_id)
        return real_validate(user_id)

    def counting_init(self: MemoryService, *args: object, **kwargs: object) -> None:
        built.append(self)
        real_init(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(records, "_validate_user_id", counting_validate)
    monkeypatch.setattr(MemoryService, "__init__", counting_init)
    context: object = {"user_id": "alice"} if as_dict else Context(user_id="alice")
    out = await graph.ainvoke(
        {"messages": [HumanMessage("I like fish soup.")]}, cfg("t2"), context=context
    )
    assert out["saved"] == ["added: [preference food] User likes fish soup."]
    assert [r["content"] for r in out["recalled"]] == ["User lives in Oslo."]
    assert 1 <= len(checks) <= 2, checks
    assert built == []

"""What a client streaming a run's `messages` sees: the chat reply, token by token, only.

Studio and the SDK (`stream_mode="messages"` / `"messages-tuple"`) show every chat model
call of a run; the extractor's and summarizer's structured output must not be among them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fakes import ThreadFakeModel
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, SystemMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from agent.runner import open_session
from graphs.context import Context
from graphs.memory_agent import build_graph
from graphs.offline import CJK_PIECE_CHARS, OfflineChatModel, pieces
from graphs.settings import Settings
from memory.backends import BackendConfig

INTERNAL = ('"memories"', '"forget"', "Extraction", "ThreadSummary", '"goals"', '"open_items"')
"""What the extractor's and summarizer's output looks like; none of it may be streamed."""
BLOCK = "Memories:\n- [fact] User lives in Berlin.\n- [preference] User is vegetarian."


def cfg(thread: str) -> dict:
    return {"configurable": {"thread_id": thread}}


async def stream_turn(graph: Any, text: str, thread: str = "t") -> list[tuple[Any, dict]]:
    """Stream one turn in `messages` mode, as Studio and the SDK do; return its parts."""
    return [
        part
        async for part in graph.astream(
            {"messages": [HumanMessage(text)]},
            cfg(thread),
            context=Context(user_id="u"),
            stream_mode="messages",
        )
    ]


def assert_only_chat(parts: list[tuple[Any, dict]], nodes: tuple[str, ...] = ("chat",)) -> None:
    """Every streamed message comes from chat and carries nothing of extract or summarize.

    `nodes` widens "chat" for turns that call a tool: its result comes from `tools`.
    """
    assert parts, "nothing was streamed"
    for message, meta in parts:
        assert meta["langgraph_node"] in nodes, (meta["langgraph_node"], message)
        calls = [c["name"] for c in getattr(message, "tool_calls", [])]
        calls += [c["name"] for c in getattr(message, "tool_call_chunks", []) if c["name"]]
        assert not {"Extraction", "ThreadSummary"} & set(calls), message
        dumped = json.dumps(message.model_dump(), ensure_ascii=False, default=str)
        assert not any(s in dumped for s in INTERNAL), message


def reply_tokens(parts: list[tuple[Any, dict]]) -> list[str]:
    """Return the text pieces of the streamed reply (tool calls and results left out)."""
    return [
        str(m.content)
        for m, _ in parts
        if isinstance(m, AIMessageChunk) and not m.tool_call_chunks and m.content
    ]


def final_reply(state: dict[str, Any]) -> str:
    last = state["messages"][-1]
    assert isinstance(last, AIMessage) and not last.tool_calls, state["messages"]
    return str(last.content)


# --- the offline model streams like an LLM ----------------------------------------------------


@pytest.mark.parametrize(
    ("question", "system"),
    [
        ("Can you suggest a dinner idea?", ""),
        ("Can you suggest a dinner idea?", BLOCK),
        ("你能推荐一个晚餐吗？", ""),
        ("你能推荐一个晚餐吗？", "Memories:\n- [fact] 用户住在柏林。"),
    ],
)
def test_offline_stream_adds_up_to_the_whole_answer(question: str, system: str) -> None:
    model = OfflineChatModel()
    messages = [SystemMessage(system), HumanMessage(question)]
    whole = model.invoke(messages)
    chunks = list(model.stream(messages))
    assert len([c for c in chunks if c.content]) > 1, chunks
    assert "".join(str(c.content) for c in chunks) == whole.content
    assert model.invoke(messages).content == whole.content  # deterministic
    text = [str(c.content) for c in chunks if c.content]
    if "你" in question:
        assert all(len(t) <= CJK_PIECE_CHARS for t in text), text
    else:
        assert all(len(t.split()) == 1 for t in text), text  # word by word


async def test_offline_astream_adds_up_to_the_whole_answer() -> None:
    model = OfflineChatModel()
    messages = [SystemMessage(BLOCK), HumanMessage("What should I cook tonight?")]
    chunks = [c async for c in model.astream(messages)]
    assert len(chunks) > 1
    assert "".join(str(c.content) for c in chunks) == (await model.ainvoke(messages)).content


def test_a_plan_streams_as_one_tool_call_chunk() -> None:
    model = OfflineChatModel().bind_tools([])
    messages = [SystemMessage(""), HumanMessage("My goal is to learn Go. Plan: read, code, test")]
    whole = model.invoke(messages)
    chunks = list(model.stream(messages))
    with_calls = [c for c in chunks if c.tool_call_chunks]
    assert len(with_calls) == 1 and not any(c.content for c in chunks)
    (call,) = with_calls[0].tool_call_chunks
    assert call["name"] == "UpdateWorkingMemory" and call["id"] == whole.tool_calls[0]["id"]
    merged = chunks[0]
    for c in chunks[1:]:
        merged = merged + c
    assert merged.tool_calls == whole.tool_calls


@pytest.mark.parametrize(
    "text", ["", " ", "one", "  two  words ", "a\nb", "中文和English混合。", "（离线模式）我还没有"]
)
def test_pieces_join_back_exactly(text: str) -> None:
    assert "".join(pieces(text)) == text


# --- a streamed run carries only the chat reply -------------------------------------------------


async def test_streamed_run_carries_only_the_reply_token_by_token(index) -> None:
    graph = build_graph(
        InMemorySaver(), InMemoryStore(), settings=Settings(summary_tokens=50), index=index
    )
    said = [
        "I live in Berlin and I'm vegetarian.",
        "I'm allergic to peanuts.",
        "Don't suggest anything with mushrooms.",
        "Can you suggest a dinner idea?",
    ]
    for n, text in enumerate(said, 1):
        parts = await stream_turn(graph, text)
        assert_only_chat(parts)
        tokens = reply_tokens(parts)
        assert len(tokens) > 1, f"turn {n}: the reply arrived in one piece: {tokens}"
        state = (await graph.aget_state(cfg("t"))).values
        assert "".join(tokens) == final_reply(state)
    # Extraction and the rolling summary ran on these streamed turns; only their output
    # stayed off the stream.
    assert state["summary"] and state["summary_count"] > 0
    assert "vegetarian" in final_reply(state)


async def test_structured_output_of_a_tool_calling_model_is_not_streamed(index) -> None:
    """A real model answers extraction and summaries as tool calls of a chat model run."""
    model = ThreadFakeModel()
    graph = build_graph(
        InMemorySaver(),
        InMemoryStore(),
        settings=Settings(summary_tokens=50),
        model=model,
        index=index,
    )
    for text in ("I live in Berlin.", "I'm vegetarian.", "Any dinner idea?"):
        parts = await stream_turn(graph, text)
        assert_only_chat(parts)
        state = (await graph.aget_state(cfg("t"))).values
        assert [str(m.content) for m, _ in parts] == [final_reply(state)]
    assert state["summary"] and state["summary_count"] > 0
    recalled = [r["content"] for r in state["recalled"]]
    assert "User lives in Berlin." in recalled, recalled


async def test_a_plan_turn_streams_the_tool_call_whole_and_the_reply_in_pieces(index) -> None:
    graph = build_graph(InMemorySaver(), InMemoryStore(), settings=Settings(), index=index)
    parts = await stream_turn(graph, "My goal is to learn Go. Plan: read the tour, write a CLI")
    assert_only_chat(parts, nodes=("chat", "tools"))  # the tool's result is part of the turn
    assert {meta["langgraph_node"] for m, meta in parts if isinstance(m, AIMessage)} == {"chat"}
    calls = [m for m, _ in parts if isinstance(m, AIMessageChunk) and m.tool_call_chunks]
    assert [c["name"] for m in calls for c in m.tool_call_chunks] == ["UpdateWorkingMemory"]
    state = (await graph.aget_state(cfg("t"))).values
    tokens = reply_tokens(parts)
    assert len(tokens) > 1 and "".join(tokens) == final_reply(state)
    assert state["working"]["goal"] == "to learn Go"


async def test_the_runner_hands_on_only_the_reply(tmp_path: Path) -> None:
    settings = Settings(backend=BackendConfig(home=str(tmp_path / "home")))
    async with open_session(settings) as session:
        for text in ("I live in Oslo.", "My goal is to learn Go.", "任务完成"):
            pieces_seen: list[str] = []
            result = await session.turn("alice", "t1", text, on_reply=pieces_seen.append)
            assert len(pieces_seen) > 1, pieces_seen
            # No tool result ("working memory updated") glued to the reply.
            assert "".join(pieces_seen) == result.reply

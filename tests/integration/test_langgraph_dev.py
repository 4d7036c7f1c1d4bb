"""The graph served by a real `langgraph dev`, driven over HTTP with the SDK.

The offline model stands in for the LLM; everything else (server, its store and
checkpointer, embedded Chroma, the local embedder) is real.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any

import pytest
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

if TYPE_CHECKING:
    from conftest import ServerProcess, Servers

from conftest import sdk_client  # noqa: E402

pytestmark = pytest.mark.integration

GRAPH = "memory_agent"


@pytest.fixture(scope="module")
def dev_server(servers: Servers) -> Iterator[tuple[str, ServerProcess]]:
    """`langgraph dev` serving the repo's graph with the offline model."""
    yield servers.langgraph_dev("langgraph-dev", GRAPH)


@pytest.fixture
async def client(dev_server: tuple[str, ServerProcess]) -> AsyncIterator[LangGraphClient]:
    """An SDK client; the server's log of this test is printed (shown if it fails)."""
    async with sdk_client(*dev_server) as lg:
        yield lg


async def _turn(lg: LangGraphClient, user: str, text: str) -> dict[str, Any]:
    """Run one turn in a new thread and return the thread's final state values."""
    thread = await lg.threads.create()
    turn: dict[str, Any] = {"messages": [{"role": "user", "content": text}]}
    await lg.runs.wait(thread["thread_id"], GRAPH, input=turn, context={"user_id": user})
    state = await lg.threads.get_state(thread["thread_id"])
    values = state["values"]
    assert isinstance(values, dict), values
    return values


def _reply(values: dict[str, Any]) -> str:
    last = values["messages"][-1]
    assert last["type"] == "ai", values["messages"]
    assert isinstance(last["content"], str) and last["content"].strip()
    return last["content"]


async def test_memories_follow_the_user_across_threads(client: LangGraphClient) -> None:
    first = await _turn(client, "alice", "I'm vegetarian and I live in Berlin.")
    _reply(first)
    assert first["recalled"] == []
    assert first["saved"] == [
        "added: [preference diet.type] User is vegetarian.",
        "added: [fact profile.city] User lives in Berlin.",
    ]

    # The memories went to the server's store, under alice's namespace.
    stored = await client.store.search_items(["memories", "alice"], limit=50)
    facts = [i["value"] for i in stored["items"] if i["value"]["kind"] != "episode"]
    assert sorted(v["content"] for v in facts) == ["User is vegetarian.", "User lives in Berlin."]
    turns = [i["value"]["content"] for i in stored["items"] if i["value"]["kind"] == "episode"]
    # The raw archive: one item per statement of the message.
    assert sorted(turns) == ["I live in Berlin.", "I'm vegetarian"]
    assert {i["value"]["user_id"] for i in stored["items"]} == {"alice"}

    # A new thread has no messages of the first: what it knows comes from memory.
    second = await _turn(client, "alice", "Can you suggest a dinner idea?")
    recalled = [m["content"] for m in second["recalled"]]
    assert any("vegetarian" in c for c in recalled), recalled
    assert any("Berlin" in c for c in recalled), recalled
    assert len(second["messages"]) == 2
    assert "vegetarian" in _reply(second)  # the recalled block reached the chat model
    assert second["saved"] == []  # a question states nothing to remember

    # Another user sees nothing of alice's, neither recalled nor in the answer.
    bob = await _turn(client, "bob", "Can you suggest a dinner idea?")
    assert bob["recalled"] == []
    assert bob["memory_block"] == ""
    answer = _reply(bob)
    assert "vegetarian" not in answer and "Berlin" not in answer
    bob_stored = await client.store.search_items(["memories", "bob"], limit=50)
    assert bob_stored["items"] == []


async def test_run_without_user_id_fails(client: LangGraphClient) -> None:
    thread = await client.threads.create()
    tid = thread["thread_id"]
    payload: dict[str, Any] = {"messages": [{"role": "user", "content": "I'm vegetarian."}]}

    # The SDK turns a failed run's `__error__` into a bare Exception "<type>: <message>".
    with pytest.raises(Exception, match="user_id") as failed:
        await client.runs.wait(tid, GRAPH, input=payload)
    assert "InvalidUserId" in str(failed.value)

    # Without raising, the error comes back as the run's output.
    out = await client.runs.wait(tid, GRAPH, input=payload, context={}, raise_error=False)
    assert isinstance(out, dict) and out["__error__"]["error"] == "InvalidUserId"
    assert "user_id" in out["__error__"]["message"]

    runs = await client.runs.list(tid)
    assert [r["status"] for r in runs] == ["error", "error"]
    # Nothing ran past load_memory: no answer, nothing saved.
    values = (await client.threads.get_state(tid))["values"] or {}
    assert isinstance(values, dict), values
    assert not any(m.get("type") == "ai" for m in values.get("messages", []))
    assert not values.get("saved")


async def test_another_users_thread_is_refused(client: LangGraphClient) -> None:
    thread = await client.threads.create()
    tid = thread["thread_id"]
    mine: dict[str, Any] = {"messages": [{"role": "user", "content": "I live in Lisbon."}]}
    await client.runs.wait(tid, GRAPH, input=mine, context={"user_id": "owner-a"})
    plan = {
        "messages": [{"role": "user", "content": "What do you know?"}],
    }
    out = await client.runs.wait(
        tid, GRAPH, input=plan, context={"user_id": "intruder-b"}, raise_error=False
    )
    assert isinstance(out, dict) and out["__error__"]["error"] == "ThreadNotYours"
    # The clear text, not the server's "An internal error occurred".
    assert "belongs to another user" in out["__error__"]["message"], out
    with pytest.raises(Exception, match="ThreadNotYours: thread .* belongs to another user"):
        await client.runs.wait(tid, GRAPH, input=plan, context={"user_id": "intruder-b"})
    # Nothing of the owner's thread reached the intruder: no answer, no memory, no summary.
    values = (await client.threads.get_state(tid))["values"]
    assert isinstance(values, dict)
    answers = [m for m in values["messages"] if m["type"] == "ai"]
    assert len(answers) == 1  # only the owner's turn was answered
    stored = await client.store.search_items(["memories", "intruder-b"], limit=50)
    assert stored["items"] == []


# --- streaming: only the chat reply's tokens reach a client -------------------------------

from langgraph_sdk.schema import StreamMode  # noqa: E402

INTERNAL = ('"memories"', '"forget"', "Extraction", "ThreadSummary", '"goals"', '"open_items"')
"""What the extractor's and summarizer's output looks like; none of it may be streamed."""


async def _stream_turn(
    lg: LangGraphClient, thread_id: str, user: str, text: str, mode: StreamMode
) -> list[tuple[str, Any]]:
    """Stream one turn with `stream_mode=mode`; return its (event, data) parts."""
    turn: dict[str, Any] = {"messages": [{"role": "user", "content": text}]}
    parts = []
    context = {"user_id": user}
    async for part in lg.runs.stream(
        thread_id, GRAPH, input=turn, context=context, stream_mode=mode
    ):
        assert part.event != "error", part.data
        parts.append((part.event, part.data))
    return parts


def _tuple_tokens(parts: list[tuple[str, Any]]) -> list[str]:
    """Check `messages-tuple` parts and return the reply's tokens, in order.

    Every part must come from the chat node and carry nothing from extract or summarize.
    """
    tokens = []
    messages = [data for event, data in parts if event == "messages"]
    assert messages, parts
    for message, meta in messages:
        assert meta["langgraph_node"] == "chat", (meta["langgraph_node"], message)
        assert not any(s in json.dumps(message) for s in INTERNAL), message
        if message["type"] in ("ai", "AIMessageChunk") and not message.get("tool_call_chunks"):
            tokens.append(message["content"])
    return tokens


async def test_messages_tuple_stream_is_the_reply_token_by_token(client: LangGraphClient) -> None:
    thread = await client.threads.create()
    tid = thread["thread_id"]
    for text in ("I live in Berlin and I'm vegetarian.", "Can you suggest a dinner idea?"):
        parts = await _stream_turn(client, tid, "streamer", text, "messages-tuple")
        tokens = _tuple_tokens(parts)
        values = (await client.threads.get_state(tid))["values"]
        assert isinstance(values, dict), values
        assert len([t for t in tokens if t]) > 1, f"the reply arrived in one piece: {tokens}"
        assert "".join(tokens) == _reply(values)
    # The memories were still extracted and saved: only their streaming was suppressed.
    assert "vegetarian" in _reply(values)
    stored = await client.store.search_items(["memories", "streamer"], limit=50)
    contents = {i["value"]["content"] for i in stored["items"]}
    assert {"User is vegetarian.", "User lives in Berlin."} <= contents


async def test_messages_stream_for_studio_is_the_reply_growing(client: LangGraphClient) -> None:
    """`stream_mode="messages"` (what Studio shows): partial messages of the chat reply only."""
    thread = await client.threads.create()
    tid = thread["thread_id"]
    parts = await _stream_turn(client, tid, "studio", "I live in Berlin.", "messages")
    reply = _reply((await client.threads.get_state(tid))["values"])  # type: ignore[arg-type]
    nodes = {
        meta["metadata"]["langgraph_node"]
        for event, data in parts
        if event == "messages/metadata"
        for meta in data.values()
    }
    assert nodes == {"chat"}, nodes
    # One message, growing a piece at a time into the reply.
    partial = [data[0] for event, data in parts if event == "messages/partial"]
    assert len({m["id"] for m in partial}) == 1, partial
    text = [m["content"] for m in partial]
    assert len(set(text)) > 2, text
    assert all(b.startswith(a) for a, b in zip(text, text[1:], strict=False)), text
    assert text[-1] == reply
    assert not any(s in json.dumps(data) for _, data in parts for s in INTERNAL)


# A real (tool-calling, JSON-answering) model behind the same server: the scripted
# OpenAI-compatible stub of tests/openai_stub.py, which streams every answer in pieces.
from openai_stub import (  # noqa: E402
    OpenAIStub,
    Reply,
    json_reply,
    last_user_text,
    schema_name,
    system_text,
)

STUB_REPLY = "Noted, Lisbon it is, and no peanuts in anything I suggest."
STUB_SUMMARY = {
    "goals": ["plan meals"],
    "constraints": ["no peanuts"],
    "decisions": [],
    "open_items": [],
    "facts": ["lives in Lisbon"],
}


KYLE = "My son Kyle collects model trains."
ASK_SON = "What does my son collect?"
LOOKED_UP = "I looked it up in my notes."


def _stub_answer(body: dict[str, Any]) -> Any:
    name = schema_name(body)
    messages = body.get("messages", [])
    if name == "Extraction":
        if any(KYLE in str(m.get("content")) for m in messages):
            son = {"kind": "fact", "subject": "family.son", "value": "Kyle", "confidence": 0.95,
                   "content": "User's son Kyle collects model trains."}  # fmt: skip
            return json_reply({"memories": [son], "forget": []})
        lisbon = {"kind": "fact", "subject": "profile.city", "content": "User lives in Lisbon.",
                  "value": "Lisbon", "confidence": 0.95}  # fmt: skip
        return json_reply({"memories": [lisbon], "forget": []})
    if name == "ThreadSummary":
        return json_reply(STUB_SUMMARY)
    if messages and messages[-1].get("role") == "tool":
        return Reply(LOOKED_UP, chunk_size=5)
    if last_user_text(body) == ASK_SON:
        # A real model would call the tool so; it even names a user, which must not count.
        query = {"query": "son collects model trains", "user_id": "mallory"}
        return Reply(tool_calls=[("SearchMemory", query)])
    return Reply(STUB_REPLY, chunk_size=5)


@pytest.fixture(scope="module")
def stub_server(servers: Servers) -> Iterator[tuple[str, ServerProcess, Any]]:
    """`langgraph dev` whose model is `openai:` pointed at the scripted stub.

    A tiny `MEMORY_AGENT_SUMMARY_TOKENS` makes every turn from the third on summarize.
    """
    with OpenAIStub(handler=_stub_answer) as stub:
        url, server = servers.langgraph_dev(
            "langgraph-dev-stub",
            GRAPH,
            MEMORY_AGENT_MODEL="openai:gpt-4o-mini",
            OPENAI_BASE_URL=stub.base_url,
            OPENAI_API_KEY="test",
            MEMORY_AGENT_SUMMARY_TOKENS="50",
        )
        yield url, server, stub
        assert not stub.errors, f"the stub's handler failed: {stub.errors!r}"


async def test_structured_output_of_a_real_model_is_not_streamed(
    stub_server: tuple[str, ServerProcess, Any],
) -> None:
    url, server, stub = stub_server
    start = server.log_size()
    lg = get_client(url=url, timeout=60)
    try:
        thread = await lg.threads.create()
        tid = thread["thread_id"]
        stub.clear()
        said = ("I live in Lisbon.", "I'm allergic to peanuts.", "Any dinner ideas?")
        for text in said:
            tokens = _tuple_tokens(await _stream_turn(lg, tid, "carol", text, "messages-tuple"))
            assert "".join(tokens) == STUB_REPLY
            assert len([t for t in tokens if t]) > 1, tokens
        # Extraction and the summary did run, through the model, streamed by the client...
        names = [schema_name(b) for b in stub.chat_requests()]
        assert names.count("Extraction") == len(said), names
        assert "ThreadSummary" in names, names
        values = (await lg.threads.get_state(tid))["values"]
        assert isinstance(values, dict) and values["summary"], values
        stored = await lg.store.search_items(["memories", "carol"], limit=50)
        assert "User lives in Lisbon." in {i["value"]["content"] for i in stored["items"]}
        # ...but none of their output reached the messages stream (checked per part above).
    finally:
        await lg.aclose()
        print(f"--- langgraph dev log during this test ---\n{server.log(start)}")


def _search_results(values: dict[str, Any]) -> list[str]:
    return [
        m["content"]
        for m in values["messages"]
        if m["type"] == "tool" and m.get("name") == "SearchMemory"
    ]


async def test_a_served_model_searches_memory_for_the_run_user_only(
    stub_server: tuple[str, ServerProcess, Any],
) -> None:
    url, server, stub = stub_server
    async with sdk_client(url, server) as lg:
        await _turn(lg, "erin", KYLE)
        stub.clear()
        # Streamed, as Studio runs it: the tool call arrives in pieces.
        thread = await lg.threads.create()
        await _stream_turn(lg, thread["thread_id"], "erin", ASK_SON, "messages-tuple")
        values = (await lg.threads.get_state(thread["thread_id"]))["values"]
        assert isinstance(values, dict)
        (found,) = _search_results(values)
        assert "Kyle collects model trains" in found and found.startswith("<memories>")
        assert _reply(values) == LOOKED_UP
        first = stub.chat_requests()[0]
        assert first.get("stream") and "SearchMemory" in {
            t["function"]["name"] for t in first.get("tools", [])
        }
        assert "SearchMemory" in system_text(first)  # the prompt says when to use it
        # Dave asks the same; the call is the same. He never told anyone about Kyle.
        (found,) = _search_results(await _turn(lg, "dave", ASK_SON))
        assert "Kyle" not in found and "trains" not in found

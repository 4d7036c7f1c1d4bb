"""The `openai:` paths end to end against a scripted OpenAI-compatible server on loopback.

Everything is real (graph, SQLite checkpointer and store, embedded Chroma, `ChatOpenAI`,
`OpenAIEmbeddings`, HTTP) except the LLM, which is `tests/openai_stub.py`.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from langchain_core.messages import AIMessageChunk, HumanMessage

_TESTS = str(Path(__file__).resolve().parents[1])
if _TESTS not in sys.path:  # tests/, for openai_stub (tests/conftest.py may add it too)
    sys.path.insert(0, _TESTS)

from openai_stub import (  # noqa: E402
    OpenAIStub,
    Reply,
    is_structured,
    json_reply,
    last_user_text,
    route,
    schema_name,
    stub_vector,
    system_text,
)

from agent.runner import open_session  # noqa: E402
from graphs.context import Context  # noqa: E402
from graphs.settings import Settings  # noqa: E402
from graphs.window import ANSWER_RESERVE_TOKENS  # noqa: E402
from memory.backends import BackendConfig  # noqa: E402
from memory.index.embeddings import make_embedder  # noqa: E402

pytestmark = pytest.mark.integration

USER = "alice"
CHAT_REPLY = "Noted! Lisbon is lovely, and I'll keep peanuts off the menu."
LISBON = {
    "kind": "fact",
    "subject": "profile.city",
    "content": "User lives in Lisbon.",
    "value": "Lisbon",
    "confidence": 0.95,
}
PEANUTS = {
    "kind": "fact",
    "subject": "health.allergy.peanuts",
    "content": "User is allergic to peanuts.",
    "value": "peanuts",
    "confidence": 0.95,
}
TURN1 = "I live in Lisbon and I'm allergic to peanuts"


@pytest.fixture
def stub():
    with OpenAIStub() as server:
        yield server
        assert not server.errors, f"the stub's handler failed: {server.errors!r}"


@pytest.fixture(autouse=True)
def _no_tracing(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGSMITH_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def _settings(stub: OpenAIStub, tmp_path: Path, **backend: Any) -> Settings:
    return Settings(
        model="openai:gpt-4o-mini",
        openai_base_url=stub.base_url,
        openai_api_key="test",
        backend=BackendConfig(home=str(tmp_path), **backend),
    )


def _contents(records: list[Any]) -> set[str]:
    return {r.content for r in records}


# --- the stub itself --------------------------------------------------------------------------


def test_stub_streams_sse_and_records_requests(stub: OpenAIStub) -> None:
    from langchain_openai import ChatOpenAI

    stub.script(Reply("Hello there, streaming world!", chunk_size=3), "plain answer")
    model = ChatOpenAI(model="gpt-4o-mini", base_url=stub.base_url, api_key="test", max_retries=0)
    chunks = [c.content for c in model.stream("stream please")]
    assert "".join(chunks) == "Hello there, streaming world!"
    assert len([c for c in chunks if c]) > 1, "the reply arrived in one piece, not streamed"
    assert model.invoke("once").content == "plain answer"

    streamed, plain = stub.chat_requests()
    assert streamed["stream"] is True and last_user_text(streamed) == "stream please"
    assert not plain.get("stream") and last_user_text(plain) == "once"


# --- two turns through the real graph ---------------------------------------------------------


def assert_home_and_allergy_shown(recalled: list[dict[str, Any]]) -> None:
    """Said in one message, the allergy is shown beside the home (one place of the top)."""
    shown = [c for m in recalled if m["kind"] != "episode" for c in [m["content"], *m["said_with"]]]
    assert {"User lives in Lisbon.", "User is allergic to peanuts."} <= set(shown), shown
    assert len(shown) == len(set(shown)), shown


async def test_two_turns_extract_save_and_recall_through_openai_api(
    stub: OpenAIStub, tmp_path: Path
) -> None:
    stub.handler = route(chat=CHAT_REPLY, extract={"memories": [LISBON, PEANUTS], "forget": []})
    async with open_session(_settings(stub, tmp_path)) as session:
        r1 = await session.turn(USER, "t1", TURN1)
        assert r1.reply == CHAT_REPLY
        saved = await session.service.alist(USER)
        assert _contents(saved) == {"User lives in Lisbon.", "User is allergic to peanuts."}
        assert {r.subject for r in saved} == {"profile.city", "health.allergy.peanuts"}
        assert all(r.source.thread_id == "t1" and r.source.via == "conversation" for r in saved)

        # Turn 1: one chat call without memories, then one structured extraction call.
        chat1, extract1 = stub.chat_requests()
        assert not is_structured(chat1)
        assert last_user_text(chat1) == TURN1
        assert "(nothing yet)" in system_text(chat1) and "<memories>" not in system_text(chat1)
        assert is_structured(extract1)
        assert extract1["response_format"]["type"] == "json_schema"
        assert schema_name(extract1) == "Extraction"
        schema = extract1["response_format"]["json_schema"]["schema"]
        assert {"memories", "forget"} <= set(schema["properties"])
        # The extractor sees the exchange: the user's words, and the assistant's reply in
        # the system prompt (a trailing assistant message is a prefix to continue for some
        # servers), so the request ends with the user's message.
        roles = [m["role"] for m in extract1["messages"]]
        assert roles == ["system", "user"]
        assert extract1["messages"][1]["content"] == TURN1
        assert json.dumps(CHAT_REPLY) in system_text(extract1)
        # The answer length is bounded: a server left to choose may never stop.
        limit = ANSWER_RESERVE_TOKENS  # sent as OpenAI's `max_completion_tokens`
        assert chat1["max_completion_tokens"] == extract1["max_completion_tokens"] == limit

        stub.clear()
        stub.handler = route(chat="Try a peanut-free bacalhau.", extract={"memories": []})
        r2 = await session.turn(USER, "t2", "What should I cook for dinner tonight?")
        assert r2.reply == "Try a peanut-free bacalhau."
        assert_home_and_allergy_shown(r2.recalled)

        chat2 = stub.chat_requests()[0]
        system = system_text(chat2)
        assert "<memories>" in system and "</memories>" in system
        block = system[system.index("<memories>") : system.index("</memories>")]
        assert '"User lives in Lisbon."' in block
        assert '"User is allergic to peanuts."' in block
        assert "thread t1" in block  # provenance of the recalled memory
        # A new thread: the model sees only this thread's message, not turn 1's.
        assert [m["role"] for m in chat2["messages"]] == ["system", "user"]

        # An empty extraction saves nothing new.
        assert len(await session.service.alist(USER)) == 2
        assert sorted(await asyncio.to_thread(session.service.threads, USER)) == ["t1", "t2"]

    # The agent talks chat completions only (not the Responses API).
    assert stub.paths() and set(stub.paths()) == {"/v1/chat/completions"}


async def test_same_thread_sends_history_to_the_model(stub: OpenAIStub, tmp_path: Path) -> None:
    stub.handler = route(chat=CHAT_REPLY)
    async with open_session(_settings(stub, tmp_path)) as session:
        await session.turn(USER, "t1", "Hello!")
        stub.clear()
        await session.turn(USER, "t1", "And again.")
    chat = next(b for b in stub.chat_requests() if not is_structured(b))
    assert [(m["role"], m["content"]) for m in chat["messages"][1:]] == [
        ("user", "Hello!"),
        ("assistant", CHAT_REPLY),
        ("user", "And again."),
    ]


@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings")  # openai's stream helper
async def test_streamed_turn_through_the_graph(stub: OpenAIStub, tmp_path: Path) -> None:
    """`stream_mode="messages"` (what `langgraph dev` clients use) streams the chat call."""
    stub.handler = route(chat=Reply(CHAT_REPLY, chunk_size=5), extract={"memories": [LISBON]})
    async with open_session(_settings(stub, tmp_path)) as session:
        tokens: list[str] = []
        async for chunk, meta in session.graph.astream(
            {"messages": [HumanMessage("I live in Lisbon.")]},
            config={"configurable": {"thread_id": "s1"}},
            context=Context(user_id=USER),
            stream_mode="messages",
        ):
            if meta.get("langgraph_node") == "chat" and isinstance(chunk, AIMessageChunk):
                tokens.append(chunk.content if isinstance(chunk.content, str) else "")
        assert "".join(tokens) == CHAT_REPLY
        assert len([t for t in tokens if t]) > 1

        chat = next(b for b in stub.chat_requests() if not is_structured(b))
        assert chat["stream"] is True
        # The streamed reply was checkpointed whole, and extraction still saved.
        state = await session.graph.aget_state({"configurable": {"thread_id": "s1"}})
        assert state.values["messages"][-1].content == CHAT_REPLY
        assert _contents(await session.service.alist(USER)) == {"User lives in Lisbon."}


# --- malformed extraction output --------------------------------------------------------------

MALFORMED = {
    "invalid-json": Reply('{"memories": [{"kind": "fact", "subject": "profile.city"'),
    "not-json-at-all": Reply("Sure! The user lives in Lisbon."),
    "confidence-high": json_reply({"memories": [{**PEANUTS, "confidence": "high"}]}),
    "memories-is-a-string": json_reply({"memories": "User lives in Lisbon."}),
    "unknown-kind": json_reply({"memories": [{**LISBON, "kind": "opinion"}]}),
    "top-level-list": json_reply([LISBON]),
    "http-500": Reply(status=500, error="upstream model crashed"),
}


@pytest.mark.parametrize("bad", list(MALFORMED.values()), ids=list(MALFORMED))
async def test_malformed_extraction_does_not_fail_the_turn(
    stub: OpenAIStub, tmp_path: Path, bad: Reply
) -> None:
    stub.handler = route(chat=CHAT_REPLY, extract=bad)
    async with open_session(_settings(stub, tmp_path)) as session:
        result = await session.turn(USER, "t1", TURN1)
        assert result.reply == CHAT_REPLY
        assert result.saved == []
        assert result.extraction == {"memories": [], "forget": []}
        assert await session.service.alist(USER, include_inactive=True) == []
        # The thread is still recorded and checkpointed.
        assert await asyncio.to_thread(session.service.threads, USER) == ["t1"]
        state = await session.graph.aget_state({"configurable": {"thread_id": "t1"}})
        assert [m.content for m in state.values["messages"]] == [TURN1, CHAT_REPLY]
    assert any(is_structured(b) for b in stub.chat_requests()), "extraction was never called"


PARTLY_MALFORMED = {
    "memories": [
        LISBON,
        {**PEANUTS, "confidence": "high"},
        "the user likes jazz",
        {"kind": "fact", "subject": "", "content": "Empty subject."},
    ],
    "forget": [],
}


async def test_partly_malformed_extraction_saves_nothing_bogus(
    stub: OpenAIStub, tmp_path: Path
) -> None:
    stub.handler = route(chat=CHAT_REPLY, extract=PARTLY_MALFORMED)
    async with open_session(_settings(stub, tmp_path)) as session:
        result = await session.turn(USER, "t1", TURN1)
        assert result.reply == CHAT_REPLY
        records = await session.service.alist(USER, include_inactive=True)
        assert not _contents(records) & {"User is allergic to peanuts.", "Empty subject."}
        assert all(0.0 <= r.confidence <= 1.0 for r in records)


async def test_partly_malformed_extraction_salvages_valid_items(
    stub: OpenAIStub, tmp_path: Path
) -> None:
    stub.handler = route(chat=CHAT_REPLY, extract=PARTLY_MALFORMED)
    async with open_session(_settings(stub, tmp_path)) as session:
        await session.turn(USER, "t1", TURN1)
        assert _contents(await session.service.alist(USER)) == {"User lives in Lisbon."}


# --- embeddings --------------------------------------------------------------------------------


def test_openai_embedder_returns_unit_vectors_of_the_stub_dimension(stub: OpenAIStub) -> None:
    embedder = make_embedder(
        "openai:text-embedding-3-small", base_url=stub.base_url, api_key="test"
    )
    assert embedder.spec == "openai:text-embedding-3-small"
    texts = ["User lives in Lisbon.", "用户对花生过敏。", "User lives in Lisbon."]
    vectors = embedder.embed(texts)
    assert vectors.shape == (3, stub.embedding_dims)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    # The stub's raw vectors are not unit length: the embedder normalizes them.
    raw = stub_vector(texts[0], stub.embedding_dims)
    assert abs(float(np.linalg.norm(raw)) - 1.0) > 0.1
    np.testing.assert_allclose(vectors[0], raw / np.linalg.norm(raw), atol=1e-5)
    np.testing.assert_allclose(vectors[0], vectors[2], atol=1e-6)
    assert float(vectors[0] @ vectors[1]) < 0.9
    assert embedder.embed([]).shape[0] == 0

    (req,) = stub.embedding_requests()
    assert req["model"] == "text-embedding-3-small"
    assert req["input"] == texts  # plain strings: no tiktoken token arrays


async def test_recall_through_openai_embeddings(stub: OpenAIStub, tmp_path: Path) -> None:
    stub.handler = route(chat=CHAT_REPLY, extract={"memories": [LISBON, PEANUTS]})
    settings = _settings(
        stub,
        tmp_path,
        embeddings="openai:text-embedding-3-small",
        embeddings_base_url=stub.base_url,
        embeddings_api_key="test",
    )
    async with open_session(settings) as session:
        assert session.backends.index.embedder.spec == "openai:text-embedding-3-small"
        await session.turn(USER, "t1", TURN1)
        embedded = [t for b in stub.embedding_requests() for t in b["input"]]
        assert {"User lives in Lisbon.", "User is allergic to peanuts."} <= set(embedded)

        stub.clear()
        stub.handler = route(chat="ok", extract={"memories": []})
        question = "Where do I live?"
        r2 = await session.turn(USER, "t2", question)
        assert_home_and_allergy_shown(r2.recalled)
        assert any(question in t for b in stub.embedding_requests() for t in b["input"])
        assert "User lives in Lisbon." in system_text(stub.chat_requests()[0])

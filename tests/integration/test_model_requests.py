"""How the agent's requests to a real model behave: retries, timeouts, the length limit, junk.

Against the scripted OpenAI-compatible stub (`tests/openai_stub.py`), with the real
`ChatOpenAI` client, graph, SQLite store and embedded Chroma. Settings come from the
environment (`Settings.from_env`), as the CLI and `langgraph dev` read them.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from langchain_core.messages import HumanMessage

_TESTS = str(Path(__file__).resolve().parents[1])
if _TESTS not in sys.path:  # tests/, for openai_stub (tests/conftest.py may add it too)
    sys.path.insert(0, _TESTS)

from openai_stub import OpenAIStub, Reply, is_structured, route  # noqa: E402

from agent.runner import open_session  # noqa: E402
from graphs.models import make_chat_model  # noqa: E402
from graphs.settings import Settings  # noqa: E402

pytestmark = pytest.mark.integration

USER = "alice"
BERLIN = {"kind": "fact", "subject": "profile.city", "content": "User lives in Berlin.",
          "value": "Berlin", "confidence": 0.95}  # fmt: skip
PEANUTS = {"kind": "fact", "subject": "health.allergy.peanuts",
           "content": "User is allergic to peanuts.", "confidence": 0.95}  # fmt: skip
# A 429 that asks for a 10 ms wait: the client's backoff honours it, so the test is quick.
RATE_LIMITED = Reply(status=429, error="slow down", headers={"retry-after-ms": "10"})


@pytest.fixture
def stub() -> Iterator[OpenAIStub]:
    with OpenAIStub() as server:
        yield server


def _env(monkeypatch: pytest.MonkeyPatch, stub: OpenAIStub, tmp_path: Path, **env: str) -> Settings:
    values = {
        "MEMORY_AGENT_MODEL": "openai:gpt-4o-mini",
        "OPENAI_BASE_URL": stub.base_url,
        "OPENAI_API_KEY": "test",
        "MEMORY_AGENT_HOME": str(tmp_path / "home"),
        "MEMORY_AGENT_ARCHIVE_TURNS": "false",
        **env,
    }
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    return Settings.from_env()


def _slow_server(retries: int) -> dict[str, str]:
    return {"MEMORY_AGENT_MODEL_TIMEOUT": "0.5", "MEMORY_AGENT_MODEL_RETRIES": str(retries)}


@pytest.mark.parametrize("status", [429, 500, 503])
def test_a_rate_limit_or_server_error_is_retried(
    stub: OpenAIStub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, status: int
) -> None:
    settings = _env(monkeypatch, stub, tmp_path, MEMORY_AGENT_MODEL_RETRIES="2")
    failing = Reply(status=status, error="busy", headers={"retry-after-ms": "10"})
    stub.script(failing, failing, "Hello after the retries.")
    model = make_chat_model(settings.model, settings)
    assert model.invoke([HumanMessage("hi")]).content == "Hello after the retries."
    assert len(stub.chat_requests()) == 3


def test_retries_are_configurable_and_zero_means_one_request(
    stub: OpenAIStub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = _env(monkeypatch, stub, tmp_path, MEMORY_AGENT_MODEL_RETRIES="0")
    stub.script(RATE_LIMITED)
    with pytest.raises(openai.RateLimitError):
        make_chat_model(settings.model, settings).invoke([HumanMessage("hi")])
    assert len(stub.chat_requests()) == 1

    # One retry: a second 429 is the end, after two requests in all.
    settings = _env(monkeypatch, stub, tmp_path, MEMORY_AGENT_MODEL_RETRIES="1")
    stub.clear()
    stub.script(RATE_LIMITED, RATE_LIMITED)
    with pytest.raises(openai.RateLimitError):
        make_chat_model(settings.model, settings).invoke([HumanMessage("hi")])
    assert len(stub.chat_requests()) == 2


def test_a_request_that_times_out_is_sent_again(
    stub: OpenAIStub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = _env(monkeypatch, stub, tmp_path, **_slow_server(retries=1))
    stub.script(Reply("too late", delay=2.0), "in time")
    assert make_chat_model(settings.model, settings).invoke("hi").content == "in time"
    assert len(stub.chat_requests()) == 2

    settings = _env(monkeypatch, stub, tmp_path, **_slow_server(retries=0))
    stub.clear()
    stub.script(Reply("too late", delay=2.0))
    with pytest.raises(openai.APITimeoutError):
        make_chat_model(settings.model, settings).invoke("hi")


def test_one_model_answers_in_one_event_loop_after_another(
    stub: OpenAIStub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A script that calls `asyncio.run` twice: langchain-openai's shared async client kept
    the first loop's connection and failed the second with "Event loop is closed"."""
    settings = _env(monkeypatch, stub, tmp_path)
    stub.script("first", "second", "third", Reply("streamed", chunk_size=3))
    model = make_chat_model(settings.model, settings)
    assert asyncio.run(model.ainvoke("hi")).content == "first"
    assert asyncio.run(model.ainvoke("hi")).content == "second"
    # Another model on the same endpoint, and a stream, in loops of their own.
    assert asyncio.run(make_chat_model(settings.model, settings).ainvoke("hi")).content == "third"

    async def stream() -> str:
        return "".join([str(c.content) async for c in model.astream("hi")])

    assert asyncio.run(stream()) == "streamed"
    # The async client still applies the request timeout.
    settings = _env(monkeypatch, stub, tmp_path, **_slow_server(retries=0))
    stub.script(Reply("too late", delay=2.0))
    with pytest.raises(openai.APITimeoutError):
        asyncio.run(make_chat_model(settings.model, settings).ainvoke("hi"))


async def test_a_turn_survives_a_rate_limit_on_each_call(
    stub: OpenAIStub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The chat call and the extraction call are each retried: the turn saves its memory."""
    settings = _env(monkeypatch, stub, tmp_path)
    answers = {"chat": [RATE_LIMITED], "extract": [RATE_LIMITED]}

    def handler(body: dict[str, Any]) -> Reply | str | dict[str, Any]:
        queue = answers["extract" if is_structured(body) else "chat"]
        if queue:
            return queue.pop()
        return {"memories": [BERLIN]} if is_structured(body) else "Berlin, nice."

    stub.handler = handler
    async with open_session(settings) as session:
        result = await session.turn(USER, "t1", "I live in Berlin.")
        saved = await session.service.alist(USER)
    assert result.reply == "Berlin, nice."
    assert [r.content for r in saved] == ["User lives in Berlin."]
    assert len(stub.chat_requests()) == 4  # two calls, each sent twice


async def test_an_extraction_cut_by_the_length_limit_keeps_its_complete_items(
    stub: OpenAIStub,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """`finish_reason: length` makes the OpenAI client raise before `include_raw` can salvage:
    the node catches it, keeps every item completed before the cut and drops the cut one."""
    settings = _env(monkeypatch, stub, tmp_path, MEMORY_AGENT_MAX_TOKENS="64")
    whole = json.dumps({"memories": [BERLIN, PEANUTS, BERLIN | {"subject": "work.city"}]})
    cut = whole[: whole.index("work.ci")]
    stub.handler = route(chat="Noted.", extract=Reply(cut, finish_reason="length"))
    with caplog.at_level(logging.WARNING):
        async with open_session(settings) as session:
            result = await session.turn(USER, "t1", "I live in Berlin and I'm allergic to peanuts.")
            saved = await session.service.alist(USER)
    assert result.reply == "Noted."
    assert {r.subject for r in saved} == {"profile.city", "health.allergy.peanuts"}
    assert "length limit" in caplog.text
    extract = next(b for b in stub.chat_requests() if is_structured(b))
    assert extract["max_completion_tokens"] == 64


async def test_junk_extracted_by_a_weak_model_is_refused_not_stored(
    stub: OpenAIStub,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """What a 135M model wrote under a repeat penalty: a sentence as the subject, `{{}}` as
    the content. Refused one by one; the good item of the same reply is kept."""
    settings = _env(monkeypatch, stub, tmp_path)
    junk = [
        {"kind": "fact", "subject": "munich_is_a_city_with_many_interesting_things,and_more",
         "content": "Munich is a city."},
        {"kind": "fact", "subject": "profile.city", "content": "{{}}"},
        {"kind": "preference", "subject": "likes.music", "content": "..."},
        {"kind": "fact", "subject": "profile.name", "content": "string"},
        {"kind": "fact", "subject": "profile.job", "content": "   "},
    ]  # fmt: skip
    stub.handler = route(chat="OK.", extract={"memories": [*junk, BERLIN]})
    with caplog.at_level(logging.WARNING):
        async with open_session(settings) as session:
            result = await session.turn(USER, "t1", "I live in Berlin.")
            saved = await session.service.alist(USER)
    assert result.reply == "OK."
    assert [(r.subject, r.content) for r in saved] == [("profile.city", "User lives in Berlin.")]
    assert caplog.text.count("extracted memory refused") == 4  # the blank one fails the schema

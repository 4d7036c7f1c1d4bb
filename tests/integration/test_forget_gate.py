"""A real model's `forget` field is acted on only when the user's words ask to forget.

SmolLM2 (135M, behind llama-server) put its reply into the extraction's `forget` field and
the agent forgot what the user had just said. Through the compiled graph on the
OpenAI-compatible stub (`tests/openai_stub.py`), the extraction is scripted: a junk forget
beside an ordinary statement is ignored (logged) and the chat goes on; a real request is
carried out.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

import pytest

_TESTS = str(Path(__file__).resolve().parents[1])
if _TESTS not in sys.path:  # tests/, for openai_stub
    sys.path.insert(0, _TESTS)

from openai_stub import OpenAIStub, last_user_text, route  # noqa: E402

from agent.runner import open_session  # noqa: E402
from graphs.settings import Settings  # noqa: E402
from memory.backends import BackendConfig  # noqa: E402

pytestmark = pytest.mark.integration

USER = "carol"
REPLY = "I like chess too! Chess is a wonderful game."
CHESS = {
    "kind": "preference",
    "subject": "likes.chess",
    "content": "User likes chess.",
    "value": "chess",
    "confidence": 0.9,
}
TEA = {
    "kind": "preference",
    "subject": "likes.tea",
    "content": "User likes green tea.",
    "value": "green tea",
    "confidence": 0.9,
}


def extraction(body: dict[str, Any]) -> dict[str, Any]:
    """What a small model answers: the memory, and its own reply copied into `forget`."""
    said = last_user_text(body)
    if said == "I like green tea.":
        return {"memories": [TEA], "forget": []}
    if said == "I like chess.":
        return {"memories": [CHESS], "forget": [{"query": REPLY}, {"query": "I like chess"}]}
    return {"memories": [], "forget": [{"query": "I like chess"}]}


@pytest.fixture
def stub():
    with OpenAIStub(handler=route(chat=REPLY, extract=extraction)) as server:
        yield server
        assert not server.errors, f"the stub's handler failed: {server.errors!r}"


def _settings(stub: OpenAIStub, tmp_path: Path) -> Settings:
    return Settings(
        model="openai:gpt-4o-mini",
        openai_base_url=stub.base_url,
        openai_api_key="test",
        backend=BackendConfig(home=str(tmp_path)),
    )


async def test_a_junk_forget_is_ignored_and_a_real_request_is_carried_out(
    stub: OpenAIStub, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with open_session(_settings(stub, tmp_path)) as session:
        await session.turn(USER, "t1", "I like green tea.")
        with caplog.at_level(logging.WARNING, logger="graphs"):
            said = await session.turn(USER, "t1", "I like chess.")
        assert said.reply == REPLY  # the chat goes on
        kept = {r.content for r in await session.service.alist(USER)}
        assert {"User likes chess.", "User likes green tea."} <= kept
        assert not any(line.startswith("forgotten") for line in said.saved), said.saved
        assert "ignored" in caplog.text and "forget" in caplog.text

        asked = await session.turn(USER, "t1", "Please forget that I like chess.")
        kept = {r.content for r in await session.service.alist(USER)}
        assert "User likes chess." not in kept
        assert "User likes green tea." in kept
        assert any(line.startswith("forgotten") for line in asked.saved), asked.saved

"""Under a real `langgraph dev`, a model's failure reaches the SDK as its own clear text.

The server hides the message of most exception types ("An internal error occurred"); the
chat node raises `ModelUnavailable`, whose message it passes on. The model is the scripted
OpenAI-compatible stub of tests/openai_stub.py; the server, its store and checkpointer,
Chroma and the embedder are real.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest
from langgraph_sdk import get_client
from openai_stub import OpenAIStub, Reply, is_structured, json_reply, last_user_text

if TYPE_CHECKING:
    from conftest import ServerProcess, Servers

pytestmark = pytest.mark.integration

GRAPH = "memory_agent"
ANSWERED = "All good now."
FAILURES: dict[str, tuple[Reply, str]] = {
    "A wrong key, please.": (
        Reply(status=401, error="Incorrect API key provided"),
        "refused the API key (401: Incorrect API key provided); check OPENAI_API_KEY",
    ),
    "A server error, please.": (
        Reply(status=500, error="the GPU fell over"),
        "failed to answer (500: the GPU fell over)",
    ),
    "Not JSON, please.": (
        Reply(raw=b"<html>Bad Gateway</html>"),
        "sent an answer that is not a chat completion",
    ),
    "Broken tool calls, please.": (
        Reply(tool_calls=[("SearchMemory", "{not json")]),
        "the model could not answer: it ",
    ),
}


def _answer(body: dict[str, Any]) -> Reply:
    if is_structured(body):
        return json_reply({"memories": [], "forget": []})
    said = last_user_text(body)
    return FAILURES[said][0] if said in FAILURES else Reply(ANSWERED)


@pytest.fixture(scope="module")
def failing_server(servers: Servers) -> Iterator[tuple[str, ServerProcess, OpenAIStub]]:
    """`langgraph dev` whose `openai:` model is the stub (which fails on cue)."""
    with OpenAIStub(handler=_answer) as stub:
        url, server = servers.langgraph_dev(
            "langgraph-dev-model-errors",
            GRAPH,
            MEMORY_AGENT_MODEL="openai:stub-model",
            OPENAI_BASE_URL=stub.base_url,
            OPENAI_API_KEY="sk-test",
        )
        yield url, server, stub


@pytest.mark.parametrize("said", list(FAILURES))
async def test_the_sdk_sees_the_models_error_and_the_message_stays(
    failing_server: tuple[str, ServerProcess, OpenAIStub], said: str
) -> None:
    url, server, stub = failing_server
    start = server.log_size()
    lg = get_client(url=url, timeout=60)
    try:
        thread = (await lg.threads.create())["thread_id"]
        turn: dict[str, Any] = {"messages": [{"role": "user", "content": said}]}
        out = await lg.runs.wait(
            thread, GRAPH, input=turn, context={"user_id": "alice"}, raise_error=False
        )
        assert isinstance(out, dict), out
        error = out["__error__"]
        assert error["error"] == "ModelUnavailable", error
        assert error["message"].startswith("the model could not answer: "), error
        assert FAILURES[said][1] in error["message"], error
        assert "internal error" not in error["message"].lower()

        # The message is in the thread; the next run answers it with the new one.
        values = (await lg.threads.get_state(thread))["values"]
        assert isinstance(values, dict)
        assert [m["content"] for m in values["messages"] if m["type"] == "human"] == [said]
        again: dict[str, Any] = {"messages": [{"role": "user", "content": "And now?"}]}
        await lg.runs.wait(thread, GRAPH, input=again, context={"user_id": "alice"})
        values = (await lg.threads.get_state(thread))["values"]
        assert isinstance(values, dict)
        assert values["messages"][-1]["content"] == ANSWERED
        last = [b for b in stub.chat_requests() if not is_structured(b)][-1]
        users = [m["content"] for m in last["messages"] if m.get("role") == "user"]
        assert users == [said, "And now?"]
    finally:
        await lg.aclose()
        log = server.log(start)
        print(f"--- langgraph dev log during this test ---\n{log}")
    # `langgraph dev` sets DATABASE_URI=":memory:": not a Postgres URL to index.
    assert "could not create the memory indexes" not in log
    assert "unparseable connection string" not in log

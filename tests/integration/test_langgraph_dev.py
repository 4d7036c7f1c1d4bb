"""The graph served by a real `langgraph dev`, driven over HTTP with the SDK.

The offline model stands in for the LLM; everything else (server, its store and
checkpointer, embedded Chroma, the local embedder) is real.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

if TYPE_CHECKING:
    from conftest import ServerProcess, Servers

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
GRAPH = "memory_agent"


@pytest.fixture(scope="module")
def dev_server(servers: Servers) -> Iterator[tuple[str, ServerProcess]]:
    """`langgraph dev` serving the repo's graph from a scratch directory.

    Running from a tmp dir keeps `.langgraph_api/` and memory files out of the repo.
    No `--allow-blocking`: blockbuster stays on, so a node that blocks the loop fails its run.
    """
    work = servers.tmp / "langgraph-dev"
    work.mkdir()
    config = {
        "dependencies": [str(REPO)],
        "graphs": {GRAPH: f"{REPO / 'graphs' / 'memory_agent.py'}:graph"},
    }
    (work / "langgraph.json").write_text(json.dumps(config))
    port = servers.free_port()
    env = servers.env(
        LANGGRAPH_CLI_NO_ANALYTICS="1",
        LANGGRAPH_NO_VERSION_CHECK="true",
        MEMORY_AGENT_MODEL="offline",
        MEMORY_AGENT_HOME=str(work / "home"),
        CHROMA_PATH=str(work / "chroma"),
    )
    server = servers.start(
        [str(servers.bin("langgraph")), "dev", "--no-reload", "--no-browser",
         "--host", "127.0.0.1", "--port", str(port)],
        ready_url=f"http://127.0.0.1:{port}/ok",
        cwd=work,
        env=env,
        timeout=120,
    )  # fmt: skip
    yield f"http://127.0.0.1:{port}", server


@pytest.fixture
async def client(dev_server: tuple[str, ServerProcess]) -> AsyncIterator[LangGraphClient]:
    """An SDK client; the server's log of this test is printed (shown if it fails)."""
    url, server = dev_server
    start = server.log_size()
    lg = get_client(url=url, timeout=60)
    try:
        yield lg
    finally:
        await lg.aclose()
        print(f"--- langgraph dev log during this test ---\n{server.log(start)}")


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
    assert turns == ["I'm vegetarian and I live in Berlin."]  # the raw-turn archive
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
    # Nothing of the owner's thread reached the intruder: no answer, no memory, no summary.
    values = (await client.threads.get_state(tid))["values"]
    assert isinstance(values, dict)
    answers = [m for m in values["messages"] if m["type"] == "ai"]
    assert len(answers) == 1  # only the owner's turn was answered
    stored = await client.store.search_items(["memories", "intruder-b"], limit=50)
    assert stored["items"] == []

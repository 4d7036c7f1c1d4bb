"""Background extraction under a real `langgraph dev`: the server runs it after the reply.

With `MEMORY_AGENT_EXTRACT_MODE=background` a turn ends after chat and asks the server for a
delayed run of the same graph with `{"flush": True}`; that run extracts and saves every user
message not yet extracted. Driven with the SDK; only the LLM is the offline model.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any

import pytest
from langgraph_sdk.client import LangGraphClient

if TYPE_CHECKING:
    from conftest import ServerProcess, Servers

from conftest import sdk_client

pytestmark = pytest.mark.integration
GRAPH = "memory_agent"
WAIT_S = 90


@pytest.fixture(scope="module")
def background_server(servers: Servers) -> Iterator[tuple[str, ServerProcess]]:
    yield servers.langgraph_dev(
        "background", GRAPH, MEMORY_AGENT_EXTRACT_MODE="background",
        MEMORY_AGENT_EXTRACT_DELAY="1",
    )  # fmt: skip


@pytest.fixture
async def client(background_server: tuple[str, ServerProcess]) -> AsyncIterator[LangGraphClient]:
    """An SDK client; the server's log of this test is printed (shown if it fails)."""
    async with sdk_client(*background_server) as lg:
        yield lg


async def _say(lg: LangGraphClient, thread: str, user: str, text: str) -> dict[str, Any]:
    turn: dict[str, Any] = {"messages": [{"role": "user", "content": text}]}
    out = await lg.runs.wait(thread, GRAPH, input=turn, context={"user_id": user})
    assert isinstance(out, dict), out
    return out


async def _facts(lg: LangGraphClient, user: str) -> list[str]:
    found = await lg.store.search_items(["memories", user], limit=50)
    return sorted(i["value"]["content"] for i in found["items"] if i["value"]["kind"] != "episode")


async def _until(lg: LangGraphClient, user: str, want: set[str]) -> list[str]:
    """Poll the server's store until `want` is remembered (the flush runs after a delay)."""
    facts: list[str] = []
    for _ in range(WAIT_S * 2):
        facts = await _facts(lg, user)
        if want <= set(facts):
            return facts
        await asyncio.sleep(0.5)
    raise AssertionError(f"not extracted within {WAIT_S}s: {want - set(facts)}; have {facts}")


async def test_the_server_extracts_after_the_reply(client: LangGraphClient) -> None:
    thread = (await client.threads.create())["thread_id"]
    out = await _say(client, thread, "bg-alice", "I live in Lisbon.")
    assert out["messages"][-1]["type"] == "ai"
    assert not out.get("saved"), "the turn itself ends after chat"
    await _until(client, "bg-alice", {"User lives in Lisbon."})

    # A burst of turns: every message is extracted, each once.
    await _say(client, thread, "bg-alice", "I'm vegetarian.")
    await _say(client, thread, "bg-alice", "I work as a nurse.")
    facts = await _until(
        client, "bg-alice", {"User is vegetarian.", "User works as nurse.", "User lives in Lisbon."}
    )
    assert len(facts) == 3
    for _ in range(WAIT_S * 2):  # the last queued flush may still wait for its delay
        runs = await client.runs.list(thread)
        if all(r["status"] not in ("pending", "running") for r in runs):
            break
        await asyncio.sleep(0.5)
    assert all(r["status"] == "success" for r in runs), [r["status"] for r in runs]
    assert len(runs) == 6  # three turns and the flush each of them scheduled
    values = (await client.threads.get_state(thread))["values"]
    assert isinstance(values, dict)
    humans = [m for m in values["messages"] if m["type"] == "human"]
    assert values["extracted_through"] == humans[-1]["id"]
    assert len(facts) == 3  # each statement extracted once, however many flushes ran

    # A new thread recalls what the first one said.
    other = (await client.threads.create())["thread_id"]
    recalled = (await _say(client, other, "bg-alice", "Where do I live?"))["recalled"]
    assert any("Lisbon" in r["content"] for r in recalled)


async def test_a_flush_cannot_take_another_users_thread(client: LangGraphClient) -> None:
    thread = (await client.threads.create())["thread_id"]
    await _say(client, thread, "bg-owner", "I live in Porto.")
    out = await client.runs.wait(
        thread, GRAPH, input={"flush": True}, context={"user_id": "bg-thief"}, raise_error=False
    )
    assert isinstance(out, dict) and out["__error__"]["error"] == "ThreadNotYours"
    await _until(client, "bg-owner", {"User lives in Porto."})  # the owner's flush still runs
    assert await _facts(client, "bg-thief") == []

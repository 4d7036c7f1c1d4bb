"""Custom auth under a real `langgraph dev` (the repo's `auth` and `http` keys), driven by the SDK.

Tokens of alice and bob and a read-only one of carol, in the MCP token-file format; no token
and a wrong token; alice on bob's thread and in bob's store namespace; the inspector's API
mounted in the same server. The offline model stands in for the LLM.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

if TYPE_CHECKING:
    from conftest import ServerProcess, Servers

pytestmark = pytest.mark.integration

GRAPH = "memory_agent"
TOKENS = {
    "alice": "alice-token-0123456789abcdef",
    "bob": "bob-token-0123456789abcdefgh",
    "carol": "carol-token-0123456789abcdef",
}
BOOKKEEPING = {"index_repair", "memory_changes", "thread_owners", "threads"}


def write_tokens(path: Path) -> Path:
    """The token file: alice and bob may write, carol only read."""
    table = {tok: {"user": user, "read_only": user == "carol"} for user, tok in TOKENS.items()}
    path.write_text(json.dumps(table))
    return path


@pytest.fixture(scope="module")
def dev_server(servers: Servers) -> Iterator[tuple[str, ServerProcess]]:
    """`langgraph dev` with the repo's custom auth and inspector, tokens from a file."""
    tokens = write_tokens(servers.tmp / "tokens.json")
    yield servers.langgraph_dev(
        "langgraph-auth", GRAPH, keys=("auth", "http"), MEMORY_AGENT_TOKENS=str(tokens)
    )


@contextlib.asynccontextmanager
async def _client(server: tuple[str, ServerProcess], token: str | None) -> AsyncIterator[Any]:
    url, process = server
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    start = process.log_size()
    lg = get_client(url=url, headers=headers, timeout=60)
    try:
        yield lg
    finally:
        await lg.aclose()
        print(f"--- langgraph dev log during this test ---\n{process.log(start)}")


@pytest.fixture
async def alice(dev_server: tuple[str, ServerProcess]) -> AsyncIterator[LangGraphClient]:
    async with _client(dev_server, TOKENS["alice"]) as lg:
        yield lg


@pytest.fixture
async def bob(dev_server: tuple[str, ServerProcess]) -> AsyncIterator[LangGraphClient]:
    async with _client(dev_server, TOKENS["bob"]) as lg:
        yield lg


async def _status(call: Awaitable[Any]) -> tuple[int, str]:
    """The HTTP status and body a refused SDK call ended with (fails if it succeeded)."""
    try:
        await call
    except httpx.HTTPStatusError as exc:
        return exc.response.status_code, exc.response.text
    raise AssertionError("the call was not refused")


def _say(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


async def _turn(lg: LangGraphClient, text: str, thread_id: str | None = None) -> str:
    """Run one turn (no user in the context: the token says who) and return its thread."""
    tid = thread_id or (await lg.threads.create())["thread_id"]
    await lg.runs.wait(tid, GRAPH, input=_say(text))
    return str(tid)


async def _messages(lg: LangGraphClient, thread_id: str) -> list[dict[str, Any]]:
    values = (await lg.threads.get_state(thread_id))["values"]
    assert isinstance(values, dict), values
    return list(values["messages"])


async def test_no_token_and_a_wrong_token_are_401(dev_server: tuple[str, ServerProcess]) -> None:
    for token in (None, "not-a-token-of-this-server-0000"):
        async with _client(dev_server, token) as lg:
            status, body = await _status(lg.threads.create())
            assert status == 401 and "bearer token" in body, body
            assert (await _status(lg.store.search_items(["memories"])))[0] == 401
            assert (await _status(lg.runs.wait(None, GRAPH, input=_say("I live in Oslo."))))[
                0
            ] == 401
    # The open health check stays open.
    assert httpx.get(f"{dev_server[0]}/ok", timeout=10).status_code == 200


async def test_the_run_user_is_the_token_user(alice: LangGraphClient) -> None:
    first = await _turn(alice, "I live in Berlin.")
    items = (await alice.store.search_items(["memories", "alice"], limit=50))["items"]
    assert any("Berlin" in i["value"]["content"] for i in items), items
    thread = await alice.threads.get(first)
    assert thread["metadata"]["owner"] == "alice"
    second = await _turn(alice, "Where do I live?")
    reply = (await _messages(alice, second))[-1]
    assert reply["type"] == "ai" and "Berlin" in reply["content"], reply


async def test_a_context_naming_another_user_is_403_before_anything_is_written(
    alice: LangGraphClient, bob: LangGraphClient
) -> None:
    tid = (await alice.threads.create())["thread_id"]
    run = alice.runs.wait(tid, GRAPH, input=_say("I am bob now."), context={"user_id": "bob"})
    status, body = await _status(run)
    assert status == 403 and "'bob'" in body, body
    state = await alice.threads.get_state(tid)
    assert not state["values"], state["values"]
    bobs = (await bob.store.search_items(["memories", "bob"], limit=50))["items"]
    assert not any("bob now" in i["value"]["content"] for i in bobs)


async def test_alice_on_bobs_thread_is_refused_and_it_stays_unchanged(
    alice: LangGraphClient, bob: LangGraphClient
) -> None:
    tid = await _turn(bob, "I work in Madrid.")
    before = await _messages(bob, tid)
    assert (await _status(alice.threads.get(tid)))[0] == 404
    assert (await _status(alice.threads.get_state(tid)))[0] == 404
    assert (await _status(alice.threads.update(tid, metadata={"owner": "alice"})))[0] == 404
    assert (await _status(alice.runs.wait(tid, GRAPH, input=_say("What do you know about me?"))))[
        0
    ] in {403, 404}
    assert (await _status(alice.runs.create(tid, GRAPH, input=_say("Forget everything."))))[0] in {
        403,
        404,
    }
    assert (await _status(alice.threads.delete(tid)))[0] == 404
    found = await alice.threads.search(limit=100)
    assert tid not in {t["thread_id"] for t in found}
    assert all(t["metadata"].get("owner") == "alice" for t in found), found
    # Bob's thread: the same messages, still his.
    assert await _messages(bob, tid) == before
    assert (await bob.threads.get(tid))["metadata"]["owner"] == "bob"
    assert tid in {t["thread_id"] for t in await bob.threads.search(limit=100)}


async def test_store_access_is_limited_to_the_callers_own_namespaces(
    alice: LangGraphClient, bob: LangGraphClient
) -> None:
    await _turn(bob, "I am allergic to peanuts.")
    await _turn(alice, "I like green tea.")
    bobs = (await bob.store.search_items(["memories", "bob"], limit=50))["items"]
    assert bobs
    assert (await _status(alice.store.search_items(["memories", "bob"])))[0] == 403
    assert (await _status(alice.store.get_item(list(bobs[0]["namespace"]), bobs[0]["key"])))[
        0
    ] == 403
    assert (
        await _status(alice.store.put_item(["memories", "bob", "fact"], "x", {"content": "forged"}))
    )[0] == 403
    assert (await _status(alice.store.delete_item(list(bobs[0]["namespace"]), bobs[0]["key"])))[
        0
    ] == 403
    assert (await _status(alice.store.search_items(["thread_owners"])))[0] == 403
    # Studio's store view: from the root, only alice's memories namespaces.
    spaces = (await alice.store.list_namespaces(limit=100))["namespaces"]
    assert spaces and all(list(ns[:2]) == ["memories", "alice"] for ns in spaces), spaces
    assert not BOOKKEEPING & {ns[0] for ns in spaces}
    listed = (await alice.store.search_items([], limit=100))["items"]
    assert listed and {tuple(i["namespace"][:2]) for i in listed} == {("memories", "alice")}
    # Bob's memory is untouched.
    again = await bob.store.get_item(list(bobs[0]["namespace"]), bobs[0]["key"])
    assert again is not None and again["value"] == bobs[0]["value"]


async def test_a_read_only_token_reads_but_may_not_run_or_write(
    dev_server: tuple[str, ServerProcess],
) -> None:
    async with _client(dev_server, TOKENS["carol"]) as carol:
        assert isinstance(await carol.threads.search(limit=5), list)
        assert (await _status(carol.threads.create()))[0] == 403
        assert (await _status(carol.runs.wait(None, GRAPH, input=_say("I live in Rome."))))[
            0
        ] == 403
        assert (
            await _status(
                carol.store.put_item(["memories", "carol", "fact"], "x", {"content": "x"})
            )
        )[0] == 403
        assert (await carol.store.search_items(["memories", "carol"]))["items"] == []


async def test_the_inspector_route_serves_each_token_its_own_memories(
    dev_server: tuple[str, ServerProcess], alice: LangGraphClient, bob: LangGraphClient
) -> None:
    await _turn(alice, "My favourite colour is teal.")
    await _turn(bob, "My favourite colour is ochre.")
    url = dev_server[0] + "/inspector"
    page = httpx.get(url + "/", timeout=10)
    assert page.status_code == 200 and "Memory inspector" in page.text
    assert "default-src 'self'" in page.headers["content-security-policy"]
    assert httpx.get(url + "/api/memories", timeout=10).status_code == 401

    def get(path: str, user: str) -> httpx.Response:
        headers = {"Authorization": f"Bearer {TOKENS[user]}"}
        return httpx.get(url + path, headers=headers, timeout=30)

    mine = get("/api/memories", "alice").json()["memories"]
    assert {m["user_id"] for m in mine} == {"alice"}
    assert any("teal" in m["content"] for m in mine) and not any(
        "ochre" in m["content"] for m in mine
    )
    teal = next(m for m in mine if "teal" in m["content"])
    assert get(f"/api/memories/{teal['id']}", "bob").status_code == 404
    hits = get("/api/search?q=favourite+colour", "bob").json()["results"]
    assert hits and all(h["memory"]["user_id"] == "bob" for h in hits)
    assert "ochre" in hits[0]["memory"]["content"] and hits[0]["reason"]
    refused = httpx.post(
        f"{url}/api/memories/{teal['id']}/forget",
        json={"hard": True},
        headers={"Authorization": f"Bearer {TOKENS['carol']}"},
        timeout=10,
    )
    assert refused.status_code == 403
    assert get(f"/api/memories/{teal['id']}", "alice").json()["memory"]["status"] == "active"


@pytest.fixture(scope="module")
def open_server(servers: Servers) -> Iterator[tuple[str, ServerProcess]]:
    """The repo's whole `langgraph.json` (auth, http, store, checkpointer), no token file:
    auth is off."""
    keys = ("auth", "http", "store", "checkpointer")
    yield servers.langgraph_dev("langgraph-open", GRAPH, keys=keys)


async def test_without_a_token_file_auth_is_off_and_the_context_names_the_user(
    open_server: tuple[str, ServerProcess],
) -> None:
    async with _client(open_server, None) as lg:
        tid = (await lg.threads.create())["thread_id"]
        await lg.runs.wait(tid, GRAPH, input=_say("I live in Porto."), context={"user_id": "dora"})
        items = (await lg.store.search_items(["memories", "dora"], limit=20))["items"]
        assert any("Porto" in i["value"]["content"] for i in items), items
        # No owner is stamped and nothing is filtered: today's `langgraph dev`.
        assert "owner" not in (await lg.threads.get(tid))["metadata"]
        spaces = {ns[0] for ns in (await lg.store.list_namespaces(limit=100))["namespaces"]}
        assert "memories" in spaces
    inspector = httpx.get(f"{open_server[0]}/inspector/api/memories", timeout=10)
    assert inspector.status_code == 403 and "MEMORY_AGENT_TOKENS" in inspector.json()["error"]


async def test_without_auth_another_users_thread_is_refused_at_the_door(
    open_server: tuple[str, ServerProcess],
) -> None:
    async with _client(open_server, None) as lg:
        tid = (await lg.threads.create())["thread_id"]
        await lg.runs.wait(tid, GRAPH, input=_say("I live in Riga."), context={"user_id": "emil"})
        before = await lg.threads.get_state(tid)
        history = await lg.threads.get_history(tid, limit=100)

        status, body = await _status(
            lg.runs.wait(tid, GRAPH, input=_say("What do you know?"), context={"user_id": "finn"})
        )
        assert status == 403, body
        assert "ThreadNotYours: thread" in body and "belongs to another user" in body, body
        # Refused before the server wrote anything: the same state, no new checkpoint, no run.
        after = await lg.threads.get_state(tid)
        assert after["values"] == before["values"]
        assert after["checkpoint"] == before["checkpoint"]
        assert len(await lg.threads.get_history(tid, limit=100)) == len(history)
        assert [r["status"] for r in await lg.runs.list(tid)] == ["success"]
        assert (await lg.store.search_items(["memories", "finn"], limit=20))["items"] == []
        # The owner goes on; a new thread is anyone's.
        await lg.runs.wait(tid, GRAPH, input=_say("I work in Tartu."), context={"user_id": "emil"})
        await _turn_as(lg, "finn", "I live in Oslo.")


async def _turn_as(lg: LangGraphClient, user: str, text: str) -> None:
    tid = (await lg.threads.create())["thread_id"]
    await lg.runs.wait(tid, GRAPH, input=_say(text), context={"user_id": user})


async def test_store_search_with_a_query_is_ranked_by_the_bundled_embedder(
    open_server: tuple[str, ServerProcess],
) -> None:
    """`store.index` (the project's offline encoder): a query ranks, every item has a score."""
    async with _client(open_server, None) as lg:
        for text in ("I'm vegetarian.", "I live in Berlin.", "My sister is called Ines."):
            await _turn_as(lg, "gail", text)
        ns = ["memories", "gail"]
        listed = (await lg.store.search_items(ns, limit=50))["items"]
        assert listed and all(i["score"] is None for i in listed)  # no query: no ranking
        for query, expected in (
            ("which city is home", "Berlin"),
            ("what does the user eat", "vegetarian"),
            ("siblings", "Ines"),
        ):
            hits = (await lg.store.search_items(ns, query=query, limit=50))["items"]
            assert len(hits) == len(listed)
            assert all(isinstance(h["score"], float) for h in hits), hits
            scores = [h["score"] for h in hits]
            assert scores == sorted(scores, reverse=True)
            assert expected in hits[0]["value"]["content"], [h["value"]["content"] for h in hits]

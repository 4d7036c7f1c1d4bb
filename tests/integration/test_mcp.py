"""`memory-agent mcp` with the official MCP client against real server processes.

stdio: identity from the server's `--user`; memories survive a new server process on the same
home. Streamable HTTP: identity from the bearer token only; tokens of other users, extra
`user_id` arguments, read-only tokens and missing or unknown tokens are all refused. Over both,
the server reports the package version, every tool publishes its annotations and an output
schema, and every successful call's structured content validates against that schema.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx2
import jsonschema
import pytest
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

if TYPE_CHECKING:
    from conftest import Servers  # the `servers` fixture's type

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
HOST = "127.0.0.1"
TIMEOUT = 180.0  # generous bound on one MCP request (the first loads the encoder); never asserted
TOOLS = {"remember", "search", "list_memories", "forget", "export"}
IDENTITY_WORDS = {"user", "user_id", "agent", "agent_id", "read_only", "token"}
# What each tool declares (MCP ToolAnnotations): (readOnlyHint, destructiveHint, idempotentHint).
HINTS = {
    "remember": (False, False, False),
    "search": (True, False, True),
    "list_memories": (True, False, True),
    "forget": (False, True, False),
    "export": (True, False, True),
}

ALICE_TOKEN = "alice-token-0123456789abcdef"
ALICE_RO_TOKEN = "alice-readonly-0123456789abcdef"
BOB_TOKEN = "bob-token-0123456789abcdef"
CAROL_TOKEN = "carol-token-0123456789abcdef"
TOKENS = {
    ALICE_TOKEN: {"user": "alice", "agent": "support"},
    ALICE_RO_TOKEN: {"user": "alice", "read_only": True},
    BOB_TOKEN: {"user": "bob", "agent": "support", "read_only": False},
    CAROL_TOKEN: {"user": "carol"},
}

PEANUTS = "User is allergic to peanuts."


def _server_env(servers: Servers, home: Path) -> dict[str, str]:
    env = servers.env(
        MEMORY_AGENT_HOME=str(home),
        MEMORY_AGENT_MODEL="offline",
        ANONYMIZED_TELEMETRY="False",
        HF_HUB_OFFLINE="1",
    )
    for var in ("MEMORY_AGENT_MCP_USER", "MEMORY_AGENT_MCP_TOKENS", "MEMORY_AGENT_ID"):
        env.pop(var, None)
    return env


def _server_argv(*args: str) -> list[str]:
    """`memory-agent mcp ARGS`: the installed command, as the README documents it."""
    return [str(Path(sys.executable).with_name("memory-agent")), "mcp", *args]


async def _output_schema(session: ClientSession, tool: str) -> dict[str, Any]:
    (found,) = [t for t in (await session.list_tools()).tools if t.name == tool]
    assert found.output_schema is not None, tool
    return found.output_schema


async def _ok(session: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    """Call a tool that must succeed; its structured content must follow its output schema."""
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict)
    schema = await _output_schema(session, tool)
    jsonschema.Draft202012Validator(schema).validate(result.structured_content)
    # Clients that read only text get the same payload.
    (text,) = result.content
    assert json.loads(getattr(text, "text", "")) == result.structured_content
    return result.structured_content


async def _refused(session: ClientSession, tool: str, **arguments: Any) -> str:
    result = await session.call_tool(tool, arguments)
    assert result.is_error, result.structured_content
    return " ".join(getattr(block, "text", "") for block in result.content)


def _contents(payload: dict[str, Any]) -> list[str]:
    return [m["content"] for m in payload["memories"]]


def _jsonrpc_messages(response: httpx2.Response) -> list[dict[str, Any]]:
    """The JSON-RPC messages of a streamable-HTTP answer (a JSON body or an SSE stream)."""
    if response.headers["content-type"].startswith("application/json"):
        return [response.json()]
    return [
        json.loads(line.removeprefix("data:"))
        for line in response.text.splitlines()
        if line.startswith("data:") and line.removeprefix("data:").strip()
    ]


async def _check_published(session: ClientSession) -> None:
    """The server's version, and each tool's title, annotations and output schema."""
    init = session.initialize_result
    assert init is not None
    assert init.server_info.name == "memory-agent"
    assert init.server_info.version == version("langgraph-memory-agent")

    listed = {t.name: t for t in (await session.list_tools()).tools}
    assert set(listed) == TOOLS == set(HINTS)
    for name, tool in listed.items():
        hints = tool.annotations
        assert hints is not None, name
        assert (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint) == HINTS[
            name
        ], name
        assert hints.open_world_hint is False, name
        assert tool.title and tool.title == hints.title, name
        schema = tool.output_schema
        assert schema is not None and schema["type"] == "object", name
        assert "user" in schema["required"], name
        jsonschema.Draft202012Validator.check_schema(schema)
        # The schema says something: a payload without the user, or with a memory whose
        # status is not one the store knows, does not pass.
        validator = jsonschema.Draft202012Validator(schema)
        assert not validator.is_valid({"memories": []}), name
    bad = {"user": "u", "memories": [{"id": "x", "kind": "fact", "status": "erased"}]}
    assert not jsonschema.Draft202012Validator(listed["list_memories"].output_schema).is_valid(bad)


def _first_error(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


# --- stdio -----------------------------------------------------------------------------------


@asynccontextmanager
async def stdio_session(servers: Servers, home: Path, *args: str) -> AsyncIterator[ClientSession]:
    """Start `memory-agent mcp ARGS` over stdio; the client stops it on exit."""
    argv = _server_argv(*args)
    params = StdioServerParameters(
        command=argv[0], args=argv[1:], env=_server_env(servers, home), cwd=str(REPO)
    )
    with (servers.tmp / "stdio-server.log").open("a") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write, read_timeout_seconds=TIMEOUT) as session,
        ):
            await session.initialize()
            yield session


async def test_stdio_remember_search_forget_across_processes(
    servers: Servers, tmp_path: Path
) -> None:
    home = tmp_path / "stdio-home"

    async with stdio_session(servers, home, "--user", "alice") as alice:
        await _check_published(alice)
        listed = await alice.list_tools()
        assert {t.name for t in listed.tools} == TOOLS
        for tool in listed.tools:  # no tool lets the caller pick whose memory it touches
            assert not set(tool.input_schema.get("properties", {})) & IDENTITY_WORDS, tool.name
        saved = await _ok(alice, "remember", text=PEANUTS, subject="health.allergy.peanuts")
        assert saved["user"] == "alice"
        (change,) = saved["changes"]
        assert change["action"] == "added" and change["content"] == PEANUTS
        memory_id = change["id"]

    # A new server process on the same home, a new client session: the memory is there.
    async with stdio_session(servers, home, "--user", "alice") as alice:
        found = await _ok(alice, "search", query="what can't I eat?")
        assert found["user"] == "alice"
        assert memory_id in [m["id"] for m in found["memories"]]
        exported = await _ok(alice, "export")
        assert [(r["id"], r["user_id"], r["source"]["via"]) for r in exported["memories"]] == [
            (memory_id, "alice", "mcp")
        ]

        # Passing an identity as an argument is refused, not obeyed.
        refused = await _refused(alice, "search", query="peanuts", user_id="bob")
        assert "user_id" in refused and "never from tool arguments" in refused

        forgot = await _ok(alice, "forget", memory_id=memory_id)
        assert forgot["forgotten"]["id"] == memory_id
        assert forgot["forgotten"]["status"] == "forgotten"
        assert (await _ok(alice, "search", query="what can't I eat?"))["memories"] == []
        assert (await _ok(alice, "search", query=PEANUTS))["memories"] == []
        assert (await _ok(alice, "list_memories"))["memories"] == []
        inactive = await _ok(alice, "list_memories", include_inactive=True)
        assert [(m["id"], m["status"]) for m in inactive["memories"]] == [(memory_id, "forgotten")]

    # Another user's server on the same home never sees alice's memories, even inactive ones.
    async with stdio_session(servers, home, "--user", "bob", "--read-only") as bob:
        assert (await _ok(bob, "list_memories", include_inactive=True)) == {
            "user": "bob",
            "memories": [],
        }
        assert "read-only" in await _refused(bob, "remember", text="User likes tea.")


@pytest.mark.parametrize(
    ("args", "tokens", "message"),
    [
        ((), None, "pass --user U or set MEMORY_AGENT_MCP_USER"),
        (("--http",), None, "pass --tokens FILE or set MEMORY_AGENT_MCP_TOKENS"),
        (("--http", "--user", "bob"), TOKENS, "--user: stdio only"),
        # A typo must not silently turn a read-only token into a writing one.
        (("--http",), {ALICE_RO_TOKEN: {"user": "alice", "readonly": True}}, "unknown key"),
        (("--http",), {"short": {"user": "alice"}}, "at least 16 characters"),
    ],
)
def test_unusable_configuration_exits_with_a_clear_error(
    servers: Servers, tmp_path: Path, args: tuple[str, ...], tokens: Any, message: str
) -> None:
    argv = _server_argv(*args)
    if tokens is not None:
        path = tmp_path / "tokens.json"
        path.write_text(json.dumps(tokens), encoding="utf-8")
        argv += ["--tokens", str(path)]
    done = subprocess.run(
        argv,
        cwd=REPO,
        env=_server_env(servers, tmp_path / "home"),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: ") and message in done.stderr
    assert done.stdout == ""


# --- streamable HTTP ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def mcp_url(servers: Servers) -> str:
    """One HTTP server for the module, with the three tokens above."""
    tokens = servers.tmp / "tokens.json"
    tokens.write_text(json.dumps(TOKENS), encoding="utf-8")
    port = servers.free_port()
    servers.start(
        _server_argv("--http", "--host", HOST, "--port", str(port), "--tokens", str(tokens)),
        ready_url=f"http://{HOST}:{port}/healthz",
        cwd=REPO,
        env=_server_env(servers, servers.tmp / "http-home"),
        timeout=TIMEOUT,
    )
    return f"http://{HOST}:{port}/mcp"


def _http(token: str | None) -> httpx2.AsyncClient:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx2.AsyncClient(
        headers=headers, trust_env=False, timeout=httpx2.Timeout(60.0, read=TIMEOUT)
    )


@asynccontextmanager
async def http_session(url: str, token: str | None) -> AsyncIterator[ClientSession]:
    """An MCP client session over streamable HTTP that sends `token` as its bearer token."""
    async with (
        _http(token) as client,
        streamable_http_client(url, http_client=client) as (read, write),
        ClientSession(read, write, read_timeout_seconds=TIMEOUT) as session,
    ):
        await session.initialize()
        yield session


async def test_http_identity_comes_from_the_token(mcp_url: str) -> None:
    async with http_session(mcp_url, ALICE_TOKEN) as alice:
        saved = await _ok(alice, "remember", text=PEANUTS, subject="health.allergy.peanuts")
        assert saved["user"] == "alice"
        (change,) = saved["changes"]
        assert change["agent"] == "support"  # the token's agent is recorded on the write
        memory_id = change["id"]
        assert memory_id in [
            m["id"] for m in (await _ok(alice, "search", query=PEANUTS))["memories"]
        ]

    async with http_session(mcp_url, BOB_TOKEN) as bob:
        # Naming alice in the arguments is refused and reveals nothing.
        for tool, args in (
            ("search", {"query": PEANUTS, "user_id": "alice"}),
            ("list_memories", {"user": "alice"}),
            ("export", {"user_id": "alice"}),
            ("remember", {"text": "User likes tea.", "user_id": "alice"}),
        ):
            text = await _refused(bob, tool, **args)
            assert "never from tool arguments" in text
            assert PEANUTS not in text and memory_id not in text

        # Bob's own view never contains alice's memory, however he asks.
        for query in (PEANUTS, "what can't I eat?", "alice"):
            found = await _ok(bob, "search", query=query, k=100)
            assert found["user"] == "bob"
            assert PEANUTS not in _contents(found)
            assert memory_id not in [m["id"] for m in found["memories"]]
        assert (await _ok(bob, "list_memories", include_inactive=True))["memories"] == []
        assert (await _ok(bob, "export"))["memories"] == []
        assert "no memory" in await _refused(bob, "forget", memory_id=memory_id, hard=True)

        # Bob's writes land in bob's memory.
        bob_saved = await _ok(bob, "remember", text="User drinks green tea.", subject="likes.tea")
        assert bob_saved["user"] == "bob"

    # Alice's memory survived bob's attempt, and bob's memory is not alice's.
    async with http_session(mcp_url, ALICE_TOKEN) as alice:
        listed = await _ok(alice, "list_memories")
        assert listed["user"] == "alice"
        assert _contents(listed) == [PEANUTS]


async def test_http_tools_publish_hints_schemas_and_version(mcp_url: str) -> None:
    async with http_session(mcp_url, CAROL_TOKEN) as carol:
        await _check_published(carol)
        saved = await _ok(carol, "remember", text="Team offsite", kind="event",
                          event_date="2099-03-04", subject="work.offsite")  # fmt: skip
        (change,) = saved["changes"]
        assert (change["kind"], change["event_date"]) == ("event", "2099-03-04")
        await _ok(carol, "remember", text="User drinks oat milk.", subject="diet.milk")

        # The read-only tools leave the memory exactly as it was (hits, timestamps, history),
        # and asking twice gives the same answer.
        before = await _ok(carol, "export")
        assert len(before["memories"]) == 2
        first = await _ok(carol, "search", query="when is the offsite?")
        assert change["id"] in [m["id"] for m in first["memories"]]
        assert await _ok(carol, "search", query="when is the offsite?") == first
        listed = await _ok(carol, "list_memories", include_inactive=True)
        assert await _ok(carol, "list_memories", include_inactive=True) == listed
        assert await _ok(carol, "export") == before

        # forget is the destructive one: what it forgets stops being recalled.
        gone = await _ok(carol, "forget", memory_id=change["id"])
        assert gone["deleted"] is None and gone["forgotten"]["status"] == "forgotten"
        after = await _ok(carol, "search", query="when is the offsite?")
        assert change["id"] not in [m["id"] for m in after["memories"]]


async def test_http_read_only_token_reads_but_cannot_write(mcp_url: str) -> None:
    async with http_session(mcp_url, ALICE_TOKEN) as alice:
        saved = await _ok(alice, "remember", text="User lives in Berlin.", subject="profile.city")
        (change,) = saved["changes"]
        berlin = change["id"]

    async with http_session(mcp_url, ALICE_RO_TOKEN) as reader:
        found = await _ok(reader, "search", query="Which city do I live in?")
        assert found["user"] == "alice"
        assert berlin in [m["id"] for m in found["memories"]]

        refused = await _refused(
            reader, "remember", text="User lives in Munich.", subject="profile.city"
        )
        assert "read-only" in refused
        assert "read-only" in await _refused(reader, "forget", memory_id=berlin)

    async with http_session(mcp_url, ALICE_TOKEN) as alice:
        memories = (await _ok(alice, "list_memories"))["memories"]
        assert "User lives in Munich." not in [m["content"] for m in memories]
        assert berlin in [m["id"] for m in memories if m["status"] == "active"]


@pytest.mark.parametrize(
    ("token", "message"),
    [
        (None, "missing bearer token"),
        ("not-a-token-in-the-file-0123456789", "unknown bearer token"),
    ],
)
async def test_http_missing_or_unknown_token_is_refused(
    mcp_url: str, token: str | None, message: str
) -> None:
    # The official client surfaces the server's message.
    with pytest.raises(BaseException) as caught:
        async with http_session(mcp_url, token):
            pytest.fail("the session opened without a valid token")
    error = _first_error(caught.value)
    assert isinstance(error, MCPError), repr(caught.value)
    assert message in error.message

    # Plain HTTP sees a 401 with an RFC 6750 challenge.
    async with _http(token) as client:
        response = await client.post(
            mcp_url,
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            headers={"Accept": "application/json, text/event-stream"},
        )
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer ")
    assert message in response.json()["error"]["message"]


async def test_http_session_belongs_to_the_token_that_opened_it(mcp_url: str) -> None:
    accept = {"Accept": "application/json, text/event-stream"}
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"},
        },
    }
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "list_memories", "arguments": {}},
    }
    async with _http(ALICE_TOKEN) as alice, _http(BOB_TOKEN) as bob:
        opened = await alice.post(mcp_url, json=init, headers=accept)
        assert opened.status_code == 200
        session = {**accept, "mcp-session-id": opened.headers["mcp-session-id"],
                   "mcp-protocol-version": "2025-06-18"}  # fmt: skip
        done = await alice.post(
            mcp_url, json={"jsonrpc": "2.0", "method": "notifications/initialized"},
            headers=session,
        )  # fmt: skip
        assert done.status_code == 202

        # Bob holding alice's session id gets nothing: the session is not his.
        hijack = await bob.post(mcp_url, json=call, headers=session)
        assert hijack.status_code == 404
        assert "alice" not in hijack.text

        own = await alice.post(mcp_url, json=call, headers=session)
        assert own.status_code == 200
        (reply,) = _jsonrpc_messages(own)
        assert reply["id"] == 2
        assert reply["result"]["structuredContent"]["user"] == "alice"

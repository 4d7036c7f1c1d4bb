"""The inspector's API, its command's flags and the server's custom auth, in process.

The browser tests (`tests/integration/test_inspector.py`) drive the page; these check each
refusal and rule of the API and auth handlers directly, over a real in-memory store.
"""

from __future__ import annotations

import argparse
import json
import re
import socket
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from langgraph.graph import START, StateGraph
from langgraph.store.memory import InMemoryStore
from langgraph_sdk import Auth
from starlette.testclient import TestClient
from typing_extensions import TypedDict

from agent.cli import main
from agent.inspector import command
from agent.inspector.api import reason
from agent.inspector.app import bearer_tokens, build_app, one_user
from agent.mcp.auth import ConfigError, Identity, TokenTable
from agent.serve import auth as server_auth
from agent.serve.tokens import ENV_TOKENS, server_tokens
from graphs.context import user_of
from graphs.settings import Settings
from memory.recall.search import Recalled
from memory.service import MemoryService
from memory.store.records import MemoryRecord, Source, is_raw_turn

ALICE = "alice-token-0123456789abcdef"
BOB = "bob-token-0123456789abcdefgh"
READER = "reader-token-0123456789abcdef"


@pytest.fixture
def service() -> MemoryService:
    svc = MemoryService(InMemoryStore(), None)
    svc.add("alice", "User lives in Berlin.", subject="home.city")
    svc.add("alice", "User likes green tea.", kind="preference", subject="drink.tea")
    svc.add("bob", "User lives in Madrid.", subject="home.city")
    return svc


@pytest.fixture
def tokens() -> TokenTable:
    return TokenTable(
        {
            ALICE: Identity("alice", "memory-agent"),
            BOB: Identity("bob", "memory-agent"),
            READER: Identity("alice", "memory-agent", read_only=True),
        }
    )


@pytest.fixture
def client(service: MemoryService, tokens: TokenTable) -> TestClient:
    async def service_of(who: Identity) -> MemoryService:
        return service

    return TestClient(build_app(bearer_tokens(lambda: tokens), service_of))


def _as(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _id(client: TestClient, token: str, text: str) -> str:
    rows = client.get("/inspector/api/memories", headers=_as(token)).json()["memories"]
    return next(str(r["id"]) for r in rows if text in r["content"])


def test_no_token_and_a_wrong_token_are_401_with_a_challenge(client: TestClient) -> None:
    for headers in ({}, _as("wrong-token-0123456789abcdef"), {"Authorization": "Basic x"}):
        answer = client.get("/inspector/api/memories", headers=headers)
        assert answer.status_code == 401, answer.text
        assert answer.headers["www-authenticate"].startswith("Bearer ")
        assert "bearer token" in answer.json()["error"]
    page = client.get("/inspector/")
    assert page.status_code == 200 and "inspector.js" in page.text
    assert client.get("/inspector/static/inspector.js").status_code == 200


def test_each_token_sees_its_own_user_only(client: TestClient) -> None:
    mine = client.get("/inspector/api/memories", headers=_as(ALICE)).json()["memories"]
    assert sorted(m["content"] for m in mine) == ["User likes green tea.", "User lives in Berlin."]
    berlin = _id(client, ALICE, "Berlin")
    assert client.get(f"/inspector/api/memories/{berlin}", headers=_as(BOB)).status_code == 404
    forget = client.post(f"/inspector/api/memories/{berlin}/forget", json={}, headers=_as(BOB))
    assert forget.status_code == 404
    hits = client.get("/inspector/api/search?q=lives+in", headers=_as(BOB)).json()["results"]
    assert [h["memory"]["content"] for h in hits] == ["User lives in Madrid."]
    lines = client.get("/inspector/api/export", headers=_as(BOB)).text.splitlines()
    assert [json.loads(line)["content"] for line in lines] == ["User lives in Madrid."]


def test_a_correction_supersedes_and_keeps_the_trail(client: TestClient) -> None:
    berlin = _id(client, ALICE, "Berlin")
    edit = client.post(
        f"/inspector/api/memories/{berlin}/edit",
        json={"content": "User lives in Munich."},
        headers=_as(ALICE),
    )
    assert edit.status_code == 200, edit.text
    new = next(c["memory"] for c in edit.json()["changes"] if c["memory"]["id"] != berlin)
    shown = client.get(f"/inspector/api/memories/{new['id']}", headers=_as(ALICE)).json()
    assert shown["memory"]["content"] == "User lives in Munich."
    assert [m["content"] for m in shown["supersedes"]] == ["User lives in Berlin."]
    old = client.get(f"/inspector/api/memories/{berlin}", headers=_as(ALICE)).json()["memory"]
    assert old["status"] == "superseded" and old["superseded_by"] == new["id"]
    again = client.post(
        f"/inspector/api/memories/{berlin}/edit", json={"content": "x y z"}, headers=_as(ALICE)
    )
    assert again.status_code == 409 and "superseded" in again.json()["error"]


def test_a_raw_turn_is_not_corrected(service: MemoryService, client: TestClient) -> None:
    service.archive_turns("alice", [("m-1", "I live in Berlin.", "")], Source(thread_id="t-1"))
    turn = next(r for r in service.list("alice", include_turns=True) if is_raw_turn(r))
    url = f"/inspector/api/memories/{turn.id}/edit"
    answer = client.post(url, json={"content": "I live in Rome."}, headers=_as(ALICE))
    assert answer.status_code == 400 and "word for word" in answer.json()["error"]
    assert service.get("alice", turn.id).content == "I live in Berlin."


def test_forget_soft_then_hard(client: TestClient) -> None:
    tea = _id(client, ALICE, "tea")
    url = f"/inspector/api/memories/{tea}"
    soft = client.post(f"{url}/forget", json={}, headers=_as(ALICE))
    assert soft.json()["memory"]["status"] == "forgotten"
    assert client.get(url, headers=_as(ALICE)).json()["memory"]["status"] == "forgotten"
    hard = client.post(f"{url}/forget", json={"hard": True}, headers=_as(ALICE))
    assert hard.status_code == 200
    assert client.get(url, headers=_as(ALICE)).status_code == 404


@pytest.mark.parametrize(
    ("path", "body", "status", "says"),
    [
        ("search?q=", None, 400, "empty"),
        ("search?q=tea&k=0", None, 400, "k must be"),
        ("search?q=tea&k=x", None, 400, "k must be"),
        ("memories/{id}/edit", {"content": "  "}, 400, "empty"),
        ("memories/{id}/edit", {"content": "x" * 2001}, 400, "longer than"),
        ("memories/{id}/edit", ["not", "an", "object"], 400, "JSON object"),
        ("memories/{id}/forget", {"hard": "yes"}, 400, "true or false"),
        ("memories/nope/forget", {}, 404, "nope"),
    ],
)
def test_bad_requests_are_refused_with_a_reason(
    client: TestClient, path: str, body: Any, status: int, says: str
) -> None:
    url = "/inspector/api/" + path.replace("{id}", _id(client, ALICE, "tea"))
    answer = (
        client.get(url, headers=_as(ALICE))
        if body is None
        else client.post(url, json=body, headers=_as(ALICE))
    )
    assert answer.status_code == status, answer.text
    assert says in answer.json()["error"]
    assert len(client.get("/inspector/api/memories", headers=_as(ALICE)).json()["memories"]) == 2


def test_a_read_only_token_reads_but_changes_nothing(client: TestClient) -> None:
    tea = _id(client, READER, "tea")
    for action, body in (("forget", {"hard": True}), ("edit", {"content": "User likes coffee."})):
        answer = client.post(
            f"/inspector/api/memories/{tea}/{action}", json=body, headers=_as(READER)
        )
        assert answer.status_code == 403 and "read-only" in answer.json()["error"]
    assert (
        client.get(f"/inspector/api/memories/{tea}", headers=_as(ALICE)).json()["memory"]["status"]
        == "active"
    )


def test_without_tokens_the_server_route_refuses_and_says_how(service: MemoryService) -> None:
    async def service_of(who: Identity) -> MemoryService:
        return service

    client = TestClient(build_app(bearer_tokens(lambda: None), service_of))
    answer = client.get("/inspector/api/memories", headers=_as(ALICE))
    assert answer.status_code == 403 and ENV_TOKENS in answer.json()["error"]


def test_one_user_needs_no_token_and_root_leads_to_the_page(service: MemoryService) -> None:
    async def service_of(who: Identity) -> MemoryService:
        return service

    app = build_app(one_user(Identity("bob", "memory-agent")), service_of, root_redirect=True)
    client = TestClient(app)
    assert client.get("/", follow_redirects=False).headers["location"] == "/inspector/"
    rows = client.get("/inspector/api/memories").json()["memories"]
    assert [r["content"] for r in rows] == ["User lives in Madrid."]


def test_the_reason_says_why_a_memory_came_back() -> None:
    rec = MemoryRecord(
        id="1", user_id="a", kind="fact", subject="home.city", content="Lives in Oslo."
    )
    assert "words in common: oslo" in reason(Recalled(rec, 0.5), "oslo?")
    assert "by meaning" in reason(Recalled(rec, 0.5), "where is home")
    assert "core memory" in reason(Recalled(rec, 0.1, why="core"), "x")
    assert "conflicting" in reason(Recalled(rec, 0.1, why="conflict"), "x")


# --- the command's flags ---------------------------------------------------------------------


def _args(**given: Any) -> argparse.Namespace:
    flags = {"user": None, "tokens": None, "agent": None, "read_only": False,
             "host": "127.0.0.1", "port": command.DEFAULT_PORT}  # fmt: skip
    return argparse.Namespace(**{**flags, **given})


def test_the_command_resolves_one_way_to_identify(tmp_path: Path) -> None:
    settings = Settings()
    one = command.resolve(_args(user="alice", host="::1"), settings)
    assert one.identity == Identity("alice", "memory-agent") and one.tokens is None
    file = tmp_path / "tokens.json"
    file.write_text(json.dumps({ALICE: {"user": "alice"}}))
    many = command.resolve(_args(tokens=str(file), host="0.0.0.0"), settings)
    assert many.identity is None and many.tokens is not None and len(many.tokens) == 1
    refused = {
        "only on loopback": _args(user="alice", host="0.0.0.0"),
        "whose memories": _args(),
        "with --tokens each token": _args(user="alice", tokens=str(file)),
        "not a TCP port": _args(user="alice", port=0),
        "does not exist": _args(tokens=str(tmp_path / "missing.json")),
    }
    for says, args in refused.items():
        with pytest.raises(ConfigError, match=says):
            command.resolve(args, settings)


def test_the_cli_says_error_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", "--user", "alice", "--host", "0.0.0.0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "--tokens FILE" in err
    assert main(["inspect", "--user", "al ice"]) == 2
    assert "error: " in capsys.readouterr().err


def test_a_port_in_use_is_an_error_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("MEMORY_AGENT_HOME", str(tmp_path))
    monkeypatch.delenv("CHROMA_PATH", raising=False)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        assert main(["inspect", "--user", "alice", "--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: cannot listen on 127.0.0.1:{port}"), err


# --- the server's custom auth ----------------------------------------------------------------


def _ctx(user: dict[str, Any], resource: str, action: str, permissions: list[str]) -> Any:
    who = SimpleNamespace(**{"is_authenticated": True, **user})
    return SimpleNamespace(user=who, resource=resource, action=action, permissions=permissions)


async def test_authenticate_is_anonymous_without_a_token_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(ENV_TOKENS, raising=False)
    assert server_tokens() is None
    who = await server_auth.authenticate(None)
    assert who["is_authenticated"] is False and who["identity"] == ""
    file = tmp_path / "tokens.json"
    file.write_text(json.dumps({ALICE: {"user": "alice", "read_only": True}}))
    monkeypatch.setenv(ENV_TOKENS, str(file))
    who = await server_auth.authenticate(f"Bearer {ALICE}")
    assert who["identity"] == "alice" and list(who["permissions"]) == ["memory:read"]
    for header in (None, "Bearer nope-0123456789abcdefgh", ALICE):
        with pytest.raises(Auth.exceptions.HTTPException) as err:
            await server_auth.authenticate(header)
        assert err.value.status_code == 401
    file.write_text("{not json")
    with pytest.raises(ConfigError, match=ENV_TOKENS):
        await server_auth.authenticate(f"Bearer {ALICE}")


async def test_threads_are_stamped_and_filtered_by_owner() -> None:
    rw = ["memory:read", "memory:write"]
    value: dict[str, Any] = {"metadata": {"owner": "mallory", "topic": "x"}}
    got = await server_auth.on_threads(_ctx({"identity": "alice"}, "threads", "create", rw), value)
    assert got == {"owner": "alice"} and value["metadata"] == {"owner": "alice", "topic": "x"}
    run = {"metadata": None, "kwargs": {"context": {"user_id": "bob"}}}
    with pytest.raises(Auth.exceptions.HTTPException) as err:
        await server_auth.on_threads(_ctx({"identity": "alice"}, "threads", "create_run", rw), run)
    assert err.value.status_code == 403
    with pytest.raises(Auth.exceptions.HTTPException):
        ctx = _ctx({"identity": "alice"}, "threads", "create", ["memory:read"])
        await server_auth.on_threads(ctx, {})
    anonymous = _ctx({"identity": "", "is_authenticated": False}, "threads", "search", [])
    assert await server_auth.on_threads(anonymous, {}) is None


async def test_the_store_is_narrowed_to_the_callers_namespaces() -> None:
    rw = ["memory:read", "memory:write"]
    ctx = _ctx({"identity": "alice"}, "store", "list_namespaces", rw)
    for root in ((), ("memories",)):
        value: dict[str, Any] = {"namespace": root}
        await server_auth.on_store(ctx, value)
        assert value["namespace"] == ("memories", "alice")
    await server_auth.on_store(_ctx({"identity": "alice"}, "store", "get", rw),
                               {"namespace": ("memories", "alice", "fact")})  # fmt: skip
    refused = [("get", ("memories", "bob", "fact")), ("search", ("threads",)),
               ("put", ("memories", "alicex")), ("search", ("memories", "bob"))]  # fmt: skip
    for action, space in refused:
        with pytest.raises(Auth.exceptions.HTTPException) as err:
            await server_auth.on_store(_ctx({"identity": "alice"}, "store", action, rw),
                                       {"namespace": space})  # fmt: skip
        assert err.value.status_code == 403


class _S(TypedDict):
    who: str


def _graph_reading_the_user() -> Any:
    def node(state: _S) -> _S:
        return {"who": user_of({"user_id": "bob"})}

    return StateGraph(_S).add_node("n", node).add_edge(START, "n").compile()


def test_user_of_prefers_the_authenticated_identity() -> None:
    graph = _graph_reading_the_user()
    authed = SimpleNamespace(identity="alice", is_authenticated=True)
    config: Any = {"configurable": {"langgraph_auth_user": authed}}
    assert graph.invoke({"who": ""}, config)["who"] == "alice"
    anonymous = SimpleNamespace(identity="", is_authenticated=False)
    config = {"configurable": {"langgraph_auth_user": anonymous}}
    assert graph.invoke({"who": ""}, config)["who"] == "bob"
    assert graph.invoke({"who": ""})["who"] == "bob"
    assert user_of({"user_id": "carol"}) == "carol"  # outside a run


def test_langgraph_json_and_the_dockerfile_serve_the_auth_and_the_inspector() -> None:
    root = Path(__file__).resolve().parents[2]
    config = json.loads((root / "langgraph.json").read_text(encoding="utf-8"))
    dockerfile = (root / "Dockerfile").read_text(encoding="utf-8")
    for key, env in (("auth", "LANGGRAPH_AUTH"), ("http", "LANGGRAPH_HTTP")):
        found = re.search(rf"ENV {env}='(.+)'", dockerfile)
        assert found, f"the Dockerfile sets no {env}"
        expected = json.loads(json.dumps(config[key]).replace('"./', '"/deps/main/'))
        assert json.loads(found.group(1)) == expected
        target = next(v for k, v in config[key].items() if k in {"path", "app"})
        assert (root / target.split(":")[0]).is_file()

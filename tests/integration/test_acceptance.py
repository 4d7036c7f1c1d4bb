"""The five acceptance groups of seed 003, on the embedded default and on PostgreSQL.

Each group checks correct recall, wrong recall (what must not come back) and cross-user
leakage, through the graph with the offline model (or a fake LLM where the test must see
what the model was sent).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

import pytest
from fakes import ThreadFakeModel
from langchain_core.messages import AIMessage, HumanMessage

from agent.runner import Session, open_session
from graphs.context import Context
from graphs.memory_agent import build_graph
from graphs.settings import Settings
from memory.backends import BackendConfig

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Backend:
    name: str
    settings: Settings
    user: Callable[[str], str]
    env: dict[str, str]


@pytest.fixture(params=["embedded", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    run = uuid.uuid4().hex[:8]
    if request.param == "embedded":
        config = BackendConfig(home=str(tmp_path / "home"))
        env = {"MEMORY_AGENT_HOME": config.home}
        return Backend("embedded", Settings(backend=config), lambda label: f"{label}-{run}", env)
    pg_url = request.getfixturevalue("pg_url")
    new_user = request.getfixturevalue("new_user")
    config = BackendConfig(home=str(tmp_path / "home"), database_url=pg_url)
    env = {"MEMORY_AGENT_HOME": config.home, "DATABASE_URL": pg_url}
    return Backend("postgres", Settings(backend=config), new_user, env)


@pytest.fixture
async def session(backend: Backend) -> AsyncIterator[Session]:
    async with open_session(backend.settings, setup=backend.name == "postgres") as s:
        yield s


def recalled(result) -> str:
    return " | ".join(r["content"] for r in result.recalled)


async def test_1_same_name_similar_profiles_never_mix(session: Session, backend: Backend) -> None:
    a, b = backend.user("alice"), backend.user("alice2")
    await session.turn(a, f"{a}-1", "My name is Alice. I live in Berlin. I love hiking.")
    await session.turn(b, f"{b}-1", "My name is Alice. I live in Paris. I love hiking.")
    ra = await session.turn(a, f"{a}-2", "Where do I live and what do I like?")
    rb = await session.turn(b, f"{b}-2", "Where do I live and what do I like?")
    assert "Berlin" in recalled(ra) and "Paris" not in recalled(ra)
    assert "Paris" in recalled(rb) and "Berlin" not in recalled(rb)
    assert "Paris" not in ra.reply and "Berlin" not in rb.reply
    for user in (a, b):
        hits = await session.service.asearch(user, "Berlin Paris", k=20)
        assert {h.record.user_id for h in hits} == {user}


async def test_2_preference_update_supersedes_and_keeps_history(session: Session, backend) -> None:
    u, other = backend.user("pref"), backend.user("pref-other")
    await session.turn(other, f"{other}-1", "I'm vegetarian.")
    await session.turn(u, f"{u}-1", "I'm vegetarian.")
    later = await session.turn(u, f"{u}-2", "I'm vegan.")
    assert any(line.startswith("superseded:") for line in later.saved)
    r = await session.turn(u, f"{u}-3", "Suggest a dinner for me.")
    assert "User is vegan." in recalled(r) and "vegetarian" not in recalled(r)
    exported = await session.service.aexport(u)
    old = next(row for row in exported if row["content"] == "User is vegetarian.")
    assert old["status"] == "superseded" and old["superseded_by"] and old["valid_until"]
    # The other user's identical statement is untouched.
    (theirs,) = await session.service.alist(other)
    assert theirs.content == "User is vegetarian." and theirs.status == "active"


async def test_3_event_is_recalled_before_and_not_after(session: Session, backend) -> None:
    u, other = backend.user("event"), backend.user("event-other")
    said = datetime(2026, 11, 30, 9, tzinfo=UTC).isoformat()  # a Monday
    await session.turn(u, f"{u}-1", "我不吃辣，下周三我们上线。", turn_time=said)
    before = await session.turn(u, f"{u}-2", "最近有什么安排？",
                                turn_time="2026-12-08T10:00:00+00:00")  # fmt: skip
    assert "上线（2026-12-09）" in recalled(before) and "用户不吃辣" in recalled(before)
    after = await session.turn(u, f"{u}-3", "最近有什么安排？",
                               turn_time="2026-12-10T10:00:00+00:00")  # fmt: skip
    assert "上线" not in recalled(after) and "用户不吃辣" in recalled(after)
    nothing = await session.turn(other, f"{other}-1", "最近有什么安排？",
                                 turn_time="2026-12-08T10:00:00+00:00")  # fmt: skip
    assert nothing.recalled == []


async def test_4_long_thread_is_summarized_and_the_constraint_holds(
    session: Session, backend: Backend
) -> None:
    u, other = backend.user("long"), backend.user("long-other")
    model = ThreadFakeModel()
    settings = replace(session.settings, context_tokens=2500, summary_tokens=1200)
    graph = build_graph(session.backends.checkpointer, session.backends.store, settings=settings,
                        model=model, index=session.backends.index)  # fmt: skip
    config = {"configurable": {"thread_id": f"{u}-1"}}

    async def say(text: str, user: str = u, cfg: dict = config) -> dict:
        return await graph.ainvoke({"messages": [HumanMessage(text)]}, cfg,
                                   context=Context(user_id=user))  # fmt: skip

    await say("Never schedule meetings on Fridays.")
    for i in range(40):
        await say(f"Turn {i}: let's keep refining the weekly plan, item {i}.")
    state = (await graph.aget_state(config)).values
    assert state["summary_count"] > 0
    sent = model.chat_inputs[-1]
    assert "Never schedule meetings on Fridays." in str(sent[0].content)
    assert not any("Never schedule" in str(m.content) for m in sent[1:])  # via the summary
    # Continued after a restart of the graph object: the constraint still reaches the model.
    graph = build_graph(session.backends.checkpointer, session.backends.store, settings=settings,
                        model=model, index=session.backends.index)  # fmt: skip
    await say("What about next week?")
    assert "Never schedule meetings on Fridays." in str(model.chat_inputs[-1][0].content)
    # Another user's thread sees none of it.
    await say("Hello", user=other, cfg={"configurable": {"thread_id": f"{other}-1"}})
    assert "Fridays" not in str(model.chat_inputs[-1][0].content)


def _cli(backend: Backend, *args: str, stdin: str = "") -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "POSTGRES_URI")}
    env.update(backend.env, ANONYMIZED_TELEMETRY="False", MEMORY_AGENT_MODEL="offline")
    done = subprocess.run(
        [sys.executable, "-m", "agent.cli", *args], input=stdin, capture_output=True,
        text=True, env=env, cwd=ROOT, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


async def test_5_process_restart_between_threads(backend: Backend) -> None:
    u, other = backend.user("restart"), backend.user("restart-other")
    if backend.name == "postgres":
        _cli(backend, "setup")
    _cli(backend, "chat", "--user", u, "--thread", f"{u}-1",
         stdin="I'm vegetarian and I live in Berlin.\n/quit\n")  # fmt: skip
    _cli(backend, "chat", "--user", other, "--thread", f"{other}-1",
         stdin="I live in Rome.\n/quit\n")  # fmt: skip
    # A new process, a new thread: everything is recalled, nothing is duplicated.
    out = _cli(backend, "chat", "--user", u, "--thread", f"{u}-2",
               stdin="Any dinner idea?\n/quit\n")  # fmt: skip
    assert "User is vegetarian." in out and "User lives in Berlin." in out
    assert "Rome" not in out
    rows = json.loads(_cli(backend, "memories", "list", "--user", u, "--all", "--json"))
    facts = sorted(r["content"] for r in rows if r["kind"] != "episode")
    assert facts == ["User is vegetarian.", "User lives in Berlin."]
    # Each statement is archived once; the question in thread 2 is not archived at all.
    turns = sorted(r["content"] for r in rows if r["kind"] == "episode")
    assert turns == ["I live in Berlin.", "I'm vegetarian"]
    # The first thread survived the restart too.
    again = _cli(backend, "chat", "--user", u, "--thread", f"{u}-1", stdin="/quit\n")
    assert "chatting as" in again


async def test_a_forgotten_memory_never_returns(session: Session, backend: Backend) -> None:
    u = backend.user("forget")
    await session.turn(u, f"{u}-1", "I live in Berlin. I love jazz.")
    r = await session.turn(u, f"{u}-2", "Forget that I live in Berlin.")
    assert any(line.startswith("forgotten:") for line in r.saved)
    r = await session.turn(u, f"{u}-3", "Where do I live? Tell me about Berlin.")
    assert "Berlin" not in recalled(r)  # neither the fact nor the raw turn that said it
    r = await session.turn(u, f"{u}-4", "What music do I love? Jazz?")
    assert "User likes jazz." in recalled(r)
    index = session.backends.index
    await session.service.aconsolidate(u)
    assert all("Berlin" not in h.record.content for h in await session.service.asearch(u, "Berlin"))
    forgotten = next(x for x in await session.service.alist(u, include_inactive=True)
                     if "Berlin" in x.content)  # fmt: skip
    assert forgotten.id not in index.ids(u)
    await session.service.aforget(u, forgotten.id, hard=True)
    assert all("Berlin" not in row["content"] for row in await session.service.aexport(u))


async def test_a_sensitive_value_never_reaches_store_or_index(session: Session, backend) -> None:
    u = backend.user("secret")
    r = await session.turn(u, f"{u}-1", "My phone number is 13812345678. I love hiking.")
    state = await session.graph.aget_state({"configurable": {"thread_id": f"{u}-1"}})
    notice = state.values["messages"][-1]
    assert isinstance(notice, AIMessage) and "phone number" in str(notice.content)
    assert any(line.startswith("withheld:") for line in r.saved)
    rows = await session.service.aexport(u)
    # The phone statement is withheld; its neighbour is kept, as a memory and as said.
    assert sorted(row["content"] for row in rows) == ["I love hiking.", "User likes hiking."]
    assert "13812345678" not in json.dumps(rows)
    hits = await session.service.asearch(u, "phone number 13812345678", k=10)
    assert all("1381234" not in h.record.content for h in hits)
    assert len(session.backends.index.ids(u)) == 2

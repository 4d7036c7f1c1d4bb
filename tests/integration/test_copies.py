"""Every copy of what a user said obeys forget, supersede, privacy and ownership.

The cases of issue 11, each through the real graph with the offline model, on the embedded
default and on PostgreSQL (the store and the checkpointer are what these cases are about).
A copy is an extracted record, a raw turn (`episode.turn.*`), a thread summary, working
memory or the checkpointed thread itself.
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from agent.runner import Session, open_session
from graphs.settings import Settings
from memory.backends import BackendConfig
from memory.service import ThreadNotYours
from memory.store.records import MemoryRecord

pytestmark = pytest.mark.integration


@pytest.fixture(params=["embedded", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Settings, Callable[[], str]]:
    """Settings for one backend, and a maker of fresh user ids (cleaned up on Postgres)."""
    if request.param == "embedded":
        run = uuid.uuid4().hex[:6]
        names = iter(range(1000))
        return Settings(
            backend=BackendConfig(home=str(tmp_path / "home"))
        ), lambda: f"u{run}-{next(names)}"
    pg_url = request.getfixturevalue("pg_url")
    new_user = request.getfixturevalue("new_user")
    labels = iter(range(1000))
    return Settings(backend=BackendConfig(database_url=pg_url, home=str(tmp_path / "home"))), (
        lambda: new_user(f"c{next(labels)}")
    )


@pytest.fixture
async def session(backend: tuple[Settings, Callable[[], str]]) -> AsyncIterator[Session]:
    settings, _ = backend
    async with open_session(settings, setup=True) as s:
        yield s


@pytest.fixture
def user(backend: tuple[Settings, Callable[[], str]]) -> str:
    return backend[1]()


async def say(session: Session, user: str, thread: str, *lines: str) -> list[str]:
    saved: list[str] = []
    for line in lines:
        saved += (await session.turn(user, f"{user}-{thread}", line)).saved
    return saved


async def ask(session: Session, user: str, question: str) -> tuple[str, list[str]]:
    """Ask in a new thread; return the reply and the recalled contents."""
    result = await session.turn(user, f"{user}-{uuid.uuid4().hex[:6]}", question)
    return result.reply, [r["content"] for r in result.recalled]


async def active(session: Session, user: str) -> list[MemoryRecord]:
    return await session.service.alist(user, include_turns=True)


def texts(records: list[MemoryRecord]) -> str:
    return " | ".join(r.content for r in records)


# --- 1. forget reaches the raw turn ------------------------------------------------------------


@pytest.mark.parametrize(
    ("statement", "request_", "question", "value"),
    [
        ("我住在成都", "忘掉我的地址", "我住在哪里？", "成都"),
        ("I live in Berlin.", "forget my address", "Where do I live?", "Berlin"),
        ("I work as a nurse.", "Forget my job.", "What is my job?", "nurse"),
    ],
)
async def test_forget_leaves_no_raw_turn_behind(
    session: Session, user: str, statement: str, request_: str, question: str, value: str
) -> None:
    await say(session, user, "a", statement, request_)
    reply, recalled = await ask(session, user, question)
    assert value not in reply and not any(value in c for c in recalled)
    assert value not in texts(await active(session, user))
    hits = await session.service.asearch(user, value)
    assert not any(value in h.record.content for h in hits)


# --- 2. a superseded fact does not come back through its raw turn -----------------------------


async def test_superseded_city_is_not_recalled_through_its_raw_turn(
    session: Session, user: str
) -> None:
    await say(session, user, "a", "I live in Berlin.", "I moved to Munich.")
    reply, recalled = await ask(session, user, "Where do I live?")
    assert any("Munich" in c for c in recalled)
    assert not any("Berlin" in c for c in recalled) and "Berlin" not in reply
    rows = await session.service.alist(user, include_inactive=True, include_turns=True)
    berlin_turn = next(r for r in rows if r.content == "I live in Berlin.")
    assert berlin_turn.status == "superseded" and berlin_turn.superseded_by is not None


# --- 3. forgetting matches whole words, and only them -----------------------------------------


@pytest.mark.parametrize(
    ("statements", "request_", "gone", "kept"),
    [
        (
            ["I like tea.", "I like team sports.", "I like steak.", "I love Korean food."],
            "Forget that I like tea.",
            ["tea."],
            ["team sports", "steak", "Korean food"],
        ),
        (
            ["Tom is my brother.", "I like tomatoes.", "I work at Tomtom."],
            "Forget Tom.",
            ["Tom is"],
            ["tomatoes", "Tomtom"],
        ),
        (
            ["我喜欢猫", "我喜欢猫头鹰", "我喜欢熊猫"],
            "忘掉我喜欢猫",
            ["喜欢猫。", "我喜欢猫 "],
            ["猫头鹰", "熊猫"],
        ),
    ],
)
async def test_forget_does_not_overmatch(
    session: Session,
    user: str,
    statements: list[str],
    request_: str,
    gone: list[str],
    kept: list[str],
) -> None:
    await say(session, user, "a", *statements, request_)
    everything = await session.service.alist(user, include_inactive=True, include_turns=True)
    live = texts([r for r in everything if r.status == "active"]) + " "
    for word in kept:
        assert word in live, (word, live)
    for words in gone:
        assert words not in live, (words, live)
    # Nothing was deleted: soft forget keeps history, and nothing untargeted changed state.
    assert all(r.status in ("active", "forgotten") for r in everything)


# --- 4. "this/that" is the latest statement, fact and raw turn together ------------------------


async def test_dont_mention_this_again_means_the_latest_statement(
    session: Session, user: str
) -> None:
    await say(session, user, "a", "我住在成都", "推荐个餐馆", "别再提这个了")
    live = texts(await active(session, user))
    assert "成都" not in live
    # A request to the assistant states nothing: it is no statement "this" could mean, and
    # it is not kept raw.
    assert "推荐个餐馆" not in live


async def test_forget_that_forgets_the_fact_and_the_raw_turn(session: Session, user: str) -> None:
    await say(session, user, "a", "I live in Berlin.", "Forget that.")
    assert "Berlin" not in texts(await active(session, user))
    state = await session.graph.aget_state({"configurable": {"thread_id": f"{user}-a"}})
    said = [m.content for m in state.values["messages"]]
    assert not any("Berlin" in str(c) for c in said)  # the thread's own copy is marked too
    assert "Berlin" not in state.values["memory_block"] + json.dumps(state.values["recalled"])
    assert "forgot 1 memories" in str(said[-1])


# --- 5. forget requests in many words; none of them is kept as a raw turn ----------------------


@pytest.mark.parametrize(
    ("statement", "request_", "value"),
    [
        ("我住在成都", "把我的地址删掉", "成都"),
        ("我住在成都", "请不要记住这个", "成都"),
        ("我住在成都", "不要再提成都了", "成都"),
        ("I live in Berlin.", "Don't remember that.", "Berlin"),
        ("I work as a nurse.", "Delete everything you know about my job.", "nurse"),
        ("I live in Berlin.", "scratch that", "Berlin"),
        ("I live in Berlin.", "Remove Berlin from your memory.", "Berlin"),
        ("我住在成都", "请忘记我住在哪里", "成都"),
        ("我住在成都", "忘了我刚才说的", "成都"),
        ("I live in Berlin.", "Forget what I just said.", "Berlin"),
    ],
)
async def test_forget_requests_are_understood_and_not_archived(
    session: Session, user: str, statement: str, request_: str, value: str
) -> None:
    await say(session, user, "a", statement, request_)
    rows = await session.service.alist(user, include_inactive=True, include_turns=True)
    assert value not in texts([r for r in rows if r.status == "active"])
    assert request_ not in texts(rows)


async def test_a_forget_that_matches_nothing_says_so(session: Session, user: str) -> None:
    await say(session, user, "a", "I live in Berlin.")
    result = await session.turn(user, f"{user}-b", "Forget what I just said.")
    state = await session.graph.aget_state({"configurable": {"thread_id": f"{user}-b"}})
    note = str(state.values["messages"][-1].content)
    assert "nothing I remember matched" in note and "User lives in Berlin." in note
    [line] = result.saved
    assert line.startswith("unmatched: nothing remembered matches the forget request")
    assert "Berlin" in texts(await active(session, user))


# --- 6. the rolling summary does not bring forgotten content back -----------------------------


async def test_summary_does_not_resurrect_a_forgotten_item(
    backend: tuple[Settings, Callable[[], str]], user: str
) -> None:
    settings = dataclasses.replace(backend[0], summary_tokens=60)
    async with open_session(settings, setup=True) as session:
        await say(
            session,
            user,
            "a",
            "We decided to host the party at the Lindenhof.",
            "I want the guest list ready by Friday.",
            "We decided on jazz for the music.",
            "Forget the Lindenhof.",
            "We decided to order cake.",
            "I want balloons too.",
        )
        state = await session.graph.aget_state({"configurable": {"thread_id": f"{user}-a"}})
        assert state.values.get("summary"), "the thread was long enough to be summarized"
        assert "Lindenhof" not in json.dumps(state.values["summary"])
        rows = await session.service.alist(user, include_turns=True)
        summaries = [r for r in rows if r.source.via == "summary"]
        assert summaries and not any("Lindenhof" in r.content for r in summaries)
        hits = await session.service.asearch(user, "Lindenhof party venue")
        assert not any("Lindenhof" in h.record.content for h in hits)


# --- 8. threads belong to the user who opened them ----------------------------------------------


async def test_a_thread_belongs_to_its_first_user(session: Session, backend: Any) -> None:
    alice, bob = backend[1](), backend[1]()
    thread = f"{alice}-private"
    await session.turn(alice, thread, "I live in Berlin.")
    with pytest.raises(ThreadNotYours, match="belongs to another user"):
        await session.turn(bob, thread, "What do I like?")
    assert await session.service.alist(bob, include_turns=True) == []
    assert await session.service.athreads(bob) == []
    await session.service.adelete_user(bob)
    state = await session.graph.aget_state({"configurable": {"thread_id": thread}})
    assert state.values["messages"], "bob's delete-user left alice's thread alone"
    # Bob's refused message never reached the thread.
    assert not any("What do I like?" in str(m.content) for m in state.values["messages"])


# --- 9. consolidate never merges distinct statements ---------------------------------------------


async def test_consolidate_keeps_statements_that_differ_in_a_name(
    session: Session, user: str
) -> None:
    lines = [
        "The meeting with Tom is in room 204.",
        "The meeting with Tim is in room 204.",
        "I met Anna at the station.",
        "I met Anne at the station.",
        "I like my car.",
        "I like my cars.",
    ]
    await say(session, user, "a", *lines)
    await session.service.aconsolidate(user)
    live = [r.content for r in await active(session, user)]
    for line in lines:
        assert line in live, line
    hits = await session.service.asearch(user, "meeting with Tom")
    assert any("Tom" in h.record.content for h in hits)


def test_the_cli_refuses_another_users_thread(tmp_path: Path) -> None:
    import subprocess
    import sys

    env = {**__import__("os").environ, "MEMORY_AGENT_HOME": str(tmp_path / "cli-home")}
    cli = [sys.executable, "-m", "agent.cli", "chat"]

    def chat(user: str, text: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*cli, "--user", user, "--thread", "shared-thread"],
            input=f"{text}\n/quit\n",
            capture_output=True,
            text=True,
            env=env,
            timeout=180,
        )

    assert chat("alice", "I live in Berlin.").returncode == 0
    refused = chat("bob", "Where do I live?")
    assert refused.returncode == 2
    assert "belongs to another user" in refused.stderr
    assert "Berlin" not in refused.stdout


# --- 7. sensitive values next to Chinese text are kept in no copy -----------------------------


@pytest.mark.parametrize(
    ("statement", "secret"),
    [
        ("我的邮箱是alice@example.com", "alice@example.com"),
        ("我的OpenAI密钥是sk-proj-abcdefghijklmnopqrstuv1234", "abcdefghijklmnopqrstuv1234"),
        ("我的银行卡6222021234567890128", "6222021234567890128"),
        ("我的电话是138-1234-5678", "1234-5678"),
        ("口令是hunter2secret", "hunter2secret"),
        ("有事打 138 1234 5678 找我", "1234 5678"),
        ("PIN码是4821", "4821"),
        ("My email is bob@example.com.", "bob@example"),
    ],
)
async def test_sensitive_values_reach_no_copy(
    session: Session, user: str, statement: str, secret: str
) -> None:
    result = await session.turn(user, f"{user}-a", statement)
    assert not any(secret in line for line in result.saved)
    exported = json.dumps(await session.service.aexport(user), ensure_ascii=False)
    assert secret not in exported
    state = await session.graph.aget_state({"configurable": {"thread_id": f"{user}-a"}})
    thread = json.dumps([str(m.content) for m in state.values["messages"]], ensure_ascii=False)
    assert secret not in thread  # redacted in the checkpoint once the turn was answered
    config = {"configurable": {"thread_id": f"{user}-a"}}
    history = [c async for c in session.graph.aget_state_history(config)]
    assert secret not in json.dumps([str(c.values) for c in history], ensure_ascii=False)
    reply, recalled = await ask(session, user, "我的联系方式是什么？ What is my contact info?")
    assert secret not in reply and not any(secret in c for c in recalled)


async def test_hard_forget_deletes_the_record_and_its_raw_turn_only(
    session: Session, user: str
) -> None:
    await say(session, user, "a", "I like tea.", "I like team sports.", "I love Korean food.")
    rows = await session.service.alist(user, include_turns=True)
    tea = next(r for r in rows if r.content == "User likes tea.")
    await session.service.aforget(user, tea.id, hard=True)
    left = await session.service.alist(user, include_inactive=True, include_turns=True)
    assert "tea." not in texts(left)  # gone everywhere, history included
    assert len(left) == len(rows) - 2  # the record and the raw turn it was said in
    assert {"User likes team sports.", "I like team sports.", "I love Korean food."} <= {
        r.content for r in left
    }


async def test_thread_redaction_can_be_turned_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMORY_AGENT_REDACT_THREAD", "false")
    monkeypatch.setenv("MEMORY_AGENT_HOME", str(tmp_path / "plain"))
    settings = Settings.from_env()
    assert settings.policy.redact_thread is False
    async with open_session(settings, setup=True) as session:
        await session.turn("ann", "ann-a", "我的电话是13812345678")
        state = await session.graph.aget_state({"configurable": {"thread_id": "ann-a"}})
        assert "13812345678" in str(state.values["messages"][0].content)  # the thread keeps it
        exported = json.dumps(await session.service.aexport("ann"), ensure_ascii=False)
        assert "13812345678" not in exported  # memory still never does


async def test_hard_forget_of_a_superseded_fact_leaves_no_trace_in_its_successor(
    session: Session, user: str
) -> None:
    await say(session, user, "a", "I live in Berlin.", "I moved to Munich.")
    rows = await session.service.alist(user, include_inactive=True, include_turns=True)
    berlin = next(r for r in rows if r.content == "User lives in Berlin.")
    await session.service.aforget(user, berlin.id, hard=True)
    exported = json.dumps(await session.service.aexport(user), ensure_ascii=False)
    assert "Berlin" not in exported
    assert "User lives in Munich." in exported

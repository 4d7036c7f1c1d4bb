"""The write path off the reply path: streaming first, background extraction, resume."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from dataclasses import replace
from pathlib import Path

from agent.runner import open_session
from graphs.settings import Settings
from memory.backends import BackendConfig
from memory.store.records import namespace


def settings(tmp_path: Path, **kw) -> Settings:
    return replace(Settings(backend=BackendConfig(home=str(tmp_path / "home"))), **kw)


async def test_reply_reaches_the_caller_before_memory_is_saved(tmp_path: Path) -> None:
    # What the store file held when the first piece of the reply reached the caller, read
    # by a connection of its own. Not the records' times: a turn's records are dated when it
    # was said (`memory.store.records.as_of`).
    held: list[int] = []
    home = tmp_path / "home"

    def rows(_: str) -> None:
        with closing(sqlite3.connect(home / "store.sqlite")) as conn:
            prefix = ".".join(namespace("alice")) + ".%"
            query = "SELECT count(*) FROM store WHERE prefix LIKE ?"
            held.append(conn.execute(query, (prefix,)).fetchone()[0])

    async with open_session(settings(tmp_path)) as session:
        result = await session.turn("alice", "t1", "I live in Oslo.", on_reply=rows)
        (record,) = await session.service.alist("alice")
        # The reply existed before the memory was written.
        assert held and held[0] == 0
        rows("")  # the same reading sees the memory once the turn is over
        assert held[-1] > 0
        assert record.content == "User lives in Oslo."
        assert result.saved == ["added: [fact profile.city] User lives in Oslo."]
        assert result.first_token_s <= result.total_s


async def test_background_mode_extracts_a_burst_once_and_flushes_on_close(tmp_path) -> None:
    cfg = settings(tmp_path, extract_mode="background", extract_delay=3600)
    async with open_session(cfg) as session:
        for text in ("I live in Oslo.", "I love jazz.", "I'm allergic to peanuts."):
            result = await session.turn("bob", "t1", text)
            assert result.saved == [] and result.reply
        assert await session.service.alist("bob") == []  # the reply path did no writes
    async with open_session(cfg) as session:
        records = await session.service.alist("bob")
        assert {r.content for r in records} == {
            "User lives in Oslo.",
            "User likes jazz.",
            "User is allergic to peanuts.",
        }
        # One extraction covered the whole burst: every record cites all three messages.
        assert all(len(r.source.message_ids) == 3 for r in records)
        state = await session.graph.aget_state({"configurable": {"thread_id": "t1"}})
        humans = [m for m in state.values["messages"] if m.type == "human"]
        assert state.values["extracted_through"] == humans[-1].id


async def test_pending_work_is_resumed_from_the_checkpoint_after_a_crash(tmp_path) -> None:
    cfg = settings(tmp_path, extract_mode="background", extract_delay=3600)
    async with open_session(cfg) as session:
        await session.turn("carol", "t1", "我住在上海。")
        # A crash: the process dies before any flush (timers and all are lost).
        for task in session._timers.values():
            task.cancel()
        session._timers.clear()
    async with open_session(cfg) as session:
        assert await session.service.alist("carol") == []
        saved = await session.flush("t1", "carol")
        assert saved == ["added: [fact profile.city] 用户住在上海。"]
        assert await session.flush("t1", "carol") == []  # idempotent: nothing pending


async def test_recall_still_works_in_background_mode(tmp_path) -> None:
    cfg = settings(tmp_path, extract_mode="background", extract_delay=3600)
    async with open_session(cfg) as session:
        await session.turn("dan", "t1", "I'm vegetarian.")
        await session.flush("t1")
        result = await session.turn("dan", "t2", "Dinner idea?")
        assert [r["content"] for r in result.recalled] == ["User is vegetarian."]

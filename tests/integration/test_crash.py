"""Crash consistency: a real process SIGKILLed mid-write, then the same home reopened.

Each scenario runs `tests/crash_child.py` once as a subprocess on the embedded default
(SQLite store and checkpointer, embedded Chroma). The child kills itself with SIGKILL at a
precise point by wrapping a real method (a fault hook inside the child; nothing is mocked).
The home it leaves behind is copied for every test that inspects it, so tests that repair
the damage do not change what the others see.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from conftest import offline_env
from langchain_core.messages import AIMessage, HumanMessage

from agent.runner import Session, open_session
from graphs.context import Context
from graphs.settings import Settings
from memory.backends import BackendConfig, open_backends
from memory.service import MemoryNotFound, MemoryService
from memory.store.records import MemoryRecord, utcnow

pytestmark = pytest.mark.integration

CHILD = Path(__file__).resolve().parents[1] / "crash_child.py"
ROOT = CHILD.parents[1]
FIRST_TURN = "I live in Berlin."
SECOND_TURN = "I'm allergic to peanuts."


SCENARIOS: dict[str, tuple[tuple[str, ...], str]] = {
    # name: (child arguments after HOME, the method the child dies in)
    "service-upsert": (("alice",), "ChromaIndex.upsert"),
    "service-forget": (("alice",), "ChromaIndex.delete"),
    "service-delete-user": (("carol",), "ChromaIndex.drop_user"),
    "graph-save-start": (("bob", "bob-t1"), "MemoryNodes.save"),
    "graph-save-index": (("bob", "bob-t1"), "ChromaIndex.upsert"),
}


class Crashed:
    """What a crashed child left behind: its home and its progress lines."""

    def __init__(self, home: Path, steps: list[dict[str, Any]]) -> None:
        self.home = home
        self.steps = steps

    def copy(self, dest: Path) -> Path:
        """Return a private copy of the home, so a test may repair it."""
        shutil.copytree(self.home, dest)
        return dest

    def added(self) -> dict[str, str]:
        """Return content -> id of the memories the child added before dying."""
        return {s["content"]: s["id"] for s in self.steps if s["step"] == "added"}


@pytest.fixture(scope="module")
def crashed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Crashed]:
    """Run every crash scenario once, in parallel child processes; each must die of SIGKILL."""
    root = tmp_path_factory.mktemp("crashed")
    procs = {}
    for mode, (args, _) in SCENARIOS.items():
        home = root / mode
        procs[mode] = (
            home,
            subprocess.Popen(
                [sys.executable, str(CHILD), mode, str(home), *args],
                cwd=ROOT,
                env=offline_env(),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            ),
        )
    out = {}
    try:
        for mode, (home, proc) in procs.items():
            stdout, stderr = proc.communicate(timeout=240)
            steps = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
            assert proc.returncode == -signal.SIGKILL, (mode, proc.returncode, stdout, stderr)
            assert [s["step"] for s in steps if s["step"] in ("killing", "survived")] == ["killing"]
            assert steps[-1] == {"step": "killing", "where": SCENARIOS[mode][1]}, stdout
            out[mode] = Crashed(home, steps)
    finally:
        for _, proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    return out


@pytest.fixture
def upsert_crash(crashed: dict[str, Crashed]) -> Crashed:
    """Killed between the store write and the index write of "lives in Munich"."""
    return crashed["service-upsert"]


@pytest.fixture
def forget_crash(crashed: dict[str, Crashed]) -> Crashed:
    """Killed between the store delete and the index delete of a hard forget."""
    return crashed["service-forget"]


@pytest.fixture
def delete_user_crash(crashed: dict[str, Crashed]) -> Crashed:
    """Killed between the store deletes and the collection drop of `delete_user`."""
    return crashed["service-delete-user"]


@pytest.fixture
def save_start_crash(crashed: dict[str, Crashed]) -> Crashed:
    """Turn 2 killed the moment the `save` node starts."""
    return crashed["graph-save-start"]


@pytest.fixture
def save_index_crash(crashed: dict[str, Crashed]) -> Crashed:
    """Turn 2 killed inside `save`, after the store write and before the index write."""
    return crashed["graph-save-index"]


def live_ids(svc: MemoryService, user: str) -> set[str]:
    """Ids of every recallable record of a user in the store, whatever its kind.

    The index must hold exactly these (raw-turn `episode` archives included, if any).
    """
    now = utcnow()
    rows = svc.export(user)
    return {r["id"] for r in rows if MemoryRecord.model_validate(r).is_recallable(now)}


def facts(records: list[Any]) -> list[Any]:
    """The extracted memories: everything but `episode` ones (summaries, raw turns)."""
    return [r for r in records if r.kind != "episode"]


def contents(svc: MemoryService, user: str, query: str) -> list[str]:
    return [r.content for r in facts([h.record for h in svc.search(user, query, k=8)])]


# --- killed between the store write and the index write ----------------------------------------


def test_store_write_survives_and_stale_vector_never_surfaces(
    upsert_crash: Crashed, tmp_path: Path
) -> None:
    home = upsert_crash.copy(tmp_path / "home")
    seeded = upsert_crash.added()
    berlin, jazz = seeded["User lives in Berlin."], seeded["User likes jazz."]
    with open_backends(BackendConfig(home=str(home))) as b:
        svc = MemoryService(b.store, b.index)
        # The store write completed before the kill: Munich is there, Berlin superseded.
        records = {r.content: r for r in svc.list("alice", include_inactive=True)}
        assert sorted(records) == [
            "User likes jazz.",
            "User lives in Berlin.",
            "User lives in Munich.",
        ]
        munich = records["User lives in Munich."]
        assert munich.status == "active" and munich.supersedes == berlin
        assert records["User lives in Berlin."].status == "superseded"
        assert records["User lives in Berlin."].superseded_by == munich.id
        # The index write did not happen: it still holds the pre-crash vectors.
        assert b.index.ids("alice") == {berlin, jazz}

        # The stale Berlin vector is re-checked against the store and never surfaces,
        # not even for its own words.
        for query in ("Which city do I live in?", "User lives in Berlin.", "Berlin"):
            assert "User lives in Berlin." not in contents(svc, "alice", query)

        # consolidate makes the index agree with the store: Munich embedded, Berlin gone.
        report = svc.consolidate()
        assert (report.reindexed, report.orphans_removed) == (1, 1)
        assert b.index.ids("alice") == live_ids(svc, "alice") == {munich.id, jazz}
        assert contents(svc, "alice", "Which city do I live in?")[0] == "User lives in Munich."
        assert "User lives in Berlin." not in contents(svc, "alice", "User lives in Berlin.")
        assert svc.pending_repairs("alice") == 0
        again = svc.consolidate()  # idempotent
        assert (again.reindexed, again.orphans_removed, again.changes) == (0, 0, [])


def test_a_crash_between_store_and_index_leaves_a_pending_repair(
    upsert_crash: Crashed, tmp_path: Path
) -> None:
    home = upsert_crash.copy(tmp_path / "home")
    with open_backends(BackendConfig(home=str(home))) as b:
        svc = MemoryService(b.store, b.index)
        missing = live_ids(svc, "alice") - b.index.ids("alice")
        assert missing  # the Munich record has no vector
        # The gap must be visible without a full scan: a pending repair says so.
        assert svc.pending_repairs("alice") > 0


def test_orphan_vector_of_a_hard_forget_never_surfaces(
    forget_crash: Crashed, tmp_path: Path
) -> None:
    home = forget_crash.copy(tmp_path / "home")
    seeded = forget_crash.added()
    jazz, tea = seeded["User likes jazz."], seeded["User likes tea."]
    with open_backends(BackendConfig(home=str(home))) as b:
        svc = MemoryService(b.store, b.index)
        with pytest.raises(MemoryNotFound):
            svc.get("alice", jazz)  # the store delete happened
        assert b.index.ids("alice") == {jazz, tea}  # the vector delete did not
        for query in ("User likes jazz.", "jazz music", "What music do I like?"):
            hits = svc.search("alice", query, k=8)
            assert jazz not in {h.record.id for h in hits}
            assert {h.record.content for h in hits} <= {"User likes tea."}
        report = svc.consolidate()
        assert report.orphans_removed == 1
        assert b.index.ids("alice") == live_ids(svc, "alice") == {tea}


def test_crash_inside_delete_user_never_brings_the_user_back(
    delete_user_crash: Crashed, tmp_path: Path
) -> None:
    home = delete_user_crash.copy(tmp_path / "home")
    with open_backends(BackendConfig(home=str(home))) as b:
        svc = MemoryService(b.store, b.index)
        leftover = b.index.ids("carol")
        assert len(leftover) == 2  # the collection drop never happened
        assert svc.list("carol", include_inactive=True) == []
        assert svc.search("carol", "User works as a nurse.", k=8) == []
        assert svc.search("carol", "sailing", k=8) == []
        # Naming the user repairs it.
        report = svc.consolidate("carol")
        assert report.orphans_removed == 2
        assert b.index.ids("carol") == set()


def test_global_repair_removes_vectors_of_a_user_deleted_during_a_crash(
    delete_user_crash: Crashed, tmp_path: Path
) -> None:
    home = delete_user_crash.copy(tmp_path / "home")
    with open_backends(BackendConfig(home=str(home))) as b:
        svc = MemoryService(b.store, b.index)
        svc.add("dave", "User likes tea.", subject="likes.tea")  # someone else still exists
        svc.consolidate()
        svc.reindex()
        assert b.index.ids("carol") == set()


# --- a graph run killed between nodes ----------------------------------------------------------


@asynccontextmanager
async def resumed(home: Path) -> AsyncIterator[tuple[dict[str, Any], list[Any], Session]]:
    """Reopen the home and resume the thread from its last checkpoint (input None)."""
    settings = Settings(backend=BackendConfig(home=str(home)))
    config = {"configurable": {"thread_id": "bob-t1"}}
    async with open_session(settings) as session:
        # No `aget_state().next` check here: with the default "async" durability the last
        # checkpoint on disk may be one whose tasks all wrote, so `next` is () although
        # the turn never reached `save`. Resuming with None input still finishes it.
        out = await session.graph.ainvoke(None, config, context=Context(user_id="bob"))
        state = await session.graph.aget_state(config)
        assert not state.next
        records = await session.service.alist("bob", include_inactive=True)
        yield out, records, session


def assert_thread_intact(messages: list[Any]) -> None:
    assert [type(m) for m in messages] == [HumanMessage, AIMessage, HumanMessage, AIMessage]
    assert [messages[0].content, messages[2].content] == [FIRST_TURN, SECOND_TURN]
    assert len({m.id for m in messages}) == 4


def assert_saved_once(records: list[Any]) -> None:
    counted = Counter((r.content, r.status) for r in facts(records))
    assert counted == {
        ("User lives in Berlin.", "active"): 1,
        ("User is allergic to peanuts.", "active"): 1,
    }


async def test_graph_killed_as_save_starts_resumes_from_its_checkpoint(
    save_start_crash: Crashed, tmp_path: Path
) -> None:
    home = save_start_crash.copy(tmp_path / "home")
    # Before the resume, turn 2's memory is nowhere: the kill came before `save` ran.
    with open_backends(BackendConfig(home=str(home))) as b:
        svc = MemoryService(b.store, b.index)
        assert [r.content for r in facts(svc.list("bob", include_inactive=True))] == [
            "User lives in Berlin."
        ]
    async with resumed(home) as (out, records, session):
        assert_thread_intact(out["messages"])
        assert out["saved"] == ["added: [fact health.allergy.peanuts] User is allergic to peanuts."]
        assert_saved_once(records)
        live = await asyncio.to_thread(live_ids, session.service, "bob")
        assert session.backends.index.ids("bob") == live
        peanuts = next(r for r in facts(records) if "peanuts" in r.content)
        assert peanuts.source.thread_id == "bob-t1"
        assert peanuts.source.message_ids == [out["messages"][2].id]
        assert await session.service.athreads("bob") == ["bob-t1"]


async def test_graph_killed_inside_save_resumes_without_duplicates(
    save_index_crash: Crashed, tmp_path: Path
) -> None:
    home = save_index_crash.copy(tmp_path / "home")
    async with resumed(home) as (out, records, session):
        assert_thread_intact(out["messages"])
        assert_saved_once(records)  # the replayed save wrote nothing twice
        peanuts = next(r for r in facts(records) if "peanuts" in r.content)
        assert peanuts.history == []  # nor counted the replay as a restatement
        assert peanuts.source.message_ids == [out["messages"][2].id]
        # consolidate completes what the crash interrupted.
        svc = session.service
        report = await svc.aconsolidate("bob")
        assert report.reindexed <= 1 and report.orphans_removed == 0
        live = await asyncio.to_thread(live_ids, svc, "bob")
        assert session.backends.index.ids("bob") == live
        hits = await svc.asearch("bob", "What am I allergic to?", k=8)
        assert facts([h.record for h in hits])[0].content == "User is allergic to peanuts."


async def test_resumed_save_leaves_the_index_complete(
    save_index_crash: Crashed, tmp_path: Path
) -> None:
    home = save_index_crash.copy(tmp_path / "home")
    async with resumed(home) as (_, records, session):
        index_ids = session.backends.index.ids("bob")
        live = await asyncio.to_thread(live_ids, session.service, "bob")
        pending = await session.service.apending_repairs("bob")
        assert index_ids == live or pending > 0

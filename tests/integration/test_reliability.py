"""Reliability: parallel turns on Postgres, and backends that go away mid-run.

Everything is real: PostgreSQL on 127.0.0.1:5432 (directly or through a TCP proxy on
loopback that the test can cut), embedded Chroma and a `chroma run` server. Only the chat
model is the built-in offline one. Races are made deterministic where a test needs an exact
interleaving: a hook wraps a real method and only makes two threads meet (a barrier or an
event) between a read and the write that depends on it; it never changes what is read or
written.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import sys
import threading
from collections import Counter
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psycopg
import pytest
from conftest import free_port
from langchain_core.messages import HumanMessage
from psycopg.conninfo import make_conninfo

from agent.runner import Session, open_session
from graphs.context import Context
from graphs.memory_agent import build_graph
from graphs.settings import Settings
from memory.backends import BackendConfig, BackendUnavailable, aopen_backends
from memory.index.write_through import WriteThrough
from memory.service import MemoryService
from memory.store.reads import StoreReader
from memory.store.records import MemoryRecord, utcnow
from memory.store.writes import MemoryWriter

if TYPE_CHECKING:
    from conftest import Servers

pytestmark = pytest.mark.integration

HOST = "127.0.0.1"
ALLERGENS = ["peanuts", "shellfish", "penicillin", "latex", "sesame", "gluten", "pollen", "soy"]
OTHERS = ["kiwi", "eggs", "mustard", "celery", "lupin", "sulfites", "walnuts", "bee stings"]
HOOK_TIMEOUT = 5.0  # how long a hook waits for its partner before letting the call go on


def allergy(x: str) -> str:
    return f"User is allergic to {x}."


async def turn(graph: Any, user: str, thread: str, text: str) -> dict[str, Any]:
    return await graph.ainvoke(
        {"messages": [HumanMessage(text)]},
        {"configurable": {"thread_id": thread}},
        context=Context(user_id=user),
    )


def live_ids(svc: MemoryService, user: str) -> set[str]:
    """Ids of every recallable record of a user in the store, whatever its kind.

    The index must hold exactly these (raw-turn `episode` archives included, if any).
    Sync: call it through `asyncio.to_thread` under an async store.
    """
    now = utcnow()
    rows = svc.export(user)
    return {r["id"] for r in rows if MemoryRecord.model_validate(r).is_recallable(now)}


def facts(records: list[Any]) -> list[Any]:
    """The extracted memories: everything but `episode` ones (summaries, raw turns)."""
    return [r for r in records if r.kind != "episode"]


def recalled_facts(recalled: list[dict[str, Any]]) -> list[str]:
    return [r["content"] for r in recalled if r["kind"] != "episode"]


# --- 1. concurrency on the async Postgres graph --------------------------------------------------


async def test_parallel_threads_and_users_lose_and_duplicate_nothing(
    pg_url: str, new_user: Callable[..., str], tmp_path: Path
) -> None:
    me = new_user("me")
    others = [new_user(f"o{i}") for i in range(8)]
    config = BackendConfig(database_url=pg_url, home=str(tmp_path))
    async with aopen_backends(config) as b:
        graph = build_graph(
            b.checkpointer, b.store, settings=Settings(backend=config), index=b.index
        )
        svc = MemoryService(b.store, b.index)
        jobs = [
            turn(graph, me, f"{me}-t{i}", f"I'm allergic to {x}.") for i, x in enumerate(ALLERGENS)
        ]
        jobs += [
            turn(graph, u, f"{u}-t", f"I'm allergic to {x}.")
            for u, x in zip(others, OTHERS, strict=True)
        ]
        outs = await asyncio.gather(*jobs)

        # Every turn saved exactly its own statement.
        for out, x in zip(outs, ALLERGENS + OTHERS, strict=True):
            subject = "health.allergy." + x.replace(" ", "")
            assert out["saved"] == [f"added: [fact {subject}] {allergy(x)}"]
            assert len(out["messages"]) == 2

        # Each fact exactly once, for its user only: no lost write, no duplicate.
        mine = facts(await svc.alist(me, include_inactive=True))
        assert Counter(r.content for r in mine) == Counter(allergy(x) for x in ALLERGENS)
        assert {r.status for r in mine} == {"active"}
        owner = {me: {allergy(x) for x in ALLERGENS}}
        for u, x in zip(others, OTHERS, strict=True):
            theirs = facts(await svc.alist(u, include_inactive=True))
            assert [r.content for r in theirs] == [allergy(x)]
            owner[u] = {allergy(x)}
        assert sorted(await svc.athreads(me)) == sorted(f"{me}-t{i}" for i in range(8))

        # The index agrees with the store for every user; no write went missing there.
        live = {u: await asyncio.to_thread(live_ids, svc, u) for u in owner}
        for u in owner:
            assert await asyncio.to_thread(b.index.ids, u) == live[u]
            assert await svc.apending_repairs(u) == 0

        # Isolation: a user's search for another user's exact statement returns only that
        # user's memories; the owner finds their own statement first. `me` asks for all 16
        # statements; each other user for their own, a neighbour's and one of `me`'s.
        every = [allergy(x) for x in ALLERGENS + OTHERS]
        searches = [(me, q) for q in every]
        for i, (u, x) in enumerate(zip(others, OTHERS, strict=True)):
            neighbour = allergy(OTHERS[(i + 1) % len(OTHERS)])
            searches += [(u, allergy(x)), (u, neighbour), (u, allergy(ALLERGENS[i]))]
        results = await asyncio.gather(*(svc.asearch(u, q, k=8) for u, q in searches))
        for (u, q), hits in zip(searches, results, strict=True):
            assert {h.record.user_id for h in hits} <= {u}
            assert {h.record.id for h in hits} <= live[u]
            assert {r.content for r in facts([h.record for h in hits])} <= owner[u]
            if q in owner[u]:
                assert facts([h.record for h in hits])[0].content == q
        # And no turn recalled anything of another user.
        for out, u in zip(outs, [me] * 8 + others, strict=True):
            assert {r["id"] for r in out["recalled"]} <= live[u]


class Meet:
    """Makes two worker threads meet after a read, before the write that depends on it.

    If the code under test serializes the two (a lock), the first one waits `HOOK_TIMEOUT`
    for a partner that cannot come, the barrier breaks and both go on: the test then checks
    the serialized result.
    """

    def __init__(self) -> None:
        self.barrier = threading.Barrier(2, timeout=HOOK_TIMEOUT)
        self.calls = 0
        self._lock = threading.Lock()

    def __call__(self) -> None:
        with self._lock:
            self.calls += 1
        with suppress(threading.BrokenBarrierError):
            self.barrier.wait()

    def check_exercised(self) -> None:
        if self.calls != 2:  # a harness problem, not a finding: fail loudly, not as xfail
            raise RuntimeError(f"the hook ran {self.calls} times, expected 2")


async def test_same_statement_in_two_parallel_threads_is_stored_once(
    pg_url: str, new_user: Callable[..., str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = new_user()
    meet = Meet()
    related = MemoryWriter.related

    def related_then_meet(self: MemoryWriter, *args: Any, **kwargs: Any) -> Any:
        out = related(self, *args, **kwargs)
        meet()
        return out

    monkeypatch.setattr(MemoryWriter, "related", related_then_meet)
    config = BackendConfig(database_url=pg_url, home=str(tmp_path))
    async with aopen_backends(config) as b:
        graph = build_graph(
            b.checkpointer, b.store, settings=Settings(backend=config), index=b.index
        )
        await asyncio.gather(*(turn(graph, user, f"{user}-{i}", "I'm vegetarian.") for i in (1, 2)))
        records = facts(await MemoryService(b.store, b.index).alist(user, include_inactive=True))
    meet.check_exercised()
    assert [r.content for r in records] == ["User is vegetarian."]
    assert [h.action for h in records[0].history] == ["reinforced"]


ROLE: contextvars.ContextVar[str] = contextvars.ContextVar("role", default="")
READERS = ("get", "get_many")  # how mark_recalled may read the records (StoreReader)


def after_mark_recalled_reads(monkeypatch: pytest.MonkeyPatch, hook: Callable[[], None]) -> None:
    """Run `hook` right after `mark_recalled` has read its records, before it writes them."""
    for name in READERS:
        real = getattr(StoreReader, name, None)
        if real is None:
            continue

        def wrapper(self: StoreReader, *args: Any, _real: Any = real, **kwargs: Any) -> Any:
            out = _real(self, *args, **kwargs)
            if sys._getframe(1).f_code.co_name == "mark_recalled":
                hook()
            return out

        monkeypatch.setattr(StoreReader, name, wrapper)


async def test_parallel_recalls_are_all_counted(
    pg_url: str, new_user: Callable[..., str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = new_user()
    config = BackendConfig(database_url=pg_url, home=str(tmp_path))
    async with aopen_backends(config) as b:
        graph = build_graph(
            b.checkpointer, b.store, settings=Settings(backend=config), index=b.index
        )
        svc = MemoryService(b.store, b.index)
        await turn(graph, user, f"{user}-0", "I live in Berlin.")
        (berlin,) = facts(await svc.alist(user))
        meet = Meet()
        after_mark_recalled_reads(monkeypatch, meet)
        outs = await asyncio.gather(
            *(turn(graph, user, f"{user}-{i}", "Any restaurant tips near me?") for i in (1, 2))
        )
        monkeypatch.undo()
        meet.check_exercised()
        if not all(berlin.id in {r["id"] for r in o["recalled"]} for o in outs):
            raise RuntimeError("a turn recalled nothing: the scenario is not exercised")
        assert (await svc.aget(user, berlin.id)).hits == 2


async def as_role(role: str, job: Any) -> Any:
    ROLE.set(role)  # copied into the graph's tasks and into asyncio.to_thread workers
    return await job


async def test_recall_bookkeeping_never_undoes_a_parallel_supersede(
    pg_url: str, new_user: Callable[..., str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Thread A says "I moved to Munich" while thread B's turn recalled "Berlin".

    The interleaving that matters is forced: B's bookkeeping reads Berlin, then A's whole
    turn runs (Berlin superseded, A's own bookkeeping), then B writes its bookkeeping.
    """
    user = new_user()
    b_read, a_done = threading.Event(), threading.Event()
    write = WriteThrough.write

    def b_reads_then_waits() -> None:
        if ROLE.get() == "B":
            b_read.set()
            a_done.wait(HOOK_TIMEOUT)

    def write_hook(self: WriteThrough, *args: Any, **kwargs: Any) -> Any:
        if ROLE.get() == "A":
            b_read.wait(HOOK_TIMEOUT)
        return write(self, *args, **kwargs)

    async def turn_a() -> dict[str, Any]:
        try:
            return await as_role("A", turn(graph, user, f"{user}-a", "I moved to Munich."))
        finally:
            a_done.set()

    config = BackendConfig(database_url=pg_url, home=str(tmp_path))
    async with aopen_backends(config) as b:
        graph = build_graph(
            b.checkpointer, b.store, settings=Settings(backend=config), index=b.index
        )
        svc = MemoryService(b.store, b.index)
        await turn(graph, user, f"{user}-0", "I live in Berlin.")
        after_mark_recalled_reads(monkeypatch, b_reads_then_waits)
        monkeypatch.setattr(WriteThrough, "write", write_hook)
        moved, asked = await asyncio.gather(
            turn_a(),
            as_role("B", turn(graph, user, f"{user}-b", "Any restaurant tips near me?")),
        )
        monkeypatch.undo()
        if not b_read.is_set():
            raise RuntimeError("the hooks did not fire: the interleaving was not forced")
        assert moved["saved"][:2] == [
            "added: [fact profile.city] User lives in Munich. (supersedes: User lives in Berlin.)",
            "superseded: [fact profile.city] User lives in Berlin.",
        ]
        assert recalled_facts(asked["recalled"]) == ["User lives in Berlin."]
        active = facts(await svc.alist(user))
        assert [r.content for r in active] == ["User lives in Munich."]
        hits = await svc.asearch(user, "Which city do I live in?", k=8)
        assert [r.content for r in facts([h.record for h in hits])] == ["User lives in Munich."]


# --- 3a. the Chroma server stops mid-run ---------------------------------------------------------


async def test_chroma_server_stopped_mid_run_degrades_then_repairs(
    servers: Servers, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    port, server = servers.chroma(tmp_path / "chroma-data")
    config = BackendConfig(home=str(tmp_path / "home"), chroma_host=HOST, chroma_port=port)
    user = "rita"
    async with open_session(Settings(backend=config)) as s:
        index, svc = s.backends.index, s.service
        first = await s.turn(user, "r1", "I live in Berlin.")
        assert first.saved == ["added: [fact profile.city] User lives in Berlin."]
        (berlin,) = facts(await svc.alist(user))
        indexed = await asyncio.to_thread(index.ids, user)
        assert berlin.id in indexed
        assert indexed == await asyncio.to_thread(live_ids, svc, user)

        server.stop()
        assert not server.alive()
        # This process wrote Rita's vectors, so its copy of them (`memory.index.shard_cache`)
        # would serve recall without Chroma; a process holding none falls back to the store.
        index.cache.clear()
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="memory.service"):
            down = await s.turn(user, "r2", "I'm allergic to peanuts.")
        # The turn succeeds: recall fell back to the store, the write landed in the store
        # and the failed index write is recorded for repair.
        assert "index unavailable" in caplog.text
        assert "index upsert failed, recorded for reindex" in caplog.text
        assert recalled_facts(down.recalled) == ["User lives in Berlin."]
        assert down.saved == ["added: [fact health.allergy.peanuts] User is allergic to peanuts."]
        assert sorted(r.content for r in facts(await svc.alist(user))) == [
            "User is allergic to peanuts.",
            "User lives in Berlin.",
        ]
        assert await svc.apending_repairs(user) >= 1
        # Still down: store-based matching finds the memory written while it was down.
        still = await s.turn(user, "r3", "Remind me what I'm allergic to")
        assert recalled_facts(still.recalled)[0] == "User is allergic to peanuts."
        assert await svc.apending_repairs(user) >= 1

        # Same port, same data directory: what was indexed before the stop is still there.
        servers.chroma(tmp_path / "chroma-data", port=port)
        assert await asyncio.to_thread(index.ids, user) == indexed
        live = await asyncio.to_thread(live_ids, svc, user)
        assert live > indexed  # the writes made while it was down are missing
        assert await svc.areindex() == {user: len(live)}
        assert await svc.apending_repairs(user) == 0
        assert await asyncio.to_thread(index.ids, user) == live
        report = await svc.aconsolidate(user)
        assert (report.reindexed, report.orphans_removed) == (0, 0)  # nothing left to repair

        # Dense recall is back: no fallback, and a question sharing no words finds it.
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="memory.service"):
            hits = await svc.asearch(user, "Which foods are dangerous for me?", k=8)
            back = await s.turn(user, "r4", "Which foods are dangerous for me?")
        assert "index unavailable" not in caplog.text
        assert facts([h.record for h in hits])[0].content == "User is allergic to peanuts."
        assert recalled_facts(back.recalled)[0] == "User is allergic to peanuts."


# --- 3b. Postgres unreachable, or gone mid-run ---------------------------------------------------


def pg_settings(url: str, home: Path) -> Settings:
    return Settings(backend=BackendConfig(database_url=url, home=str(home)))


async def test_unreachable_postgres_is_refused_clearly_and_loses_nothing(
    pg_url: str, new_user: Callable[..., str], tmp_path: Path
) -> None:
    user = new_user()
    healthy = pg_settings(pg_url, tmp_path / "home")
    async with open_session(healthy) as s:
        await s.turn(user, f"{user}-1", "I'm vegetarian.")

    closed = free_port()
    down = pg_settings(make_conninfo(pg_url, port=str(closed)), tmp_path / "home")
    with pytest.raises(BackendUnavailable) as info:
        async with open_session(down):
            pytest.fail("a session opened on a closed port")
    message = str(info.value)
    assert message.startswith(f"cannot connect to Postgres at 127.0.0.1:{closed}/")
    assert "DATABASE_URL" in message  # says what to check

    async with open_session(healthy) as s:
        assert [r.content for r in facts(await s.service.alist(user))] == ["User is vegetarian."]
        state = await s.graph.aget_state({"configurable": {"thread_id": f"{user}-1"}})
        assert [m.content for m in state.values["messages"]][0] == "I'm vegetarian."
        assert len(state.values["messages"]) == 2


class PgProxy:
    """A TCP proxy on loopback to the shared Postgres, which a test can cut and restore.

    Cutting closes the listener and resets every open connection, as a database that
    crashed or a network that dropped would; restoring listens on the same port again.
    """

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = 0
        self.server: asyncio.Server | None = None
        self.links: set[asyncio.StreamWriter] = set()
        self.accepted = 0

    async def start(self) -> None:
        self.server = await asyncio.start_server(self._link, HOST, self.port)
        self.port = self.server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        assert self.server is not None
        self.server.close()
        for writer in list(self.links):
            writer.transport.abort()
        self.links.clear()
        await self.server.wait_closed()
        self.server = None

    async def _link(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(HOST, self.target_port)
        except OSError:
            writer.transport.abort()
            return
        self.accepted += 1
        self.links |= {writer, up_writer}

        async def pump(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            try:
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            except (ConnectionError, OSError, asyncio.CancelledError):
                pass
            finally:
                dst.transport.abort()

        await asyncio.gather(pump(reader, up_writer), pump(up_reader, writer))


@pytest.fixture
async def pg_proxy(pg_url: str) -> Any:
    port = int(psycopg.conninfo.conninfo_to_dict(pg_url).get("port") or 5432)
    proxy = PgProxy(port)
    await proxy.start()
    yield proxy
    if proxy.server is not None:
        await proxy.stop()


@asynccontextmanager
async def session_through_an_outage(
    pg_proxy: PgProxy, pg_url: str, user: str, home: Path
) -> AsyncIterator[Session]:
    """Open a session through the proxy, warm its pool, cut the proxy, fail a turn, restore."""
    settings = pg_settings(make_conninfo(pg_url, port=str(pg_proxy.port)), home)
    async with open_session(settings) as s:
        first = await s.turn(user, f"{user}-t", "I live in Berlin.")
        assert first.saved == ["added: [fact profile.city] User lives in Berlin."]
        # Parallel turns in other threads make the pool hold more than one connection.
        await asyncio.gather(*(s.turn(user, f"{user}-w{i}", f"I like topic{i}.") for i in range(3)))
        if s.backends.checkpointer.conn.get_stats()["pool_size"] < 2:
            raise RuntimeError("the pool did not grow: the outage needs 2+ pooled connections")
        await pg_proxy.stop()
        # The turn fails, fast, with a database error saying the connection is gone.
        with pytest.raises(psycopg.OperationalError, match="(?i)connection|server closed"):
            await s.turn(user, f"{user}-t", "I'm vegetarian.")
        await pg_proxy.start()  # Postgres is reachable again, on the same port
        yield s


async def test_postgres_gone_mid_run_fails_the_turn_then_recovers(
    pg_proxy: PgProxy, pg_url: str, new_user: Callable[..., str], tmp_path: Path
) -> None:
    user = new_user()
    async with session_through_an_outage(pg_proxy, pg_url, user, tmp_path) as s:
        # Turns work again once the pool has replaced its dead connections (the pool checks
        # each one before lending it out); bounded by the pool's size.
        errors = []
        for _ in range(s.backends.checkpointer.conn.max_size + 1):
            try:
                back = await s.turn(user, f"{user}-t", "I'm allergic to peanuts.")
                break
            except psycopg.OperationalError as exc:
                errors.append(exc)
        else:
            pytest.fail(f"no turn succeeded after Postgres came back: {errors}")
        assert back.saved == ["added: [fact health.allergy.peanuts] User is allergic to peanuts."]
        # Earlier memories are intact; the failed turns wrote nothing.
        assert sorted(r.content for r in facts(await s.service.alist(user))) == sorted(
            ["User lives in Berlin.", "User is allergic to peanuts."]
            + [f"User likes topic{i}." for i in range(3)]
        )
        state = await s.graph.aget_state({"configurable": {"thread_id": f"{user}-t"}})
        humans = [m.content for m in state.values["messages"] if m.type == "human"]
        assert humans == ["I live in Berlin.", "I'm allergic to peanuts."]
        assert len(state.values["messages"]) == 4


async def test_first_turn_after_postgres_recovers_succeeds(
    pg_proxy: PgProxy, pg_url: str, new_user: Callable[..., str], tmp_path: Path
) -> None:
    user = new_user()
    async with session_through_an_outage(pg_proxy, pg_url, user, tmp_path) as s:
        back = await s.turn(user, f"{user}-t", "I'm allergic to peanuts.")
        assert back.saved == ["added: [fact health.allergy.peanuts] User is allergic to peanuts."]


async def test_a_nul_character_in_a_message_does_not_fail_the_turn_on_postgres(
    pg_url: str, new_user: Callable[..., str], tmp_path: Path
) -> None:
    user = new_user()
    async with open_session(pg_settings(pg_url, tmp_path)) as s:
        out = await s.turn(user, f"{user}-t", "I like jazz\x00 music.")
        assert len(out.saved) == 1
        (rec,) = facts(await s.service.alist(user))
        assert "\x00" not in rec.content

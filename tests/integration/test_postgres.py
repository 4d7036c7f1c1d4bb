"""The Postgres backends against a real PostgreSQL server on loopback.

The server is `TEST_DATABASE_URL`, or else `postgresql://postgres@127.0.0.1:5432/test`
(then role `root`); the tests that need it are skipped when none answers. Each test works
on its own user and thread ids (a uuid suffix) and deletes its rows afterwards, so runs
never drop or share tables. The unreachable-server tests need no server at all.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from pathlib import Path

import psycopg
import pytest
from langgraph.checkpoint.base import empty_checkpoint

from agent.cli import main as cli_main
from agent.runner import open_session
from graphs.settings import Settings
from memory.backends import BackendConfig, BackendUnavailable, aopen_backends, open_backends
from memory.service import MemoryNotFound, MemoryService
from memory.store.records import MemoryRecord

pytestmark = pytest.mark.integration

CHECKPOINT_TABLES = ("checkpoint_writes", "checkpoint_blobs", "checkpoints")


def _count(url: str, sql: str, *params: object) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute(sql, params).fetchone()
        assert row is not None
        return int(row[0])


# --- (a) the app restarts on Postgres -----------------------------------------------------------


async def test_threads_and_memories_survive_a_restart(
    pg_url: str, new_user, tmp_path: Path
) -> None:
    user = new_user()
    thread_a, thread_b = f"{user}-A", f"{user}-B"
    settings = Settings(backend=BackendConfig(database_url=pg_url, home=str(tmp_path)))
    statement = "I'm vegetarian and I live in Berlin."
    expected = {"User is vegetarian.", "User lives in Berlin."}

    async with open_session(settings, setup=True) as session:
        r1 = await session.turn(user, thread_a, statement)
        assert sorted(r1.saved) == [
            "added: [fact profile.city] User lives in Berlin.",
            "added: [preference diet.type] User is vegetarian.",
        ]
        first_reply = r1.reply

    # It went to Postgres, not to SQLite files in the home directory.
    assert not (tmp_path / "checkpoints.sqlite").exists()
    assert not (tmp_path / "store.sqlite").exists()
    assert _count(pg_url, "select count(*) from checkpoints where thread_id = %s", thread_a) > 0
    stored = _count(pg_url, "select count(*) from store where prefix like %s", f"memories.{user}.%")
    assert stored == 4  # two facts and the two statements they came from

    async with open_session(settings) as session:  # a new app object on the same database
        config = {"configurable": {"thread_id": thread_a}}
        state = await session.graph.aget_state(config)
        assert [m.type for m in state.values["messages"]] == ["human", "ai"]
        assert [m.content for m in state.values["messages"]] == [statement, first_reply]

        r2 = await session.turn(user, thread_b, "What should I cook for dinner tonight?")
        assert {m["content"] for m in r2.recalled} == expected
        assert r2.saved == []
        assert "User is vegetarian." in r2.reply  # the offline model answers from the block

        # Saying it again in another thread reinforces; it does not duplicate.
        r3 = await session.turn(user, thread_b, statement)
        assert sorted(r3.saved) == [
            "reinforced: [fact profile.city] User lives in Berlin.",
            "reinforced: [preference diet.type] User is vegetarian.",
        ]
        active = await session.service.alist(user)
        assert sorted(r.content for r in active) == sorted(expected)
        assert len(await session.service.alist(user, include_inactive=True)) == 2
        for rec in active:
            assert [h.action for h in rec.history] == ["reinforced"]
            assert rec.confidence > rec.history[0].confidence
        assert sorted(await asyncio.to_thread(session.service.threads, user)) == sorted(
            [thread_a, thread_b]
        )
        state_b = await session.graph.aget_state({"configurable": {"thread_id": thread_b}})
        assert len(state_b.values["messages"]) == 4

        # Deleting the user removes memories and both threads' checkpoints.
        # 2 facts, and the 2 statements of each of the 2 messages that said them
        assert await session.service.adelete_user(user) == 6
        assert await session.service.alist(user, include_inactive=True) == []
        for thread in (thread_a, thread_b):
            gone = await session.graph.aget_state({"configurable": {"thread_id": thread}})
            assert gone.values == {}
    left = _count(pg_url, "select count(*) from checkpoints where thread_id like %s", f"{user}%")
    assert left == 0


# --- (b) the sync path ----------------------------------------------------------------------------


def test_sync_memory_service_on_postgres(pg_url: str, new_user, tmp_path: Path) -> None:
    from langgraph.checkpoint.postgres import PostgresSaver
    from langgraph.store.postgres import PostgresStore

    user, other = new_user("me"), new_user("other")
    config = BackendConfig(database_url=pg_url, home=str(tmp_path))
    with open_backends(config, setup=True) as b:
        assert isinstance(b.store, PostgresStore)
        assert isinstance(b.checkpointer, PostgresSaver)
        svc = MemoryService(b.store, b.index, checkpointer=b.checkpointer)

        (berlin,) = svc.add(user, "User lives in Berlin.", subject="profile.city", value="Berlin")
        assert berlin.action == "added"
        svc.add(user, "User is vegetarian.", kind="preference", subject="diet.type")
        svc.add(other, "User lives in Paris.", subject="profile.city", value="Paris")

        hits = svc.search(user, "Which city does the user live in?", k=8)
        assert [h.record.content for h in hits][0] == "User lives in Berlin."
        assert {h.record.content for h in hits} == {"User lives in Berlin.", "User is vegetarian."}
        assert all(h.record.user_id == user for h in hits)

        # Same subject, new value: the old one is superseded, in history, out of recall.
        moved = svc.add(user, "User lives in Munich.", subject="profile.city", value="Munich")
        assert [c.action for c in moved] == ["added", "superseded"]
        munich = moved[0].record
        assert {r.content for r in svc.list(user)} == {
            "User lives in Munich.",
            "User is vegetarian.",
        }
        old = svc.get(user, berlin.record.id)
        assert old.status == "superseded" and old.superseded_by == munich.id
        assert "User lives in Berlin." not in {
            h.record.content for h in svc.search(user, "Berlin", k=8)
        }

        # Hard forget: gone from the store and from the index.
        assert munich.id in b.index.ids(user)
        svc.forget(user, munich.id, hard=True)
        with pytest.raises(MemoryNotFound):
            svc.get(user, munich.id)
        assert munich.id not in b.index.ids(user)
        assert munich.id not in {h.record.id for h in svc.search(user, "Munich", k=8)}

        # A thread of the user in the Postgres checkpointer.
        thread = f"{user}-t1"
        cfg = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
        b.checkpointer.put(cfg, empty_checkpoint(), {"source": "input", "step": -1}, {})
        svc.remember_thread(user, thread)
        assert b.checkpointer.get_tuple(cfg) is not None

        assert svc.delete_user(user) == 2  # Berlin (superseded) and vegetarian
        assert svc.list(user, include_inactive=True) == []
        assert b.index.ids(user) == set()
        assert svc.threads(user) == []
        assert b.checkpointer.get_tuple(cfg) is None
        assert user not in svc.users()
        assert {r.content for r in svc.list(other)} == {"User lives in Paris."}

    with open_backends(config) as b:  # a fresh pool sees what was committed
        svc = MemoryService(b.store, b.index)
        assert {r.content for r in svc.list(other)} == {"User lives in Paris."}
        assert svc.list(user, include_inactive=True) == []
        assert other in svc.users()


# --- (c) an unreachable server --------------------------------------------------------------------


@pytest.fixture
def closed_port() -> int:
    """A loopback port nobody listens on."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _check_message(exc: BaseException, port: int) -> None:
    msg = str(exc)
    assert f"127.0.0.1:{port}" in msg
    assert "secret" not in msg
    assert "DATABASE_URL" in msg  # says what to fix


def _no_secret_logged(caplog: pytest.LogCaptureFixture) -> None:
    assert not [r for r in caplog.records if "secret" in r.getMessage()]


async def test_aopen_backends_unreachable_postgres(
    closed_port: int, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    url = f"postgresql://user:secret@127.0.0.1:{closed_port}/x"
    config = BackendConfig(database_url=url, home=str(tmp_path))
    with pytest.raises(BackendUnavailable) as info:
        async with aopen_backends(config):
            pytest.fail("opened backends on a closed port")
    _check_message(info.value, closed_port)
    _no_secret_logged(caplog)
    assert "secret" not in config.describe()


@pytest.mark.parametrize(
    "url",
    [
        pytest.param("postgresql://user:secret@127.0.0.1:{port}/x", id="password-in-userinfo"),
        pytest.param(
            "postgresql://user@127.0.0.1:{port}/x?password=secret", id="password-in-query"
        ),
        pytest.param("host=127.0.0.1 port={port} dbname=x password=secret", id="keywords"),
    ],
)
def test_open_backends_unreachable_postgres(
    url: str, closed_port: int, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    config = BackendConfig(database_url=url.format(port=closed_port), home=str(tmp_path))
    with pytest.raises(BackendUnavailable) as info, open_backends(config):
        pytest.fail("opened backends on a closed port")
    _check_message(info.value, closed_port)
    _no_secret_logged(caplog)


def test_cli_reports_unreachable_postgres(
    closed_port: int,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name in ("POSTGRES_URI", "OPENAI_API_KEY", "OPENAI_BASE_URL", "MEMORY_AGENT_MODEL",
                 "MEMORY_AGENT_EMBEDDINGS", "CHROMA_HOST", "CHROMA_PATH"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DATABASE_URL", f"postgresql://user:secret@127.0.0.1:{closed_port}/x")
    monkeypatch.setenv("MEMORY_AGENT_HOME", str(tmp_path / "home"))

    code = cli_main(["memories", "list", "--user", "alice"])

    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: cannot connect to Postgres at ")
    assert f"127.0.0.1:{closed_port}" in lines[0]
    assert "secret" not in err


# --- (e) writers in several processes -----------------------------------------------------------


def test_writer_lock_of_a_user_excludes_other_sessions(pg_url: str, new_user) -> None:
    from memory.store.locks import PostgresWriterLocks, WriterLockTimeout

    user, other = new_user("lock"), new_user("free")
    here = PostgresWriterLocks(pg_url)
    there = PostgresWriterLocks(pg_url, timeout=0.3)  # its own session, as another process
    try:
        with here.hold(user):
            with pytest.raises(WriterLockTimeout, match="another process"), there.hold(user):
                pass
            with there.hold(other):  # other users are not held up
                pass
            with here.hold(user):  # re-entered by its holder (nested service calls)
                pass
        with there.hold(user):  # released once the holder is done
            pass
    finally:
        here.close()
        there.close()


_WRITER = """
import sys, time
from memory.backends import BackendConfig, open_backends
from memory.service import MemoryService

url, user, start = sys.argv[1], sys.argv[2], float(sys.argv[3])
with open_backends(BackendConfig(database_url=url, home=sys.argv[4])) as b:
    svc = MemoryService(b.store, None)
    svc.list(user)  # connected and warm before the start line
    time.sleep(max(0.0, start - time.time()))
    for i in range(12):
        svc.add(user, f"User owns bike number {i}.", subject=f"bike.{i}")
        svc.add(user, f"User lives in city {i}.", subject="profile.city")
print("done")
"""


def test_two_processes_saving_one_user_store_each_fact_once(
    pg_url: str, new_user, tmp_path: Path
) -> None:
    import subprocess
    import sys
    import time

    user = new_user("race")
    start = time.time() + 4.0  # both start writing at the same instant
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, pg_url, user, str(start), str(tmp_path / f"h{n}")],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(2)
    ]
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0 and "done" in out, err[-3000:]
    with open_backends(BackendConfig(database_url=pg_url)) as b:
        svc = MemoryService(b.store, None)
        active = svc.list(user)
        everything = svc.list(user, include_inactive=True)
    bikes = sorted(r.content for r in active if r.subject.startswith("bike."))
    assert bikes == sorted(f"User owns bike number {i}." for i in range(12))  # none twice
    # One home at the end, the last one said; every earlier one superseded, not lost.
    assert [r.content for r in active if r.subject == "profile.city"] == ["User lives in city 11."]
    cities = {r.content for r in everything if r.subject == "profile.city"}
    assert cities == {f"User lives in city {i}." for i in range(12)}


def test_setup_indexes_the_lookups_a_save_makes(pg_url: str, tmp_path: Path) -> None:
    # The store filters on value->'subject' and value->'content' (see PostgresStore's
    # _get_filter_condition); the planner must be able to answer both from an index.
    with open_backends(BackendConfig(database_url=pg_url, home=str(tmp_path)), setup=True):
        pass
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("SET enable_seqscan = off")
        for field, index in (("subject", "memory_agent_subject_hash_idx"),
                             ("content", "memory_agent_content_idx")):  # fmt: skip
            # No prefix condition: with one, the planner may rightly prefer the prefix
            # index on a small table, which says nothing about ours.
            rows = conn.execute(
                f"EXPLAIN SELECT key FROM store WHERE value->'{field}' = '\"x\"'::jsonb"
            ).fetchall()
            assert index in " ".join(str(r[0]) for r in rows)


def test_setup_creates_the_snapshot_table(pg_url: str, tmp_path: Path) -> None:
    """`memory-agent setup` creates every table the app writes, the saved lexical snapshots'
    too, so a deployment whose app role may not run DDL needs nothing created later."""
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    from memory.lexical.persisted import SNAPSHOT_TABLE

    name = f"memory_agent_setup_{os.getpid()}"
    url = make_conninfo(pg_url, dbname=name)
    assert conninfo_to_dict(url)["dbname"] == name
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {name}")
        admin.execute(f"CREATE DATABASE {name}")
    try:
        for opener in ("sync", "async"):
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(f"DROP TABLE IF EXISTS {SNAPSHOT_TABLE}")
            config = BackendConfig(database_url=url, home=str(tmp_path))
            if opener == "sync":
                with open_backends(config, setup=True):
                    pass
            else:

                async def setup_async(config: BackendConfig = config) -> None:
                    async with aopen_backends(config, setup=True):
                        pass

                asyncio.run(setup_async())
            with psycopg.connect(url, autocommit=True) as conn:
                storage = conn.execute(
                    "SELECT a.attstorage FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid"
                    " WHERE c.relname = %s AND a.attname = 'data'",
                    (SNAPSHOT_TABLE,),
                ).fetchone()
            assert storage == ("e",), opener  # created, and stored out of line uncompressed

        # An app role that may only read and write the table saves and loads snapshots:
        # after setup, nothing it does needs DDL.
        from memory.lexical.persisted import SnapshotTable

        role = f"{name}_app"
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"DROP ROLE IF EXISTS {role}")
            conn.execute(f"CREATE ROLE {role} LOGIN")
            conn.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
            conn.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON {SNAPSHOT_TABLE} TO {role}")
        table = SnapshotTable(make_conninfo(url, user=role))
        table.save("k", b"snapshot", "v1")
        assert (table.load("k"), table.version("k")) == (b"snapshot", "v1")
        table.delete("k")
        assert table.load("k") is None
        table._session.close()
    finally:
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            admin.execute(f"DROP ROLE IF EXISTS {name}_app")


def test_long_subjects_and_statements_are_stored(pg_url: str, new_user, tmp_path: Path) -> None:
    # The store indexes must not cap what a row may hold (a b-tree entry tops out at ~2.7 kB),
    # for memories or for anything else another app keeps in the same store table.
    user = new_user("long")
    subject, content = "note." + "x" * 4000, "User said " + "y" * 6000
    with open_backends(BackendConfig(database_url=pg_url, home=str(tmp_path)), setup=True) as b:
        svc = MemoryService(b.store, None)
        row = MemoryRecord(id="long", user_id=user, kind="fact", subject=subject, content=content)
        assert svc.import_records(user, [row.to_store()]) == 1  # import takes any subject
        svc.add(user, content, subject="note.long")  # a save looks up the long statement
        assert sorted(len(r.subject) for r in svc.list(user)) == [9, len(subject)]
        b.store.put(("other-app", user), "k", {"subject": "z" * 5000, "content": "c" * 5000})
        assert b.store.get(("other-app", user), "k") is not None
        b.store.delete(("other-app", user), "k")


async def test_a_served_graph_makes_the_store_indexes_on_first_use(
    pg_url: str, new_user, tmp_path: Path
) -> None:
    # A LangGraph server opens its own store and never runs `memory-agent setup`.
    from langchain_core.messages import HumanMessage

    from graphs.context import Context
    from graphs.memory_agent import build_graph
    from memory import backends

    names = ("memory_agent_subject_hash_idx", "memory_agent_content_idx")
    with psycopg.connect(pg_url, autocommit=True) as conn:
        for name in names:
            conn.execute(f"DROP INDEX IF EXISTS {name}")
    backends._INDEXED.discard(pg_url)
    user = new_user("indexes")
    settings = Settings(backend=BackendConfig(database_url=pg_url, home=str(tmp_path)))
    async with aopen_backends(settings.backend) as b:
        graph = build_graph(b.checkpointer, b.store, settings=settings, index=b.index)
        await graph.ainvoke(
            {"messages": [HumanMessage("I live in Oslo.")]},
            {"configurable": {"thread_id": f"{user}-t"}},
            context=Context(user_id=user),
        )
    with psycopg.connect(pg_url) as conn:
        rows = conn.execute("select indexname from pg_indexes where tablename = 'store'")
        assert set(names) <= {r[0] for r in rows}


def test_a_dropped_session_is_reopened_and_its_writer_locks_go_with_it(pg_url: str) -> None:
    # What a Postgres restart does to the lock connection, done to that one session only.
    from memory.store.locks import PostgresWriterLocks

    locks, rival = PostgresWriterLocks(pg_url, timeout=0.2), PostgresWriterLocks(pg_url)
    try:
        with locks.hold("dropped"):
            pid = locks._session.run(lambda conn: conn.info.backend_pid)
            with psycopg.connect(pg_url, autocommit=True) as admin:
                admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
            # The lock died with its session, so another process may take it now ...
            with rival.hold("dropped"):
                pass
        # ... and the next call opens a new session instead of failing.
        assert locks._session.run(lambda conn: conn.info.backend_pid) != pid
        with locks.hold("dropped"):
            pass
    finally:
        locks.close()
        rival.close()

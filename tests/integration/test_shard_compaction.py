"""Two processes on one `chroma run` server and one Postgres store: a compaction loses nothing.

Users of different processes share a shard. A hard forget compacts the shard (copies it
into a new collection); a write from another process landing in the old one meanwhile was
lost, or a deleted vector was copied back: `benchmarks/deploy_load.py` saw the store and
the index disagree with no repair pending. Writes share an advisory lock of the shard and
a compaction holds it alone (`memory.index.collection_locks`).

Each "process" here is a `ChromaIndex` with its own Chroma client and its own Postgres lock
session, which is what another process has (advisory locks of one session never exclude
each other, so the test cannot use the per-process registry of `UserLocks`).
"""

from __future__ import annotations

import threading
import uuid
from typing import TYPE_CHECKING

import pytest
from scale_checks import same_shard_user

from memory.index.chroma import ChromaIndex, IndexUnavailable
from memory.index.embeddings import make_embedder
from memory.store.locks import PostgresWriterLocks
from memory.store.records import MemoryRecord

if TYPE_CHECKING:
    from conftest import Servers

pytestmark = pytest.mark.integration

HOST = "127.0.0.1"
BIG = 100_000  # nobody is promoted: every write goes to the shared shard


def _records(user: str, texts: list[str]) -> list[MemoryRecord]:
    return [
        MemoryRecord(id=f"{user}-{n}", user_id=user, kind="fact", subject=f"t.{n}", content=t)
        for n, t in enumerate(texts)
    ]


def _process(port: int, pg_url: str, *, timeout: float = 30.0) -> ChromaIndex:
    index = ChromaIndex.open(make_embedder("local"), host=HOST, port=port, promote_at=BIG)
    index.lock_across_processes(PostgresWriterLocks(pg_url, timeout=timeout))
    return index


def test_writes_of_one_process_survive_compactions_by_another(servers: Servers, pg_url: str):
    port, _ = servers.chroma(servers.tmp / "chroma-compaction-race")
    compacting, writing = _process(port, pg_url), _process(port, pg_url)
    run = uuid.uuid4().hex[:8]
    xavier = f"xavier-{run}"
    yara = same_shard_user(compacting, xavier, f"yara-{run}-")
    # A full shard: each compaction copies it, which leaves the other process time to write.
    big = _records(xavier, [f"User keeps {n} jars of {n % 7} kinds of honey." for n in range(400)])
    compacting.upsert(big)
    stated = _records(yara, [f"User planted {n} tulips along fence {n}." for n in range(60)])
    dropped = {r.id for r in stated[::3]}
    failures: list[BaseException] = []

    def compact() -> None:
        try:
            for rec in big[:6]:
                compacting.erase(xavier, [rec.id])  # a hard forget: the shard is rewritten
        except BaseException as exc:  # pragma: no cover - shown by the assertion below
            failures.append(exc)

    def write() -> None:
        try:
            for n, rec in enumerate(stated):
                writing.upsert([rec])
                if n % 3 == 2:
                    writing.delete(yara, [stated[n - 2].id])
        except BaseException as exc:  # pragma: no cover - shown by the assertion below
            failures.append(exc)

    threads = [threading.Thread(target=compact), threading.Thread(target=write)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not failures, failures

    want = {r.id for r in stated} - dropped
    assert writing.ids(yara) == want
    assert compacting.ids(yara) == want  # a fresh look from the other process agrees
    assert compacting.ids(xavier) == {r.id for r in big[6:]}


def test_a_compaction_waits_for_a_write_in_another_process(servers: Servers, pg_url: str):
    port, _ = servers.chroma(servers.tmp / "chroma-compaction-wait")
    index = _process(port, pg_url, timeout=0.5)
    user = f"wren-{uuid.uuid4().hex[:8]}"
    records = _records(user, ["User sings in a choir.", "User repairs old radios."])
    index.upsert(records)
    other = PostgresWriterLocks(pg_url)  # another process, in the middle of a write
    try:
        with other.hold_collection(index.home_name(user), exclusive=False):
            with pytest.raises(IndexUnavailable, match="held the index collection"):
                index.erase(user, [records[0].id])
            index.upsert(records[1:])  # writers share the lock: a write goes on
    finally:
        other.close()
    index.erase(user, [records[0].id])  # the write is over: the compaction runs
    assert index.ids(user) == {records[1].id}

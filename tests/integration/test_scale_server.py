"""The shard layout on a real `chroma run` server, with the store in PostgreSQL.

The same guarantees as on embedded Chroma (`tests/unit/test_scale_layout.py`): two users of
one shard with the same sentences never see each other's memories (also with the filter
broken), a growing user is promoted, per-user collections of the earlier layout move into
shards when a client opens the server, and delete-user removes every vector of the user:
no entry close to one of their sentences is readable in any collection afterwards. A
client's copy of shard users' vectors follows writes made through another client
(`tests/unit/test_shard_cache.py` on embedded Chroma). (The
server's own files are the server's: a dropped collection's folder there is its to purge.)
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

import pytest
from scale_checks import check_the_copy_follows_another_writer, readable_vectors, same_shard_user

from memory.backends import BackendConfig, open_backends
from memory.index.chroma import ChromaIndex, fingerprint, index_text
from memory.index.embeddings import make_embedder
from memory.index.layout import is_own_name
from memory.service import MemoryService

if TYPE_CHECKING:
    from conftest import Servers

pytestmark = pytest.mark.integration

HOST = "127.0.0.1"
SENTENCES = [
    "User keeps bees on the roof of the library.",
    "User's sister Maren lives in Tromsø.",
    "User is allergic to walnuts.",
]


def _add_all(service: MemoryService, user: str, sentences: list[str]) -> list[str]:
    ids = []
    for n, text in enumerate(sentences):
        (change,) = service.add(user, text, subject=f"test.s{n}.{uuid.uuid4().hex[:6]}")
        ids.append(change.record.id)
    return ids


def test_shards_on_a_chroma_server_with_postgres(servers: Servers, pg_url: str) -> None:
    port, _ = servers.chroma(servers.tmp / "chroma-scale")
    config = BackendConfig(database_url=pg_url, chroma_host=HOST, chroma_port=port)
    run = uuid.uuid4().hex[:8]  # the database is shared with other tests: fresh users
    with open_backends(config, setup=True) as b:
        index = b.index
        alice = f"alice-{run}"
        bob = same_shard_user(index, alice, f"bob-{run}-")
        service = MemoryService(b.store, index, checkpointer=b.checkpointer)
        alice_ids = _add_all(service, alice, SENTENCES)
        bob_ids = _add_all(service, bob, SENTENCES)
        assert index.home_name(alice) == index.home_name(bob)
        assert set(alice_ids).isdisjoint(bob_ids)

        # Each user's nearest vectors are the other's: only their own come back.
        for text in SENTENCES:
            vector = index.embedder.embed([text])[0]
            assert {h.id for h in index.query(bob, vector, 10)} == set(bob_ids)
            got = service.search(bob, text, k=8)
            assert got and {r.record.id for r in got} <= set(bob_ids)

        # A growing user is promoted to a collection of their own, on the server too.
        index.promote_at = 4
        gus = f"gus-{run}"
        gus_ids = _add_all(
            service, gus, [f"User owns {n} old clocks from {1900 + n}." for n in range(5)]
        )
        assert index.home_name(gus) == index.collection_name(gus)
        assert ChromaIndex.open(make_embedder("local"), host=HOST, port=port, promote_at=4).ids(
            gus
        ) == set(gus_ids)

        # A per-user collection of the earlier layout moves into a shard when a client opens.
        ann = f"ann-{run}"
        writer = MemoryService(b.store, None)
        ann_ids = _add_all(writer, ann, SENTENCES[:2])
        old = index.client.create_collection(
            index.collection_name(ann),
            metadata={"embedding": index.embedder.spec, "layout": "v3-vec"},
            configuration={"hnsw": {"space": "cosine"}},
        )
        records = writer.list(ann)
        old.add(
            ids=[r.id for r in records],
            embeddings=index.embedder.embed([index_text(r) for r in records]),
            metadatas=[{"kind": r.kind, "user_id": ann, "h": fingerprint(r)} for r in records],
        )
        other = ChromaIndex.open(make_embedder("local"), host=HOST, port=port, promote_at=4)
        names = [c.name for c in other.client.list_collections()]
        assert old.name not in names and other.ids(ann) == set(ann_ids)
        assert index.collection_name(gus) in names  # a large one stays
        assert all(is_own_name(n) is False or n == index.collection_name(gus) for n in names)
        assert MemoryService(b.store, other).consolidate(ann).reindexed == 0

        # Delete-user: every vector of the user is gone from every collection.
        vectors = [index.embedder.embed([t])[0] for t in SENTENCES]
        assert all(readable_vectors(index.client, v) for v in vectors)
        for user in (alice, ann, gus):
            service.delete_user(user)
        assert index.ids(alice) == set() and index.ids(gus) == set()
        for vector in vectors:
            close = readable_vectors(index.client, vector)
            assert close and all(c.split("/", 1)[1].startswith(_key(bob)) for c in close)
        assert index.ids(bob) == set(bob_ids)
        for user in (bob,):
            service.delete_user(user)
        for vector in vectors:
            assert readable_vectors(index.client, vector) == []


def test_the_copy_follows_another_client_of_the_server(servers: Servers, pg_url: str) -> None:
    """A second client of the same `chroma run` server (another process's index, with its
    own copy of shard users' vectors) writes, forgets and deletes: the first one's next
    search follows (`scale_checks.check_the_copy_follows_another_writer`)."""
    port, _ = servers.chroma(servers.tmp / "chroma-copy")
    config = BackendConfig(database_url=pg_url, chroma_host=HOST, chroma_port=port)
    with open_backends(config, setup=True) as b:
        other = ChromaIndex.open(make_embedder("local"), host=HOST, port=port)
        assert other.client is not b.index.client
        check_the_copy_follows_another_writer(b.store, b.index, other, uuid.uuid4().hex[:8])


def _key(user: str) -> str:
    from memory.store.records import user_key

    return user_key(user)

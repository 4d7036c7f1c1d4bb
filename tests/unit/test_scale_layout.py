"""The index layout that scales with users, on embedded Chroma (`memory.index.layout`).

Small users share shard collections; a user over `promote_at` vectors moves to a collection
of their own; per-user collections of the earlier layout move into shards on open. These
tests pin that isolation stays exact when two users' vectors are each other's nearest (and
when the filter is broken), that promotion and migration lose no memory, and that
delete-user, hard forget and reindex leave nothing of what they deleted in any file under
the memory home: no token, no record id, no vector close to a deleted one.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import chromadb
import numpy as np
import pytest
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.store.memory import InMemoryStore
from scale_checks import leaks, readable_vectors, same_shard_user

from memory.backends import BackendConfig, open_backends
from memory.index import files as chroma_files
from memory.index.chroma import ChromaIndex, IndexHit, fingerprint, index_text
from memory.index.embeddings import make_embedder
from memory.index.layout import is_own_name, shard_entry_id
from memory.service import MemoryService
from memory.store.records import user_key

SENTENCES = [
    "User keeps bees on the roof of the library.",
    "User's sister Maren lives in Tromsø.",
    "User is allergic to walnuts.",
]


def _add_all(service: MemoryService, user: str, sentences: list[str]) -> list[str]:
    ids = []
    for text in sentences:
        subject = "test.s" + hashlib.sha1(text.encode()).hexdigest()[:8]
        (change,) = service.add(user, text, subject=subject)
        ids.append(change.record.id)
    return ids


class UnfilteredIndex(ChromaIndex):
    """An index whose shard search forgot the user filter: every user's nearest come back."""

    def query(self, user_id: str, vector: np.ndarray, k: int, known: Any = None) -> list[IndexHit]:
        shard = self._shard(user_id)._collection
        res = shard.query(query_embeddings=[vector], n_results=k, include=["distances"])
        return [
            IndexHit(i.split(":", 1)[1], "fact", 1.0 - float(d))
            for i, d in zip(res["ids"][0], (res["distances"] or [[]])[0], strict=True)
        ]


def test_the_same_sentences_of_another_user_never_come_back(tmp_path: Path) -> None:
    """Two users of one shard say the same sentences: each vector's nearest neighbour is
    the other user's. The index returns a user's own entries only; and with the filter
    broken, the service's store re-check still drops every hit of the other user."""
    index = ChromaIndex.open(make_embedder("local"), path=str(tmp_path / "chroma"))
    bob = same_shard_user(index, "alice", "bob")
    service = MemoryService(InMemoryStore(), index)
    alice_ids = _add_all(service, "alice", SENTENCES)
    bob_ids = _add_all(service, bob, SENTENCES)
    assert index.home_name("alice") == index.home_name(bob)
    assert set(alice_ids).isdisjoint(bob_ids)

    for text in SENTENCES:
        vector = index.embedder.embed([text])[0]
        assert {h.id for h in index.query("alice", vector, 10)} == set(alice_ids)
        assert {h.id for h in index.query(bob, vector, 10)} == set(bob_ids)
        assert {r.record.id for r in service.search(bob, text, k=8)} <= set(bob_ids)

    leaky = UnfilteredIndex(index.client, index.embedder, path=index.path)
    vector = index.embedder.embed([SENTENCES[0]])[0]
    assert set(alice_ids) & {h.id for h in leaky.query(bob, vector, 10)}  # the bug shows
    broken = MemoryService(service.store, leaky)
    for text in SENTENCES:
        got = broken.search(bob, text, k=8)
        assert got and {r.record.id for r in got} <= set(bob_ids)
        assert all(r.record.user_id == bob for r in got)


def test_one_record_id_for_two_users_keeps_both_entries(tmp_path: Path) -> None:
    """An export imported into another user keeps its ids: in a shared collection the two
    users' entries must not overwrite each other."""
    index = ChromaIndex.open(make_embedder("local"), path=str(tmp_path / "chroma"))
    bob = same_shard_user(index, "alice", "bob")
    service = MemoryService(InMemoryStore(), index)
    _add_all(service, "alice", SENTENCES[:1])
    service.import_records(bob, service.export("alice"))
    (rid,) = index.ids("alice")
    assert index.ids(bob) == {rid}
    index.delete(bob, [rid])
    assert index.ids("alice") == {rid} and index.ids(bob) == set()


def test_a_growing_user_is_promoted_to_a_collection_of_their_own(tmp_path: Path) -> None:
    embedder = make_embedder("local")
    index = ChromaIndex.open(embedder, path=str(tmp_path / "chroma"), promote_at=4)
    service = MemoryService(InMemoryStore(), index)
    small = _add_all(service, "sam", ["User plays chess."])
    ids = _add_all(
        service, "gus", [f"User visited city number {n} in {1990 + n}." for n in range(4)]
    )
    assert index.home_name("gus").startswith("mem-shard-")
    ids += _add_all(service, "gus", ["User owns a red canoe."])
    assert index.home_name("gus") == index.collection_name("gus")
    assert index.ids("gus") == set(ids)
    shard = index.client.get_collection(index.home_name("sam"))
    assert shard.get(where={"u": user_key("gus")})["ids"] == []  # moved, not copied
    assert index.ids("sam") == set(small)
    assert service.search("gus", "my canoe", k=1)[0].record.content == ("User owns a red canoe.")
    # Another process sees the promotion, and reindex keeps the user in their collection.
    other = ChromaIndex.open(embedder, path=str(tmp_path / "chroma"), promote_at=4)
    assert other.ids("gus") == set(ids)
    assert MemoryService(service.store, other).reindex("gus") == {"gus": 5}
    assert other.home_name("gus") == other.collection_name("gus")
    assert other.ids("gus") == set(ids) and other.ids("sam") == set(small)


def _old_layout_collection(index: ChromaIndex, user: str, records: list[Any]) -> None:
    """Write a user's vectors as the earlier layout did: one collection per user."""
    collection = index.client.create_collection(
        index.collection_name(user),
        metadata={"embedding": index.embedder.spec, "layout": "v3-vec"},
        configuration={"hnsw": {"space": "cosine"}},
    )
    collection.add(
        ids=[r.id for r in records],
        embeddings=index.embedder.embed([index_text(r) for r in records]),
        metadatas=[{"kind": r.kind, "user_id": user, "h": fingerprint(r)} for r in records],
    )


def test_per_user_collections_of_the_earlier_layout_move_into_shards_on_open(
    tmp_path: Path,
) -> None:
    embedder = make_embedder("local")
    path = str(tmp_path / "chroma")
    store = InMemoryStore()
    writer = MemoryService(store, None)  # the store only: the vectors come next
    users = {"ann": SENTENCES, "李雷": ["用户住在上海。", "用户喜欢喝绿茶。"]}
    big = [
        "User drives a green tractor.",
        "User's daughter is called Ines.",
        "User speaks Portuguese at home.",
        "User runs a marathon every spring.",
        "User repairs old radios.",
        "User was born in Porto.",
    ]
    for user, sentences in {**users, "ben": big}.items():
        _add_all(writer, user, sentences)
    index = ChromaIndex.open(embedder, path=path)
    for user in [*users, "ben"]:
        _old_layout_collection(index, user, writer.list(user))
    del index

    index = ChromaIndex(chromadb.PersistentClient(path=path), embedder, path=path, promote_at=4)
    report = index.settle_layout()
    assert report == {"recovered": 0, "migrated": 2}
    names = [c.name for c in index.client.list_collections()]
    assert [n for n in names if is_own_name(n)] == [index.collection_name("ben")]  # large
    assert chroma_files.orphan_folders(path) == []  # the dropped collections' folders
    service = MemoryService(store, index)
    for user in [*users, "ben"]:
        assert index.ids(user) == {r.id for r in writer.list(user)}
    assert service.search("ann", "Which nuts must I avoid?", k=1)[0].record.content == SENTENCES[2]
    assert service.search("李雷", "我住在哪个城市？", k=1)[0].record.content == "用户住在上海。"
    assert service.consolidate().reindexed == 0  # every fingerprint came along
    assert index.settle_layout() == {"recovered": 0, "migrated": 0}


def test_an_interrupted_compaction_is_finished_on_open(tmp_path: Path) -> None:
    """A crash between renaming a shard to its stash and dropping the stash: the next open
    folds the stash back, and no entry is lost."""
    embedder = make_embedder("local")
    path = str(tmp_path / "chroma")
    index = ChromaIndex.open(embedder, path=path)
    service = MemoryService(InMemoryStore(), index)
    ids = _add_all(service, "ann", SENTENCES)
    shard = index.client.get_collection(index.home_name("ann"))
    shard.modify(name=shard.name + "-old")  # what `compact` does first
    fresh = ChromaIndex.open(embedder, path=path)
    assert fresh.ids("ann") == set(ids)
    assert not [c.name for c in fresh.client.list_collections() if c.name.endswith("-old")]


def _thread_with(checkpointer: Any, thread: str, text: str) -> None:
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"messages": [text]}
    cfg = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    checkpointer.put(cfg, checkpoint, {"source": "input", "step": -1}, {})


@pytest.mark.parametrize("own_collection", [False, True], ids=["shard", "own"])
def test_delete_user_leaves_nothing_of_the_user_on_disk(
    tmp_path: Path, own_collection: bool
) -> None:
    """After delete-user no file under the home holds the user's token, their record ids
    or a vector close to one of their sentences; a neighbour in the same shard keeps all."""
    home = tmp_path / "home"
    token = "quokkazx7319"
    mine = [f"User's locker code word is {token}.", *SENTENCES]
    with open_backends(BackendConfig(home=str(home))) as b:
        if own_collection:
            b.index.promote_at = 2
        zed = same_shard_user(b.index, "amy", "zed")
        service = MemoryService(b.store, b.index, checkpointer=b.checkpointer)
        ids = _add_all(service, zed, mine)
        amy = _add_all(service, "amy", ["User grows tomatoes on the balcony."])
        service.search(zed, token, k=3)  # the lexical snapshot is written
        _thread_with(b.checkpointer, "zed-t1", f"My locker code word is {token}.")
        service.remember_thread(zed, "zed-t1")
        assert (b.index.home_name(zed) == b.index.collection_name(zed)) is own_collection

        vectors = [b.index.embedder.embed([t])[0] for t in mine]
        needles = [token, *ids, *(shard_entry_id(user_key(zed), i) for i in ids)]
        before = leaks(home, needles, vectors)
        assert any(token in hit for hit in before) and any("vector" in hit for hit in before)

        assert service.delete_user(zed) == len(mine)
        assert leaks(home, needles, vectors) == []
        for vector in vectors:
            assert readable_vectors(b.index.client, vector) == []
        assert chroma_files.orphan_folders(str(home / "chroma")) == []
        assert b.index.ids("amy") == set(amy)
        assert service.search("amy", "What do I grow?", k=1)[0].record.content.startswith(
            "User grows tomatoes"
        )


def test_hard_forget_and_reindex_leave_nothing_on_disk(tmp_path: Path) -> None:
    home = tmp_path / "home"
    token = "wombatqv5528"
    with open_backends(BackendConfig(home=str(home))) as b:
        service = MemoryService(b.store, b.index, checkpointer=b.checkpointer)
        keep = _add_all(service, "kai", SENTENCES)
        (gone,) = _add_all(service, "kai", [f"User's bike lock word is {token}."])
        vector = b.index.embedder.embed([f"User's bike lock word is {token}."])[0]
        assert leaks(home, [token, gone], [vector])

        service.forget("kai", gone, hard=True)
        assert leaks(home, [token, gone], [vector]) == []
        assert b.index.ids("kai") == set(keep)

        folders_before = len(list((home / "chroma").iterdir()))
        assert service.reindex() == {"kai": len(keep)}
        assert service.reindex("kai") == {"kai": len(keep)}
        assert chroma_files.orphan_folders(str(home / "chroma")) == []
        assert len(list((home / "chroma").iterdir())) <= folders_before
        assert b.index.ids("kai") == set(keep)

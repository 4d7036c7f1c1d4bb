"""The process's copy of shard users' vectors (`memory.index.shard_cache`), embedded Chroma.

A search scores a shard user's vectors of the records the store names, from the copy or
read by id; these tests pin that the copy follows writes made through another index (with
a copy of its own) on the same Chroma, never returns a record forgotten or a user deleted
elsewhere, holds nobody else's vectors, and stays within its bound. The same check runs
against a `chroma run` server in `tests/integration/test_scale_server.py`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from langgraph.store.memory import InMemoryStore
from scale_checks import check_the_copy_follows_another_writer

from memory.index.chroma import ChromaIndex
from memory.index.embeddings import make_embedder
from memory.index.shard_cache import ShardCache
from memory.service import MemoryService
from memory.store.records import user_key


def test_the_copy_follows_another_index_on_the_same_chroma(tmp_path: Path) -> None:
    index = ChromaIndex.open(make_embedder("local"), path=str(tmp_path / "chroma"))
    other = ChromaIndex(index.client, index.embedder, path=index.path)
    check_the_copy_follows_another_writer(InMemoryStore(), index, other, "e1")


def test_the_copy_keeps_the_most_recently_searched_users_within_its_bound(
    tmp_path: Path,
) -> None:
    index = ChromaIndex.open(make_embedder("local"), path=str(tmp_path / "chroma"))
    index.cache = ShardCache(limit=3)
    service = MemoryService(InMemoryStore(), index)
    for user in ("ann", "ben", "cy"):
        service.add(user, f"User {user} keeps a blue bicycle.", subject="test.bike")
        service.add(user, f"User {user} drinks black coffee.", subject="test.coffee")
    index.cache.clear()
    for user in ("ann", "ben", "cy"):
        assert service.search(user, "Which bicycle do I keep?", k=1)[0].record.content.startswith(
            f"User {user} keeps"
        )
        assert len(index.cache) <= 3
    # Two vectors each: only the last user searched fits.
    assert len(index.cache) == 2


def test_a_vector_the_copy_lacks_is_read_again_until_chroma_has_it(tmp_path: Path) -> None:
    """The store may name a record whose vector is not in Chroma yet (a write in flight, or
    one that failed and awaits repair): it is not remembered as absent."""
    index = ChromaIndex.open(make_embedder("local"), path=str(tmp_path / "chroma"))
    service = MemoryService(InMemoryStore(), index)
    (change,) = service.add("dee", "User collects old maps.", subject="test.maps")
    record = change.record
    index.delete("dee", [record.id])  # as if its vector had not been written yet
    vector = np.asarray(index.embedder.embed([record.content])[0])
    assert index.query("dee", vector, 5, {record.id: record}) == []
    index.upsert([record])
    index.cache.clear()  # the copy learns only by reading
    (hit,) = index.query("dee", vector, 5, {record.id: record})
    assert hit.id == record.id and hit.similarity > 0.99


def test_a_user_discarded_during_a_read_is_not_put_back(tmp_path: Path) -> None:
    """Delete-user drops the user's vectors from the copy while a search of that user is
    reading Chroma: what the search read is not put back into the copy."""
    index = ChromaIndex.open(make_embedder("local"), path=str(tmp_path / "chroma"))
    service = MemoryService(InMemoryStore(), index)
    (change,) = service.add("eve", "User sails a wooden boat.", subject="test.boat")
    record = change.record
    key = user_key("eve")
    index.cache.clear()
    shard = index._shard("eve")._collection

    class DiscardingMidRead:
        def get(self, **kwargs: Any) -> Any:
            got = shard.get(**kwargs)
            index.cache.discard(key)  # delete-user, in another thread, meanwhile
            return got

    vector = np.asarray(index.embedder.embed([record.content])[0])
    hits = index.cache.nearest(DiscardingMidRead(), key, {record.id: record}, vector, 5)
    assert [h[0] for h in hits] == [record.id]  # this search still ranks what it read
    assert index.cache.holds(key) == set()
    assert len(index.cache) == 0

"""Checks shared by the layout tests on embedded Chroma and on a `chroma run` server.

`leaks` reads every file under a directory as bytes and reports where a token, a record id
or a vector close to a given one (cosine over 0.99, at any 4-byte-aligned or unaligned
offset) can still be read: deleted means gone from disk.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

NEAR = 0.99


def files_under(root: Path) -> list[Path]:
    """Return every regular file under `root`."""
    return [Path(d) / f for d, _, names in os.walk(root) for f in names]


def vector_offsets(data: bytes, vector: np.ndarray) -> list[int]:
    """Return the byte offsets in `data` where a float32 vector close to `vector` starts.

    Chroma may store a vector as given or normalized (HNSW in cosine space): candidates
    are offsets whose first float has the ratio to the next three that the vector has;
    each is then checked by cosine over the whole vector.
    """
    v = np.asarray(vector, dtype=np.float32)
    dim = v.size
    lead = int(np.argmax(np.abs(v[:8])))
    ratio = v[:8] / v[lead]
    found: list[int] = []
    for shift in range(4):
        usable = (len(data) - shift) // 4
        if usable < dim:
            continue
        raw = np.frombuffer(data, dtype=np.float32, count=usable, offset=shift)
        with np.errstate(invalid="ignore", over="ignore"):
            arr = np.nan_to_num(raw.astype(np.float64), nan=0.0, posinf=0.0, neginf=0.0)
        starts = np.arange(usable - dim + 1)
        starts = starts[np.abs(arr[starts + lead]) > 1e-12]
        for j in range(8):
            starts = starts[np.abs(arr[starts + j] / arr[starts + lead] - ratio[j]) < 1e-3]
        for start in starts[:10_000]:
            window = arr[start : start + dim]
            norm = np.linalg.norm(window) * np.linalg.norm(v)
            if norm and float(window @ v) / norm > NEAR:
                found.append(int(start) * 4 + shift)
    return found


def leaks(root: Path, needles: list[str], vectors: list[Any]) -> list[str]:
    """Return where under `root` a needle (text) or a vector can still be read."""
    out = []
    for path in files_under(root):
        data = path.read_bytes()
        for needle in needles:
            if needle.encode() in data:
                out.append(f"{path.relative_to(root)}: {needle!r}")
        for n, vector in enumerate(vectors):
            if vector_offsets(data, vector):
                out.append(f"{path.relative_to(root)}: vector {n}")
    return out


def readable_vectors(client: Any, vector: np.ndarray) -> list[str]:
    """Return the ids of entries, in any collection of a Chroma client, close to `vector`."""
    v = np.asarray(vector, dtype=np.float32)
    close = []
    for collection in client.list_collections():
        got = collection.get(include=["embeddings"])
        if not got["ids"]:
            continue
        matrix = np.asarray(got["embeddings"], dtype=np.float32)
        sims = matrix @ v / (np.linalg.norm(matrix, axis=1) * np.linalg.norm(v))
        close += [
            f"{collection.name}/{i}" for i, s in zip(got["ids"], sims, strict=True) if s > NEAR
        ]
    return close


def same_shard_user(index: Any, user: str, prefix: str) -> str:
    """Return a user id that hashes to the same shard as `user` (its nearest neighbours)."""
    from memory.index.layout import shard_name
    from memory.store.records import user_key

    want = shard_name(user_key(user), index.shards)
    for n in range(10_000):
        other = f"{prefix}{n}"
        if shard_name(user_key(other), index.shards) == want:
            return other
    raise AssertionError("no user id hashes to that shard")


class CountingCollection:
    """A Chroma collection that records every `get` made through it (a spy, not a fake)."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.gets: list[dict[str, Any]] = []

    def get(self, *args: Any, **kwargs: Any) -> Any:
        self.gets.append(kwargs)
        return self.real.get(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


def count_shard_reads(index: Any, user: str) -> CountingCollection:
    """Put a `CountingCollection` between `index` and the shard of `user`; return it."""
    store = index._shard(user)
    spy = CountingCollection(store._collection)
    store._chroma_collection = spy  # what `Chroma._collection` returns
    return spy


def check_the_copy_follows_another_writer(store: Any, index: Any, other: Any, run: str) -> None:
    """The searching index's copy of shard users' vectors (`memory.index.shard_cache`)
    against writes made through `other`, another `ChromaIndex` on the same Chroma with a
    copy of its own (another process's, as far as the copies go).

    A warm search reads nothing from Chroma; a record another writer adds is found by the
    next search; a vector rewritten under the same record id is read again, not served
    from the copy; a record forgotten and a user deleted elsewhere never come back, and
    leave the copy; naming another user's records returns none of their vectors.
    """
    from memory.index.embeddings import embed_queries
    from memory.service import MemoryService
    from memory.store.records import user_key

    searcher, writer = MemoryService(store, index), MemoryService(store, other)
    alice = f"alice-{run}"
    bob = same_shard_user(index, alice, f"bob-{run}-")
    bees_text = "User keeps bees on the roof of the library."
    (bees,) = searcher.add(alice, bees_text, subject=f"test.bees.{run}")
    bob_ids = [
        searcher.add(bob, text, subject=f"test.b{n}.{run}")[0].record.id
        for n, text in enumerate([bees_text, "User's sister Maren lives in Tromsø."])
    ]
    key = user_key(alice)
    assert searcher.search(alice, "Who keeps bees?", k=1)[0].record.id == bees.record.id
    assert index.cache.holds(key) == {bees.record.id}

    spy = count_shard_reads(index, alice)
    assert searcher.search(alice, "Who keeps bees?", k=1)[0].record.id == bees.record.id
    assert spy.gets == []  # served from the copy

    (sister,) = writer.add(alice, "User's sister Maren lives in Tromsø.", subject=f"test.s.{run}")
    got = searcher.search(alice, "Where does my sister live?", k=1)
    assert [r.record.id for r in got] == [sister.record.id]
    assert index.cache.holds(key) == {bees.record.id, sister.record.id}
    assert [g["ids"] for g in spy.gets] == [[f"{key}:{sister.record.id}"]]  # by id, not filter

    moved = sister.record.model_copy(update={"content": "User's sister Maren moved to Bergen."})
    other.upsert([moved])
    vector = embed_queries(index.embedder, [moved.content])[0]
    (hit,) = index.query(alice, vector, 1, {moved.id: moved})
    assert hit.id == moved.id and hit.similarity > 0.99  # the new vector, not the copy's

    # Bob's records are Alice's nearest neighbours: named as Alice's, none comes back.
    bob_records = {r.id: r for r in searcher.list(bob)}
    assert set(bob_records) == set(bob_ids) and not set(bob_ids) & {bees.record.id}
    assert index.query(alice, embed_queries(index.embedder, [bees_text])[0], 10, bob_records) == []
    assert index.cache.holds(key) == set()

    writer.forget(alice, bees.record.id, hard=True)
    got = searcher.search(alice, "Who keeps bees?", k=8)
    assert bees.record.id not in {r.record.id for r in got}
    assert bees.record.id not in index.cache.holds(key)

    writer.delete_user(alice)
    assert searcher.search(alice, "Where does my sister live?", k=8) == []
    assert index.cache.holds(key) == set()
    assert {r.record.id for r in searcher.search(bob, "Who keeps bees?", k=8)} <= set(bob_ids)

"""A process's copy of shard users' vectors, checked against the store on every read.

Reading a shard user's vectors through Chroma's metadata filter costs time in proportion to
the whole shard (8.5 ms at 46k entries, against 2.5 ms to read the same entries by id), and
a user is searched again and again. So a search names the records the store says the user
has (the lexical snapshot, caught up through the store's change log on every search) with
their fingerprints, and the vectors come from this copy, or by id from the user's shard
for records the copy lacks or holds an older fingerprint of.

Why it stays right across processes: every write puts the store (and its change log)
first, Chroma second. A record another process added or rewrote reaches the snapshot
before its vector is read; if Chroma does not have the new vector yet, it is read again
on the next search instead of being remembered as absent. A record forgotten or deleted
elsewhere leaves the snapshot, and a copy's vector of a record the snapshot does not name
is never scored (and is dropped from the copy). The copy is keyed by the user and filled
by ids led by the user's key, so it holds nobody else's vectors; every hit is still re-read
from the store for the asking user by the service.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from memory.index.entries import fingerprint
from memory.index.layout import COPY_PAGE, record_id_of, shard_entry_id, top_cosine
from memory.store.records import MemoryRecord

CACHED_VECTORS = 65_536
"""Vectors a process keeps (about 128 MB at 512 dimensions); the least recently searched
users' are dropped first."""


@dataclass(frozen=True)
class CachedVector:
    """One shard entry as read: the fingerprint it was made from, its kind and vector."""

    h: str
    kind: str
    vector: np.ndarray


class ShardCache:
    """Shard users' vectors by user key, least recently used dropped past `limit` vectors."""

    def __init__(self, limit: int = CACHED_VECTORS) -> None:
        """Create an empty copy holding at most `limit` vectors."""
        self.limit = limit
        self._users: OrderedDict[str, dict[str, CachedVector]] = OrderedDict()
        self._size = 0
        # Bumped by every discard: a search that read Chroma before one does not put back
        # what was discarded meanwhile (a user deleted while being searched).
        self._epoch = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        """Return how many vectors are held."""
        with self._lock:
            return self._size

    def holds(self, key: str) -> set[str]:
        """Return the record ids held for a user key."""
        with self._lock:
            return set(self._users.get(key, {}))

    def nearest(
        self,
        collection: Any,
        key: str,
        known: Mapping[str, MemoryRecord],
        query: np.ndarray,
        k: int,
    ) -> list[tuple[str, str, float]]:
        """Rank a shard user's vectors of the records `known` by cosine to `query`.

        Args:
            collection: The user's shard (a Chroma collection).
            key: The user key.
            known: The user's records by id, as the store has them.
            query: The query vector.
            k: How many to return.

        Returns:
            (record id, kind, similarity) of the best `k`, best first.
        """
        want = {rid: fingerprint(rec) for rid, rec in known.items()}
        with self._lock:
            have = self._users.get(key, {})
            epoch = self._epoch
        entries = {rid: have[rid] for rid, h in want.items() if rid in have and have[rid].h == h}
        missing = [rid for rid in want if rid not in entries]
        for start in range(0, len(missing), COPY_PAGE):
            ids = [shard_entry_id(key, rid) for rid in missing[start : start + COPY_PAGE]]
            got = collection.get(ids=ids, include=["embeddings", "metadatas"])
            metas = got["metadatas"] or [{}] * len(got["ids"])
            vectors = np.asarray(got["embeddings"], dtype=np.float32)
            for n, entry_id in enumerate(got["ids"]):
                meta = metas[n] or {}
                entries[record_id_of(entry_id)] = CachedVector(
                    str(meta.get("h", "")), str(meta.get("kind", "")), vectors[n]
                )
        # Only the records named now are kept: a vector of a record gone from the store
        # leaves this copy at the user's next search.
        self._put(key, entries, epoch)
        return rank(entries, query, k)

    def add(self, key: str, records: list[MemoryRecord], vectors: np.ndarray) -> None:
        """Hold the vectors of records this process just wrote to the user's shard."""
        with self._lock:
            entries = dict(self._users.get(key) or {})
            epoch = self._epoch
        for n, rec in enumerate(records):
            entries[rec.id] = CachedVector(fingerprint(rec), rec.kind, vectors[n])
        self._put(key, entries, epoch)

    def discard(self, key: str, ids: list[str] | None = None) -> None:
        """Drop a user's vectors: those of `ids`, or all of them."""
        with self._lock:
            self._epoch += 1
            had = self._users.pop(key, None)
            if had is None:
                return
            self._size -= len(had)
            if ids is None:
                return
            # A new dict, never the old one changed: a search may be reading it unlocked.
            gone = set(ids)
            kept = {rid: entry for rid, entry in had.items() if rid not in gone}
            self._users[key] = kept
            self._size += len(kept)

    def clear(self) -> None:
        """Drop every user's vectors."""
        with self._lock:
            self._epoch += 1
            self._users.clear()
            self._size = 0

    def _put(self, key: str, entries: dict[str, CachedVector], epoch: int) -> None:
        with self._lock:
            if epoch != self._epoch:
                return
            old = self._users.pop(key, None)
            self._size -= len(old) if old is not None else 0
            if len(entries) > self.limit:
                return
            self._users[key] = entries
            self._size += len(entries)
            while self._size > self.limit:
                _, dropped = self._users.popitem(last=False)
                self._size -= len(dropped)


def rank(
    entries: Mapping[str, CachedVector], query: np.ndarray, k: int
) -> list[tuple[str, str, float]]:
    """Rank entries by cosine similarity to `query`, best `k` first: (record id, kind, sim)."""
    if not entries:
        return []
    ids = list(entries)
    order, sims = top_cosine(np.vstack([entries[i].vector for i in ids]), query, k)
    return [(ids[n], entries[ids[n]].kind, float(sims[n])) for n in order]

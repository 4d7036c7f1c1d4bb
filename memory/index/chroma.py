"""The Chroma index: semantic recall over records whose truth lives in the store.

Small users' vectors share a bounded number of shard collections, a large user's live in a
collection of their own (`memory.index.layout`), each opened through LangChain's
`langchain_chroma.Chroma` vector store with the configured embedder wrapped as a LangChain
`Embeddings` (`EmbedderEmbeddings`). An entry is a record's vector, its id, and `kind`, the
owner and a fingerprint as metadata: not its text. The store holds the text; a copy in
Chroma would be one more place a forgotten sentence could linger (and Chroma's full-text
index of stored texts made a bulk fill 1.3 times slower, `benchmarks/peers.py`). LangChain's
own `similarity_search` returns only entries with a text, so the retriever for LangChain
chains is `MemoryService.as_retriever`, which ranks as the agent does.

A hit from Chroma is a candidate, not a fact: a vector can outlive a forget or an update
(a crashed write, another process mid-write, a write that failed and awaits repair). The
memory service re-reads every hit from the store and keeps only records that exist, are
active and belong to the user; that re-check, not the index, is what makes a hit
trustworthy.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from memory.index import files as chroma_files
from memory.index.client import connect
from memory.index.collection_locks import CollectionLocks
from memory.index.embeddings import Embedder
from memory.index.entries import (
    FINGERPRINT_LAYOUT,
    LAYOUT_KEY,
    IndexEntry,
    IndexHit,
    IndexMismatch,
    IndexUnavailable,
    fingerprint,
    index_text,
    upsert_op,
)
from memory.index.langchain_embeddings import EmbedderEmbeddings
from memory.index.layout import (
    COLLECTION_PREFIX,
    COSINE,
    PROMOTE_AT,
    SHARDS,
    collection_names,
    compact,
    is_not_found,
    is_own_name,
    own_name,
    rank_rows,
    read_rows,
    record_id_of,
    recover_stashes,
    shard_entry_id,
    shard_name,
    to_own,
    to_shard,
    write_rows,
)
from memory.index.shard_cache import ShardCache
from memory.store.locks import PostgresWriterLocks
from memory.store.records import MemoryRecord, user_key

if TYPE_CHECKING:
    from langchain_chroma import Chroma

log = logging.getLogger(__name__)
__all__ = [
    "COLLECTION_PREFIX",
    "ChromaIndex",
    "EmbedderEmbeddings",
    "IndexEntry",
    "IndexHit",
    "IndexMismatch",
    "IndexUnavailable",
    "fingerprint",
    "index_text",
]
UPSERT_BATCH = 5000
SHARED_TTL = 30.0
"""Seconds a read trusts that a user has no collection of their own (see `ChromaIndex._own`)."""
T = TypeVar("T")


class ChromaIndex:
    """Users' vectors in Chroma: small users in shared shards, large ones in their own.

    See `memory.index.layout`. A user's entries hold a record's vector and `kind`, a
    fingerprint (`h`) and the owner (`u`, the user key, in a shard; `user_id` in a
    collection of their own) as metadata. A search of a user in a shard scores by cosine
    the vectors of the records the caller names (`memory.index.shard_cache`: kept in the
    process, read by id), or else that user's vectors read by the metadata filter; one of
    their own is Chroma's unfiltered HNSW query. Every collection is opened through a
    `langchain_chroma.Chroma` vector store (cosine space).
    """

    def __init__(
        self,
        client: Any,
        embedder: Embedder,
        *,
        location: str = "",
        path: str | None = None,
        shards: int = SHARDS,
        promote_at: int = PROMOTE_AT,
    ) -> None:
        """Wrap a Chroma client.

        Args:
            client: A `chromadb` client (`PersistentClient` or `HttpClient`).
            embedder: The embedder every vector of this index is made with.
            location: Where the index lives, for error messages.
            path: The directory of an embedded client, whose files deletes purge; None
                for a server.
            shards: How many shared collections small users are hashed into.
            promote_at: A user with more vectors moves to a collection of their own.

        """
        self.client = client
        self.embedder = embedder
        self.embeddings = EmbedderEmbeddings(embedder)
        self.location = location
        self.path = path
        self.shards = shards
        self.promote_at = promote_at
        self._collections: dict[str, Chroma] = {}
        self._with_texts: set[str] = set()  # collections that may hold v2-doc texts
        self._shared: dict[str, float] = {}  # user key -> when it was seen without its own
        self.cache = ShardCache()
        self._lock = threading.Lock()
        # Held by writes and by a compaction: no process writes into a collection while
        # it is being rewritten. Each write ends by scrubbing what a new HNSW file took
        # from memory never cleared (`files.py`).
        self._files = chroma_files.IndexFiles(path) if path else None
        self._writes = CollectionLocks(
            IndexUnavailable, after_write=self._files.scrub if self._files else None
        )

    @classmethod
    def open(
        cls,
        embedder: Embedder,
        *,
        path: str | None = None,
        host: str | None = None,
        port: int = 8000,
        shards: int = SHARDS,
        promote_at: int = PROMOTE_AT,
    ) -> ChromaIndex:
        """Open an embedded index at `path`, or a `chroma run` server at `host:port`.

        Collections of the earlier layout (one per user) small enough for a shard are moved
        into one, and a compaction a crash interrupted is finished (`settle_layout`).
        `shards` and `promote_at` are the layout's (see `ChromaIndex`): every process on
        one index must use the same.

        Raises:
            IndexUnavailable: If the server cannot be reached.

        """
        client, location = connect(path=path, host=host, port=port)
        index = cls(
            client,
            embedder,
            location=location,
            path=None if host else path,
            shards=shards,
            promote_at=promote_at,
        )
        index.settle_layout()
        return index

    def collection_name(self, user_id: str) -> str:
        """Return the name a collection of the user's own has (whether or not it exists)."""
        return own_name(user_key(user_id))

    def home_name(self, user_id: str) -> str:
        """Return the collection that holds one user's vectors now: their own, or a shard."""
        own = self._own(user_id, fresh=True)
        return self.collection_name(user_id) if own is not None else self._shard_name(user_id)

    # --- opening collections -------------------------------------------------------------

    def _shard_name(self, user_id: str) -> str:
        return shard_name(user_key(user_id), self.shards)

    def _open(self, name: str, *, create: bool) -> Chroma | None:
        """Return the vector store of a collection; None if absent and not created."""
        from langchain_chroma import Chroma

        with self._lock:
            store = self._collections.get(name)
        if store is not None:
            return store
        try:
            if not create:
                self.client.get_collection(name)  # a miss costs no vector store
            store = Chroma(
                collection_name=name,
                embedding_function=self.embeddings,
                client=self.client,
                collection_metadata={
                    "embedding": self.embedder.spec,
                    LAYOUT_KEY: FINGERPRINT_LAYOUT,
                },
                collection_configuration=COSINE,  # type: ignore[arg-type]
                create_collection_if_not_exists=create,
            )
        except Exception as exc:
            if not create and is_not_found(exc):
                return None
            raise IndexUnavailable(f"{self.location}: {exc.__class__.__name__}: {exc}") from exc
        # LangChain's Chroma has no public accessor for the collection's own metadata.
        meta = store._collection.metadata or {}
        built_with = meta.get("embedding")
        if built_with != self.embedder.spec:
            raise IndexMismatch(
                f"the index collection {name} was built with embeddings {built_with!r} but "
                f"{self.embedder.spec!r} is configured: run `memory-agent reindex` to rebuild it"
            )
        with self._lock:
            self._collections[name] = store
            if meta.get(LAYOUT_KEY) != FINGERPRINT_LAYOUT:
                self._with_texts.add(name)
        return store

    def _own(self, user_id: str, *, fresh: bool) -> Chroma | None:
        """Return the user's own collection, if they have one.

        A user seen without one is taken to have none for `SHARED_TTL` seconds by reads
        (`fresh=False`); writes always look, so a promotion by another process is honoured
        by every write and, within that time, by every read.
        """
        key = user_key(user_id)
        name = own_name(key)
        with self._lock:
            store = self._collections.get(name)
            seen = self._shared.get(key)
        if store is not None:
            return store
        if not fresh and seen is not None and time.monotonic() - seen < SHARED_TTL:
            return None
        store = self._open(name, create=False)
        if store is None:
            with self._lock:
                self._shared[key] = time.monotonic()
        return store

    def _shard(self, user_id: str) -> Chroma:
        store = self._open(self._shard_name(user_id), create=True)
        assert store is not None  # created if absent
        return store

    def _evict(self, name: str) -> None:
        with self._lock:
            self._collections.pop(name, None)
            self._with_texts.discard(name)

    def _at_home(self, user_id: str, op: Callable[[Chroma, bool], T], *, fresh: bool) -> T:
        """Run `op(store, shared)` on the collection that holds a user's vectors.

        Another process may drop, promote or compact a collection (`reindex`, `delete_user`,
        a large user's growth): on not-found the cached store is evicted and the call
        retried once against the user's home looked up afresh.
        """
        for attempt in (1, 2):
            own = self._own(user_id, fresh=fresh or attempt == 2)
            store, shared = (own, False) if own is not None else (self._shard(user_id), True)
            try:
                return op(store, shared)
            except Exception as exc:
                if attempt == 1 and is_not_found(exc):
                    self._evict(store._collection.name)
                    continue
                raise IndexUnavailable(f"{self.location}: {exc.__class__.__name__}: {exc}") from exc
        raise AssertionError("unreachable")

    def _guarded(self, call: Callable[[], T]) -> T:
        try:
            return call()
        except (IndexUnavailable, IndexMismatch):
            raise
        except Exception as exc:
            raise IndexUnavailable(f"{self.location}: {exc.__class__.__name__}: {exc}") from exc

    def lock_across_processes(self, locks: PostgresWriterLocks) -> None:
        """Make writes and compactions wait on other processes' (see `CollectionLocks`).

        `MemoryService` calls it for a store on Postgres, the store processes share.
        """
        self._writes.across = locks

    # --- writes --------------------------------------------------------------------------

    def upsert(
        self, records: list[MemoryRecord], *, count: Callable[[], int] | None = None
    ) -> None:
        """Embed and write the vectors of records of one user.

        `count`, if given, returns how many records the store holds for the user (it may
        stop past `promote_at`): vectors are made of records only, so a shard user within
        it is not counted in Chroma, whose metadata filter reads the whole shard.
        """
        if not records:
            return
        users = {r.user_id for r in records}
        if len(users) != 1:
            raise ValueError("upsert takes the records of one user at a time")
        user_id = records[0].user_id
        key = user_key(user_id)
        shared = False
        # Chroma refuses batches over its max batch size (5,461 here): write in slices.
        for start in range(0, len(records), UPSERT_BATCH):
            part = records[start : start + UPSERT_BATCH]
            vectors = np.asarray(self.embedder.embed([index_text(r) for r in part]), np.float32)
            op = upsert_op(key, user_id, part, vectors, self._with_texts)
            with self._writes.writing(self._shard_name(user_id)):
                shared = self._at_home(user_id, op, fresh=True)
            if shared:
                self.cache.add(key, part, vectors)
        if shared and (count is None or count() > self.promote_at):
            with self._writes.writing(self._shard_name(user_id)):
                self._promote_if_large(user_id)

    def _promote_if_large(self, user_id: str) -> None:
        """Move a user whose shard entries outgrew `promote_at` to a collection of their own."""
        key = user_key(user_id)

        def count(store: Chroma, shared: bool) -> int:
            if not shared:
                return 0
            got = store._collection.get(where={"u": key}, include=[], limit=self.promote_at + 1)
            return len(got["ids"])

        if self._at_home(user_id, count, fresh=False) <= self.promote_at:
            return
        shard = self._shard(user_id)._collection
        own = self._open(own_name(key), create=True)
        assert own is not None

        def move() -> None:
            # Copied first, deleted second: a crash in between leaves strays in the shard,
            # which no read looks at once the user has a collection (`settle` drops them).
            for rows in read_rows(shard, where={"u": key}):
                write_rows(own._collection, to_own(rows, user_id))
            shard.delete(where={"u": key})

        self._guarded(move)
        self.cache.discard(key)
        with self._lock:
            self._shared.pop(key, None)
        log.info("user %s has over %d vectors: moved to %s", key, self.promote_at, own_name(key))

    def mark_current(self, user_id: str) -> None:
        """Label a user's collection with today's layout once none of its entries is older.

        Call it only when every entry has just been checked or rewritten (`consolidate`
        after its repair pass): from then on an upsert there need not delete first. Shards
        never hold texts: they are always current.
        """
        name = self.collection_name(user_id)
        with self._lock:
            if name not in self._with_texts:
                return

        def label(store: Chroma, shared: bool) -> None:
            if shared:
                return
            collection = store._collection
            meta = dict(collection.metadata or {})
            collection.modify(metadata=meta | {LAYOUT_KEY: FINGERPRINT_LAYOUT})

        self._at_home(user_id, label, fresh=True)
        self._evict(name)

    def delete(self, user_id: str, ids: list[str]) -> None:
        """Delete vectors by id; ids that are absent are ignored."""
        if not ids:
            return
        key = user_key(user_id)

        def op(store: Chroma, shared: bool) -> None:
            wanted = [shard_entry_id(key, i) for i in ids] if shared else list(ids)
            store._collection.delete(ids=wanted)

        with self._writes.writing(self._shard_name(user_id)):
            self._at_home(user_id, op, fresh=True)
        self.cache.discard(key, ids)

    def erase(self, user_id: str, ids: list[str]) -> None:
        """Delete vectors for good: also from the collection's files (a hard forget).

        The user's collection is rewritten without them (`chroma_layout.compact`): its cost
        grows with the collection (a shard, or the user's own), not with the ids.
        """
        if not ids:
            return
        self.delete(user_id, ids)
        self._compact(self.home_name(user_id))
        self.purge_files()

    def drop_user(self, user_id: str, *, purge: bool = True) -> None:
        """Delete every vector of a user: their own collection and their shard entries.

        With `purge`, the shard is rewritten when it held any of them (now, or before the
        user was promoted) and the embedded files of dropped collections are removed, so
        nothing of the user is left on disk.
        """
        key = user_key(user_id)
        name = own_name(key)
        self._evict(name)
        self.cache.discard(key)
        with self._lock:
            self._shared.pop(key, None)

        def drop() -> bool:
            had_own = True
            try:
                # On the client: no vector store is needed (or opened) to drop a collection.
                self.client.delete_collection(name)
            except Exception as exc:
                if not is_not_found(exc):
                    raise
                had_own = False
            shard = self._shard(user_id)._collection
            rows = shard.get(where={"u": key}, include=[])["ids"]
            if rows:
                shard.delete(ids=rows)
            return had_own or bool(rows)

        with self._writes.writing(self._shard_name(user_id)):
            touched_shard = self._guarded(drop)
        if purge:
            if touched_shard:
                self._compact(self._shard_name(user_id))
            self.purge_files()

    def settle(self, user_id: str) -> int:
        """Drop the shard entries of a user who has a collection of their own; return how many.

        A promotion that crashed half-way leaves them.
        """
        if self._own(user_id, fresh=True) is None:
            return 0
        key = user_key(user_id)

        def strays() -> int:
            shard = self._shard(user_id)._collection
            rows = shard.get(where={"u": key}, include=[])["ids"]
            if rows:
                shard.delete(ids=rows)
            return len(rows)

        with self._writes.writing(self._shard_name(user_id)):
            return self._guarded(strays)

    def reset(self) -> None:
        """Drop every collection of the index (a full `reindex` writes them anew)."""
        for name in self._guarded(lambda: collection_names(self.client)):
            with self._writes.writing(name, rewrite=True):
                self._evict(name)
                self._guarded(functools.partial(self.client.delete_collection, name))
        with self._lock:
            self._shared.clear()
        self.cache.clear()
        self.purge_files()

    def _compact(self, name: str) -> None:
        with self._writes.writing(name, rewrite=True):
            self._evict(name)
            self._guarded(lambda: compact(self.client, name))
            self._evict(name)

    def purge_files(self, *, vacuum: bool = True) -> None:
        """Remove what dropped collections, deleted rows and stale memory left on disk."""
        if self._files is not None:
            with self._writes.in_process():
                self._files.purge(vacuum=vacuum)

    def settle_layout(self) -> dict[str, int]:
        """Finish interrupted compactions and move small per-user collections into shards.

        The earlier layout gave every user a collection; one with at most `promote_at`
        entries is copied into the user's shard (vectors and metadata, never a text) and
        dropped. One built with another embedding model is left for `reindex`.

        Returns:
            How many collections were recovered and migrated.
        """
        names = self._guarded(lambda: collection_names(self.client))
        recovered = self._guarded(lambda: recover_stashes(self.client, names))
        migrated = 0
        for name in (n for n in names if is_own_name(n)):
            migrated += self._guarded(functools.partial(self._migrate, name))
        if migrated or recovered:
            log.warning("index: moved %d per-user collections into shards", migrated)
        self.purge_files(vacuum=bool(migrated or recovered))
        return {"recovered": len(recovered), "migrated": migrated}

    def _migrate(self, name: str) -> int:
        old = self.client.get_collection(name)
        if (old.metadata or {}).get("embedding") != self.embedder.spec:
            return 0
        if old.count() > self.promote_at:
            return 0
        key = name[len(COLLECTION_PREFIX) :]
        shard = shard_name(key, self.shards)
        store = self._open(shard, create=True)
        assert store is not None
        with self._writes.writing(shard):
            for rows in read_rows(old):
                write_rows(store._collection, to_shard(rows, key))
            self.client.delete_collection(name)
        self._evict(name)
        return 1

    # --- reads ---------------------------------------------------------------------------

    def query(
        self,
        user_id: str,
        vector: np.ndarray,
        k: int,
        known: Mapping[str, MemoryRecord] | None = None,
    ) -> list[IndexHit]:
        """Return up to `k` nearest vectors of one user, most similar first.

        `known` names the user's records as the store has them (the service's lexical
        snapshot): in a shard only their vectors are scored, from the process's copy or
        read by id (`memory.index.shard_cache`); without it, the user's vectors in the
        shard are read by the metadata filter.
        """
        if k <= 0:
            return []
        query = np.asarray(vector, dtype=np.float32).reshape(1, -1)
        key = user_key(user_id)

        def nearest(store: Chroma, shared: bool) -> list[IndexHit]:
            if shared and known is not None:
                got_known = self.cache.nearest(store._collection, key, known, query[0], k)
                return [IndexHit(*hit) for hit in got_known]
            if shared:
                got = store._collection.get(where={"u": key}, include=["embeddings", "metadatas"])
                return [IndexHit(*hit) for hit in rank_rows(got, query[0], k)]
            # The query `similarity_search_by_vector_with_relevance_scores` makes, minus the
            # texts and `Document`s of 200 candidates the service re-reads from the store
            # anyway (a tenth of a query's time).
            res = store._collection.query(
                query_embeddings=query, n_results=k, include=["metadatas", "distances"]
            )
            ids = res["ids"][0]
            metas = (res["metadatas"] or [[{}] * len(ids)])[0]
            dists = (res["distances"] or [[1.0] * len(ids)])[0]
            # Cosine space: Chroma's distance is 1 - cosine similarity.
            return [
                IndexHit(id=i, kind=str((m or {}).get("kind", "")), similarity=1.0 - float(d))
                for i, m, d in zip(ids, metas, dists, strict=True)
            ]

        return self._at_home(user_id, nearest, fresh=False)

    def ids(self, user_id: str) -> set[str]:
        """Return every vector id stored for a user."""
        return set(self.fingerprints(user_id))

    def fingerprints(self, user_id: str) -> dict[str, str]:
        """Return, per vector id of a user, the fingerprint of the text it was made from."""
        return {i: str(e.metadata.get("h", "")) for i, e in self.entries(user_id).items()}

    def entries(self, user_id: str, *, vectors: bool = False) -> dict[str, IndexEntry]:
        """Return a user's entries by record id.

        Each has its document (None: no text), metadata and (with `vectors`) its vector.
        """
        key = user_key(user_id)
        include: Any = ["documents", "metadatas", *(["embeddings"] if vectors else [])]

        def read(store: Chroma, shared: bool) -> dict[str, IndexEntry]:
            where: Any = {"u": key} if shared else None
            got = store._collection.get(where=where, include=include)
            ids = list(got["ids"])
            none: list[str | None] = [None] * len(ids)
            docs: list[str | None] = list(got.get("documents") or none)
            metas = got.get("metadatas") or [{}] * len(ids)
            embs = got.get("embeddings") if vectors else None
            return {
                record_id_of(i) if shared else i: IndexEntry(
                    d, dict(m or {}), None if embs is None else np.asarray(embs[n], np.float32)
                )
                for n, (i, d, m) in enumerate(zip(ids, docs, metas, strict=True))
            }

        return self._at_home(user_id, read, fresh=True)

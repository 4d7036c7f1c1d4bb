"""The Chroma index: semantic recall over records whose truth lives in the store.

Each user's vectors live in one collection, opened through LangChain's
`langchain_chroma.Chroma` vector store with the bundled encoder (or whatever embedder is
configured) wrapped as a LangChain `Embeddings` (`EmbedderEmbeddings`). An entry is a
record's vector, its id, and `kind`, `user_id` and a fingerprint as metadata: not its text.
The store holds the text; a copy in Chroma would be one more place a forgotten or
superseded sentence could linger, and Chroma's embedded engine indexes every stored text
for full-text search, which made a bulk fill 1.3 times slower (`benchmarks/peers.py`).
LangChain's own `similarity_search` returns only entries with a text, so the retriever
for LangChain chains is `MemoryService.as_retriever`, which ranks as the agent does and
reads each hit from the store.

A hit from Chroma is a candidate, not a fact: a vector can outlive a forget or an update
(a crashed write, another process mid-write, a write that failed and awaits repair). The
memory service re-reads every hit from the store and keeps only records that exist, are
active and belong to the user; that re-check, not the index, is what makes a hit
trustworthy.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
from langchain_core.embeddings import Embeddings

from memory.embeddings import Embedder, embed_queries
from memory.records import MemoryRecord, user_key

if TYPE_CHECKING:
    from chromadb.api.types import Metadata, QueryResult
    from langchain_chroma import Chroma

COLLECTION_PREFIX = "mem-"
UPSERT_BATCH = 5000
FINGERPRINT_LAYOUT = "v3-vec"
"""Part of every fingerprint: what one index entry holds besides its vector.

`v3-vec`: no text. Entries of the earlier `v2-doc` layout (text as the Chroma document)
carry another fingerprint, so `consolidate` sees them as stale and rewrites them without
their text (as `reindex` does)."""
LAYOUT_KEY = "layout"
"""Collection metadata naming the layout its entries were created with. A collection
without it may hold `v2-doc` entries, whose text a plain upsert would leave in place."""
T = TypeVar("T")


class IndexUnavailable(RuntimeError):
    """Chroma could not be reached or refused the call."""


class IndexMismatch(RuntimeError):
    """A collection was built with another embedding model than the one configured."""


@dataclass(frozen=True)
class IndexHit:
    """One Chroma hit, before it is re-checked against the store."""

    id: str
    kind: str
    similarity: float


class EmbedderEmbeddings(Embeddings):
    """A memory `Embedder` (the bundled encoder by default) as a LangChain `Embeddings`.

    Stored texts go through `Embedder.embed`, queries through `embed_query` (asymmetric
    models such as e5 prefix them differently), so a LangChain retriever embeds a question
    exactly as the memory service does.
    """

    def __init__(self, embedder: Embedder) -> None:
        """Wrap an embedder.

        Args:
            embedder: Any `memory.embeddings.Embedder` (or an object with `embed`).

        """
        self.embedder = embedder

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Return the vectors of stored texts."""
        vectors: list[list[float]] = np.asarray(
            self.embedder.embed(list(texts)), dtype=np.float32
        ).tolist()
        return vectors

    def embed_query(self, text: str) -> list[float]:
        """Return the vector of one search query."""
        vector: list[float] = np.asarray(embed_queries(self.embedder, [text])[0]).tolist()
        return vector


class ChromaIndex:
    """One Chroma collection per user, so isolation holds by construction.

    Metadata filters on a shared collection are Chroma's slow path; a collection per user
    keeps every query unfiltered and makes deleting a user one call. Every collection is
    opened through a `langchain_chroma.Chroma` vector store (cosine space); each entry holds
    a record's vector and `kind`, `user_id` and a fingerprint (`h`) as metadata.
    """

    def __init__(self, client: Any, embedder: Embedder, *, location: str = "") -> None:
        """Wrap a Chroma client.

        Args:
            client: A `chromadb` client (`PersistentClient` or `HttpClient`).
            embedder: The embedder every vector of this index is made with.
            location: Where the index lives, for error messages.

        """
        self.client = client
        self.embedder = embedder
        self.embeddings = EmbedderEmbeddings(embedder)
        self.location = location
        self._collections: dict[str, Chroma] = {}
        self._with_texts: set[str] = set()  # collections that may hold v2-doc texts
        self._lock = threading.Lock()

    @classmethod
    def open(
        cls,
        embedder: Embedder,
        *,
        path: str | None = None,
        host: str | None = None,
        port: int = 8000,
    ) -> ChromaIndex:
        """Open an embedded index at `path`, or a `chroma run` server at `host:port`.

        Raises:
            IndexUnavailable: If the server cannot be reached.

        """
        import chromadb
        from chromadb.config import Settings

        settings = Settings(anonymized_telemetry=False)
        if host:
            location = f"Chroma server {host}:{port}"
            try:
                client = chromadb.HttpClient(host=host, port=port, settings=settings)
                client.heartbeat()
            except Exception as exc:
                raise IndexUnavailable(
                    f"cannot reach {location} ({exc.__class__.__name__}: {exc}); start it with "
                    f"`chroma run --host {host} --port {port}` or unset CHROMA_HOST"
                ) from exc
        else:
            if not path:
                raise ValueError("ChromaIndex.open needs a path or a host")
            location = f"embedded Chroma at {path}"
            client = chromadb.PersistentClient(path=path, settings=settings)
        return cls(client, embedder, location=location)

    def collection_name(self, user_id: str) -> str:
        """Return the collection that holds one user's vectors."""
        return COLLECTION_PREFIX + user_key(user_id)

    def _store(self, user_id: str, *, create: bool) -> Chroma | None:
        """Return the vector store of one user's collection; None if absent and not created."""
        from langchain_chroma import Chroma

        name = self.collection_name(user_id)
        with self._lock:
            store = self._collections.get(name)
        if store is not None:
            return store
        try:
            store = Chroma(
                collection_name=name,
                embedding_function=self.embeddings,
                client=self.client,
                collection_metadata={
                    "embedding": self.embedder.spec,
                    LAYOUT_KEY: FINGERPRINT_LAYOUT,
                },
                collection_configuration={"hnsw": {"space": "cosine"}},
                create_collection_if_not_exists=create,
            )
        except Exception as exc:
            if not create and _is_not_found(exc):
                return None
            raise IndexUnavailable(f"{self.location}: {exc.__class__.__name__}: {exc}") from exc
        # LangChain's Chroma has no public accessor for the collection's own metadata.
        meta = store._collection.metadata or {}
        built_with = meta.get("embedding")
        if built_with != self.embedder.spec:
            raise IndexMismatch(
                f"the index for this user was built with embeddings {built_with!r} but "
                f"{self.embedder.spec!r} is configured: run `memory-agent reindex` to rebuild it"
            )
        with self._lock:
            self._collections[name] = store
            if meta.get(LAYOUT_KEY) != FINGERPRINT_LAYOUT:
                self._with_texts.add(name)
        return store

    def _call(self, user_id: str, create: bool, op: Callable[[Chroma], T], default: T) -> T:
        """Run `op` on a user's vector store; `default` if its collection does not exist.

        Another process may drop and recreate a collection (`reindex`, `delete_user`): on
        not-found the cached store is evicted and the call retried once with a fresh one.
        """
        for attempt in (1, 2):
            store = self._store(user_id, create=create)
            if store is None:
                return default
            try:
                return op(store)
            except Exception as exc:
                if attempt == 1 and _is_not_found(exc):
                    with self._lock:
                        self._collections.pop(self.collection_name(user_id), None)
                        self._with_texts.discard(self.collection_name(user_id))
                    continue
                raise IndexUnavailable(f"{self.location}: {exc.__class__.__name__}: {exc}") from exc
        return default

    def upsert(self, records: list[MemoryRecord]) -> None:
        """Embed and write the vectors of records of one user."""
        if not records:
            return
        users = {r.user_id for r in records}
        if len(users) != 1:
            raise ValueError("upsert takes the records of one user at a time")
        # Chroma refuses batches over its max batch size (5,461 here): write in slices.
        for start in range(0, len(records), UPSERT_BATCH):
            part = records[start : start + UPSERT_BATCH]
            texts = [index_text(r) for r in part]
            vectors = np.asarray(self.embedder.embed(texts), dtype=np.float32)
            ids = [r.id for r in part]
            metas: list[Metadata] = [
                {"kind": r.kind, "user_id": r.user_id, "h": fingerprint(r)} for r in part
            ]
            op = _upsert_op(ids, vectors, metas, self._with_texts)
            self._call(part[0].user_id, True, op, None)

    def mark_current(self, user_id: str) -> None:
        """Label a user's collection with today's layout once none of its entries is older.

        Call it only when every entry has just been checked or rewritten (`consolidate`
        after its repair pass): from then on an upsert there need not delete first.
        """
        name = self.collection_name(user_id)
        with self._lock:
            if name not in self._with_texts:
                return

        def label(store: Chroma) -> None:
            collection = store._collection
            meta = dict(collection.metadata or {})
            collection.modify(metadata=meta | {LAYOUT_KEY: FINGERPRINT_LAYOUT})

        self._call(user_id, False, label, None)
        with self._lock:
            self._with_texts.discard(name)

    def query(self, user_id: str, vector: np.ndarray, k: int) -> list[IndexHit]:
        """Return up to `k` nearest vectors of one user, most similar first."""
        if k <= 0:
            return []
        query = np.asarray(vector, dtype=np.float32).reshape(1, -1)

        def nearest(store: Chroma) -> QueryResult:
            # The query `similarity_search_by_vector_with_relevance_scores` makes, minus the
            # texts and `Document`s of 200 candidates the service re-reads from the store
            # anyway (a tenth of a query's time).
            return store._collection.query(
                query_embeddings=query, n_results=k, include=["metadatas", "distances"]
            )

        res = self._call(user_id, False, nearest, None)
        if res is None:
            return []
        ids = res["ids"][0]
        metas = (res["metadatas"] or [[{}] * len(ids)])[0]
        dists = (res["distances"] or [[1.0] * len(ids)])[0]
        # Cosine space: Chroma's distance is 1 - cosine similarity.
        return [
            IndexHit(id=i, kind=str((m or {}).get("kind", "")), similarity=1.0 - float(d))
            for i, m, d in zip(ids, metas, dists, strict=True)
        ]

    def ids(self, user_id: str) -> set[str]:
        """Return every vector id stored for a user."""
        return set(self.fingerprints(user_id))

    def fingerprints(self, user_id: str) -> dict[str, str]:
        """Return, per vector id of a user, the fingerprint of the text it was made from."""
        got = self._call(user_id, False, lambda store: store.get(include=["metadatas"]), None)
        if got is None:
            return {}
        metas = got.get("metadatas") or [{}] * len(got["ids"])
        return {i: str((m or {}).get("h", "")) for i, m in zip(got["ids"], metas, strict=True)}

    def delete(self, user_id: str, ids: list[str]) -> None:
        """Delete vectors by id; ids that are absent are ignored."""
        if ids:
            self._call(user_id, False, lambda store: store.delete(ids=ids), None)

    def drop_user(self, user_id: str) -> None:
        """Delete the whole collection of a user."""
        name = self.collection_name(user_id)
        with self._lock:
            self._collections.pop(name, None)
            self._with_texts.discard(name)
        try:
            # On the client: no vector store is needed (or opened) to drop a collection.
            self.client.delete_collection(name)
        except Exception as exc:
            if not _is_not_found(exc):
                raise IndexUnavailable(f"{self.location}: {exc.__class__.__name__}: {exc}") from exc


def _upsert_op(
    ids: list[str], vectors: np.ndarray, metas: list[Metadata], with_texts: set[str]
) -> Callable[[Chroma], None]:
    def op(store: Chroma) -> None:
        # One upsert of ids, vectors and metadata into the store's collection: what
        # `Chroma.add_texts` writes minus the text, without its detours (it embeds again
        # and hands Chroma Python lists that Chroma turns back into arrays row by row).
        collection = store._collection
        if collection.name in with_texts:
            # An upsert without documents keeps an entry's old text: delete it first.
            collection.delete(ids=ids)
        collection.upsert(ids=ids, embeddings=vectors, metadatas=metas)

    return op


def index_text(record: MemoryRecord) -> str:
    """Return the text a record's vector is made from.

    A raw turn archived with context (an imported dialogue) is embedded with the turns
    around it, in the order they were given: "Adoption agencies." means little alone and
    much after "What did you research?". Everything else is its content alone.
    On LoCoMo (two turns either side) this took dense-only R@5 from 0.21 to 0.38 and the
    service's cross-validated R@5 / R@10 from 0.632 / 0.711 to 0.649 / 0.740
    (`docs/recall-tuning.md`). Turns the graph archives carry no context.
    """
    around = record.context
    if not around:
        return record.content
    return " ".join([around[0], record.content, *around[1:]])


def fingerprint(record: MemoryRecord) -> str:
    """Return a short hash of what a record's index entry encodes, to spot stale entries."""
    data = f"{FINGERPRINT_LAYOUT}\0{index_text(record)}".encode()
    return hashlib.sha1(data).hexdigest()[:12]


def _is_not_found(exc: Exception) -> bool:
    text = f"{exc.__class__.__name__} {exc}".lower()
    return "notfound" in text.replace(" ", "") or "does not exist" in text

"""The Chroma index: semantic recall over records whose truth lives in the store."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from memory.embeddings import Embedder
from memory.records import MemoryRecord, user_key

COLLECTION_PREFIX = "mem-"
UPSERT_BATCH = 5000
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


class ChromaIndex:
    """One Chroma collection per user, so isolation holds by construction.

    Metadata filters on a shared collection are Chroma's slow path; a collection per user
    keeps every query unfiltered and makes deleting a user one call.
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
        self.location = location
        self._collections: dict[str, Any] = {}
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

    def _collection(self, user_id: str, *, create: bool) -> Any | None:
        name = self.collection_name(user_id)
        with self._lock:
            col = self._collections.get(name)
        if col is not None:
            return col
        try:
            if create:
                col = self.client.get_or_create_collection(
                    name,
                    metadata={"embedding": self.embedder.spec},
                    configuration={"hnsw": {"space": "cosine"}},
                    embedding_function=None,
                )
            else:
                try:
                    col = self.client.get_collection(name, embedding_function=None)
                except Exception as exc:
                    if _is_not_found(exc):
                        return None
                    raise
        except Exception as exc:
            raise IndexUnavailable(f"{self.location}: {exc.__class__.__name__}: {exc}") from exc
        built_with = (col.metadata or {}).get("embedding")
        if built_with != self.embedder.spec:
            raise IndexMismatch(
                f"the index for this user was built with embeddings {built_with!r} but "
                f"{self.embedder.spec!r} is configured: run `memory-agent reindex` to rebuild it"
            )
        with self._lock:
            self._collections[name] = col
        return col

    def _call(self, user_id: str, create: bool, op: Callable[[Any], T], default: T) -> T:
        """Run `op` on a user's collection; `default` if it does not exist.

        Another process may drop and recreate a collection (`reindex`, `delete_user`): on
        not-found the cached handle is evicted and the call retried once with a fresh one.
        """
        for attempt in (1, 2):
            col = self._collection(user_id, create=create)
            if col is None:
                return default
            try:
                return op(col)
            except Exception as exc:
                if attempt == 1 and _is_not_found(exc):
                    with self._lock:
                        self._collections.pop(self.collection_name(user_id), None)
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
            vectors = self.embedder.embed([r.content for r in part])
            ids = [r.id for r in part]
            metas = [{"kind": r.kind, "user_id": r.user_id, "h": fingerprint(r)} for r in part]
            self._call(part[0].user_id, True, _upsert_op(ids, vectors, metas), None)

    def query(self, user_id: str, vector: np.ndarray, k: int) -> list[IndexHit]:
        """Return up to `k` nearest vectors of one user, most similar first."""
        if k <= 0:
            return []
        query = np.asarray(vector, dtype=np.float32).reshape(1, -1)
        res = self._call(
            user_id,
            False,
            lambda col: col.query(
                query_embeddings=query, n_results=k, include=["metadatas", "distances"]
            ),
            None,
        )
        if res is None:
            return []
        ids = res["ids"][0]
        metas = (res.get("metadatas") or [[{}] * len(ids)])[0]
        dists = (res.get("distances") or [[1.0] * len(ids)])[0]
        return [
            IndexHit(id=i, kind=str((m or {}).get("kind", "")), similarity=1.0 - float(d))
            for i, m, d in zip(ids, metas, dists, strict=True)
        ]

    def ids(self, user_id: str) -> set[str]:
        """Return every vector id stored for a user."""
        return set(self.fingerprints(user_id))

    def fingerprints(self, user_id: str) -> dict[str, str]:
        """Return, per vector id of a user, the fingerprint of the text it was made from."""
        got = self._call(user_id, False, lambda col: col.get(include=["metadatas"]), None)
        if got is None:
            return {}
        metas = got.get("metadatas") or [{}] * len(got["ids"])
        return {i: str((m or {}).get("h", "")) for i, m in zip(got["ids"], metas, strict=True)}

    def delete(self, user_id: str, ids: list[str]) -> None:
        """Delete vectors by id; ids that are absent are ignored."""
        if ids:
            self._call(user_id, False, lambda col: col.delete(ids=ids), None)

    def drop_user(self, user_id: str) -> None:
        """Delete the whole collection of a user."""
        name = self.collection_name(user_id)
        with self._lock:
            self._collections.pop(name, None)
        try:
            self.client.delete_collection(name)
        except Exception as exc:
            if not _is_not_found(exc):
                raise IndexUnavailable(f"{self.location}: {exc.__class__.__name__}: {exc}") from exc


def _upsert_op(ids: list[str], vectors: np.ndarray, metas: list[dict[str, Any]]) -> Any:
    def op(col: Any) -> None:
        col.upsert(ids=ids, embeddings=vectors, metadatas=metas)

    return op


def fingerprint(record: MemoryRecord) -> str:
    """Return a short hash of what a record's vector encodes, to spot stale vectors."""
    return hashlib.sha1(record.content.encode()).hexdigest()[:12]


def _is_not_found(exc: Exception) -> bool:
    text = f"{exc.__class__.__name__} {exc}".lower()
    return "notfound" in text.replace(" ", "") or "does not exist" in text

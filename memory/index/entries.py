"""What one index entry holds: a record's vector, its id, kind, owner and fingerprint.

Also what a search hit is, and the index's errors. No text: the store holds it. The
fingerprint hashes the text a vector was made from, so a stale entry is found without
reading the store's text back from Chroma.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from memory.index.layout import shard_entry_id
from memory.store.records import MemoryRecord

if TYPE_CHECKING:
    from chromadb.api.types import Metadata
    from langchain_chroma import Chroma

FINGERPRINT_LAYOUT = "v3-vec"
"""Part of every fingerprint: what one index entry holds besides its vector.

`v3-vec`: no text. Entries of the earlier `v2-doc` layout (text as the Chroma document)
carry another fingerprint, so `consolidate` sees them as stale and rewrites them without
their text (as `reindex` does)."""
LAYOUT_KEY = "layout"
"""Collection metadata naming the layout its entries were created with. A collection
without it may hold `v2-doc` entries, whose text a plain upsert would leave in place."""


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


@dataclass(frozen=True)
class IndexEntry:
    """One stored entry of a user, as Chroma holds it."""

    document: str | None
    metadata: dict[str, Any]
    vector: np.ndarray | None = None


def index_text(record: MemoryRecord) -> str:
    """Return the text a record's vector is made from.

    A raw turn archived with context (an imported dialogue) is embedded with the turns
    around it, in the order they were given: "Adoption agencies." means little alone and
    much after "What did you research?". Everything else is its content alone.
    On LoCoMo (two turns either side) this took dense-only R@5 from 0.21 to 0.38 and the
    service's cross-validated R@5 / R@10 from 0.632 / 0.711 to 0.649 / 0.740
    (`docs/recall-tuning.md`). Turns the graph archives carry no context.
    A memory that superseded another is embedded after the words of the one it replaced
    (`MemoryRecord.replaced`).
    """
    around = record.context
    if not around:
        return " ".join(filter(None, [record.replaced, record.content]))
    return " ".join([around[0], record.content, *around[1:]])


def fingerprint(record: MemoryRecord) -> str:
    """Return a short hash of what a record's index entry encodes, to spot stale entries."""
    data = f"{FINGERPRINT_LAYOUT}\0{index_text(record)}".encode()
    return hashlib.sha1(data).hexdigest()[:12]


def upsert_op(
    key: str,
    user_id: str,
    records: list[MemoryRecord],
    vectors: np.ndarray,
    with_texts: set[str],
) -> Callable[[Chroma, bool], bool]:
    """Return the write of one user's records and their vectors into a vector store.

    The op is given the store and whether it is a shard, and returns the latter.
    """

    def op(store: Chroma, shared: bool) -> bool:
        # One upsert of ids, vectors and metadata into the store's collection: what
        # `Chroma.add_texts` writes minus the text, without its detours (it embeds again
        # and hands Chroma Python lists that Chroma turns back into arrays row by row).
        collection = store._collection
        if shared:
            ids = [shard_entry_id(key, r.id) for r in records]
            metas: list[Metadata] = [
                {"u": key, "kind": r.kind, "h": fingerprint(r)} for r in records
            ]
        else:
            ids = [r.id for r in records]
            metas = [{"kind": r.kind, "user_id": user_id, "h": fingerprint(r)} for r in records]
            if collection.name in with_texts:
                # An upsert without documents keeps an entry's old text: delete it first.
                collection.delete(ids=ids)
        collection.upsert(ids=ids, embeddings=vectors, metadatas=metas)
        return shared

    return op

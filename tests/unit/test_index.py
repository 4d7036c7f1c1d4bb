"""The Chroma index: vectors and metadata in LangChain's Chroma collections, no texts.

`ChromaIndex.upsert` and `ChromaIndex.query` use the collection `langchain_chroma.Chroma`
opens, without its own write and search calls (for speed). These tests pin what an entry
holds (a vector, the record id, kind, user and fingerprint; never the text, which lives in
the store only), that a text left by the earlier layout goes when the entry is rewritten,
and that a vector LangChain's `Chroma` writes with the index's `Embeddings` is found by the
index. Embedded Chroma, the bundled encoder.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import numpy as np

from memory.index.chroma import ChromaIndex, fingerprint
from memory.index.embeddings import embed_queries
from memory.index.layout import shard_entry_id
from memory.store.records import MemoryRecord, Source, user_key

AT = datetime(2025, 1, 1, tzinfo=UTC)


def _record(rid: str, user: str, content: str, kind: str = "fact") -> MemoryRecord:
    return MemoryRecord(
        id=rid,
        user_id=user,
        kind=kind,
        subject=f"test.{rid}",
        content=content,
        source=Source(via="import", said_at=AT),
        created_at=AT,
        updated_at=AT,
        valid_from=AT,
    )


def _query(index: ChromaIndex, user: str, text: str, k: int = 5) -> list[tuple[str, str, float]]:
    vector = embed_queries(index.embedder, [text])[0]
    return [(h.id, h.kind, h.similarity) for h in index.query(user, vector, k)]


def _entries(index: ChromaIndex, user: str) -> dict[str, tuple[str | None, dict[str, Any]]]:
    return {i: (e.document, e.metadata) for i, e in index.entries(user).items()}


def test_index_entries_hold_vectors_not_texts(index: ChromaIndex) -> None:
    city = _record("r-city", "alice", "User lives in Berlin.")
    tea = _record("r-tea", "alice", "User prefers green tea.", kind="preference")
    other = _record("r-bob", "bob", "User lives in Berlin.")
    index.upsert([city, tea])
    index.upsert([other])

    hits = _query(index, "alice", "Which city do I live in?")
    assert [(i, kind) for i, kind, _ in hits] == [("r-city", "fact"), ("r-tea", "preference")]
    assert 0.0 < hits[1][2] < hits[0][2] <= 1.0
    assert index.fingerprints("alice") == {"r-city": fingerprint(city), "r-tea": fingerprint(tea)}
    # A small user lives in a shard: the owner is the user key, never the user id.
    key = user_key("alice")
    assert _entries(index, "alice") == {
        "r-city": (None, {"kind": "fact", "u": key, "h": fingerprint(city)}),
        "r-tea": (None, {"kind": "preference", "u": key, "h": fingerprint(tea)}),
    }

    # Written again with new text: one entry, new vector, new fingerprint, still no text.
    moved = city.model_copy(update={"content": "User lives in Munich."})
    index.upsert([moved])
    assert index.ids("alice") == {"r-city", "r-tea"}
    assert index.fingerprints("alice")["r-city"] == fingerprint(moved)
    assert _query(index, "alice", "Munich", k=1)[0][0] == "r-city"
    assert all(doc is None for doc, _ in _entries(index, "alice").values())

    # A vector LangChain's Chroma writes with the index's Embeddings (it embeds the text
    # itself) is found by the index's query with the vector the service would compute.
    from langchain_chroma import Chroma

    Chroma(
        collection_name=index.home_name("alice"),
        embedding_function=index.embeddings,
        client=index.client,
    ).add_texts(
        ["User plays the cello."], metadatas=[{"kind": "fact", "u": key, "h": "x"}],
        ids=[shard_entry_id(key, "r-cello")],
    )  # fmt: skip
    (top, kind, similarity) = _query(index, "alice", "User plays the cello.", k=1)[0]
    assert (top, kind) == ("r-cello", "fact") and similarity > 0.99

    # Users stay apart, and a user without a collection has no hits.
    assert [i for i, _, _ in _query(index, "bob", "Which city do I live in?")] == ["r-bob"]
    assert _query(index, "carol", "anything") == []
    assert index.query("alice", np.zeros(512, dtype=np.float32), 0) == []


def test_a_text_of_the_earlier_layout_goes_when_its_entry_is_rewritten(
    index: ChromaIndex,
) -> None:
    """Collections made before texts left Chroma may hold one per entry; an upsert without
    documents would keep it, so a rewrite there removes the entry first."""
    old = _record("r-old", "alice", "User's PIN is 4512.")
    collection = index.client.create_collection(
        index.collection_name("alice"),
        metadata={"embedding": index.embedder.spec},
        configuration={"hnsw": {"space": "cosine"}},
    )
    collection.add(
        ids=[old.id],
        embeddings=index.embedder.embed([old.content]),
        documents=[old.content],
        metadatas=[{"kind": "fact", "user_id": "alice", "h": "v2"}],
    )
    fresh = old.model_copy(update={"content": "User changed the PIN."})
    index.upsert([fresh])
    assert _entries(index, "alice") == {
        "r-old": (None, {"kind": "fact", "user_id": "alice", "h": fingerprint(fresh)})
    }
    # Opening it did not relabel the collection: it still may hold texts elsewhere.
    assert "layout" not in (index.client.get_collection(collection.name).metadata or {})
    index.mark_current("alice")  # what consolidate does once every entry is rewritten
    assert index.client.get_collection(collection.name).metadata == {
        "embedding": index.embedder.spec,
        "layout": "v3-vec",
    }

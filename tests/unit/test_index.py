"""The Chroma index writes and queries its collection directly; LangChain reads the same entries.

`ChromaIndex.upsert` and `ChromaIndex.query` skip `langchain_chroma.Chroma`'s own write and
search calls for speed. These tests pin that both sides still see one index: what the
index writes, LangChain's `Chroma` returns (text, id, metadata), and what LangChain writes
through the same vector store, the index finds. Embedded Chroma, the bundled encoder.
"""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np

from memory.embeddings import embed_queries
from memory.index import ChromaIndex, fingerprint
from memory.records import MemoryRecord, Source

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


def test_index_writes_are_langchain_entries_and_back(index: ChromaIndex) -> None:
    city = _record("r-city", "alice", "User lives in Berlin.")
    tea = _record("r-tea", "alice", "User prefers green tea.", kind="preference")
    other = _record("r-bob", "bob", "User lives in Berlin.")
    index.upsert([city, tea])
    index.upsert([other])

    hits = _query(index, "alice", "Which city do I live in?")
    assert [(i, kind) for i, kind, _ in hits] == [("r-city", "fact"), ("r-tea", "preference")]
    assert 0.0 < hits[1][2] < hits[0][2] <= 1.0
    assert index.fingerprints("alice") == {"r-city": fingerprint(city), "r-tea": fingerprint(tea)}

    # LangChain's own search over the same collection: text, id and metadata are there.
    docs = index.vectorstore("alice").similarity_search("Which city do I live in?", k=1)
    assert [(d.id, d.page_content) for d in docs] == [("r-city", "User lives in Berlin.")]
    assert docs[0].metadata == {"kind": "fact", "user_id": "alice", "h": fingerprint(city)}

    # Written again with new text: one entry, new vector, new text, new fingerprint.
    moved = city.model_copy(update={"content": "User lives in Munich."})
    index.upsert([moved])
    assert index.ids("alice") == {"r-city", "r-tea"}
    assert index.fingerprints("alice")["r-city"] == fingerprint(moved)
    (doc,) = index.as_retriever("alice", search_kwargs={"k": 1}).invoke("Munich")
    assert (doc.id, doc.page_content) == ("r-city", "User lives in Munich.")

    # An entry LangChain writes (it embeds the text itself) is found by the index's query
    # with the vector the service would compute.
    index.vectorstore("alice").add_texts(
        ["User plays the cello."], metadatas=[{"kind": "fact", "user_id": "alice", "h": "x"}],
        ids=["r-cello"],
    )  # fmt: skip
    (top, kind, similarity) = _query(index, "alice", "User plays the cello.", k=1)[0]
    assert (top, kind) == ("r-cello", "fact") and similarity > 0.99

    # Users stay apart, and a user without a collection has no hits.
    assert [i for i, _, _ in _query(index, "bob", "Which city do I live in?")] == ["r-bob"]
    assert _query(index, "carol", "anything") == []
    assert index.query("alice", np.zeros(512, dtype=np.float32), 0) == []

"""MemoryService against a real `chroma run` server: isolation, hard forget, store fallback."""

from __future__ import annotations

import hashlib
import logging
from typing import TYPE_CHECKING

import pytest
from langgraph.store.memory import InMemoryStore

from memory.index.chroma import ChromaIndex, IndexUnavailable, fingerprint
from memory.index.embeddings import make_embedder
from memory.service import MemoryNotFound, MemoryService
from memory.store.records import InvalidUserId

if TYPE_CHECKING:
    from conftest import Servers  # the `servers` fixture's type

pytestmark = pytest.mark.integration

HOST = "127.0.0.1"
ALICE = "alice"
LEI = "李雷"  # a CJK user id: collection names must be derived safely from it


def _contents(service: MemoryService, user: str, query: str) -> list[str]:
    return [r.record.content for r in service.search(user, query, k=5)]


def test_memory_service_over_chroma_server(
    servers: Servers, caplog: pytest.LogCaptureFixture
) -> None:
    port, server = servers.chroma(servers.tmp / "chroma-db")
    embedder = make_embedder("local")
    index = ChromaIndex.open(embedder, host=HOST, port=port)
    service = MemoryService(InMemoryStore(), index)

    def add(user: str, content: str, kind: str, subject: str) -> str:
        (change,) = service.add(user, content, kind=kind, subject=subject)  # type: ignore[arg-type]
        assert change.action == "added"
        return change.record.id

    veg = add(ALICE, "User is vegetarian.", "preference", "diet.type")
    berlin = add(ALICE, "User lives in Berlin.", "fact", "profile.city")
    nurse = add(ALICE, "User works as a nurse.", "fact", "profile.job")
    tea = add(LEI, "用户喜欢喝绿茶。", "preference", "likes.绿茶")
    shanghai = add(LEI, "用户住在上海。", "fact", "profile.city")
    assert service.pending_repairs(ALICE) == service.pending_repairs(LEI) == 0

    # The vectors live on the server: a second, independent client sees them.
    other_client = ChromaIndex.open(embedder, host=HOST, port=port)
    assert other_client.ids(ALICE) == {veg, berlin, nurse}
    assert other_client.ids(LEI) == {tea, shanghai}

    # Recall by meaning (no shared words with the query), in both languages. Diet is a core
    # memory: it comes back for any query, ranked or not.
    assert "User is vegetarian." in _contents(service, ALICE, "What should I cook for dinner?")
    assert _contents(service, ALICE, "Which city am I in?")[0] == "User lives in Berlin."
    assert _contents(service, LEI, "我应该喝什么饮料？")[0] == "用户喜欢喝绿茶。"

    # Isolation: even the other user's exact sentence never surfaces their memory.
    alice_hits = service.search(ALICE, "用户喜欢喝绿茶。", k=10)
    lei_hits = service.search(LEI, "User is vegetarian.", k=10)
    assert alice_hits and {r.record.user_id for r in alice_hits} == {ALICE}
    assert lei_hits and {r.record.user_id for r in lei_hits} == {LEI}
    assert {r.record.id for r in alice_hits} <= {veg, berlin, nurse}
    assert {r.record.id for r in lei_hits} <= {tea, shanghai}

    # A hard forget deletes the vector on the server, not just the store record.
    service.forget(ALICE, berlin, hard=True)
    assert index.ids(ALICE) == {veg, nurse}
    assert other_client.ids(ALICE) == {veg, nurse}
    with pytest.raises(MemoryNotFound):
        service.get(ALICE, berlin)
    assert "User lives in Berlin." not in _contents(service, ALICE, "Which city am I in?")
    assert other_client.ids(LEI) == {tea, shanghai}

    server.stop()
    assert not server.alive()

    # Server down: a user whose vectors this process holds is still recalled by meaning
    # (from its copy of shard users' vectors, checked against the store's records) ...
    assert _contents(service, LEI, "我应该喝什么饮料？")[0] == "用户喜欢喝绿茶。"
    # ... and without that copy (a process that never searched them), recall falls back to
    # words over the store, still per user.
    index.cache.clear()
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="memory.service"):
        fallback = _contents(service, ALICE, "vegetarian")
        fallback_zh = _contents(service, LEI, "绿茶")
    assert "index unavailable" in caplog.text
    assert fallback[0] == "User is vegetarian."
    assert set(fallback) == {"User is vegetarian.", "User works as a nurse."}
    assert fallback_zh[0] == "用户喜欢喝绿茶。"
    assert set(fallback_zh) == {"用户喜欢喝绿茶。", "用户住在上海。"}

    # Writes while down land in the store and are queued for reindex, not lost.
    jazz = add(ALICE, "User likes jazz.", "preference", "likes.jazz")
    assert service.get(ALICE, jazz).content == "User likes jazz."
    assert service.pending_repairs(ALICE) == 1

    with pytest.raises(IndexUnavailable, match=rf"{HOST}:{port}\b"):
        ChromaIndex.open(embedder, host=HOST, port=port)


def test_langchain_retriever_over_chroma_server(servers: Servers) -> None:
    """`MemoryService.as_retriever` is a LangChain retriever over one user's memories on a
    Chroma server: documents carry the record ids and texts read from the store, forgotten
    and ghost entries never come back, and an entry of the earlier layout (its text stored
    in Chroma) is rewritten by consolidate without its text.
    """
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever

    from memory.store.records import MemoryRecord

    port, _ = servers.chroma(servers.tmp / "chroma-retriever")
    index = ChromaIndex.open(make_embedder("local"), host=HOST, port=port)
    service = MemoryService(InMemoryStore(), index)

    def add(user: str, content: str, subject: str) -> MemoryRecord:
        (change,) = service.add(user, content, subject=subject)
        assert change.action == "added"
        return change.record

    berlin = add(ALICE, "User lives in Berlin.", "profile.city")
    nurse = add(ALICE, "User works as a nurse.", "profile.job")
    jazz = add(ALICE, "User likes jazz.", "likes.jazz")
    add(LEI, "用户住在上海。", "profile.city")

    retriever = service.as_retriever(ALICE, k=2)
    assert isinstance(retriever, BaseRetriever)
    docs: list[Document] = retriever.invoke("Which city am I in?")
    assert (docs[0].id, docs[0].page_content) == (berlin.id, "User lives in Berlin.")
    assert docs[0].metadata["kind"] == "fact" and docs[0].metadata["why"] == "relevant"
    # Only this user's memories, whatever the query.
    everything = service.as_retriever(ALICE, k=10).invoke("用户住在上海。")
    assert {d.id for d in everything} <= {berlin.id, nurse.id, jazz.id}
    (lei_doc,) = service.as_retriever(LEI).invoke("Where do I live?")
    assert lei_doc.page_content == "用户住在上海。"
    with pytest.raises(InvalidUserId):
        service.as_retriever("../alice")

    # Forgetting (soft or hard) removes the memory from what the retriever returns.
    service.forget(ALICE, berlin.id, hard=True)
    service.forget(ALICE, nurse.id)
    left = service.as_retriever(ALICE, k=10).invoke("city job music")
    assert [d.id for d in left] == [jazz.id]

    # A vector that outlived its record (a write that crashed between Chroma and the store)
    # is a candidate Chroma returns; the retriever re-reads hits and drops it.
    ghost = berlin.model_copy(update={"id": "ghost-" + berlin.id})
    index.upsert([ghost])
    assert ghost.id in index.ids(ALICE)
    assert ghost.id not in [d.id for d in service.as_retriever(ALICE).invoke("Which city?")]
    index.delete(ALICE, [ghost.id])

    # A collection of the earlier layout (one per user, no layout label, the text stored
    # as each entry's document, the old fingerprint): the next open moves it into the
    # user's shard without the text, and consolidate finds the entry stale and rewrites it.
    vector = index.embedder.embed([jazz.content])
    index.drop_user(ALICE)
    collection = index.client.create_collection(
        index.collection_name(ALICE),
        metadata={"embedding": index.embedder.spec},
        configuration={"hnsw": {"space": "cosine"}},
    )
    old_h = hashlib.sha1(f"v2-doc\0{jazz.content}".encode()).hexdigest()[:12]
    collection.add(
        ids=[jazz.id],
        embeddings=vector,
        documents=[jazz.content],
        metadatas=[{"kind": "fact", "user_id": ALICE, "h": old_h}],
    )
    fresh = ChromaIndex.open(make_embedder("local"), host=HOST, port=port)  # another process
    names = [c.name for c in index.client.list_collections()]
    assert collection.name not in names and fresh.home_name(ALICE).startswith("mem-shard-")
    assert fresh.entries(ALICE)[jazz.id].document is None
    report = MemoryService(service.store, fresh).consolidate(ALICE)
    assert report.reindexed == 1
    assert fresh.fingerprints(ALICE) == {jazz.id: fingerprint(jazz)}
    (back,) = service.as_retriever(ALICE).invoke("music")
    assert (back.id, back.page_content) == (jazz.id, "User likes jazz.")
    assert service.consolidate(ALICE).reindexed == 0  # settled

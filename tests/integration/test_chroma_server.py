"""MemoryService against a real `chroma run` server: isolation, hard forget, store fallback."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import pytest
from langgraph.store.memory import InMemoryStore

from memory.embeddings import make_embedder
from memory.index import ChromaIndex, IndexUnavailable
from memory.service import MemoryNotFound, MemoryService

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
    port = servers.free_port()
    server = servers.start(
        [str(servers.bin("chroma")), "run", "--host", HOST, "--port", str(port),
         "--path", str(servers.tmp / "chroma-db")],
        ready_url=f"http://{HOST}:{port}/api/v2/heartbeat",
        timeout=60,
    )  # fmt: skip
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

    # Server down: recall falls back to words over the store, still per user.
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

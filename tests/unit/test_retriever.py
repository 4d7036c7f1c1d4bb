"""`MemoryService.as_retriever`: one user's memories as a LangChain retriever, in zh and en."""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.runnables import RunnableLambda

from memory.service import MemoryService
from memory.store.records import InvalidUserId


def test_retriever_ranks_as_search_and_reads_the_store(service: MemoryService) -> None:
    (nurse,) = service.add("lei", "用户在杭州当护士。", subject="profile.job")
    service.add("lei", "用户喜欢喝乌龙茶。", subject="likes.tea", kind="preference")
    service.add("amy", "User works as a nurse in Leeds.", subject="profile.job")

    retriever = service.as_retriever("lei", k=3)
    docs = retriever.invoke("护士")
    assert [d.id for d in docs] == [r.record.id for r in service.search("lei", "护士", 3)]
    assert (docs[0].id, docs[0].page_content) == (nurse.record.id, "用户在杭州当护士。")
    assert docs[0].metadata["subject"] == "profile.job"
    assert docs[0].metadata["confidence"] == nurse.record.confidence
    # Never another user's memory, even when the question is theirs word for word: lei's
    # own job comes back (the nurse in Hangzhou), amy's does not.
    theirs = retriever.invoke("User works as a nurse in Leeds.")
    assert nurse.record.id in [d.id for d in theirs]
    assert all(d.page_content != "User works as a nurse in Leeds." for d in theirs)

    # It composes like any runnable, and its async form gives the same documents.
    chain = retriever | RunnableLambda(lambda ds: [d.page_content for d in ds])
    assert chain.invoke("护士")[0] == "用户在杭州当护士。"
    assert [d.id for d in asyncio.run(retriever.ainvoke("护士"))] == [d.id for d in docs]

    # A forgotten memory is gone from the very retriever built before the forget.
    service.forget("lei", nurse.record.id)
    assert nurse.record.id not in [d.id for d in retriever.invoke("护士")]


def test_retriever_user_is_checked_when_built(service: MemoryService) -> None:
    for bad in ("", "a b", "../x", "x" * 300):
        with pytest.raises(InvalidUserId):
            service.as_retriever(bad)

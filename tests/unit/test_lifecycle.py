"""Lifecycle rules through the memory service, on a real store and embedded Chroma."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memory.extraction import CandidateMemory, Extraction, ForgetRequest
from memory.index.chroma import ChromaIndex
from memory.lifecycle import Policy
from memory.service import MemoryService
from memory.store.records import Source, utcnow

T0 = datetime(2026, 11, 30, 9, tzinfo=UTC)


def said(days: float = 0) -> Source:
    return Source(thread_id="t", said_at=T0 + timedelta(days=days))


def cand(subject: str, content: str, conf: float = 0.9, **kw) -> Extraction:
    kind = kw.pop("kind", "fact")
    return Extraction(
        memories=[
            CandidateMemory(kind=kind, subject=subject, content=content, confidence=conf, **kw)
        ]
    )


def recalled(service: MemoryService, user: str, query: str, **kw) -> list[str]:
    return [h.record.content for h in service.search(user, query, **kw)]


def test_low_confidence_is_held_then_promoted_when_restated(service: MemoryService) -> None:
    (held,) = service.save("u", cand("likes.jazz", "User likes jazz.", 0.4), said())
    assert held.action == "held" and held.record.status == "candidate"
    assert recalled(service, "u", "music") == []
    (again,) = service.save("u", cand("likes.jazz", "User likes jazz.", 0.5), said(1))
    assert again.action == "promoted"
    assert recalled(service, "u", "music") == ["User likes jazz."]


def test_unconfirmed_candidate_expires(service: MemoryService) -> None:
    service.save("u", cand("likes.jazz", "User likes jazz.", 0.4), said())
    report = service.consolidate("u", now=datetime.now(UTC) + timedelta(days=31))
    assert report.expired == 1
    assert [r.status for r in service.list("u", include_inactive=True)] == ["expired"]


def test_less_confident_contradiction_does_not_replace(service: MemoryService) -> None:
    service.save("u", cand("profile.city", "User lives in Berlin.", 0.95), said())
    (held,) = service.save("u", cand("profile.city", "User lives in Paris.", 0.7), said(1))
    assert held.action == "held"
    assert recalled(service, "u", "where do I live") == ["User lives in Berlin."]


def test_near_equal_unordered_contradictions_form_a_conflict(service: MemoryService) -> None:
    service.save("u", cand("profile.city", "User lives in Berlin.", 0.9), said())
    changes = service.save("u", cand("profile.city", "User lives in Paris.", 0.9), said(0))
    assert [c.action for c in changes] == ["added", "conflict"]
    hits = service.search("u", "where do I live", k=1)
    # Asking for one still brings both sides of the conflict.
    assert {h.record.content for h in hits} == {"User lives in Berlin.", "User lives in Paris."}
    from memory.recall.block import format_block

    block = format_block([h.record for h in hits])
    assert block.count("CONFLICTS") == 2


def test_consolidate_resolves_a_conflict_once_one_side_is_confirmed(service) -> None:
    service.save("u", cand("profile.city", "User lives in Berlin.", 0.8), said())
    service.save("u", cand("profile.city", "User lives in Paris.", 0.8), said(0))
    for day in (1, 2, 3):
        service.save("u", cand("profile.city", "User lives in Paris.", 0.8), said(day))
    report = service.consolidate("u")
    assert report.resolved == 1
    assert recalled(service, "u", "where do I live") == ["User lives in Paris."]
    again = service.consolidate("u")
    assert (again.resolved, again.merged, again.reindexed) == (0, 0, 0)


def test_negation_supersedes_only_the_matching_value(service: MemoryService) -> None:
    service.add("u", "User likes coffee.", subject="likes.coffee", value="like", kind="preference")
    service.add("u", "User likes tea.", subject="likes.tea", value="like", kind="preference")
    neg = cand(
        "habit.drinkcoffee",
        "User no longer drinks coffee.",
        kind="preference",
        replaces="drink coffee",
    )
    changes = service.save("u", neg, said(1))
    assert [c.action for c in changes] == ["added", "superseded"]
    active = {r.content for r in service.list("u")}
    assert active == {"User likes tea.", "User no longer drinks coffee."}
    assert changes[0].record.subject == "likes.coffee"


def test_forget_this_points_at_what_the_assistant_just_said(service: MemoryService) -> None:
    service.add("u", "用户住在上海。", subject="profile.city")
    service.add("u", "用户喜欢爵士乐。", subject="likes.爵士乐")
    reply = "（离线模式）根据我记得的：用户喜欢爵士乐。"
    changes = service.save(
        "u", Extraction(forget=[ForgetRequest(query="这个")]), said(), context=reply
    )
    assert [c.record.content for c in changes] == ["用户喜欢爵士乐。"]
    assert {r.content for r in service.list("u")} == {"用户住在上海。"}


def test_forget_address_alias(service: MemoryService) -> None:
    service.add("u", "用户住在上海。", subject="profile.city")
    service.save("u", Extraction(forget=[ForgetRequest(query="地址")]), said())
    assert service.list("u") == []


def test_sensitive_statements_are_withheld_by_default(service: MemoryService, index) -> None:
    changes = service.save("u", cand("contact.phone", "User's phone is 13812345678."), said())
    assert [c.action for c in changes] == ["withheld"]
    assert service.list("u", include_inactive=True) == [] and index.ids("u") == set()


def test_sensitive_statements_can_be_redacted(index: ChromaIndex) -> None:
    from langgraph.store.memory import InMemoryStore

    svc = MemoryService(InMemoryStore(), index, policy=Policy(sensitive="redact"))
    svc.save(
        "u",
        cand("contact.email", "User's email is bob@example.com.", value="bob@example.com"),
        said(),
    )
    (rec,) = svc.list("u")
    assert "bob@example.com" not in rec.content + str(rec.value)
    assert "[redacted email]" in rec.content


def test_recall_is_counted_and_cold_memories_are_archived(service: MemoryService) -> None:
    service.add("u", "User likes jazz.", subject="likes.jazz")
    service.add("u", "User lives in Oslo.", subject="profile.city")
    hot = service.search("u", "jazz", k=1)[0].record
    later = datetime.now(UTC) + timedelta(days=200)
    service.mark_recalled("u", [(hot.kind, hot.id)], now=later - timedelta(days=10))
    assert service.get("u", hot.id).hits == 1
    report = service.consolidate("u", now=later)
    assert report.archived == 1
    assert [r.content for r in service.list("u")] == ["User likes jazz."]
    archived = [r for r in service.list("u", include_inactive=True) if r.status == "archived"]
    assert [r.content for r in archived] == ["User lives in Oslo."]
    # Restating an archived memory warms it up again.
    (change,) = service.add("u", "User lives in Oslo.", subject="profile.city")
    assert change.action == "promoted"


def test_consolidate_merges_near_duplicates_and_repairs_the_index(service, index) -> None:
    service.save("u", cand("profile.city", "User lives in New York."), said())
    service.save("u", cand("profile.city", "User lives in New York City."), said())
    assert len(service.list("u")) == 2  # said together: an unresolved pair
    report = service.consolidate("u")
    assert report.merged == 1
    (keep,) = service.list("u")
    assert [h.action for h in keep.history][-1] == "merged"
    # Break the index both ways: a vector missing and an orphan vector.
    index.delete("u", [keep.id])
    orphan = keep.model_copy(update={"id": "orphan"})
    index.upsert([orphan])
    dry = service.consolidate("u", dry_run=True)
    assert dry.reindexed == 1 and dry.orphans_removed == 1
    assert "orphan" in index.ids("u")  # a dry run changes nothing
    report = service.consolidate("u")
    assert report.reindexed == 1 and report.orphans_removed == 1
    assert index.ids("u") == {r.id for r in service.list("u")}
    again = service.consolidate("u")
    assert (again.merged, again.reindexed, again.orphans_removed) == (0, 0, 0)


def test_consolidate_sweeps_expired_events(service: MemoryService, index) -> None:
    # Dated from today: an event already over when it is written is never indexed at all.
    today = datetime.combine(utcnow().date(), datetime.min.time(), tzinfo=UTC)
    day = (today + timedelta(days=2)).date().isoformat()
    service.save(
        "u",
        cand("event.launch", "Launch on Wednesday.", kind="event", event_date=day),
        Source(thread_id="t", said_at=today),
    )
    report = service.consolidate("u", now=today + timedelta(days=4))
    assert report.expired == 1 and report.orphans_removed == 1
    assert index.ids("u") == set()


@pytest.mark.parametrize("hard", [False, True])
def test_forgotten_memory_never_returns(service: MemoryService, index, hard: bool) -> None:
    (c,) = service.add("u", "User lives in Berlin.", subject="profile.city")
    service.forget("u", c.record.id, hard=hard)
    index.upsert([c.record])  # a stale vector left behind by a crash
    assert recalled(service, "u", "Berlin") == []
    service.consolidate("u")
    assert recalled(service, "u", "Berlin") == [] and index.ids("u") == set()
    exported = [r["content"] for r in service.export("u")]
    assert exported == ([] if hard else ["User lives in Berlin."])

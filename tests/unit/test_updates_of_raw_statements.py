"""An update of something kept only in the user's words ends those words.

A statement nothing was extracted from is kept as a raw statement (`episode.turn.…`), and
recalled like any memory. An update that names it (a real model's `updates`, or the offline
model's match by meaning) must end it, or the old and the new value are both recalled; and
it changes that statement only, never a slot the update happens to be read in.
"""

from __future__ import annotations

from kept import kept_for

from agent.runner import Session
from memory.extraction import CandidateMemory, Extraction
from memory.service import MemoryService
from memory.store.records import is_raw_turn
from memory.turn import Said

USER = "raw-update-user"


def _raw(service: MemoryService, user: str, text: str) -> str:
    (rec,) = [
        r for r in service.list(user, include_turns=True) if is_raw_turn(r) and r.content == text
    ]
    return rec.id


def test_an_update_naming_a_raw_statement_with_nothing_extracted_ends_it(
    service: MemoryService,
) -> None:
    service.save_turn(USER, "t1", [Said("m1", "The bus pass is 60 a month")], Extraction())
    old = _raw(service, USER, "The bus pass is 60 a month")
    new = CandidateMemory(
        kind="fact",
        subject="note.bus_pass",
        content="User said: the bus pass went up to 65.",
        confidence=0.8,
        updates=old,
    )
    out = service.save_turn(
        USER, "t2", [Said("m2", "the bus pass went up to 65")], Extraction(memories=[new])
    )
    actions = {(c.action, c.record.id) for c in out.changes}
    assert ("superseded", old) in actions
    ended = service.get(USER, old)
    assert ended.status == "superseded"
    (added,) = [c.record for c in out.changes if c.action == "added"]
    # It keeps its own kind and subject: a raw statement has none to give.
    assert (added.kind, added.subject) == ("fact", "note.bus_pass")
    assert added.supersedes == old and ended.superseded_by == added.id
    shown = " ".join(r.record.content for r in service.search(USER, "how much is the bus pass"))
    assert "65" in shown and "60" not in shown


def test_an_update_naming_a_raw_statement_a_memory_was_extracted_from_ends_the_memory(
    service: MemoryService,
) -> None:
    typed = CandidateMemory(
        kind="fact", subject="work.employer", content="User works at Acme.", confidence=0.8
    )
    service.save_turn(USER, "t1", [Said("m1", "I work at Acme")], Extraction(memories=[typed]))
    old = _raw(service, USER, "I work at Acme")
    new = CandidateMemory(
        kind="fact", subject="note.x", content="User works at Globex.", confidence=0.8, updates=old
    )
    out = service.save_turn(
        USER, "t2", [Said("m2", "I moved to Globex")], Extraction(memories=[new])
    )
    (added,) = [c.record for c in out.changes if c.action == "added"]
    # Filed over the memory the raw statement stands for, which ends with its words.
    assert added.subject == "work.employer"
    ended = {c.record.content for c in out.changes if c.action == "superseded"}
    assert ended == {"User works at Acme.", "I work at Acme"}


async def test_the_offline_model_ends_a_price_kept_in_the_users_words(
    offline_session: Session,
) -> None:
    s = offline_session
    await s.turn("mei", "mei-1", "月嫂一个月一万二")
    await s.turn("mei", "mei-2", "月嫂涨到一万三了")
    res = await s.turn("mei", "mei-3", "请月嫂一个月要多少钱")
    shown = " ".join(r["content"] for r in res.recalled)
    assert "一万三" in shown and "一万二" not in shown
    assert "月嫂一个月一万二" not in await kept_for(s, "mei")


async def test_an_update_of_a_raw_statement_is_no_slot_of_the_user(
    offline_session: Session,
) -> None:
    s = offline_session
    await s.turn("sam", "sam-1", "I'm 34.")
    await s.turn("sam", "sam-1", "The bus pass is 60 a month")
    # Read in the age's family ("65 now"), it changes the bus pass, not the age.
    await s.turn("sam", "sam-2", "bus pass went up, 65 now")
    kept = await kept_for(s, "sam")
    assert "34" in kept and "65" in kept
    assert "The bus pass is 60 a month" not in kept

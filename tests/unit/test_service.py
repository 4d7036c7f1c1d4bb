from datetime import UTC, datetime, timedelta

import pytest
from langgraph.store.base import PutOp
from langgraph.store.memory import InMemoryStore

from memory.extraction import CandidateMemory, Extraction, ForgetRequest
from memory.index.chroma import ChromaIndex
from memory.lexical.changes import CHANGE_LOG_KEYS
from memory.lexical.snapshot import LexicalIndexes
from memory.service import MemoryNotFound, MemoryService
from memory.store.records import InvalidUserId, MemoryRecord, Source, utcnow


def contents(hits) -> list[str]:
    return [h.record.content for h in hits]


def test_two_users_with_the_same_name_never_see_each_other(service: MemoryService) -> None:
    service.add("alice-1", "User's name is Alice.", subject="profile.name")
    service.add("alice-1", "User lives in Berlin.", subject="profile.city")
    service.add("alice-2", "User's name is Alice.", subject="profile.name")
    service.add("alice-2", "User lives in Paris.", subject="profile.city")
    for uid, own, other in (("alice-1", "Berlin", "Paris"), ("alice-2", "Paris", "Berlin")):
        hits = service.search(uid, "Where does Alice live?", k=10)
        text = " ".join(contents(hits))
        assert own in text and other not in text
        assert {h.record.user_id for h in hits} == {uid}


def test_stale_vector_cannot_resurrect_or_leak(service: MemoryService, index: ChromaIndex) -> None:
    (added,) = service.add("bob", "User likes jazz.", subject="likes.jazz")
    service.forget("bob", added.record.id)
    # Simulate a crash that left the vector behind, and a vector planted in the wrong user's
    # collection: the store check must drop both.
    index.upsert([added.record])
    rogue = added.record.model_copy(update={"user_id": "carol", "id": "rogue"})
    index.upsert([rogue])
    assert service.search("bob", "jazz") == []
    assert service.search("carol", "jazz") == []


def test_same_statement_is_reinforced_not_duplicated(service: MemoryService) -> None:
    first = service.add("dan", "User is vegetarian.", subject="diet.type", confidence=0.8)
    again = service.add("dan", "User is vegetarian.", subject="diet.type", confidence=0.8)
    assert [c.action for c in first] == ["added"] and [c.action for c in again] == ["reinforced"]
    (rec,) = service.list("dan")
    assert rec.confidence == pytest.approx(0.85)
    assert [h.action for h in rec.history] == ["reinforced"]


def test_new_value_supersedes_and_keeps_history(service: MemoryService) -> None:
    service.add("erin", "User lives in Berlin.", subject="profile.city", value="Berlin")
    (added, superseded) = service.add(
        "erin", "User lives in Munich.", subject="profile.city", value="Munich"
    )
    assert (added.action, superseded.action) == ("added", "superseded")
    assert contents(service.search("erin", "where do I live")) == ["User lives in Munich."]
    old = service.get("erin", superseded.record.id)
    assert old.status == "superseded" and old.superseded_by == added.record.id
    assert old.valid_until is not None
    assert service.get("erin", added.record.id).supersedes == old.id
    assert len(service.list("erin", include_inactive=True)) == 2


def test_news_of_a_change_is_found_by_the_words_of_what_it_changed(
    service: MemoryService,
) -> None:
    # The news never says again what it changes: only the old words name the dentist.
    service.add("gus", "User's dentist is Dr Okonkwo on Harbour Street.", subject="care.dentist")
    (moved, old) = service.add(
        "gus", "User switched to the practice in Millbrook.", subject="care.dentist"
    )
    assert old.action == "superseded"
    for question in ("who is my dentist?", "Harbour Street", "谁是我的牙医？"):
        assert contents(service.search("gus", question, k=1)) == [moved.record.content]
    # Deleting the old memory takes its words out of what finds the new one.
    service.forget("gus", old.record.id, hard=True)
    assert "Okonkwo" not in service.get("gus", moved.record.id).replaced
    assert contents(service.search("gus", "Harbour Street Okonkwo")) == []


def test_expired_event_leaves_recall_at_read_time(service: MemoryService) -> None:
    # Dated from today: an event already over when it is written is never indexed at all.
    today = datetime.combine(utcnow().date(), datetime.min.time(), tzinfo=UTC)
    day = today + timedelta(days=2)
    cand = CandidateMemory(
        kind="event",
        subject="event.launch",
        content="Launch on Wednesday.",
        event_date=day.date().isoformat(),
    )
    service.save("fay", Extraction(memories=[cand]), Source(said_at=today))
    before = service.search("fay", "launch", now=day + timedelta(hours=12))
    after = service.search("fay", "launch", now=day + timedelta(days=1, minutes=1))
    assert contents(before) == ["Launch on Wednesday."] and after == []


def test_replayed_save_writes_nothing_twice(service: MemoryService) -> None:
    cand = CandidateMemory(kind="fact", subject="profile.city", content="User lives in Oslo.")
    src = Source(thread_id="t1", message_ids=["m1"], said_at=datetime.now(UTC))
    service.save("gus", Extraction(memories=[cand]), src)
    changes = service.save("gus", Extraction(memories=[cand]), src)
    assert [c.action for c in changes] == ["unchanged"]
    assert len(service.list("gus", include_inactive=True)) == 1


def test_forget_request_from_conversation(service: MemoryService) -> None:
    service.add("hal", "User lives in Berlin.", subject="profile.city", value="Berlin")
    service.add("hal", "User likes jazz.", subject="likes.jazz")
    changes = service.save(
        "hal", Extraction(forget=[ForgetRequest(query="I live in Berlin")]), Source()
    )
    assert [c.action for c in changes] == ["forgotten"]
    assert contents(service.search("hal", "Berlin", k=5)) == []
    assert contents(service.search("hal", "jazz", k=5)) == ["User likes jazz."]


def test_hard_forget_removes_store_record_and_vector(service: MemoryService, index) -> None:
    (c,) = service.add("ida", "User is allergic to peanuts.", subject="health.allergy.peanuts")
    assert index.ids("ida") == {c.record.id}
    service.forget("ida", c.record.id, hard=True)
    assert index.ids("ida") == set()
    with pytest.raises(MemoryNotFound):
        service.get("ida", c.record.id)
    assert service.export("ida") == []


def test_export_import_round_trip_moves_memories(service: MemoryService) -> None:
    service.add("jan", "User lives in Rome.", subject="profile.city")
    service.add("jan", "User lives in Milan.", subject="profile.city")
    rows = service.export("jan")
    assert service.import_records("kim", rows) == 2
    moved = service.list("kim", include_inactive=True)
    assert {r.user_id for r in moved} == {"kim"}
    assert contents(service.search("kim", "city")) == ["User lives in Milan."]


def test_import_rejects_bad_rows_and_writes_nothing(service: MemoryService) -> None:
    with pytest.raises(ValueError, match="record 2"):
        service.import_records("lee", [service.add("x", "a")[0].record.to_store(), {"id": 1}])
    assert service.list("lee") == []


def test_delete_user_removes_everything(service: MemoryService, index) -> None:
    service.add("max", "User lives in Oslo.", subject="profile.city")
    service.remember_thread("max", "thread-1")
    service.add("ned", "User lives in Oslo.", subject="profile.city")
    assert service.delete_user("max") == 1
    assert service.list("max", include_inactive=True) == []
    assert index.ids("max") == set() and service.threads("max") == []
    assert len(service.search("ned", "Oslo")) == 1


def test_index_down_falls_back_to_store_and_records_repair(service: MemoryService) -> None:
    service.add("olga", "User lives in Kyiv.", subject="profile.city")
    service.index._collections.clear()

    class Down:
        def __getattr__(self, name):
            raise ConnectionError("chroma is down")

    real = service.index.client
    service.index.client = Down()
    try:
        hits = service.search("olga", "Kyiv")
        assert contents(hits) == ["User lives in Kyiv."]
        service.add("olga", "User likes borscht.", subject="likes.borscht")
        assert service.pending_repairs("olga") == 1
        assert len(service.list("olga")) == 2  # the store write happened
    finally:
        service.index.client = real
    assert service.reindex("olga") == {"olga": 2}
    assert service.pending_repairs("olga") == 0
    assert "User likes borscht." in contents(service.search("olga", "borscht"))


def test_invalid_user_is_refused_before_any_write(service: MemoryService) -> None:
    with pytest.raises(InvalidUserId):
        service.add("a.b", "x")
    assert service.users() == []


async def test_async_forms_run_the_same_logic(service: MemoryService) -> None:
    await service.aadd("pia", "用户不吃辣。", subject="diet.avoid.辣", kind="preference")
    hits = await service.asearch("pia", "推荐一道菜")
    assert contents(hits) == ["用户不吃辣。"]
    rec: MemoryRecord = hits[0].record
    assert (await service.aget("pia", rec.id)).id == rec.id


def test_english_query_recalls_chinese_memory(service: MemoryService) -> None:
    service.add("quinn", "用户对花生过敏。", subject="health.allergy.花生")
    service.add("quinn", "用户喜欢爵士乐。", subject="likes.爵士乐")
    service.add("quinn", "用户住在上海。", subject="profile.city")
    (top, *_) = service.search("quinn", "Does the user have a peanut allergy?", k=3)
    assert top.record.content == "用户对花生过敏。"


def test_import_larger_than_one_chroma_batch_indexes_everything(service: MemoryService) -> None:
    # Chroma refuses more than ~5,461 vectors per call; the index must slice its writes.
    rows = [
        MemoryRecord(id=f"r{i}", user_id="x", kind="fact", subject=f"s.{i}",
                     content=f"note number {i}").to_store()
        for i in range(6000)
    ]  # fmt: skip
    assert service.import_records("big", rows) == 6000
    assert len(service.index.ids("big")) == 6000 and service.pending_repairs("big") == 0


def _second_process(store) -> MemoryService:
    """A service on the same store with its own in-memory state, as another process has."""
    other = MemoryService(store, None)
    other.lexical = LexicalIndexes()
    return other


def test_writes_of_another_process_are_caught_up_without_a_rescan() -> None:
    store = InMemoryStore()
    here, there = MemoryService(store, None), _second_process(store)
    here.add("rui", "User works at Acme.", subject="work.employer")
    assert contents(here.search("rui", "Acme")) == ["User works at Acme."]
    scans: list[str] = []
    real_scan = here._reader.scan
    here._reader.scan = lambda user_id, **kw: scans.append(user_id) or real_scan(user_id, **kw)

    # No index: recall is by words alone, so only a caught-up snapshot can find these.
    there.add("rui", "User plays the cello every Sunday.", subject="hobby.cello")
    assert contents(here.search("rui", "cello")) == ["User plays the cello every Sunday."]
    moved = there.add("rui", "User works at Globex.", subject="work.employer")
    snap = here.lexical.peek("rui")
    assert snap is not None and any("Acme" in r.content for r in snap.records.values())
    assert contents(here.search("rui", "Globex")) == ["User works at Globex."]
    assert not any("Acme" in r.content for r in snap.records.values())  # superseded there
    assert scans == []  # two catch-ups, each reading only the records that changed

    # A hard delete leaves no id of what was deleted in the log; readers rebuild.
    gone = moved[0].record.id
    assert gone in str(store.get(("memory_changes", "rui"), "log").value)
    there.forget("rui", gone, hard=True)
    assert gone not in str(store.get(("memory_changes", "rui"), "log").value)
    assert here.search("rui", "Globex") == [] and scans == ["rui"]
    assert gone not in here.lexical.peek("rui").records

    # Further behind than the log reaches: rebuilt from one scan, nothing missed.
    rows = [
        MemoryRecord(id=f"n{i}", user_id="rui", kind="fact", subject=f"note.{i}",
                     content=f"note {i} about sailing").to_store()
        for i in range(CHANGE_LOG_KEYS + 5)
    ]  # fmt: skip
    there.import_records("rui", rows)
    assert len(here.search("rui", "sailing", k=3)) == 3 and scans == ["rui", "rui"]


def test_a_user_deleted_elsewhere_is_gone_from_this_process() -> None:
    store = InMemoryStore()
    here, there = MemoryService(store, None), _second_process(store)
    here.add("sam", "User lives in Oslo.", subject="profile.city")
    assert len(here.search("sam", "Oslo")) == 1
    there.delete_user("sam")
    assert here.search("sam", "Oslo") == []
    snap = here.lexical.peek("sam")
    assert snap is not None and snap.records == {}
    assert store.get(("memory_changes", "sam"), "log").value["entries"] == []  # no ids kept


def test_saving_finds_related_records_through_indexes_not_a_table_scan(tmp_path) -> None:
    from memory.backends import BackendConfig, open_backends

    with open_backends(BackendConfig(home=str(tmp_path / "home"))) as b:
        svc = MemoryService(b.store, None)
        svc.add("tess", "User lives in Oslo.", subject="profile.city")
        conn = b.store.conn
        statements: list[str] = []
        conn.set_trace_callback(statements.append)
        try:
            svc.add("tess", "User lives in Bergen.", subject="profile.city")
        finally:
            conn.set_trace_callback(None)
        lookups = [s for s in statements if s.lstrip().upper().startswith("SELECT")
                   and "json_extract(value, '$." in s]  # fmt: skip
        assert len(lookups) >= 2, statements  # by subject and by statement
        for sql in lookups:
            plan = " ".join(str(row) for row in conn.execute("EXPLAIN QUERY PLAN " + sql))
            assert "memory_agent_subject_idx" in plan or "memory_agent_content_idx" in plan, plan
        assert [r.content for r in svc.list("tess")] == ["User lives in Bergen."]


def test_a_save_during_a_first_search_is_never_lost_from_the_snapshot() -> None:
    # Forces the order that once lost a record: the reader has scanned the store, the
    # writer saves and applies its write, then the reader installs its older snapshot.
    import threading

    from memory.recall.search import pin as _pin

    scanned, applied, installed = threading.Event(), threading.Event(), threading.Event()

    class Paused(LexicalIndexes):
        def build(self, user_id, records, version=""):
            records = list(records)
            if threading.current_thread().name == "reader":
                scanned.set()
                applied.wait(1.0)  # with the user lock held, the writer cannot get here
            entry = super().build(user_id, records, version)
            installed.set()
            return entry

        def remove(self, user_id, ids):  # the writer's last step before marking it applied
            super().remove(user_id, ids)
            if threading.current_thread().name == "writer":
                applied.set()
                installed.wait(1.0)

    store = InMemoryStore()
    svc = MemoryService(store, None)
    svc.lexical = Paused(pin=_pin)
    svc.add("uma", "User lives in Lisbon.", subject="profile.home")

    def write() -> None:
        scanned.wait(5)
        svc.add("uma", "User's sister Ana plays the cello.", subject="family.sister")

    reader = threading.Thread(target=lambda: svc.search("uma", "anything"), name="reader")
    writer = threading.Thread(target=write, name="writer")
    reader.start()
    writer.start()
    reader.join()
    writer.join()
    hits = [r.record.content for r in svc.search("uma", "sister cello") if r.why == "relevant"]
    assert hits == ["User's sister Ana plays the cello."]


def test_an_import_cut_short_is_still_seen_by_other_processes() -> None:
    class FailingStore(InMemoryStore):
        puts_left: int | None = None

        def batch(self, ops):  # type: ignore[override]
            if self.puts_left is not None and any(isinstance(o, PutOp) for o in ops):
                if self.puts_left == 0:
                    raise ConnectionError("database went away")
                self.puts_left -= 1
            return super().batch(ops)

    store = FailingStore()
    here, there = _second_process(store), MemoryService(store, None)
    here.add("vic", "User works at Acme.", subject="work.employer")
    assert len(here.search("vic", "Acme")) == 1  # a snapshot is loaded here
    rows = [
        MemoryRecord(id=f"p{i}", user_id="vic", kind="fact", subject=f"pottery.{i}",
                     content=f"pottery class number {i}").to_store()
        for i in range(700)
    ]  # fmt: skip
    store.puts_left = 1  # the first slice of 500 is written, the second fails
    with pytest.raises(ConnectionError):
        there.import_records("vic", rows)
    store.puts_left = None
    found = here.search("vic", "pottery class number 7", k=3)
    assert [r.record.id for r in found][:1] == ["p7"]

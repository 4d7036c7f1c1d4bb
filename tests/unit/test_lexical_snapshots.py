"""Persisted lexical snapshots: a new process starts from the copy, never from stale words.

A second `MemoryService` on the same store has its own in-memory snapshots, as a new process
has; `_fresh` makes one. The embedded SQLite store keeps copies under the memory home.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from spies import count_scans

from memory.backends import BackendConfig, open_backends
from memory.lexical import changes
from memory.lexical.bm25 import BM25_B, BM25_K1, BM25Index
from memory.lexical.changes import CHANGE_LOG_KEYS
from memory.lexical.persisted import SnapshotFiles
from memory.lexical.snapshot import (
    LexicalIndexes,
    SnapshotError,
    dump_snapshot,
    load_snapshot,
    record_fields,
)
from memory.service import MemoryService
from memory.store.records import MemoryRecord, Source, user_key

REPO = Path(__file__).resolve().parents[2]
WORDS = "apple banana cherry damson elder fig grape hazel iris juniper kale lime mango".split()  # noqa: SIM905


@pytest.fixture(autouse=True)
def _small_persist_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(changes, "PERSIST_AT", 10)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Any]:
    with open_backends(BackendConfig(home=str(tmp_path / "home"))) as b:
        yield b.store


def _fresh(store: Any) -> MemoryService:
    svc = MemoryService(store, None)
    svc.lexical = LexicalIndexes(pin=svc.lexical._pin)
    return svc


def _rows(user: str, n: int, start: int = 0, word: str = "orchard") -> list[dict[str, Any]]:
    return [
        MemoryRecord(id=f"m{i}", user_id=user, kind="fact", subject=f"garden.{i}",
                     content=f"User planted {WORDS[i % len(WORDS)]} tree {i} in the {word}.")
        .to_store()
        for i in range(start, start + n)
    ]  # fmt: skip


def _copy(store: Any, user: str) -> Path:
    files = changes.snapshot_store(store)
    assert isinstance(files, SnapshotFiles)
    return Path(files.path(user_key(user)))


def _found(svc: MemoryService, user: str, query: str, k: int = 5) -> list[str]:
    return [h.record.content for h in svc.search(user, query, k) if h.why == "relevant"]


# --- the BM25 arrays ----------------------------------------------------------------------------


def _index(docs: dict[str, str]) -> BM25Index[str]:
    idx: BM25Index[str] = BM25Index()
    for i, text in docs.items():
        idx.add(i, text, extra=[("garden note", 0.5)])
    return idx


def test_an_index_loaded_from_arrays_scores_like_the_one_it_was_saved_from() -> None:
    docs = {f"d{i}": f"{WORDS[i % 13]} {WORDS[(i * 7) % 13]} 上海咖啡 {i}" for i in range(300)}
    built = _index(docs)
    for i in range(0, 300, 7):  # holes in the slots, one of them filled again
        built.remove(f"d{i}")
    built.add("late", "apple kale 上海", extra=[("garden note", 0.5)])
    loaded = BM25Index.from_export(built.export())
    for q in ["apple fig", "kale", "上海", "咖啡 mango", "nothing-here"]:
        assert dict(loaded.search(q, 400)) == pytest.approx(dict(built.search(q, 400)))
    assert len(loaded) == len(built) and "d8" in loaded and "d7" not in loaded


def test_writes_to_a_loaded_index_match_an_index_built_from_the_same_documents() -> None:
    docs = {f"d{i}": f"{WORDS[i % 13]} {WORDS[(i * 5) % 13]} word{i}" for i in range(200)}
    loaded = BM25Index.from_export(_index(docs).export())
    for i in range(0, 200, 3):  # remove a third, replace some, add new ones
        loaded.remove(f"d{i}")
        del docs[f"d{i}"]
    for i in range(1, 60, 5):
        docs[f"d{i}"] = f"zebra {WORDS[i % 13]}"
        loaded.add(f"d{i}", docs[f"d{i}"], extra=[("garden note", 0.5)])
    for i in range(500, 520):
        docs[f"d{i}"] = f"quince {i}"
        loaded.add(f"d{i}", docs[f"d{i}"], extra=[("garden note", 0.5)])
    expected = _index(docs)
    for q in ["apple", "zebra kale", "quince", "word3", "word4 fig", "garden"]:
        got, want = loaded.search(q, 400), expected.search(q, 400)
        assert dict(got) == pytest.approx(dict(want)), q
    again = BM25Index.from_export(loaded.export())  # an export of a mixed index
    assert dict(again.search("zebra apple", 400)) == pytest.approx(
        dict(expected.search("zebra apple", 400))
    )
    # The words of removed documents are gone from the arrays, not just unreferenced.
    assert "word3" not in loaded.export().terms and "word4" in loaded.export().terms


def test_a_snapshot_saved_under_other_bm25_values_scores_with_todays() -> None:
    # A snapshot written before the service's k1 / b changed must not keep the old ranking.
    lexical = LexicalIndexes()
    recs = [MemoryRecord.model_validate(r) for r in _rows("u", 30)]
    entry = lexical.build("u", recs, "v1")
    old = BM25Index(k1=1.2, b=0.75)
    for r in recs:
        text, extra = record_fields(r)
        old.add(r.id, text, extra=extra)
    entry.bm25 = old
    data, _ = dump_snapshot(entry, lambda r: r.model_dump_json().encode(), tag="t")
    back = load_snapshot(data, MemoryRecord.model_validate_json, tag="t")
    today = lexical.build("u", recs, "v1").bm25
    assert (back.bm25.k1, back.bm25.b) == (BM25_K1, BM25_B) != (1.2, 0.75)
    query = recs[3].content
    assert dict(back.bm25.search(query, 50)) == pytest.approx(dict(today.search(query, 50)))
    assert dict(back.bm25.search(query, 50)) != pytest.approx(dict(old.search(query, 50)))


def test_a_second_dump_reuses_bytes_only_of_records_with_the_same_words() -> None:
    # A purge rewrites the whole copy after each supersede: records that did not change are
    # not encoded again, and a changed record (replaced, or its words changed in place)
    # never keeps its old words in the copy.
    lexical = LexicalIndexes()
    recs = [MemoryRecord.model_validate(r) for r in _rows("u", 12)]
    entry = lexical.build("u", recs, "v1")
    calls: list[str] = []

    def encode(r: MemoryRecord) -> bytes:
        calls.append(r.id)
        return r.model_dump_json().encode()

    first, _ = dump_snapshot(entry, encode, tag="t")
    assert sorted(calls) == sorted(r.id for r in recs)
    calls.clear()
    entry.records["m1"].content = "User planted a quince in the yard."  # changed in place
    lexical.upsert("u", [recs[2].model_copy(update={"content": "User grows rhubarb."})])
    second, _ = dump_snapshot(entry, encode, tag="t")
    assert sorted(calls) == ["m1", "m2"]
    assert b"quince" in second and b"rhubarb" in second
    assert b"tree 1 in" not in second and b"tree 2 in" not in second and b"tree 1 in" in first
    back = load_snapshot(second, MemoryRecord.model_validate_json, tag="t")
    assert back.records["m5"].content == recs[5].content


def test_corrupt_truncated_or_foreign_bytes_are_refused() -> None:
    lexical = LexicalIndexes()
    recs = [MemoryRecord.model_validate(r) for r in _rows("u", 30)]
    entry = lexical.build("u", recs, "v1")
    data, _ = dump_snapshot(entry, lambda r: r.model_dump_json().encode(), tag="t")

    def decode(raw: bytes) -> MemoryRecord:
        return MemoryRecord.model_validate_json(raw)

    back = load_snapshot(data, decode, tag="t")
    assert back.version == "v1" and sorted(back.records) == sorted(entry.records)
    assert back.records["m3"].content == entry.records["m3"].content
    flipped = bytearray(data)
    flipped[len(data) // 2] ^= 0xFF
    for bad in (bytes(flipped), data[: len(data) // 2], b"", b"not a snapshot at all" * 10):
        with pytest.raises(SnapshotError):
            load_snapshot(bad, decode, tag="t")
    with pytest.raises(SnapshotError):
        load_snapshot(data, decode, tag="another record layout")


# --- through the service on the embedded store ----------------------------------------------------


def test_a_new_process_loads_the_copy_instead_of_scanning(store: Any) -> None:
    first = MemoryService(store, None)
    first.import_records("ann", _rows("ann", 40))
    first.add("ann", "User's favourite tree is the mango by the pond.", subject="garden.fav")
    want = _found(first, "ann", "mango pond")
    assert want[0] == "User's favourite tree is the mango by the pond."
    assert _copy(store, "ann").exists()
    assert oct(_copy(store, "ann").stat().st_mode & 0o777) == "0o600"

    second = _fresh(store)
    scans = count_scans(second)
    assert _found(second, "ann", "mango pond") == want
    assert scans == []  # loaded, not rebuilt
    assert _found(second, "ann", "banana") == _found(first, "ann", "banana")
    pinned = [h.record.content for h in second.search("ann", "mango") if h.why == "core"]
    assert pinned == [h.record.content for h in first.search("ann", "mango") if h.why == "core"]


def test_a_stale_copy_is_caught_up_from_the_change_log_tail(store: Any) -> None:
    writer = MemoryService(store, None)
    writer.import_records("bo", _rows("bo", 40))
    assert _found(writer, "bo", "orchard")  # persisted at this version
    saved = _copy(store, "bo").read_bytes()
    # Additions only: the copy stays as it was, behind the log.
    writer.add("bo", "User keeps bees behind the greenhouse.", subject="garden.bees")
    writer.import_records("bo", _rows("bo", 5, start=100, word="meadow"))
    assert _copy(store, "bo").read_bytes() == saved

    reader = _fresh(store)
    scans = count_scans(reader)
    assert _found(reader, "bo", "bees greenhouse") == ["User keeps bees behind the greenhouse."]
    assert len(_found(reader, "bo", "meadow", k=10)) == 5
    assert scans == []


def test_additions_by_a_process_without_the_snapshot_keep_the_copy(store: Any) -> None:
    first = MemoryService(store, None)
    first.import_records("bu", _rows("bu", 40))
    assert _found(first, "bu", "orchard")
    saved = _copy(store, "bu").read_bytes()
    other = _fresh(store)  # never searched: it cannot tell what the copy holds
    other.add("bu", "User grows saffron on the balcony.", subject="garden.saffron")
    assert _copy(store, "bu").read_bytes() == saved  # new words only: nothing to purge
    other.add("bu", "User grows saffron on the roof.", subject="garden.saffron")  # supersedes
    assert not _copy(store, "bu").exists()
    reader = _fresh(store)
    assert _found(reader, "bu", "saffron") == ["User grows saffron on the roof."]


def test_a_copy_older_than_the_log_reaches_is_rebuilt(store: Any) -> None:
    writer = MemoryService(store, None)
    writer.import_records("cy", _rows("cy", 40))
    assert _found(writer, "cy", "orchard")
    writer.import_records("cy", _rows("cy", CHANGE_LOG_KEYS + 10, start=1000, word="vineyard"))

    reader = _fresh(store)
    scans = count_scans(reader)
    assert len(_found(reader, "cy", "vineyard", k=3)) == 3
    assert scans == ["cy"]
    # ... and the rebuilt snapshot is persisted for the next process.
    third = _fresh(store)
    third_scans = count_scans(third)
    assert len(_found(third, "cy", "vineyard", k=3)) == 3 and third_scans == []


@pytest.mark.parametrize("damage", ["flip", "truncate", "garbage", "empty"])
def test_a_corrupt_copy_is_rebuilt_and_replaced(store: Any, damage: str) -> None:
    first = MemoryService(store, None)
    first.import_records("di", _rows("di", 40))
    want = _found(first, "di", "cherry tree")
    path = _copy(store, "di")
    data = bytearray(path.read_bytes())
    if damage == "flip":
        data[len(data) - 50] ^= 0x55
    elif damage == "truncate":
        data = data[: len(data) // 3]
    elif damage == "garbage":
        data = bytearray(os.urandom(len(data)))
    else:
        data = bytearray()
    path.write_bytes(bytes(data))

    second = _fresh(store)
    scans = count_scans(second)
    assert _found(second, "di", "cherry tree") == want
    assert scans == ["di"]
    third = _fresh(store)
    assert _found(third, "di", "cherry tree") == want and count_scans(third) == []


def test_forget_and_supersede_leave_no_word_in_the_copy(store: Any) -> None:
    svc = MemoryService(store, None)
    svc.import_records("ed", _rows("ed", 40))
    (zanzibar,) = svc.add("ed", "User's secret island is Zanzibar.", subject="travel.secret")
    (urumqi,) = svc.add("ed", "用户的秘密城市是乌鲁木齐。", subject="travel.city")
    (moved,) = svc.add("ed", "User's locker code is Quokka.", subject="gym.locker")
    assert _found(svc, "ed", "Zanzibar") and _found(svc, "ed", "乌鲁木齐")
    path = _copy(store, "ed")
    before = path.read_bytes()
    assert b"Zanzibar" in before and b"zanzibar" in before  # the record and its term
    assert "乌鲁".encode() in before

    svc.forget("ed", zanzibar.record.id)  # soft: the store keeps it, as history
    svc.forget("ed", urumqi.record.id, hard=True)
    svc.add("ed", "User's locker code is Wombat.", subject="gym.locker")  # supersedes
    after = path.read_bytes()
    for gone in (b"Zanzibar", b"zanzibar", "乌鲁".encode(), "木齐".encode(), b"Quokka", b"quokka"):
        assert gone not in after
    assert b"Wombat" in after and b"orchard" in after  # rewritten, not just dropped
    assert moved.record.id  # the superseded record is kept in the store, not in the copy

    fresh = _fresh(store)
    assert _found(fresh, "ed", "Zanzibar") == [] and _found(fresh, "ed", "乌鲁木齐") == []
    assert _found(fresh, "ed", "locker code") == ["User's locker code is Wombat."]


def test_a_forget_by_a_process_without_the_snapshot_deletes_the_copy(store: Any) -> None:
    svc = MemoryService(store, None)
    svc.import_records("fi", _rows("fi", 40))
    (rec,) = svc.add("fi", "User hides the key under the Tuatara statue.", subject="home.key")
    assert _found(svc, "fi", "Tuatara")
    assert b"Tuatara" in _copy(store, "fi").read_bytes()

    other = _fresh(store)  # has never searched: cannot rewrite the copy, so deletes it
    other.forget("fi", rec.record.id)
    assert not _copy(store, "fi").exists()
    assert _found(svc, "fi", "Tuatara statue") == []  # the first process caught up too
    assert b"Tuatara" not in _copy(store, "fi").read_bytes()  # and persisted anew


def test_delete_user_deletes_the_copy(store: Any) -> None:
    svc = MemoryService(store, None)
    svc.import_records("gu", _rows("gu", 40))
    assert _found(svc, "gu", "orchard") and _copy(store, "gu").exists()
    # What a save that crashed half-way leaves: a temporary copy of the user's words.
    leftover = Path(f"{_copy(store, 'gu')}.4242-1.tmp")
    leftover.write_bytes(_copy(store, "gu").read_bytes())
    svc.delete_user("gu")
    assert not _copy(store, "gu").exists()
    assert not leftover.exists()
    assert not list(_copy(store, "gu").parent.glob(_copy(store, "gu").name + "*"))
    assert _found(_fresh(store), "gu", "orchard") == []


def test_small_users_are_not_persisted(store: Any) -> None:
    svc = MemoryService(store, None)
    svc.import_records("hu", _rows("hu", 5))
    assert _found(svc, "hu", "orchard")
    assert not _copy(store, "hu").exists()


def test_record_fields_of_a_loaded_record_match_the_stored_one(store: Any) -> None:
    svc = MemoryService(store, None)
    rows = _rows("ia", 20)
    # An imported raw turn, with the turns said around it.
    rows[0] |= {"kind": "episode", "subject": "episode.turn.t1"}
    rows[0]["value"] = {"context": ["the neighbour said quinoa"]}
    svc.import_records("ia", rows)
    assert _found(svc, "ia", "orchard")
    loaded = _fresh(store)
    assert _found(loaded, "ia", "quinoa") == [rows[0]["content"]]
    snap = loaded.lexical.peek("ia")
    assert snap is not None
    assert record_fields(snap.records["m0"]) == record_fields(MemoryRecord.model_validate(rows[0]))
    assert snap.records["m0"].history == []


# --- real processes -------------------------------------------------------------------------------

_CHILD = textwrap.dedent(
    """
    import sys
    from memory.backends import BackendConfig, open_backends
    from memory.service import MemoryService
    from memory.lexical import changes
    changes.PERSIST_AT = 10
    with open_backends(BackendConfig(home=sys.argv[1])) as b:
        svc = MemoryService(b.store, None)
        scans = []
        real = svc._reader.scan
        svc._reader.scan = lambda u, **kw: scans.append(u) or real(u, **kw)
        hits = svc.search("jo", sys.argv[2], 5)
        print("|".join(h.record.content for h in hits if h.why == "relevant"))
        print("scans", len(scans))
    """
)


def _child(home: Path, query: str) -> tuple[list[str], int]:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(home), query],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout.splitlines()
    return [h for h in out[0].split("|") if h], int(out[1].split()[1])


def test_other_processes_see_writes_and_forgets_through_the_copy(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with open_backends(BackendConfig(home=str(home))) as b:
        svc = MemoryService(b.store, None)
        svc.import_records("jo", _rows("jo", 40))
        (kiwi,) = svc.add("jo", "User named the cat Kiwi.", subject="pet.cat")
        assert _found(svc, "jo", "cat Kiwi")
    assert _child(home, "cat Kiwi") == (["User named the cat Kiwi."], 0)
    with open_backends(BackendConfig(home=str(home))) as b:
        svc = MemoryService(b.store, None)  # a process that never searched: deletes the copy
        svc.forget("jo", kiwi.record.id)
        svc.add("jo", "User's dog is called Pepper.", subject="pet.dog")
    assert _child(home, "cat Kiwi") == ([], 1)  # rebuilt, then persisted
    assert _child(home, "dog Pepper") == (["User's dog is called Pepper."], 0)


async def test_the_async_store_the_graph_runs_on_persists_under_the_home(tmp_path: Path) -> None:
    from memory.backends import aopen_backends

    home = tmp_path / "ahome"
    async with aopen_backends(BackendConfig(home=str(home))) as b:
        files = changes.snapshot_store(b.store)
        assert isinstance(files, SnapshotFiles)
        assert Path(files.directory) == (home / "lexical").resolve()
        svc = MemoryService(b.store, None)
        await svc.aimport_records("ka", _rows("ka", 30))
        assert [h.record.content for h in await svc.asearch("ka", "mango tree 12")][0] == (
            _rows("ka", 30)[12]["content"]
        )
    assert (home / "lexical" / f"{user_key('ka')}.lexical").exists()


def test_a_sensitive_value_never_reaches_the_saved_copy(store: Any) -> None:
    # The copy is built from stored records, which pass the privacy screen first.
    svc = MemoryService(store, None)
    svc.import_records("sv", _rows("sv", 40))
    src = Source(via="api", thread_id="t-sv")
    svc.archive_turns("sv", [("m-card", "My card is 4111 1111 1111 1111, keep it safe.", "")], src)
    svc.add("sv", "User's bank card is 6222021234567890128.", subject="finance.card")
    assert _found(svc, "sv", "orchard")  # builds and persists the snapshot
    saved = _copy(store, "sv").read_bytes()
    assert b"orchard" in saved  # the copy is there, with what the user may keep
    assert b"4111 1111 1111 1111" not in saved and b"6222021234567890128" not in saved

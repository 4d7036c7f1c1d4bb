"""An imported turn is embedded with the turns around it: short answers become findable.

"Twice a week." means little alone; after "How often do you swim?" it answers "How
frequently do I swim?". `archive_turns` keeps what was said around a turn (an imported
dialogue), and `memory.index.chroma.index_text` makes the turn's vector from both. The table
below (zh and en, questions phrased apart from both the turn and its context) is scored
twice: with today's vectors and with vectors of the turn alone.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

import memory.index.chroma
from memory.extraction import CandidateMemory, Extraction
from memory.index.chroma import fingerprint, index_text
from memory.lifecycle import Policy
from memory.service import MemoryService
from memory.store.records import MemoryRecord, Source, namespace

# (id, turn, what was said around it)
TURNS = [
    (
        "grew-en",
        "Mostly a small fishing village up north.",
        ["Where did you grow up?", "Nice! Do you miss it?"],
    ),
    (
        "swim-en",
        "Twice a week, usually on Sundays.",
        ["How often do you go swimming?", "That is a lot!"],
    ),
    ("pet-en", "Yes, a golden retriever called Max.", ["Do you have any pets?", "Cute!"]),
    (
        "car-en",
        "The blue one, it was cheaper.",
        ["Which car did you end up buying?", "Good choice."],
    ),
    (
        "books-en",
        "Honestly, mostly thrillers these days.",
        ["What kind of books do you read?", "Any favourites?"],
    ),
    ("job-en", "Since 2019, at the city hospital.", ["How long have you been a nurse?", "Wow."]),
    ("grew-zh", "南方的一个小渔村。", ["你是在哪里长大的？", "挺好的，想家吗？"]),
    ("swim-zh", "一周两次，一般周日。", ["你多久游一次泳？", "挺勤快的！"]),
    ("pet-zh", "有，一只叫旺财的金毛。", ["你家里养宠物吗？", "好可爱！"]),
    ("car-zh", "蓝色那辆，便宜一些。", ["你最后买了哪辆车？", "不错。"]),
    ("books-zh", "最近主要看推理小说。", ["你平时喜欢读什么书？", "有推荐吗？"]),
    ("job-zh", "2019年开始，在市医院。", ["你当护士多久了？", "厉害。"]),
]
# question → the topic of the turn that answers it (either language's turn counts)
QUESTIONS = {
    "What is my hometown?": "grew", "Where did I grow up?": "grew",
    "What animal do I own?": "pet", "What pet do I have?": "pet",
    "What kind of vehicle did I purchase?": "car", "What genre do I like to read?": "books",
    "Where do I work?": "job", "How frequently do I swim?": "swim",
    "老家是哪儿？": "grew", "我在哪里长大？": "grew", "我有什么动物？": "pet",
    "我养了什么宠物？": "pet", "我买的是什么交通工具？": "car", "我爱看哪类读物？": "books",
    "我的工作单位是哪里？": "job", "我多长时间游一回？": "swim",
}  # fmt: skip


def _top1_right(service: MemoryService) -> int:
    source = Source(thread_id="import-1", said_at=datetime.now(UTC), via="import")
    service.archive_turns("kim", TURNS, source)
    topic = {r.source.message_ids[0]: r.source.message_ids[0].split("-")[0]
             for r in service.list("kim", include_turns=True)}  # fmt: skip
    right = 0
    for question, want in QUESTIONS.items():
        hits = service.search("kim", question, 3)
        right += bool(hits) and topic[hits[0].record.source.message_ids[0]] == want
    return right


def test_turns_with_their_context_answer_more_questions(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    with_context = _top1_right(service)
    entries = service.index.fingerprints("kim")  # type: ignore[union-attr]
    turn = next(r for r in service.list("kim", include_turns=True) if r.id in entries)
    assert entries[turn.id] == fingerprint(turn) and turn.context  # written as it says

    # The same turns, vectors from the turn alone (lexical entries still hold the context).
    monkeypatch.setattr(memory.index.chroma, "index_text", lambda record: record.content)
    service.reindex("kim")
    alone = _top1_right(service)
    print("top-1 right, with context vs alone:", with_context, alone)
    assert with_context >= 13, with_context  # of 16; measured 14
    assert with_context > alone, (with_context, alone)  # measured 14 vs 11


def test_index_text_and_fingerprint_follow_the_context() -> None:
    turn = MemoryRecord(
        id="t", user_id="kim", kind="episode", subject="episode.turn.x",
        content="Twice a week.", value={"context": ["How often do you swim?", "Nice."]},
    )  # fmt: skip
    assert index_text(turn) == "How often do you swim? Twice a week. Nice."
    bare = turn.model_copy(update={"value": None})
    assert index_text(bare) == "Twice a week." and bare.context == []
    # The vector encodes the context, so a changed context makes the entry stale.
    moved = turn.model_copy(update={"value": {"context": ["How often do you run?"]}})
    assert len({fingerprint(turn), fingerprint(bare), fingerprint(moved)}) == 3
    assert MemoryRecord.model_validate(turn.to_store()).context == turn.context
    single = turn.model_copy(update={"value": {"context": "How often do you swim?"}})
    assert single.context == ["How often do you swim?"]


def _import(service: MemoryService, user: str) -> dict[str, MemoryRecord]:
    source = Source(thread_id="imported", said_at=datetime.now(UTC), via="import")
    service.archive_turns(
        user,
        [
            ("m1", "I live in Berlin with my sister.", ["Where do you live these days?"]),
            ("m2", "Twice a week.", ["I live in Berlin with my sister.", "How often do you swim?"]),
        ],
        source,
    )
    return {r.source.message_ids[0]: r for r in service.list(user, include_turns=True)}


def _settled(service: MemoryService, user: str, turn_id: str) -> MemoryRecord:
    """The turn as stored, checked to be indexed as stored (vector and lexical entry)."""
    turn = service.get(user, turn_id)
    assert service.index is not None
    assert service.index.fingerprints(user)[turn_id] == fingerprint(turn)
    assert service.consolidate(user).reindexed == 0
    return turn


def test_a_superseded_turn_leaves_its_neighbours_context(service: MemoryService) -> None:
    turns = _import(service, "ana")
    said = Source(thread_id="imported", message_ids=["m1"], said_at=datetime.now(UTC))
    berlin = CandidateMemory(kind="fact", subject="profile.city", content="User lives in Berlin.")
    service.save("ana", Extraction(memories=[berlin]), said)
    moved = Source(thread_id="later", message_ids=["m7"], said_at=datetime.now(UTC))
    munich = CandidateMemory(kind="fact", subject="profile.city", content="User lives in Munich.")
    service.save("ana", Extraction(memories=[munich]), moved)

    assert service.get("ana", turns["m1"].id).status == "superseded"
    swim = _settled(service, "ana", turns["m2"].id)
    assert swim.context == ["How often do you swim?"] and swim.content == "Twice a week."
    assert [h.why for h in service.search("ana", "sister", 5)] == ["core"]  # Munich only


@pytest.mark.parametrize("hard", [False, True])
def test_a_forget_reaches_the_context_of_other_turns(service: MemoryService, hard: bool) -> None:
    # By phrase: a fact from another thread is forgotten; no context keeps stating it.
    turns = _import(service, "bo")
    (fact,) = service.add("bo", "User lives in Berlin.", subject="profile.city")
    service.forget("bo", fact.record.id, hard=hard)
    swim = _settled(service, "bo", turns["m2"].id)
    assert swim.context == ["How often do you swim?"]
    assert service.get("bo", turns["m1"].id).context == ["Where do you live these days?"]

    # By turn: a forgotten raw turn leaves the context of its neighbours.
    turns = _import(service, "cy")
    service.forget("cy", turns["m1"].id, hard=hard)
    assert _settled(service, "cy", turns["m2"].id).context == ["How often do you swim?"]
    assert [h.record.id for h in service.search("cy", "sister", 5) if h.why != "core"] == []


@pytest.mark.parametrize("hard", [False, True])
def test_a_turn_without_context_of_its_own_still_leaves_its_neighbours(
    service: MemoryService, hard: bool
) -> None:
    """The first turn of an import may carry no context, yet be in the next one's."""
    source = Source(thread_id="imported", said_at=datetime.now(UTC), via="import")
    first = "My locker code is the word tangerine."
    service.archive_turns(
        "di",
        [("m1", first, ""), ("m2", "Twice a week.", [first, "How often do you swim?"])],
        source,
    )
    turns = {r.source.message_ids[0]: r for r in service.list("di", include_turns=True)}
    service.forget("di", turns["m1"].id, hard=hard)
    assert _settled(service, "di", turns["m2"].id).context == ["How often do you swim?"]
    assert [h for h in service.search("di", "tangerine", 5) if h.why != "core"] == []


def test_a_hard_delete_reaches_archived_and_expired_neighbours(service: MemoryService) -> None:
    turns = _import(service, "ed")
    m2 = service.get("ed", turns["m2"].id)
    for status in ("archived", "expired"):
        stored = m2.model_copy(update={"status": status, "value": {**m2.value, "speaker": "Ed"}})
        service.store.put(namespace("ed", "episode"), m2.id, stored.to_store())
        assert service.get("ed", m2.id).status == status
        service.forget("ed", turns["m1"].id, hard=True)
        left = service.get("ed", m2.id)
        assert left.context == ["How often do you swim?"], status
        assert left.value["speaker"] == "Ed"  # what else the value held stays
        turns = _import(service, "ed")  # m1 again, for the next status


def test_only_raw_turns_have_context() -> None:
    fact = MemoryRecord(
        id="f", user_id="kim", kind="fact", subject="profile.city",
        content="User lives in Oslo.", value={"context": ["I was born in Bergen."]},
    )  # fmt: skip
    assert fact.context == [] and index_text(fact) == "User lives in Oslo."


@pytest.mark.parametrize("sensitive", ["drop", "redact"])
def test_a_sensitive_value_in_the_context_reaches_no_copy(
    service: MemoryService, sensitive: str
) -> None:
    """The screen covers the turn and its context together, before the store, the lexical
    index and the vector see either."""
    service = MemoryService(service.store, service.index, policy=Policy(sensitive=sensitive))
    source = Source(thread_id="imported", said_at=datetime.now(UTC), via="import")
    card = "4111 1111 1111 1111"
    around = [f"Sure, my card is {card}, book it.", "How often do you swim?"]
    service.archive_turns("fe", [("m2", "Twice a week.", around)], source)
    stored = service.list("fe", include_turns=True)
    if sensitive == "drop":
        assert stored == []  # the turn goes with its context
    else:
        (turn,) = stored
        assert turn.context[1] == "How often do you swim?" and "Sure, my card is" in turn.context[0]
        assert card not in index_text(turn) and card not in str(turn.value)
    assert [h for h in service.search("fe", card, 5) if h.why != "core"] == []

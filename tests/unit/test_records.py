import pytest

from memory.store.records import InvalidUserId, MemoryRecord, check_user_id, namespace, user_key


@pytest.mark.parametrize("uid", ["alice", "小王", "user_42", "a-b", "team:alice", "bob+test@corp"])
def test_valid_user_ids(uid: str) -> None:
    assert check_user_id(uid) == uid
    assert namespace(uid, "fact") == ("memories", uid, "fact")


@pytest.mark.parametrize(
    ("uid", "needle"),
    [
        ("", "empty"),
        ("   ", "empty"),
        (None, "empty"),
        ("a.b", "'.'"),
        ("a/b", "'/'"),
        ("x" * 200, "limit"),
        ("alice bob", "' '"),
    ],
)
def test_invalid_user_ids_get_a_clear_message(uid: object, needle: str) -> None:
    with pytest.raises(InvalidUserId, match=needle):
        check_user_id(uid)


def test_user_key_is_stable_and_distinct() -> None:
    assert user_key("alice") == user_key("alice") != user_key("Alice")
    assert len(user_key("小王")) == 24


def test_content_is_cleaned_on_the_way_in_and_read_back_as_stored() -> None:
    rec = MemoryRecord(id="1", user_id="u", kind="fact", subject="s", content="a\x00b\n  c")
    assert rec.content == "ab c"
    stored = rec.to_store()
    assert MemoryRecord.from_store(stored) == rec
    # Validation still runs on store reads: a value that is not a record is refused.
    with pytest.raises(ValueError):
        MemoryRecord.from_store({**stored, "kind": "nonsense"})
    assert MemoryRecord.model_validate({**stored, "content": "x\ty"}).content == "x y"

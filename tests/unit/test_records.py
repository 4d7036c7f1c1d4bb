import pytest

from memory.records import InvalidUserId, check_user_id, namespace, user_key


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

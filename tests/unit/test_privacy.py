import pytest

from memory.privacy import cn_id_ok, describe, find_sensitive, luhn_ok, redact


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("My password is hunter2!", "password"),
        ("我的密码是abc123", "password"),
        ("my api key is sk-abcdefghijklmnop1234", "secret"),
        ("token: ghp_abcdefghijklmnopqrstuvwxyz", "secret"),
        ("my card is 4111 1111 1111 1111", "card"),
        ("我的身份证号是11010519491231002X", "national_id"),
        ("SSN 123-45-6789", "national_id"),
        ("IBAN DE89 3704 0044 0532 0130 00", "bank_account"),
        ("账号 6222 0202 0000 1234 567", "bank_account"),
        ("call me at +49 30 1234567", "phone"),
        ("我的手机号是13812345678", "phone"),
        ("write to alice@example.com", "email"),
    ],
)
def test_sensitive_data_is_found_and_redacted(text: str, kind: str) -> None:
    assert [f.kind for f in find_sensitive(text)] == [kind]
    assert f"[redacted {kind}]" in redact(text)


@pytest.mark.parametrize(
    "text",
    [
        "下周三我们上线（2026-12-09）",
        "I was born in 1990 and have 2 kids",
        "Order 1234567890 shipped",
        "card 4111 1111 1111 1112",  # fails Luhn
        "11010519491231002Y",  # fails the ID checksum
        "User lives in Berlin.",
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert find_sensitive(text) == []


def test_checksums() -> None:
    assert luhn_ok("4111111111111111") and not luhn_ok("4111111111111112")
    assert cn_id_ok("11010519491231002X") and not cn_id_ok("110105194912310021")


def test_user_is_told_in_their_language() -> None:
    assert "password" in describe(["password"], zh=False)
    assert "密码" in describe(["password", "password"], zh=True)

import re

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from memory.privacy.screen import cn_id_ok, describe, find_sensitive, luhn_ok, redact


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


# (text, kind, the value that must be gone after redaction)
FOUND = [
    # --- Chinese, mostly glued to the value with no space ---
    ("我的邮箱是alice@example.com", "email", "alice@example.com"),
    ("联系我：bob.smith+tag@mail.example.co.uk。", "email", "bob.smith+tag@mail.example.co.uk"),
    ("我的OpenAI密钥是sk-proj-abcdefghijklmnopqrstuv1234", "secret", "abcdefghijklmnopqrstuv1234"),
    ("token是ghp_abcdefghijklmnopqrstuvwxyz0123456789", "secret", "ghp_abcdefghijklmnopqrst"),
    ("密钥：abcd1234efgh5678ijkl9012", "secret", "abcd1234efgh5678ijkl9012"),
    ("我的银行卡6222021234567890128", "card", "6222021234567890128"),
    ("卡号是4111-1111-1111-1111，别告诉别人", "card", "4111-1111-1111-1111"),
    ("我的电话是138-1234-5678", "phone", "138-1234-5678"),
    ("138 1234 5678", "phone", "138 1234 5678"),
    ("13812345678", "phone", "13812345678"),
    ("有事打13912345678找我", "phone", "13912345678"),
    ("电话+86 138 1234 5678", "phone", "138 1234 5678"),
    ("座机020-12345678", "phone", "020-12345678"),
    ("手机：１３８１２３４５６７８", "phone", "１３８１２３４５６７８"),  # full-width digits
    ("身份证44030419900307123X", "national_id", "44030419900307123X"),
    ("我的身份证号码是310115198506152343。", "national_id", "310115198506152343"),
    ("身份证号：110105 19491231 002X", "national_id", "19491231"),
    ("我的IBAN是GB82WEST12345698765432", "bank_account", "GB82WEST12345698765432"),
    ("口令是hunter2secret", "password", "hunter2secret"),
    ("密码：abc123，请记住", "password", "abc123"),
    ("PIN码是4821", "password", "4821"),
    ("支付密码123456", "password", "123456"),
    ("验证码是 839201", "password", "839201"),
    ("我的账户是 6222 0202 0000 1234 567", "bank_account", "0000 1234"),
    # --- English ---
    ("My email is bob@example.com.", "email", "bob@example.com"),
    ("Contact: carol_99@sub.example.org, thanks", "email", "carol_99@sub.example.org"),
    ("AWS key AKIAIOSFODNN7EXAMPLE in the config", "secret", "AKIAIOSFODNN7EXAMPLE"),
    ("slack bot token xoxb-123456789012-abcdefghijkl", "secret", "xoxb-123456789012"),
    ("maps key AIzaSyA1234567890abcdefghijklmnopqrstu", "secret", "AIzaSyA1234567890"),
    (
        "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",
        "secret",
        "eyJzdWIiOiIxMjM0NTY3ODkwIn0",
    ),
    ("Authorization: Bearer abcdef1234567890abcdef", "secret", "abcdef1234567890abcdef"),
    ("set api_key=abcd1234efgh5678ijkl", "secret", "abcd1234efgh5678ijkl"),
    ("my card is 5555555555554444.", "card", "5555555555554444"),
    ("amex 3782 822463 10005", "card", "822463"),
    ("call me at (415) 555-2671", "phone", "555-2671"),
    ("my phone: 415-555-2671.", "phone", "415-555-2671"),
    ("phone +1 415 555 2671", "phone", "415 555 2671"),
    ("office phone +44 20 7946 0958", "phone", "7946 0958"),
    ("reach me on +44 20 7946 0958 or 415-555-2671", "phone", "555-2671"),
    ("IBAN DE89 3704 0044 0532 0130 00", "bank_account", "3704 0044 0532"),
    ("SSN 123-45-6789", "national_id", "123-45-6789"),
    ("account number: 12345678901", "bank_account", "12345678901"),
    ("password is hunter2", "password", "hunter2"),
    ("pwd: x", "password", "x"),
    ("PIN is 4821", "password", "4821"),
    ("my pin: 1234", "password", "1234"),
    ("My password is hunter2.", "password", "hunter2"),
]


@pytest.mark.parametrize(("text", "kind", "value"), FOUND)
def test_sensitive_values_are_found_next_to_any_text(text: str, kind: str, value: str) -> None:
    assert {f.kind for f in find_sensitive(text)} == {kind}
    out = redact(text)
    assert value not in out
    assert f"[redacted {kind}]" in out


NOT_SENSITIVE = [
    "下周三我们上线（2026-12-09）",
    "I was born in 1990 and have 2 kids",
    "Order 1234567890 shipped",
    "card 4111 1111 1111 1112",  # fails Luhn
    "11010519491231002Y",  # fails the ID checksum
    "110105194913310024",  # month 13, though shaped like an ID
    "DE89 3704 0044 0532 0130 01",  # wrong IBAN checksum
    "User lives in Berlin.",
    "我住在成都",
    "我的生日是1990年5月3日",
    "python 3.11.7",
    "the meeting is in room 204",
    "price 12999 yuan",
    "我喜欢熊猫",
    "pineapple",
    "spinach",
    "sprint planning",
    "I got a token of appreciation",
    "The password is required to log in.",
    "我忘了密码了",
    "The meeting is at 10:30 on 2026-12-09, call me then",
    "phone 2026-12-09 10:30",
    "pip install scikit-learn and sk-learn-is-a-great-library-name",
    "pi is 3.1415926535897932",
    "My iPhone 15 cost 7999 yuan",
    "Windows build 10.0.19041.1234",
    "a total of 8,000,000 people",
    "account: 2026-12-09",
    "Order 4155552671 shipped",  # valid-looking, but no phone word
]


@pytest.mark.parametrize("text", NOT_SENSITIVE)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert find_sensitive(text) == []
    assert redact(text) == text


def test_the_keyword_stays_and_only_the_value_goes() -> None:
    assert redact("口令是hunter2secret") == "口令是[redacted password]"
    assert redact("My email is bob@example.com.") == "My email is [redacted email]."
    assert redact("api_key=abcd1234efgh5678ijkl") == "api_key=[redacted secret]"


def test_checksums() -> None:
    assert luhn_ok("4111111111111111") and not luhn_ok("4111111111111112")
    assert cn_id_ok("11010519491231002X") and not cn_id_ok("110105194912310021")
    assert not cn_id_ok("1101051949123100") and not cn_id_ok("11010519491231002Ｘ")


def test_user_is_told_in_their_language() -> None:
    assert "password" in describe(["password"], zh=False)
    assert "密码" in describe(["password", "password"], zh=True)


# --- properties ---------------------------------------------------------------------------------

PROPERTY = settings(
    max_examples=300,
    deadline=None,
    database=None,  # write nothing under the repository
    suppress_health_check=[HealthCheck.too_slow],
)
PIECES = [
    "password is ", "密码：", "口令是", "PIN码", "pin: ", "token=", "Bearer ", "sk-", "ghp_",
    "api_key=", "电话", "phone ", "call me at ", "+", "+86 ", "(415) ", "账号", "account ",
    "IBAN ", "DE89", "@", "bob@example.com", ".com", "4111 1111 1111 1111", "13812345678",
    "11010519491231002X", "123-45-6789", "[redacted ", "]", "-", " ", ".", "，", "。", "１",
]  # fmt: skip
texts = st.builds(
    "".join,
    st.lists(
        st.sampled_from(PIECES) | st.text(alphabet="0123456789 -+.", max_size=20) | st.text(),
        max_size=20,
    ),
)


@PROPERTY
@given(text=texts)
@example(text="phone pwd:a! 415-555-2671")
@example(text="密码：abc123")
def test_redacting_twice_changes_nothing(text: str) -> None:
    once = redact(text)
    assert redact(once) == once


def luhn_number(body: list[int]) -> str:
    digits = "".join(map(str, body))
    return next(digits + c for c in "0123456789" if luhn_ok(digits + c))


cards = st.lists(st.integers(0, 9), min_size=15, max_size=15).map(luhn_number)
filler = st.text(alphabet="abcXYZ 0123456789-.,:;@+()我的卡号是电话。，", max_size=12)
# A card number stands alone: no letter, digit or underscore touches it, and it is not the
# fraction of a decimal such as 0.4111111111111111.
STANDALONE = re.compile(r"(?<![A-Za-z0-9_])(?<![0-9]\.)[0-9]{16}(?![A-Za-z0-9_])")


def luhn_runs(text: str) -> set[str]:
    return {m.group() for m in STANDALONE.finditer(text) if luhn_ok(m.group())}


@PROPERTY
@given(parts=st.lists(cards | filler, max_size=8))
@example(parts=["4111111111111111"])
@example(parts=["卡号", "4111111111111111", "。"])
def test_no_card_number_survives_redaction(parts: list[str]) -> None:
    text = "".join(parts)
    assert not luhn_runs(text) & luhn_runs(redact(text))

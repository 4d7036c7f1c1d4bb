"""A screened thread splits into the statements that were said.

A statement's id is its place in its message, and later turns read the thread's screened
copy ("that" is the user's newest statement; a summary item knows its statements): if
redacting a value or cutting a forgotten statement changed where a message splits, the
newest statement would get another one's id and "forget that" would take the wrong thing
(a password beside "我喜欢围棋" once made "当我没说" forget the turn before it).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from memory.privacy.screen import redact
from memory.text.statements import split_text
from memory.turn import FORGOTTEN_TEXT, ThreadCuts

ZH = ["我喜欢围棋", "我住在成都", "我在小米上班", "我的女儿叫小雨", "我对花生过敏"]
EN = ["I like chess", "I live in Lyon", "I work at Globex", "my daughter is Maya"]
SECRETS_ZH = ["我的密码是Zovobipo", "我的手机号是13800138000", "我的卡号是6222021234567890128"]
SECRETS_EN = ["my password is Kabomitu7", "my phone is +1 415 555 0132"]


@st.composite
def messages(draw: st.DrawFn) -> tuple[str, list[str]]:
    """A message of 2-4 clauses, some with a sensitive value, and the clauses as said."""
    zh = draw(st.booleans())
    pool = ZH + SECRETS_ZH if zh else EN + SECRETS_EN
    clauses = draw(st.lists(st.sampled_from(pool), min_size=2, max_size=4, unique=True))
    if zh:
        return "，".join(clauses) + "。", clauses
    head, *rest = clauses
    return head[0].upper() + head[1:] + "".join(f", and {c}" for c in rest) + ".", clauses


@settings(max_examples=300)
@given(message=messages(), cut=st.lists(st.integers(0, 3), max_size=2), zh=st.booleans())
def test_redacting_and_cutting_keep_the_split(
    message: tuple[str, list[str]], cut: list[int], zh: bool
) -> None:
    text, clauses = message
    said = split_text(text)
    assert len(said) == len(clauses), said
    gone = [said[i] for i in set(cut) if i < len(said)]
    screened = ThreadCuts(statements=gone, redact=True).text(text, zh)
    again = split_text(screened)
    assert len(again) == len(said), (text, screened, again)
    for before, after in zip(said, again, strict=True):
        if before in gone:
            assert after.rstrip("。.") == FORGOTTEN_TEXT[zh], (before, after)
        else:
            assert after == redact(before), (before, after)


def test_an_abbreviations_full_stop_ends_no_statement() -> None:
    from memory.text.asking import split_sentences

    said = "I'm a nurse at St. Luke's, nights mostly. My GP is Dr. Okafor. I live in Hull."
    assert split_text(said) == [
        "I'm a nurse at St. Luke's, nights mostly.",
        "My GP is Dr. Okafor.",
        "I live in Hull.",
    ]
    assert split_sentences(said) == split_text(said)
    assert split_text("I love Mr. Bean. I hate Mrs. Doubtfire.") == [
        "I love Mr. Bean.",
        "I hate Mrs. Doubtfire.",
    ]

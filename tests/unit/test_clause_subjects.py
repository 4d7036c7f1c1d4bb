"""A clause with no subject of its own goes on with the one before it, in its sentence.

"我爸叫李建国，今年五十八岁": the age is the father's. Filed as the user's own age it would
replace it (`profile.age` is a slot the user has one of).
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from graphs.offline_rules import extract_rules

NOW = datetime(2026, 12, 3, 9, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "relative"),
    [
        ("我爸叫李建国，今年五十八岁", "爸爸"),  # 我爸 and 我爸爸 are one relative
        ("我女儿叫朵朵，今年五岁，特别调皮", "女儿"),
    ],
)
def test_an_age_said_after_a_relative_is_the_relatives(text: str, relative: str) -> None:
    subjects = [m.subject for m in extract_rules(text, NOW).memories]
    assert "profile.age" not in subjects, subjects
    assert any(s.startswith(f"family.{relative}.") and "岁" in s for s in subjects), subjects


def test_an_age_said_after_the_users_own_name_is_the_users() -> None:
    subjects = [m.subject for m in extract_rules("我叫小王，今年28岁", NOW).memories]
    assert "profile.age" in subjects, subjects


@pytest.mark.parametrize(
    "text", ["我的钢琴老师叫陈静", "my landlord is called Gerald", "我们组长叫老周"]
)
def test_the_name_of_someone_the_user_knows_is_not_the_users(text: str) -> None:
    subjects = [m.subject for m in extract_rules(text, NOW).memories]
    assert subjects, text
    assert "profile.name" not in subjects, subjects


@pytest.mark.parametrize(
    ("text", "relative"),
    [("个仔叫阿豪", "儿子"), ("我个女叫阿珊，喺香港读书", "女儿"), ("阿爸叫陈国强", "爸爸")],
)
def test_a_cantonese_word_for_a_relative_is_that_relative(text: str, relative: str) -> None:
    subjects = [m.subject for m in extract_rules(text, NOW).memories]
    assert "profile.name" not in subjects, subjects
    assert any(s.startswith(f"family.{relative}.") for s in subjects), subjects


@pytest.mark.parametrize("text", ["老大叫乐乐，老二叫安安", "同桌叫王琳"])
def test_a_name_said_of_whoever_opens_the_clause_is_theirs(text: str) -> None:
    subjects = [m.subject for m in extract_rules(text, NOW).memories]
    assert subjects, text
    assert "profile.name" not in subjects, subjects


@pytest.mark.parametrize(
    "text", ["我的名字叫小王", "My name is Lena", "我的英文名叫Jack", "大家都叫我阿杰"]
)
def test_the_users_own_name_is_still_the_users(text: str) -> None:
    subjects = [m.subject for m in extract_rules(text, NOW).memories]
    assert "profile.name" in subjects, subjects


def test_news_of_someone_else_changes_no_value_of_the_users() -> None:
    out = extract_rules("my coach changed gyms, she's at Ironworks now", NOW)
    subjects = [m.subject for m in out.memories]
    assert subjects, subjects
    assert not [s for s in subjects if s in ("work.company", "profile.city")], subjects


def test_the_users_own_news_still_takes_the_slot() -> None:
    said = "I told my manager, she was fine with it, I start at Fabrikam on Monday"
    out = extract_rules(said, NOW)
    assert "work.company" in [m.subject for m in out.memories]


@pytest.mark.parametrize(
    ("text", "relative", "said"),
    [
        ("我哥叫王磊，在成都开火锅店", "哥哥", "火锅店"),  # his work, not the user's
        ("我女儿叫朵朵，特别爱吃草莓", "女儿", "草莓"),  # her taste, not the user's
        ("我舅舅是医生，他每年都去西藏", "舅舅", "西藏"),  # said of him by 他
    ],
)
def test_what_goes_on_from_a_relative_is_filed_under_them(
    text: str, relative: str, said: str
) -> None:
    found = extract_rules(text, NOW).memories
    (of_it,) = [m for m in found if said in m.content]
    assert of_it.subject.startswith(f"family.{relative}."), of_it.subject


def test_what_goes_on_from_the_user_stays_the_users() -> None:
    found = extract_rules("我住在杭州，在一家银行上班", NOW).memories
    (job,) = [m for m in found if "银行" in m.content]
    assert job.subject.startswith("work."), job.subject


async def test_forgetting_a_relative_takes_what_was_said_of_them(offline_session) -> None:
    from kept import kept_for

    s = offline_session
    await s.turn("lin", "lin-1", "我哥叫王磊，在成都开火锅店")
    await s.turn("lin", "lin-1", "我对芒果过敏")
    await s.turn("lin", "lin-1", "我哥的事你别记了")
    kept = await kept_for(s, "lin")
    assert "王磊" not in kept and "火锅店" not in kept, kept
    assert "芒果" in kept


@pytest.mark.parametrize(
    "text",
    ["My doctor put me on statins a while back.", "my teacher has me practising scales daily"],
)
def test_what_someone_does_to_the_user_is_the_users(text: str) -> None:
    subjects = [m.subject for m in extract_rules(text, NOW).memories]
    assert subjects, text
    assert not any(s.startswith("people.") for s in subjects), subjects


def test_what_someone_the_user_knows_does_alone_is_theirs() -> None:
    subjects = [m.subject for m in extract_rules("My neighbour drives a red Tesla.", NOW).memories]
    assert subjects and all(s.startswith("people.") for s in subjects), subjects

from datetime import UTC, datetime

import pytest

from graphs.offline_rules import extract_rules
from memory.extraction import CandidateMemory, coerce_extraction, event_expiry

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)  # a Monday

# (sentence, expected [(kind, subject)])
REMEMBERED = [
    (
        "I'm vegetarian and I live in Berlin",
        [("preference", "diet.type"), ("fact", "profile.city")],
    ),
    ("My name is Alice Smith.", [("fact", "profile.name")]),
    ("I'm a software engineer at Google", [("fact", "work.role")]),
    ("I work at Acme Corp", [("fact", "work.company")]),
    ("I'm allergic to peanuts.", [("fact", "health.allergy.peanuts")]),
    ("I don't eat pork", [("preference", "diet.avoid.pork")]),
    ("I love hiking.", [("preference", "likes.hiking")]),
    ("I hate cilantro", [("preference", "likes.cilantro")]),
    ("We use Python and Postgres", [("fact", "tech.stack.pythonandpostgres")]),
    ("I moved to Munich.", [("fact", "profile.city")]),
    ("我叫小王，我是一名后端工程师", [("fact", "profile.name"), ("fact", "work.role")]),
    ("我不吃辣", [("preference", "diet.avoid.辣")]),
    ("我住在上海", [("fact", "profile.city")]),
    ("我对花生过敏", [("fact", "health.allergy.花生")]),
    ("我喜欢爵士乐", [("preference", "likes.爵士乐")]),
    ("我讨厌香菜", [("preference", "likes.香菜")]),
    ("我吃素", [("preference", "diet.type")]),
    ("我们用Go写后端", [("fact", "tech.stack.go")]),
]

NOT_REMEMBERED = [
    "Do I like sushi?",
    "Can you suggest dinner?",
    "I'd like a dinner idea",
    "If I lived in Paris I would be happy",
    "Maybe I like jazz",
    "我喜欢吃什么？",
    "如果我住在北京，我会天天吃烤鸭",
    "我可能下个月搬家",
    "你喜欢什么音乐吗",
    "The weather is nice today",
]


@pytest.mark.parametrize(("text", "expected"), REMEMBERED)
def test_explicit_statements_are_extracted(text: str, expected: list[tuple[str, str]]) -> None:
    got = [(c.kind, c.subject) for c in extract_rules(text, NOW).memories]
    assert got == expected


@pytest.mark.parametrize(
    "text", ["I use my inhaler every morning before work", "We use our spare room as an office"]
)
def test_a_thing_used_that_names_no_tool_is_no_tech_stack(text: str) -> None:
    # The tech-stack pattern wants a named tool ("We use Python"): a capital letter.
    got = [c.subject for c in extract_rules(text, NOW).memories]
    assert not [s for s in got if s.startswith("tech.")], got


@pytest.mark.parametrize("text", ["我在超市当收银员，孩子主要是我妈帮着带", "要是下雨我就不去了"])
def test_if_is_a_word_not_two_characters_inside_another(text: str) -> None:
    # 要是 (if) is inside 主要是 (mainly is): that sentence states, the other supposes.
    got = extract_rules(text, NOW).memories
    assert bool(got) == ("主要是" in text), [m.content for m in got]


@pytest.mark.parametrize("text", NOT_REMEMBERED)
def test_questions_hypotheticals_and_others_are_not(text: str) -> None:
    out = extract_rules(text, NOW)
    assert out.memories == [] and out.forget == []


@pytest.mark.parametrize(
    ("text", "prefix"),
    [
        ("My wife likes sushi", "family.wife."),
        ("我老婆喜欢吃辣", "family.老婆."),
        ("My colleague lives in Rome", "people."),
    ],
)
def test_other_peoples_statements_are_kept_but_never_as_the_users_own(
    text: str, prefix: str
) -> None:
    """A wife's taste is worth keeping (dinner ideas), filed under her, not as the user's."""
    (cand,) = extract_rules(text, NOW).memories
    assert cand.subject.startswith(prefix)
    assert not cand.subject.startswith(("likes.", "diet.", "profile."))


def test_dated_plan_becomes_event_with_resolved_date() -> None:
    out = extract_rules("我不吃辣，下周三我们上线。", NOW)
    kinds = {c.kind: c for c in out.memories}
    assert kinds["event"].event_date == "2026-12-09"
    assert "2026-12-09" in kinds["event"].content
    assert kinds["preference"].content == "用户不吃辣。"


def test_english_plan_next_friday() -> None:
    (cand,) = extract_rules("I'm flying to Tokyo next Friday", NOW).memories
    assert cand.kind == "event" and cand.event_date == "2026-12-11"


def test_past_dates_are_history_not_plans() -> None:
    (cand,) = extract_rules("I went hiking yesterday", NOW).memories
    assert cand.kind == "event" and cand.event_date == "2026-11-29"
    day = datetime.fromisoformat(cand.event_date).replace(tzinfo=UTC)
    assert event_expiry(day, NOW) is None  # history stays; a plan leaves the day after


@pytest.mark.parametrize(
    ("text", "query"),
    [
        ("forget that I live in Berlin", "I live in Berlin"),
        ("忘掉我的地址", "地址"),
        ("Please forget about my job", "my job"),
    ],
)
def test_forget_requests(text: str, query: str) -> None:
    out = extract_rules(text, NOW)
    assert [f.query for f in out.forget] == [query] and out.memories == []


def test_coerce_keeps_valid_items_and_drops_malformed_ones() -> None:
    raw = {
        "memories": [
            {"kind": "fact", "subject": "profile.city", "content": "User lives in Oslo."},
            {"kind": "opinion", "subject": "x", "content": "bad kind"},
            {"kind": "fact", "subject": "a", "content": "x", "confidence": "high"},
            "not an object",
        ],
        "forget": "not a list",
    }
    out = coerce_extraction(raw)
    assert [c.content for c in out.memories] == ["User lives in Oslo."]
    assert out.forget == []


@pytest.mark.parametrize("raw", [None, "text", 42, ["list"]])
def test_coerce_non_objects_yield_nothing(raw: object) -> None:
    assert coerce_extraction(raw).memories == []


def test_candidate_content_is_capped_and_subject_normalized() -> None:
    c = CandidateMemory(kind="fact", subject=" Profile City ", content="x" * 5000)
    assert c.subject == "profile_city" and len(c.content) == 500


def test_a_chinese_move_keeps_the_city_without_its_particle() -> None:
    (cand,) = extract_rules("我搬到杭州了", NOW).memories
    assert (cand.subject, cand.content, cand.value) == ("profile.city", "用户住在杭州。", "杭州")

"""A food said as a taste at a meal, and 额 said for 我 (issue 22).

Phrasings here are the project's own, none from the fresh sets.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from fakes import save_said

from graphs.offline_rules import extract_rules
from memory.requests import forget_requests
from memory.service import MemoryService
from memory.text.language import simplified

NOW = datetime(2026, 12, 6, 9, tzinfo=UTC)


def _top(service: MemoryService, question: str) -> list[str]:
    return [
        " · ".join([h.record.content, *(r.content for r in h.said_with)])
        for h in service.search("u", question, 5)
    ]


@pytest.mark.parametrize(
    ("statements", "question", "limit"),
    [
        (
            ["i hate okra, that slimy texture gets me every time",
             "im allergic to sesame so no tahini", "I work nights at the depot, cooking is rushed",
             "Our kitchen got redone last spring", "I bowl on tuesdays with the guys from work",
             "My truck is a 2011 silverado", "I live out past the grain elevator",
             "the wife does the books for the church"],
            "long shift, what should i cook tonight",
            "okra",
        ),
    ],
)  # fmt: skip
def test_a_food_said_as_a_taste_comes_with_a_meal(
    service: MemoryService, statements: list[str], question: str, limit: str
) -> None:
    save_said(service, statements, NOW)
    top = _top(service, question)
    assert any(limit in t for t in top), top


# --- 额 for 我 -------------------------------------------------------------------------------


def test_i_said_as_e_is_read_as_the_user() -> None:
    # Unread, "额" was a name or nothing: the allergy went untyped and "额爸" was no relative.
    kept = extract_rules("额对虾过敏 一吃就起疙瘩", NOW).memories
    assert "health.allergy.虾" in [m.subject for m in kept], kept
    asked = forget_requests("你把额爸的事儿也删了吧")
    assert asked and asked[0].subject == forget_requests("你把我爸的事儿也删了吧")[0].subject
    assert asked[0].subject is not None


@pytest.mark.parametrize(
    "text", ["这个月的额度快用完了", "额，让我想想", "名额只剩两个", "额头上磕了个包"]
)
def test_an_amount_a_forehead_or_a_pause_keeps_its_e(text: str) -> None:
    assert simplified(text) == text


# --- a topic first, then "no need to keep that one" --------------------------------------------


@pytest.mark.parametrize(
    ("said", "topic"),
    [
        ("the pottery evening classes; you needn't keep that either", "pottery"),
        ("My cousin's wedding plans - you don't need to remember those", "wedding"),
    ],
)
def test_a_topic_said_first_then_not_to_keep_it_names_the_topic(said: str, topic: str) -> None:
    # Only "forget that" / "delete it" read so before: "no need to keep that one" took back the
    # last statement, or nothing.
    asked = forget_requests(said)
    assert asked and topic in asked[0].query, asked


def test_not_keeping_that_alone_still_takes_back_the_last_statement() -> None:
    assert [r.query for r in forget_requests("no need to keep that one, ta")] == ["that"]


def test_a_relative_named_after_the_thing_a_topic_is_about_is_not_the_topic() -> None:
    # Filed as a request about the aunt, it forgot what was filed under her and kept the
    # cooking, said in the same sentence.
    asked = forget_requests("and the cooking stuff my aunt showed me, no need to keep that")
    assert [(r.query, r.subject) for r in asked] == [("the cooking stuff my aunt showed me", None)]
    # A thing named by the relative is theirs.
    assert forget_requests("the nephew stuff, please drop it")[0].subject == "family.nephew"

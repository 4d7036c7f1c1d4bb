"""News of a diet begun ends no other food record; "let go of" a topic asks to forget it (issue 22).

A request read as a question, said with what it comes from, keeps what it comes from. News
said in one clause of several changes a record by the clause nearest to it.

What the user eats is a list, as their health is (`memory.understanding.updates.NAMED_ONLY`):
news of one more item ("lately I'm off bread at night") is no change of another ("I can't
stand olives"), though the encoder puts both near, and both say "eat" or "不吃". Only
news that names the item changes it. And a forget request may ask the assistant to let go
of something, or say the user would sooner it didn't hold on to it.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from graphs.offline_rules import extract_rules
from memory.lifecycle import is_deictic
from memory.requests import forget_requests

_NOW = datetime(2026, 3, 2, 9, tzinfo=UTC)
_SCALLIONS = [("d1", "diet.葱我是一口都不吃", "用户说：葱我是一口都不吃，看到就没胃口，做菜别放。")]
_VEGETARIAN = [("d1", "diet.vegetarian", "User said: I've been vegetarian for ten years.")]


def test_a_request_said_with_what_it_comes_from_keeps_the_statement() -> None:
    # Read whole as a question (a request), with no form of one: what it comes from is kept,
    # the request is not. Before, nothing of it was kept, not even the daughter's dislike.
    found = extract_rules("我女儿见不得葱 一点都不沾 你做菜推荐别带葱的哈", _NOW).memories
    assert any("我女儿见不得葱" in c.content for c in found), found
    assert not any("推荐" in c.content for c in found), found


def test_news_of_a_diet_begun_ends_no_dislike() -> None:
    # Read as an update of the diet family, with the scallions the one food record listed:
    # both say 不吃, and before, that was enough to end the scallions.
    found = extract_rules("最近在控制体重，晚上米饭面条都不吃了", _NOW, _SCALLIONS).memories
    assert any("米饭面条" in c.content for c in found), found
    assert not any(c.updates for c in found), found


def test_news_that_names_the_food_item_still_changes_it() -> None:
    found = extract_rules("I'm not vegetarian any more, I eat chicken now.", _NOW, _VEGETARIAN)
    assert [c.updates for c in found.memories] == ["d1"], found.memories


@pytest.mark.parametrize(
    ("request_text", "names"),
    [
        ("while you're at it, could you let go of anything on my knee surgery", "knee"),
        ("let go of everything you have on my divorce, please", "divorce"),
        ("I would rather you did not hang on to my overdraft figures", "overdraft"),
        ("心理咨询那个，你一起删了", "心理咨询"),
        ("我相亲那件事，也帮我删了吧", "相亲"),
        # The topic first, then "that … either": the topic is what is named, not "either".
        ("my salary figure: I'd sooner you didn't hang on to that either", "salary"),
        # Where it is kept ("on file") is no topic either: the topic said first is.
        ("my passport renewal, I would rather you did not keep that on file", "passport"),
    ],
)
def test_a_request_to_let_go_of_a_topic_names_it(request_text: str, names: str) -> None:
    (found,) = forget_requests(request_text)
    assert not is_deictic(found.query), found
    assert names in found.query.casefold(), found
    # What asks is no word of the topic ("sooner", "the business about", "either", 一起).
    asking = {"sooner", "either", "while", "have", "would", "did"}
    assert not asking & set(found.query.split()), found
    assert "一起" not in found.query and "也" not in found.query, found


@pytest.mark.parametrize(
    "text",
    ["You didn't hold on to my number, did you?", "He didn't hold on to the job for long."],
)
def test_what_was_not_kept_is_no_request(text: str) -> None:
    assert forget_requests(text) == []


def test_news_in_one_clause_files_the_clause_nearest_what_it_changes() -> None:
    # "健身操队昨天开会了" reads as the news (update 0.56), and it ended the fee: the new fee
    # was lost. What changed is the clause nearest the fee; the meeting is kept as an event.
    fee = [("f1", "note.x", "用户说：健身操的会费我收，一人一个月十五块。")]
    found = extract_rules("健身操队昨天开会了，会费以后一人一个月二十五块", _NOW, fee).memories
    (change,) = [c for c in found if c.updates]
    assert change.updates == "f1" and "二十五" in change.content, found
    assert any("开会" in c.content and not c.updates for c in found), found

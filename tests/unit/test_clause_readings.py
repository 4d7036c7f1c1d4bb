"""Statements read with what surrounds them, and a meal's limits recalled together (issue 22).

A chat message ends a sentence with an emoji as often as with a full stop; a short sentence
names its subject only with the message it was said in; a dinner question must bring the
user's diet and what their body does not take, though the encoder puts neither near it.
Phrasings here are the project's own, none from the fresh sets.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from graphs.offline_rules import extract_rules, extractive_summary
from memory.extraction import CandidateMemory, Extraction
from memory.recall import ranking
from memory.recall.search import Recall
from memory.service import MemoryService
from memory.store.records import Source
from memory.text.asking import split_sentences

NOW = datetime(2026, 11, 30, 9, tzinfo=UTC)


def test_an_emoji_followed_by_more_words_ends_a_sentence() -> None:
    said = "Long day at the bakery 🥐 running my own shop is exhausting"
    assert split_sentences(said) == [
        "Long day at the bakery 🥐",
        "running my own shop is exhausting",
    ]
    assert split_sentences("又加班到十点😩做产品经理真不容易") == [
        "又加班到十点😩",
        "做产品经理真不容易",
    ]
    # an emoji that ends the message ends nothing more
    assert split_sentences("Got the keys today 🎉") == ["Got the keys today 🎉"]
    subjects = [m.subject for m in extract_rules(said, NOW).memories]
    assert any(s.startswith("work.") for s in subjects), subjects


def test_the_thread_summary_keeps_no_question() -> None:
    summary = extractive_summary(
        ["Did Orwell never finish that last novel?", "Never schedule calls before 9am."], None
    )
    assert summary.constraints == ["Never schedule calls before 9am."]


def test_a_short_sentence_takes_its_subject_from_its_message() -> None:
    # "Kiwi is my enemy." alone reads as about the user's family; with the next sentence it
    # is what the user cannot eat.
    said = "Kiwi is my enemy. My mouth tingles and my lips puff up after a single slice."
    kiwi = next(m for m in extract_rules(said, NOW).memories if "Kiwi" in m.content)
    assert kiwi.subject.startswith(("diet.", "health.")), kiwi.subject


def _save(service: MemoryService, notes: list[tuple[str, str, str]]) -> None:
    for n, (kind, subject, content) in enumerate(notes):
        cand = CandidateMemory(kind=kind, subject=subject, content=content)  # type: ignore[arg-type]
        source = Source(thread_id="t", message_ids=[f"m{n}"], said_at=NOW)
        service.save("u", Extraction(memories=[cand]), source)


LIMITS = [
    ("preference", "diet.type", "User is vegetarian."),
    ("preference", "diet.mushrooms", "User said: mushrooms are a hard no for me."),
    ("preference", "diet.coffee", "User said: oat milk in my coffee, always."),
    ("fact", "health.pill", "User said: I take a blood thinner every evening."),
    ("fact", "health.knee", "User said: my left knee aches on the stairs."),
    ("preference", "health.peanuts", "User said: peanuts make my throat close up."),
]
CHATTER = [
    ("fact", "likes.films", "User said: we watch a film every Friday night."),
    ("fact", "work.role", "User said: I run the night desk at a radio station."),
    ("fact", "likes.garden", "User said: the tomatoes in my garden came up this week."),
    ("fact", "likes.supper", "User said: what I make for supper is what my kids ask for."),
    ("fact", "home.kitchen", "User said: our kitchen is tiny, two burners and no oven."),
    ("fact", "likes.shop", "User said: I should make a list before I shop."),
]


def test_a_meal_question_brings_the_diet_and_what_the_body_does_not_take(
    service: MemoryService,
) -> None:
    # Six limits in all, more than the five recalled: each family is counted on its own.
    _save(service, LIMITS + CHATTER)
    found = service.search("u", "What should I make for supper?", 5)
    got = [h.record.content for h in found if h.why == "relevant"]
    assert "User is vegetarian." in got, got
    assert "User said: peanuts make my throat close up." in got, got


def test_a_question_about_someone_elses_meals_lifts_none_of_the_users(
    service: MemoryService,
) -> None:
    _save(service, LIMITS[:2] + LIMITS[3:] + CHATTER)
    asked = "What does my brother like to eat for supper?"
    records = {r.id: r for r in service.list("u")}
    assert not Recall._family_matches(records, asked, 5, NOW, someone=False)
    # the user's own supper still brings them
    assert Recall._family_matches(records, "What should I make for supper?", 5, NOW, someone=False)


@pytest.mark.parametrize(
    "asked",
    [
        "My brother's over for supper on Friday, what should I make?",
        "老公今晚不回来吃，就我一个人，吃点啥好？",
    ],
)
def test_a_meal_the_user_shares_with_someone_lifts_the_users_own_limits(
    service: MemoryService, asked: str
) -> None:
    _save(service, LIMITS + CHATTER)
    service.save(
        "u",
        extract_rules("My brother is called Sam, he works at a bakery.", NOW),
        Source(thread_id="t", said_at=NOW),
    )
    records = {r.id: r for r in service.list("u")}
    lifted = {records[i].content for i in Recall._family_matches(records, asked, 5, NOW, False)}
    assert "User is vegetarian." in lifted, lifted


def test_ranking_ties_go_by_content_not_by_random_ids() -> None:
    class Rec:
        kind = "fact"

        def __init__(self, content: str) -> None:
            self.content = content

    records = {"a": Rec("Alpha fact."), "z": Rec("Beta fact.")}
    dense = [("z", 0.5), ("a", 0.5)]
    ranked = ranking.rank("anything", dense, [], records, NOW)
    assert [i for i, _ in ranked] == ["a", "z"]


def test_a_clause_of_a_statement_with_no_form_of_a_question_states() -> None:
    # The model reads "跟你讲一下我对虾过敏" alone as asking (0.55); said in a statement, with
    # no question word, particle or mark, it states the allergy.
    said = [m.content for m in extract_rules("跟你讲一下我对虾过敏，吃一口就起疹子", NOW).memories]
    assert any("虾过敏" in s for s in said), said


def test_a_clause_that_asks_by_its_form_still_asks() -> None:
    said = [m.content for m in extract_rules("我是程序员，有什么适合我的运动吗", NOW).memories]
    assert not any("运动" in s for s in said), said

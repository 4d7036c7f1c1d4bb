"""A question about a kind of thing recalls the one the user named by its make or breed.

"my pooch keeps chewing the skirting boards" shares no word with "our whippet Dot is eight
now", and a user with many possessions has them all filed under one family, so the family
the question asks about does not say which. The things head reads the question and the
nearest memories as a kind of thing (`memory.recall.search._of_kind`): the one of that kind
comes first.
"""

from __future__ import annotations

import pytest

from agent.runner import Session

OWNED = [
    "I'm allergic to kiwi",
    "my gran lives in Cork",
    "I own a Brompton folding bike",
    "my phone is a Pixel 7",
    "I have a Fender Strat I never play",
    "I bought a Fujifilm X100 last year",
    "I wear a Casio watch every day",
    "my laptop is a ThinkPad",
    "we have a sofa bed in the spare room",
    "I have a Kindle full of crime novels",
    "our whippet Dot is eight now",
]


@pytest.mark.parametrize(
    "question",
    [
        "my pooch keeps chewing the skirting boards, tips?",
        "the vet says my girl needs to lose weight, any ideas?",
        "我家狗最近不爱吃饭咋办",
    ],
)
async def test_a_question_about_a_kind_of_thing_recalls_the_one_named_by_its_breed(
    offline_session: Session, question: str
) -> None:
    s = offline_session
    for text in OWNED:
        await s.turn("ola", "ola-1", text)
    res = await s.turn("ola", "ola-2", question)
    top = [r["content"] for r in res.recalled[:3]]
    assert any("whippet" in c for c in top), top

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
from memory.understanding import read_utterances

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
    "gaming on a Ryzen 5 with a 3060",
]


@pytest.mark.parametrize(
    ("question", "named"),
    [
        ("my pooch keeps chewing the skirting boards, tips?", "whippet"),
        ("the vet says my girl needs to lose weight, any ideas?", "whippet"),
        ("我家狗最近不爱吃饭咋办", "whippet"),
        # Questions were written for the head too: "PC" and 主机 are no words of the statement.
        ("will my PC run the new Doom?", "Ryzen"),
        ("我这台主机带得动黑神话吗", "Ryzen"),
    ],
)
async def test_a_question_about_a_kind_of_thing_recalls_the_one_named_by_its_make(
    offline_session: Session, question: str, named: str
) -> None:
    s = offline_session
    for text in OWNED:
        await s.turn("ola", "ola-1", text)
    res = await s.turn("ola", "ola-2", question)
    top = [r["content"] for r in res.recalled[:3]]
    assert any(named in c for c in top), top


def test_the_head_reads_a_question_by_the_kind_of_thing_it_depends_on() -> None:
    asked = [
        "到时候那边要带厚衣服吗",
        "主子最近老吐毛咋办",
        "my knees ache after training, should I switch to something gentler?",
        "what's a good gift for my boss?",
    ]
    things = [r.thing for r in read_utterances(asked)]
    assert things == ["trip", "pet", "exercise", "other"], things

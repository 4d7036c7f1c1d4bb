"""What a question's answer depends on is read by the `asked` head (issue 22).

The family head reads what a statement is about; a question often names something else
than what a good answer needs ("where can I hire a kayak somewhere near me" is about a
kayak, and needs where the user lives). The `asked` head, fitted with every indirect
question (`memory.understanding.corpus.ASKED`), reads what it needs, and what the user
keeps under that family is lifted for it (`memory.recall.search.Recall._family_matches`).
The questions are from the held-out quarter of the indirect questions (in no fit); the
statements are the project's own.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agent.runner import Session, open_session
from graphs.settings import Settings
from memory.backends import BackendConfig
from memory.understanding import read_utterance

CASES = {
    "en": (
        "We rent a two-bed flat in Luton, by the station.",
        "where can I hire a kayak somewhere near me",
        "Luton",
        "home",
    ),
    "zh": (
        "我自己在县城弄了个奶茶铺子，三年了。",
        "我那小店想在抖音上推一推，从哪下手比较好",
        "奶茶铺子",
        "work",
    ),
}
OTHERS = {
    "en": [
        "My sister Maja is a dentist in Leeds.",
        "I'm allergic to penicillin.",
        "I drive a 2012 Ford Focus.",
        "I've been learning Portuguese on Duolingo.",
        "Our wedding anniversary is on 4 August.",
        "I play chess online most evenings.",
        "My dad Piotr retired from the railways last year.",
        "I can't stand coriander.",
        "I work as a payroll clerk for the council.",
        "My cat Biscuit is fourteen.",
        "I run 5k every Saturday morning.",
        "My daughter starts primary school in September.",
    ],
    "zh": [
        "我妹妹在成都当牙医。",
        "我对青霉素过敏。",
        "我开一辆二手的大众朗逸。",
        "最近在自学日语。",
        "我们结婚纪念日是八月四号。",
        "晚上经常在网上下象棋。",
        "我爸去年从铁路局退休了。",
        "香菜我是真受不了。",
        "我家猫叫饼干，十四岁了。",
        "每周六早上跑五公里。",
        "我女儿九月上小学。",
        "我老公在医院当护士。",
    ],
}


async def relevant(session: Session, user: str, query: str) -> list[str]:
    """Return what the top 5 relevant memories show, with what was said beside each."""
    found = await asyncio.to_thread(session.service.search, user, query, 5)
    return [
        t
        for r in found
        if r.why == "relevant"
        for t in (r.record.content, *(w.content for w in r.said_with))
    ]


@pytest.fixture
async def session(tmp_path: Path) -> AsyncIterator[Session]:
    settings = Settings(backend=BackendConfig(home=str(tmp_path / "home")), model="offline")
    async with open_session(settings, setup=True) as s:
        yield s


@pytest.mark.parametrize("lang", ["en", "zh"])
async def test_a_question_lifts_the_family_its_answer_needs(session: Session, lang: str) -> None:
    said, question, word, family = CASES[lang]
    reading = read_utterance(question)
    # The family head reads the words (a kayak, a shop's marketing) as about another family.
    assert reading.asked == family and reading.family != family, reading
    user = f"u-{uuid.uuid4().hex[:6]}"
    for line in [*OTHERS[lang], said]:
        await session.turn(user, f"{user}-a", line)
    top = await relevant(session, user, question)
    assert any(word in t for t in top), top


async def test_a_request_read_as_a_plan_lifts_the_family_too(session: Session) -> None:
    # "help me plan meals for the week" reads as a plan (0.95), not a question: the family
    # its answer needs was lifted only for questions.
    request = "help me plan meals for the week"
    assert read_utterance(request).intent == "plan" and read_utterance(request).asked == "diet"
    user = f"u-{uuid.uuid4().hex[:6]}"
    plans = [
        "I plan my week every Sunday night with a paper diary.",
        "This week I have three early shifts and a dentist visit.",
        "My manager wants the project plan by the end of the week.",
        "Every week I help my neighbour with her shopping.",
    ]
    for line in [*OTHERS["en"], *plans, "Sesame is a no-go for me, I break out in hives."]:
        await session.turn(user, f"{user}-a", line)
    top = await relevant(session, user, request)
    assert any("Sesame" in t or "sesame" in t for t in top), top

"""Where the user works and what the user is learning, as the shipped model reads them.

A workplace's location was read as home or health ("我们医院在…" filed as where the user
lives), and learning said in passing was about nothing in particular or a hobby, so
"Where's my workplace?" and "What am I learning?" found nothing. Every sentence here was
written for this test: none is in the corpus (checked below), a corpus split or a fresh set.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from graphs.offline_rules import extract_rules
from memory.understanding import FAMILY_PREFIX, read_utterances
from memory.understanding.corpus import TRAIN_ONLY, read_sources

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)

WORKPLACES = [
    "Our practice is on the second floor of the Riverside mall.",
    "The vet clinic I work at is at the end of Station Road.",
    "The primary school I teach at is a ten-minute bike ride from the harbour.",
    "我们医院在人民路上，离地铁站不远。",
    "我们那家超市在万达广场负一楼。",
    "我们厂在开发区北边，挨着高速。",
]
LEARNING = [
    "I've been taking trumpet lessons since the summer.",
    "Been trying to learn to juggle, three balls so far.",
    "I signed up for a woodworking class at the community hall.",
    "我最近在学粤剧。",
    "我报了一个拳击班，刚去了两次。",
    "我在自学摄影，买了本教材。",
    "最近在学西语，打算去西班牙玩。",
]
HOMES = ["I live on Maple Avenue, near the park.", "我家在滨江路，离公园很近。"]
ASKING = ["How do I learn Greek on my own?", "学二胡难吗？"]


def test_none_of_these_sentences_is_in_the_corpus() -> None:
    corpus = {u.text for u in read_sources()} | {u.text for u in read_sources(names=TRAIN_ONLY)}
    assert not corpus & {*WORKPLACES, *LEARNING, *HOMES, *ASKING}


@pytest.mark.parametrize("text", WORKPLACES)
def test_where_the_user_works_is_about_work_not_home(text: str) -> None:
    reading = read_utterances([text])[0]
    assert (reading.intent, reading.kind, reading.family) == ("remember", "fact", "work")
    # ... and it is filed under work, where "Where's my workplace?" looks (not the home slot)
    subjects = [m.subject for m in extract_rules(text, NOW).memories]
    assert subjects and all(s.startswith(FAMILY_PREFIX["work"] + ".") for s in subjects), subjects


@pytest.mark.parametrize("text", LEARNING)
def test_what_the_user_is_learning_is_a_skill(text: str) -> None:
    reading = read_utterances([text])[0]
    assert (reading.intent, reading.kind, reading.family) == ("remember", "fact", "skills")
    subjects = [m.subject for m in extract_rules(text, NOW).memories]
    assert subjects and all(s.startswith(FAMILY_PREFIX["skills"] + ".") for s in subjects), subjects


@pytest.mark.parametrize("text", HOMES)
def test_where_the_user_lives_stays_home(text: str) -> None:
    reading = read_utterances([text])[0]
    assert (reading.intent, reading.family) == ("remember", "home")


@pytest.mark.parametrize("text", ASKING)
def test_asking_how_to_learn_is_a_question(text: str) -> None:
    assert read_utterances([text])[0].intent == "question"

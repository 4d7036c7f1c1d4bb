"""A clause kept in the user's words is recalled with what its message said (issue 22).

The offline path files a message clause by clause, and a clause alone often says nothing:
"my lips swell up" answers "Am I allergic to anything?" only beside "Peanuts wreck me." of
the same message. A recalled clause brings the message's raw statements still kept, in one
place of the top, and a forgotten statement goes from those copies too. Phrasings here are
the project's own, none from the fresh sets.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from scale_checks import leaks

from agent.runner import Session, open_session
from graphs.settings import Settings
from memory.backends import BackendConfig
from memory.recall.search import Recalled
from memory.understanding.updates import record_text

CASES = {
    "en": (
        "Peanuts wreck me. One bite and my lips swell up, so I check every wrapper.",
        "Do my lips ever swell up?",
        "Peanut",
        "Please forget what I told you about peanuts.",
    ),
    "zh": (
        "虾我真的吃不了。吃一口身上就起红疙瘩，得吃抗过敏药。",
        "我身上为什么会起红疙瘩？",
        "虾",
        "请忘掉我说过的关于虾的事。",
    ),
}
OTHERS = {
    "en": ["I work night shifts at a bakery.", "My brother Tomas lives in Porto."],
    "zh": ["我在一家面包店上夜班。", "我哥哥住在厦门。"],
}


@pytest.fixture
async def session(tmp_path: Path) -> AsyncIterator[Session]:
    settings = Settings(backend=BackendConfig(home=str(tmp_path / "home")), model="offline")
    async with open_session(settings, setup=True) as s:
        yield s


def shown(found: list[Recalled]) -> list[str]:
    return [rec.content for r in found for rec in r.shown]


@pytest.mark.parametrize("lang", ["en", "zh"])
async def test_a_clause_comes_with_what_its_message_said(session: Session, lang: str) -> None:
    said, question, word, _ = CASES[lang]
    user = f"u-{uuid.uuid4().hex[:6]}"
    for line in [*OTHERS[lang], said]:
        await session.turn(user, f"{user}-a", line)
    records = await session.service.alist(user, include_turns=True)
    # The message was filed in pieces, and some pieces do not name what they are about.
    clauses = [
        r
        for r in records
        if r.kind != "episode"
        and record_text(r.content).rstrip(".。") in said
        and word not in r.content
    ]
    assert clauses, [r.content for r in records]
    found = await asyncio.to_thread(session.service.search, user, question, 5)
    relevant = [r for r in found if r.why == "relevant"]
    clause = next(r for r in relevant if r.record.id in {c.id for c in clauses})
    assert any(word in w.content for w in clause.said_with), [w.content for w in clause.said_with]
    # What was shown beside a clause takes no place of its own.
    texts = shown(found)
    assert len(texts) == len(set(texts)), texts


@pytest.mark.parametrize("lang", ["en", "zh"])
async def test_a_forgotten_statement_leaves_the_clauses_said_with_it(
    session: Session, lang: str
) -> None:
    said, question, word, forget = CASES[lang]
    user = f"u-{uuid.uuid4().hex[:6]}"
    for line in [*OTHERS[lang], said]:
        await session.turn(user, f"{user}-a", line)
    asked = await session.turn(user, f"{user}-a", question)
    assert any(word in w for r in asked.recalled for w in r["said_with"]), asked.recalled
    await session.turn(user, f"{user}-a", forget)
    found = await asyncio.to_thread(session.service.search, user, question, 5)
    assert not any(word in t for t in shown(found)), shown(found)
    # The thread's copy of what was recalled beside a clause is rewritten as well.
    state = await session.graph.aget_state({"configurable": {"thread_id": f"{user}-a"}})
    recalled = json.dumps(state.values.get("recalled"), ensure_ascii=False)
    assert word not in recalled, recalled


async def test_a_memory_in_the_extractors_words_brings_the_rest_of_its_message(
    session: Session,
) -> None:
    # The rule keeps "用户在一家做物流的公司工作。" and drops the company's name.
    user = f"u-{uuid.uuid4().hex[:6]}"
    for line in [*OTHERS["zh"], "我在一家做物流的公司上班，叫远帆物流，主要管仓库"]:
        await session.turn(user, f"{user}-a", line)
    found = await asyncio.to_thread(session.service.search, user, "我在哪家公司上班？", 5)
    place = next(r for r in found if r.record.subject == "work.place")
    assert "远帆" not in place.record.content
    assert any("远帆" in w.content for w in place.said_with), [w.content for w in place.said_with]
    # It restates its own statement: that one is not shown twice. (A message holds one
    # place of the top, so the statement may stand beside it, but nowhere else.)
    own = [rec for r in found for rec in r.shown if rec.id in place.record.source.statement_ids]
    assert len(own) <= 1, [rec.content for rec in own]


async def test_a_clause_of_a_message_shown_whole_takes_no_place(session: Session) -> None:
    user = f"u-{uuid.uuid4().hex[:6]}"
    said = "I honestly hate olives. taste like brine to me, no exceptions"
    for line in [*OTHERS["en"], said, "I'm vegetarian, have been since college. cheese is fine"]:
        await session.turn(user, f"{user}-a", line)
    found = await asyncio.to_thread(session.service.search, user, "which food do I hate again", 5)
    raw: list[str] = []
    for r in (r for r in found if r.why == "relevant"):
        # A clause whose words an earlier result showed in full would only repeat them.
        clause = record_text(r.record.content).rstrip(".")
        assert not any(clause in t for t in raw), (clause, raw)
        raw += [w.content for w in r.said_with]
    assert any("brine" in t for t in raw), raw


async def test_delete_user_leaves_no_copy_of_what_was_said_with_a_clause(tmp_path: Path) -> None:
    # The thread's `recalled` holds what was said beside a clause; delete-user reaches it too.
    home = tmp_path / "home"
    said, question, word, _ = CASES["en"]
    settings = Settings(backend=BackendConfig(home=str(home)), model="offline")
    async with open_session(settings, setup=True) as s:
        for line in [*OTHERS["en"], said]:
            await s.turn("zed", "zed-a", line)
        asked = await s.turn("zed", "zed-a", question)
        assert any(word in w for r in asked.recalled for w in r["said_with"]), asked.recalled
        await s.service.adelete_user("zed")
    assert leaks(home, [word], []) == []


async def test_a_raw_statement_brings_the_rest_of_its_message(session: Session) -> None:
    # "changed banks!" alone answers nothing; the bank is in the statement said after it.
    user = f"u-{uuid.uuid4().hex[:6]}"
    for line in [
        *OTHERS["en"],
        "changed banks! I'm with Nationwide now, the app is so much better",
    ]:
        await session.turn(user, f"{user}-a", line)
    found = await asyncio.to_thread(session.service.search, user, "which bank am I with?", 5)
    told = [" ".join(rec.content for rec in r.shown) for r in found if r.why == "relevant"]
    assert any("Nationwide" in t for t in told), told
    raw = [r for r in found if r.record.kind == "episode" and r.said_with]
    assert all(w.id != r.record.id for r in raw for w in r.said_with)


async def test_a_message_takes_one_place_of_the_top(session: Session) -> None:
    # Filed as a skill, an event on Friday and a remark: the event and the raw message came
    # back as two places of the five, and a neighbour was cut.
    user = f"u-{uuid.uuid4().hex[:6]}"
    said = (
        "I play bass in a covers band, mostly pub gigs on a friday night, been at it since college"
    )
    for line in [*OTHERS["en"], "I drive a 2015 Honda Jazz.", said]:
        await session.turn(user, f"{user}-a", line)
    records = await session.service.alist(user, include_turns=True)
    pieces = [r for r in records if r.kind != "episode" and r.source.message_ids]
    messages = [r.source.message_ids[0] for r in pieces]
    assert len(messages) > len(set(messages)), [r.content for r in pieces]  # filed in pieces
    found = await asyncio.to_thread(
        session.service.search, user, "any tips for my fingers on a long gig?", 5
    )
    relevant = [r for r in found if r.why == "relevant"]
    # Its other memories are shown beside the first of them: the places left go to others.
    places = [r.record.source.message_ids[0] for r in relevant if r.record.source.message_ids]
    assert len(places) == len(set(places)), [r.record.content for r in relevant]
    texts = shown(found)
    assert any("bass" in t for t in texts) and any("friday" in t for t in texts), texts

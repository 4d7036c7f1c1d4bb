"""Forgetting, as a property: any sequence of statements, forgets and consolidations.

Drawn over a small vocabulary of items that share letters but not words (tea / team
sports / steak, Tom / tomatoes / Tomtom, 猫 / 熊猫 / 猫头鹰) and cities that supersede each
other. The statements go through the offline extractor and `MemoryService.save`, and the
raw turns through `archive_turns`, as the graph's save node does. Whatever the order:

* an item forgotten (or superseded) and not said again is never returned by `search`,
  nor in the memory block made of the results;
* everything said and not forgotten or superseded since is still active, as an extracted
  memory and as a raw turn, and `search` still finds it (no collateral forgetting).
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.store.memory import InMemoryStore

from graphs.offline_rules import extract_rules
from memory.extraction import Extraction, ForgetRequest
from memory.index.chroma import ChromaIndex
from memory.recall.block import format_block
from memory.service import MemoryService
from memory.store.records import Source

EN = ("tea", "team sports", "steak", "tomatoes", "Tom", "Tomtom", "Berlin", "Munich")
ZH = ("猫", "熊猫", "猫头鹰", "成都", "杭州")
ITEMS = EN + ZH
CITIES = ("Berlin", "Munich", "成都", "杭州")
# Each item as a word of its own: "tea" is not in "team" or "steak", 猫 not in 熊猫.
WORD = {
    **{x: re.compile(rf"(?i)(?<![A-Za-z]){re.escape(x)}(?![A-Za-z])") for x in EN},
    "猫": re.compile(r"(?<!熊)猫(?!头鹰)"),
    "熊猫": re.compile("熊猫"),
    "猫头鹰": re.compile("猫头鹰"),
    "成都": re.compile("成都"),
    "杭州": re.compile("杭州"),
}
FORGET_FORMS = {
    "en": ("{}", "that I like {}", "everything about {}"),
    "zh": ("{}", "我喜欢{}", "关于{}的事"),
}

Op = tuple[str, str, int]
"""(`like` | `live` | `forget` | `consolidate`, item, form of the forget request)."""

LIKE = st.tuples(st.just("like"), st.sampled_from(ITEMS), st.just(0))
LIVE = st.tuples(st.just("live"), st.sampled_from(CITIES), st.just(0))
FORGET = st.tuples(st.just("forget"), st.sampled_from(ITEMS), st.integers(0, 2))
CONSOLIDATE = st.tuples(st.just("consolidate"), st.just(""), st.just(0))
OPS = st.lists(st.one_of(LIKE, FORGET, CONSOLIDATE), min_size=1, max_size=14)
"""Statements ("I like tea.", "我喜欢猫。"), forget requests and consolidations."""
MOVES = st.lists(st.one_of(LIKE, LIVE, FORGET, CONSOLIDATE), min_size=1, max_size=14)
"""The same, plus where the user lives: a new city supersedes the old one."""


def _zh(item: str) -> bool:
    return item in ZH


def _said(op: str, item: str) -> str:
    if op == "like":
        return f"我喜欢{item}。" if _zh(item) else f"I like {item}."
    return f"我住在{item}。" if _zh(item) else f"I live in {item}."


def _memory(op: str, item: str) -> str:
    if op == "like":
        return f"用户喜欢{item}。" if _zh(item) else f"User likes {item}."
    return f"用户住在{item}。" if _zh(item) else f"User lives in {item}."


def _play(service: MemoryService, user: str, ops: list[Op]) -> list[tuple[str, str]]:
    """Run the operations; return the `(op, item)` statements that must still be alive.

    The model: a forget ends every earlier statement that names the item; a new city ends
    every statement of the current city's memory (restating the same city reinforces it).
    """
    start = datetime.now(UTC) - timedelta(days=1)
    alive: list[tuple[str, str] | None] = []
    city: list[int] = []  # the statements behind the active city memory
    for n, (op, item, form) in enumerate(ops):
        at = start + timedelta(minutes=n)
        source = Source(thread_id="t1", message_ids=[f"m{n}"], said_at=at, via="conversation")
        if op == "consolidate":
            service.consolidate(user)
            alive.append(None)
            continue
        if op == "forget":
            query = FORGET_FORMS["zh" if _zh(item) else "en"][form].format(item)
            service.save(user, Extraction(forget=[ForgetRequest(query=query)]), source)
            alive = [s if s is None or s[1] != item else None for s in alive]
            city = [i for i in city if alive[i] is not None]
            alive.append(None)
            continue
        text = _said(op, item)
        extraction = extract_rules(text, at)
        assert [c.content for c in extraction.memories] == [_memory(op, item)]
        service.save(user, extraction, source)
        service.archive_turns(user, [(f"m{n}", text, "")], source)
        if op == "live":
            current = alive[city[0]] if city else None
            if current is not None and current[1] != item:
                for i in city:
                    alive[i] = None
                city = []
            city.append(n)
        alive.append((op, item))
    return [s for s in alive if s is not None]


def _check(service: MemoryService, user: str, ops: list[Op]) -> None:
    alive = _play(service, user, ops)
    live = service.list(user, include_turns=True)
    turns = [r.content for r in live if r.subject.startswith("episode.turn.")]
    memories = {r.content for r in live if r.kind != "episode"}
    # Exactly what is alive: nothing forgotten that was not targeted, nothing left over.
    assert Counter(turns) == Counter(_said(op, item) for op, item in alive)
    assert memories == {_memory(op, item) for op, item in alive}
    named = {item for _, item in alive}
    for item in ITEMS:
        found = service.search(user, item)
        texts = [r.record.content for r in found]
        block = format_block([r.record for r in found])
        if item in named:
            assert any(WORD[item].search(t) for t in texts), (item, texts)
        else:
            assert not any(WORD[item].search(t) for t in texts), (item, texts)
            assert not WORD[item].search(block), (item, block)


_USERS = itertools.count()


@settings(max_examples=40, deadline=None)
@given(ops=OPS)
def test_forgetting_is_exact_by_words(ops: list[Op]) -> None:
    _check(MemoryService(InMemoryStore(), None), "u", ops)


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=OPS)
def test_forgetting_is_exact_with_semantic_recall(index: ChromaIndex, ops: list[Op]) -> None:
    # One Chroma index for the examples, a user of its own for each: users never meet.
    _check(MemoryService(InMemoryStore(), index), f"u{next(_USERS)}", ops)


@settings(max_examples=40, deadline=None)
@given(ops=MOVES)
def test_a_new_city_supersedes_the_old_one_and_nothing_else(ops: list[Op]) -> None:
    _check(MemoryService(InMemoryStore(), None), "u", ops)


@pytest.mark.parametrize(
    ("query", "kept"),
    [("my email address", "User lives in Austin."), ("我的邮箱地址", "用户住在成都。")],
)
def test_forgetting_an_email_address_keeps_the_home_address(query: str, kept: str) -> None:
    # As a model would ask it: "address" here names the email, not where the user lives.
    service = MemoryService(InMemoryStore(), None)
    said = "I live in Austin." if kept.startswith("User") else "我住在成都。"
    source = Source(thread_id="t1", message_ids=["m1"], via="conversation")
    service.save("u", extract_rules(said, datetime.now(UTC)), source)
    service.save("u", Extraction(forget=[ForgetRequest(query=query)]), source)
    assert [r.content for r in service.list("u")] == [kept]

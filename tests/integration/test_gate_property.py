"""The gate as a property: any sequence of multi-clause statements, updates, forgets.

Through the real graph (offline model, embedded default). A message says one or two things
("I like chess and I live in Lyon.", 我喜欢围棋，我住在成都。); a later one may move the user
(a new city supersedes the old), forget a topic ("Forget about chess.", 忘掉围棋的事。) or
forget "that" (the newest statement only), or the memory is consolidated. Whatever the order:

* what was forgotten, and not said again since, is never returned by search, never in a
  later turn's memory block, and in no channel of the thread's current checkpoint;
* a city the user moved away from is not what "where do I live?" brings back;
* everything said and not forgotten since is still found (no collateral forgetting: a
  forget of one clause never takes its neighbour).
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.runner import Session, open_session
from graphs.settings import Settings
from memory.backends import BackendConfig

pytestmark = pytest.mark.integration

LIKES = {"en": ("chess", "jazz", "hiking"), "zh": ("围棋", "火锅", "爬山")}
CITIES = {"en": ("Berlin", "Lyon", "Oslo"), "zh": ("成都", "杭州", "无锡")}
Op = tuple[str, str, int, int]
"""(`say` | `both` | `topic` | `that` | `consolidate`, language, like index, city index)."""

LANG = st.sampled_from(["en", "zh"])
IDX = st.integers(0, 2)
OP = st.one_of(
    st.tuples(st.just("say"), LANG, IDX, st.just(0)),
    st.tuples(st.just("both"), LANG, IDX, IDX),
    st.tuples(st.just("topic"), LANG, IDX, st.just(0)),
    st.tuples(st.just("that"), LANG, st.just(0), st.just(0)),
    st.tuples(st.just("consolidate"), LANG, st.just(0), st.just(0)),
)


def _message(op: Op) -> str | None:
    kind, lang, i, j = op
    like, city = LIKES[lang][i], CITIES[lang][j]
    zh = lang == "zh"
    return {
        "say": f"我喜欢{like}。" if zh else f"I like {like}.",
        "both": f"我喜欢{like}，我住在{city}。" if zh else f"I like {like} and I live in {city}.",
        "topic": f"忘掉{like}的事。" if zh else f"Forget about {like}.",
        "that": "当我没说" if zh else "Stop storing that.",
    }.get(kind)


class Expected:
    """What the user said and what should be left of it, followed op by op."""

    def __init__(self) -> None:
        self.said: list[str] = []  # statements in order: the items they name
        self.likes: dict[str, bool] = {}  # like → still remembered
        self.city: str | None = None
        self.left: set[str] = set()  # cities moved away from
        self.gone: set[str] = set()  # cities forgotten

    def apply(self, op: Op) -> None:
        kind, lang, i, j = op
        like, city = LIKES[lang][i], CITIES[lang][j]
        if kind == "say":
            self.likes[like] = True
            self.said.append(like)
        elif kind == "both":
            self.likes[like] = True
            if self.city and self.city != city:
                self.left.add(self.city)
            self.city = city
            self.left.discard(city)
            self.gone.discard(city)
            self.said += [like, city]
        elif kind == "topic" and like in self.likes:
            self.likes[like] = False
            self.said = [s for s in self.said if s != like]
        elif kind == "that" and self.said:
            last = self.said.pop()
            if last in self.likes:
                self.likes[last] = False
            else:
                self.gone.add(last)
                self.city = None


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("gate-property")


async def _run(home: Path, ops: list[Op]) -> None:
    user = f"p{uuid.uuid4().hex[:8]}"
    thread = f"{user}-t"
    expected = Expected()
    settings = Settings(backend=BackendConfig(home=str(home)))
    async with open_session(settings, setup=True) as s:
        for op in ops:
            text = _message(op)
            if text is None:
                await s.service.aconsolidate(user)
            else:
                await s.turn(user, thread, text)
            expected.apply(op)
        await _check(s, user, thread, expected)


async def _check(s: Session, user: str, thread: str, expected: Expected) -> None:
    config: Any = {"configurable": {"thread_id": thread}}
    state = json.dumps((await s.graph.aget_state(config)).values, default=repr, ensure_ascii=False)
    for like, kept in expected.likes.items():
        found = [r.record.content for r in await s.service.asearch(user, like, 8)]
        if kept:
            assert any(like in f for f in found), (like, found)
        else:
            assert not any(like in f for f in found), (like, found)
            assert like not in state, like
    for city in expected.gone:
        found = [r.record.content for r in await s.service.asearch(user, city, 8)]
        assert not any(city in f for f in found), (city, found)
    question = await s.turn(user, f"{user}-q{uuid.uuid4().hex[:4]}", "Where do I live?")
    recalled = " ".join(r["content"] for r in question.recalled)
    for city in expected.left | expected.gone:
        assert city not in recalled, (city, recalled)
    if expected.city:
        assert expected.city in recalled, (expected.city, recalled)
    block = (await s.graph.aget_state({"configurable": {"thread_id": f"{user}-q"}})).values
    assert block is not None


@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=st.lists(OP, min_size=1, max_size=6))
def test_no_forgotten_moved_or_neighbouring_text_is_wrong(home: Path, ops: list[Op]) -> None:
    import asyncio

    asyncio.run(_run(home, ops))

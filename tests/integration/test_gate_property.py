"""The gate as a property: any sequence of statements, updates, negations, forgets, secrets.

Through the real graph (offline model, embedded default), with two agents sharing the
user's memory under the two-agent example's access policy. A message says one or two things
("I like chess and I live in Lyon.", 我喜欢围棋，我住在成都。); a later one may move the user
(a new city supersedes the old), negate one liking ("I no longer like chess."), forget a
topic ("Forget about chess.", 忘掉围棋的事。) or "that" (the newest message's statements), carry a
password beside an ordinary clause, or tell after-sales where the user works (which
after-sales may not write: refused); a note may be added through the API and later be
hard-forgotten; the memory may be consolidated. Whatever the order:

* what was forgotten or negated, and not said again since, is never returned by search;
  forgotten text is in no channel of the thread's current checkpoint; none of it, nor a
  password, nor a refused employer, is in a later turn's memory block;
* a city the user moved away from is not what "where do I live?" brings back;
* everything said and not forgotten since is still found (no collateral forgetting: a
  forget of one clause, a password or a negation never takes its neighbour);
* no password and no hard-forgotten note is in any file under the home, and no refused
  employer is in any file but the checkpoint of the thread it was said in (the conversation
  itself is kept);
* after `delete_user`, no note and no record id of the user is in any file under the home.
"""

from __future__ import annotations

import asyncio
import json
import random
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from scale_checks import files_under

from agent.runner import Session, open_session
from graphs.settings import Settings
from graphs.two_agents import AFTER_SALES, EXAMPLE_ACCESS, PRE_SALES
from memory.backends import BackendConfig

pytestmark = pytest.mark.integration

LIKES = {"en": ("chess", "jazz", "hiking"), "zh": ("围棋", "火锅", "爬山")}
CITIES = {"en": ("Berlin", "Lyon", "Oslo"), "zh": ("成都", "杭州", "无锡")}
EMPLOYERS = {"en": ("Initech", "Globex", "Hooli"), "zh": ("华为", "小米", "腾讯")}
Op = tuple[str, str, int, int]
"""(kind, language, like or employer index, city index); kinds as `_message` and `Expected`."""

LANG = st.sampled_from(["en", "zh"])
IDX = st.integers(0, 2)
OP = st.one_of(
    st.tuples(st.just("say"), LANG, IDX, st.just(0)),
    st.tuples(st.just("both"), LANG, IDX, IDX),
    st.tuples(st.just("negate"), LANG, IDX, st.just(0)),
    st.tuples(st.just("secret"), LANG, IDX, st.just(0)),
    st.tuples(st.just("refused"), LANG, IDX, st.just(0)),
    st.tuples(st.just("note"), LANG, st.just(0), st.just(0)),
    st.tuples(st.just("hard"), LANG, st.just(0), st.just(0)),
    st.tuples(st.just("topic"), LANG, IDX, st.just(0)),
    st.tuples(st.just("that"), LANG, st.just(0), st.just(0)),
    st.tuples(st.just("consolidate"), LANG, st.just(0), st.just(0)),
)


def _word(rng: random.Random) -> str:
    """A pronounceable made-up word: a unique token that no detector takes for a secret."""
    return "".join(rng.choice("bdfgklmnprstvz") + rng.choice("aeiou") for _ in range(4)).title()


def _message(op: Op, token: str) -> str | None:
    kind, lang, i, j = op
    like, city, employer = LIKES[lang][i], CITIES[lang][j], EMPLOYERS[lang][i]
    zh = lang == "zh"
    return {
        "say": f"我喜欢{like}。" if zh else f"I like {like}.",
        "both": f"我喜欢{like}，我住在{city}。" if zh else f"I like {like} and I live in {city}.",
        "negate": f"我不再喜欢{like}了。" if zh else f"I no longer like {like}.",
        "secret": f"我的密码是{token}，我喜欢{like}。"
        if zh
        else f"My password is {token}, and I like {like}.",
        "refused": f"我的订单坏了，我在{employer}上班。"
        if zh
        else f"My order arrived broken, and I work at {employer}.",
        "topic": f"忘掉{like}的事。" if zh else f"Forget about {like}.",
        "that": "当我没说" if zh else "Stop storing that.",
    }.get(kind)


@dataclass
class Expected:
    """What the user said and what should be left of it, followed op by op."""

    said: list[list[tuple[str, str]]] = field(default_factory=list)
    """The main thread's messages in order, each what it stated and is still kept: (`like` |
    `city` | `negate`, the item named). "That" takes back the last one whole."""
    likes: dict[str, str] = field(default_factory=dict)
    """like → `kept`, `forgotten` (by a forget) or `negated` ("I no longer like …")."""
    negated: set[str] = field(default_factory=set)
    """Likes ever negated: the negation is a statement of its own, kept in the thread."""
    city: str | None = None
    left: set[str] = field(default_factory=set)  # cities moved away from
    gone: set[str] = field(default_factory=set)  # cities forgotten
    secrets: list[str] = field(default_factory=list)
    refused: set[str] = field(default_factory=set)
    notes: list[str] = field(default_factory=list)  # added through the API, still kept
    notes_shown: bool = False
    """A "that" came when the thread held no statement: it may take what the assistant's
    last reply mentioned, a note among it, so which notes are kept is not known."""
    hard_forgotten: list[str] = field(default_factory=list)

    def apply(self, op: Op, token: str) -> None:
        kind, lang, i, j = op
        like, city = LIKES[lang][i], CITIES[lang][j]
        if kind in ("say", "secret"):
            self.likes[like] = "kept"
            self.said.append([("like", like)])
            if kind == "secret":
                self.secrets.append(token)
        elif kind == "both":
            self.likes[like] = "kept"
            if self.city and self.city != city:
                self.left.add(self.city)
            self.city = city
            self.left.discard(city)
            self.gone.discard(city)
            self.said.append([("like", like), ("city", city)])
        elif kind == "negate":
            self.likes[like] = "negated"
            self.negated.add(like)
            self.said.append([("negate", like)])
        elif kind == "refused":
            self.refused.add(EMPLOYERS[lang][i])
        elif kind == "note":
            self.notes.append(token)
        elif kind == "hard":
            self.hard_forgotten += self.notes
            self.notes = []
        elif kind == "topic" and like in self.likes:
            if self.likes[like] == "kept":
                self.likes[like] = "forgotten"
            self.said = [kept for m in self.said if (kept := [s for s in m if s[1] != like])]
        elif kind == "that" and not self.said:
            self.notes_shown = self.notes_shown or bool(self.notes)
        elif kind == "that":
            for what, item in self.said.pop():
                if what == "like":
                    self.likes[item] = "forgotten"
                elif what == "city":
                    self.gone.add(item)
                    self.city = None


def _states_positively(text: str, like: str) -> bool:
    """True if `text` says the user likes `like` (not that they no longer do)."""
    negations = ("no longer", "not like", "n't like", "不再", "不喜欢")
    return like in text and not any(n in text for n in negations)


async def _run(ops: list[Op], seed: int) -> None:
    rng = random.Random(seed)
    user = f"p{uuid.uuid4().hex[:8]}"
    thread = f"{user}-t"
    expected = Expected()
    with tempfile.TemporaryDirectory(prefix="gate-property-") as tmp:
        home = Path(tmp)
        config = Settings(
            backend=BackendConfig(home=str(home)), access=EXAMPLE_ACCESS, agent_id=PRE_SALES
        )
        async with open_session(config, setup=True) as s:
            for n, op in enumerate(ops):
                token = _word(rng)
                await _play(s, user, thread, n, op, token)
                expected.apply(op, token)
            await _check(s, user, thread, expected)
        _check_files(home, expected)
        async with open_session(config) as s:
            ids = [r.id for r in await s.service.alist(user, include_turns=True)]
            await asyncio.to_thread(s.service.delete_user, user)
        left = _found_in_files(home, [*expected.notes, *ids])
        assert left == [], left


async def _play(s: Session, user: str, thread: str, n: int, op: Op, token: str) -> None:
    kind = op[0]
    if kind == "consolidate":
        await s.service.aconsolidate(user)
    elif kind == "note":
        await asyncio.to_thread(
            s.service.add, user, f"User's neighbour has a parrot called {token}."
        )
    elif kind == "hard":  # a note a "that" forgot (soft) is deleted too
        for r in await s.service.alist(user, include_inactive=True, include_turns=True):
            if "parrot" in r.content:
                await asyncio.to_thread(s.service.forget, user, r.id, hard=True)
    elif kind == "refused":
        text = _message(op, token)
        assert text is not None
        out = await s.turn(user, f"{user}-after-{n}", text, agent_id=AFTER_SALES)
        assert any(line.startswith("refused:") for line in out.saved), out.saved
    else:
        text = _message(op, token)
        assert text is not None
        await s.turn(user, thread, text, agent_id=PRE_SALES)


async def _check(s: Session, user: str, thread: str, expected: Expected) -> None:
    config: Any = {"configurable": {"thread_id": thread}}
    snapshot = await s.graph.aget_state(config)
    state = json.dumps(snapshot.values, default=repr, ensure_ascii=False)

    async def found(query: str) -> list[str]:
        return [r.record.content for r in await s.service.asearch(user, query, 8)]

    for like, status in expected.likes.items():
        got = await found(like)
        if status == "kept":
            assert any(_states_positively(f, like) for f in got), (like, got)
        else:
            assert not any(_states_positively(f, like) for f in got), (like, status, got)
        if status == "forgotten" and like not in expected.negated:
            assert like not in state, _around(state, like)
    for city in expected.gone:
        got = await found(city)
        assert not any(city in f for f in got), (city, got)
    for word in [*expected.secrets, *expected.refused, *expected.hard_forgotten]:
        got = await found(word)
        assert not any(word in f for f in got), (word, got)
        assert word not in state, _around(state, word)
    for note in expected.notes if not expected.notes_shown else []:
        assert any(note in f for f in await found(f"parrot {note}")), note

    q_thread = f"{user}-q{uuid.uuid4().hex[:4]}"
    question = await s.turn(user, q_thread, "Where do I live?", agent_id=PRE_SALES)
    recalled = " ".join(r["content"] for r in question.recalled)
    for city in expected.left | expected.gone:
        assert city not in recalled, (city, recalled)
    if expected.city:
        assert expected.city in recalled, (expected.city, recalled)
    asked = await s.graph.aget_state({"configurable": {"thread_id": q_thread}})
    block = str(asked.values.get("memory_block", ""))
    assert asked.values.get("messages"), "the question's thread holds the question"
    for word in [*expected.secrets, *expected.refused, *expected.hard_forgotten]:
        assert word not in block, (word, block)
    for like, status in expected.likes.items():
        for line in block.splitlines() if status != "kept" else []:
            assert not _states_positively(line, like), (like, line)


def _around(text: str, word: str) -> str:
    at = text.find(word)
    return f"{word!r} in ...{text[max(0, at - 400) : at + 100]}..."


def _found_in_files(home: Path, words: list[str], *, skip: str = "\0") -> list[str]:
    hits = []
    for path in files_under(home):
        if path.name.startswith(skip):
            continue
        data = path.read_bytes()
        hits += [f"{path.relative_to(home)}: {w!r}" for w in words if w.encode() in data]
    return hits


def _check_files(home: Path, expected: Expected) -> None:
    gone = _found_in_files(home, [*expected.secrets, *expected.hard_forgotten])
    assert gone == [], gone
    # The after-sales thread keeps the conversation it was said in; nothing else keeps it.
    refused = _found_in_files(home, sorted(expected.refused), skip="checkpoints.sqlite")
    assert refused == [], refused


@settings(
    max_examples=12,
    derandomize=True,  # the same sequences on every run: CI never meets a new draw
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(ops=st.lists(OP, min_size=1, max_size=7), seed=st.integers(0, 2**32 - 1))
# A "that" in a thread with no statement takes the note the reply quoted; a hard forget
# then deletes it (both found by CI's draws).
@example(ops=[("note", "en", 0, 0), ("that", "zh", 0, 0), ("that", "en", 0, 0)], seed=0)
@example(ops=[("note", "en", 0, 0), ("that", "zh", 0, 0), ("hard", "en", 0, 0)], seed=0)
def test_no_forgotten_refused_screened_or_deleted_text_is_kept(ops: list[Op], seed: int) -> None:
    asyncio.run(_run(ops, seed))

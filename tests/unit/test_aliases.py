"""Aliases (issue 22): "my sister" also finds Lena, and Lena the sister, one hop, zh and en.

Through the compiled graph with the offline model (`agent.runner` sessions on the embedded
default): the user says who their sister is and, in another message, something about her by
name; a question about "my sister" must recall the second statement first. Links are read
from the user's own statements only, so another user's never applies, and forgetting the
naming statement (or a hard forget) ends the link, leaving nothing of it on disk.
"""

from __future__ import annotations

import asyncio
import sys
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from langgraph.store.memory import InMemoryStore
from scale_checks import leaks

from agent.runner import Session, open_session
from graphs.settings import Settings
from memory.access import AccessPolicy
from memory.backends import BackendConfig, open_backends
from memory.recall.aliases import aliases_in, relations_in
from memory.recall.search import Recalled
from memory.service import MemoryService

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import zh_recall  # noqa: E402  (remembers messages as the graph's save node does)

EN = [
    "My sister is called Lena.",
    "I like chess and I play on Sundays.",
    "Lena just got a job as a vet in Vienna.",
    "I work as a nurse in Oslo.",
    "My brother plays the guitar.",
]
ACCESS = AccessPolicy.from_dict(
    {
        "agents": {
            "pre-sales": {"read": ["*"], "write": ["*"]},
            "after-sales": {"read": ["*"], "write": ["*"], "scopes": {"support.": "agent"}},
        }
    }
)
ZH = [
    "我妹妹叫小雨。",
    "我喜欢下棋。",
    "小雨在杭州当老师。",
    "我在上海当护士。",
    "我哥哥喜欢弹吉他。",
]


@pytest.fixture
async def session(tmp_path: Path) -> AsyncIterator[Session]:
    settings = Settings(backend=BackendConfig(home=str(tmp_path / "home")))
    async with open_session(settings, setup=True) as s:
        yield s


async def tell(s: Session, user: str, *lines: str) -> None:
    for line in lines:
        await s.turn(user, f"{user}-{uuid.uuid4().hex[:6]}", line)


async def search(s: Session, user: str, question: str, k: int = 6) -> list[Recalled]:
    found = await asyncio.to_thread(s.service.search, user, question, k)
    return [r for r in found if r.why != "core"]


def texts(found: list[Recalled]) -> list[str]:
    return [r.record.content for r in found]


@pytest.mark.parametrize(
    ("text", "links"),
    [
        ("My sister is called Lena.", [("sister", "Lena", True)]),
        ("User said: My sister is called Lena.", [("sister", "Lena", True)]),
        ("Lena is my sister.", [("sister", "Lena", True)]),
        ("I have a younger sister named Lena.", [("sister", "Lena", True)]),
        ("My mom's name is Anna Berg.", [("mother", "Anna Berg", True)]),
        ("my sister Lena just got a job", [("sister", "Lena", False)]),
        ("My son, Tom, loves trains.", [("son", "Tom", False)]),
        ("I took my daughter Sara's bike.", [("daughter", "Sara", False)]),
        ("My dog is called Rex and he is old.", [("dog", "Rex", False)]),
        ("我妹妹叫小雨。", [("younger sister", "小雨", True)]),
        ("用户说：我妹妹叫小雨。", [("younger sister", "小雨", True)]),
        ("小雨是我妹妹", [("younger sister", "小雨", True)]),
        ("我有个妹妹叫小雨，她在杭州", [("younger sister", "小雨", False)]),
        ("我的猫叫咪咪。", [("cat", "咪咪", True)]),
        # Not links: no name, or a name that is not said to be the relation.
        ("My sister is a vet.", []),
        ("My sister is Very tall.", []),
        ("Thankfully, my son's ok.", []),
        ("Emily, my sister, called.", [("sister", "Emily", False)]),
        ("Lena just got a job as a vet in Vienna.", []),
        ("我妹妹是老师。", []),
        ("小雨在杭州当老师。", []),
        ("我妹妹叫什么？", []),
    ],
)
def test_naming_statements_make_links_by_exact_form(
    text: str, links: list[tuple[str, str, bool]]
) -> None:
    assert aliases_in(text) == links


def test_a_question_names_the_users_own_relations() -> None:
    assert relations_in("What does my sister do for work?") == {"sister": "sister"}
    assert relations_in("Where do my mom and my dad live?") == {"mother": "mom", "father": "dad"}
    assert relations_in("妹妹住哪？") == {"younger sister": "妹妹"}
    assert relations_in("What does Lena do?") == {}


async def test_a_question_about_my_sister_finds_what_was_said_of_lena(session: Session) -> None:
    await tell(session, "ana", *EN)
    work = texts(await search(session, "ana", "What does my sister do for work?"))
    # Without the link: 6th, behind the naming statement and the user's own job.
    assert "Lena just got a job as a vet in Vienna" in work[0], work
    home = texts(await search(session, "ana", "Where does my sister live?"))
    assert any("Vienna" in t for t in home[:2]), home


async def test_a_question_about_the_sister_in_chinese_finds_xiaoyu(session: Session) -> None:
    await tell(session, "bo", *ZH)
    work = texts(await search(session, "bo", "我妹妹做什么工作？"))
    assert "小雨在杭州当老师" in work[0], work
    home = texts(await search(session, "bo", "我妹妹住在哪里？"))
    assert "小雨在杭州当老师" in home[0], home


@pytest.mark.parametrize(
    ("said", "question", "answer"),
    [
        (
            ["My sister is called Lena.", "My sister rides horses every weekend.", *EN[1:2]],
            "Which hobby has Lena got?",
            "rides horses",
        ),
        (["我妹妹叫小雨。", "我妹妹周末都去骑马。", *ZH[1:2]], "小雨有什么爱好？", "骑马"),
    ],
    ids=["en", "zh"],
)
async def test_a_question_about_the_name_finds_what_was_said_of_the_sister(
    session: Session, said: list[str], question: str, answer: str
) -> None:
    await tell(session, "cy", *said)
    found = texts(await search(session, "cy", question))
    assert answer in found[0], found


def test_a_link_reaches_records_that_say_the_whole_name_only() -> None:
    # 周 of 周晴 is in 每周五: that remark is no record about her, and the naming statement,
    # the answer to "what is her name", keeps its place (it is demoted only for a question
    # asking more than the name, and only below records the link really reached).
    from types import SimpleNamespace

    from memory.lexical.bm25 import BM25Index
    from memory.recall.aliases import hop

    said = {
        "a": "用户说：我女儿叫周晴。",
        "b": "用户说：每周五晚上我去打羽毛球。",
        "c": "周晴考了一百分",
    }
    bm25: BM25Index[str] = BM25Index()
    bm25.add_many(said.items())
    records = {i: SimpleNamespace(content=t) for i, t in said.items()}
    for question, reached, demoted in [
        ("我女儿叫啥名字", {"c"}, set()),
        ("我女儿考了多少分", {"c"}, {"a"}),
    ]:
        found = hop(question, bm25.search(question), bm25.search_terms, records, set)
        assert found is not None
        assert (set(found.reached), set(found.demoted)) == (reached, demoted), question


async def test_another_users_alias_never_applies(session: Session) -> None:
    # Both users say the same about a Lena; only bea says Lena is her sister.
    await tell(session, "al", *EN[1:])
    before = [(r.record.content, round(r.score, 3)) for r in await search(session, "al", Q_WORK)]
    await tell(session, "bea", *EN)
    assert "Lena just got a job" in texts(await search(session, "bea", Q_WORK))[0]
    after = [(r.record.content, round(r.score, 3)) for r in await search(session, "al", Q_WORK)]
    assert after == before
    assert "Lena just got a job" not in after[0][0]


Q_WORK = "What does my sister do for work?"


async def test_forgetting_the_naming_statement_ends_the_link(session: Session) -> None:
    await tell(session, "di", *EN)
    assert "Lena just got a job" in texts(await search(session, "di", Q_WORK))[0]
    await tell(session, "di", "Forget that my sister is called Lena.")
    left = " | ".join(r.content for r in await session.service.alist("di", include_turns=True))
    assert "called Lena" not in left
    assert "Lena just got a job" not in texts(await search(session, "di", Q_WORK))[0]


def test_a_hard_forget_leaves_nothing_of_the_link_on_disk(tmp_path: Path) -> None:
    home = tmp_path / "home"
    said_at = datetime(2026, 5, 1, tzinfo=UTC)
    question = "Which hobby has Zofia got?"
    with open_backends(BackendConfig(home=str(home))) as b:
        service = MemoryService(b.store, b.index, checkpointer=b.checkpointer)
        lines = ["My sister is called Zofia.", "My sister rides horses every weekend.", "Chess!"]
        zh_recall.tell(service, "ed", "ed-1", [(f"m{i}", t) for i, t in enumerate(lines)], said_at)
        assert "rides horses" in texts(service.search("ed", question, k=6))[0]  # the link works
        assert leaks(home, ["Zofia"], [])  # the statement is on disk (snapshot, store, index)
        # A hard forget of a memory takes its raw statement with it: forget until none is left.
        while named := [r for r in service.list("ed", include_turns=True) if "Zofia" in r.content]:
            service.forget("ed", named[0].id, hard=True)
        assert not any("Zofia" in t for t in texts(service.search("ed", question, k=6)))
        assert leaks(home, ["Zofia"], []) == []


def test_a_link_private_to_another_agent_never_applies(index) -> None:
    store = InMemoryStore()
    pre, after = (
        MemoryService(store, index, agent_id=a, access=ACCESS) for a in ("pre-sales", "after-sales")
    )
    pre.add("acme", "Lena just got a job as a vet in Vienna.", subject="people.lena")
    pre.add("acme", "User works as a nurse in Oslo.", subject="work.job")
    before = [r.record.content for r in pre.search("acme", Q_WORK, k=4)]
    # after-sales keeps what it writes under support.* to itself.
    (private,) = after.add("acme", "User's sister is called Lena.", subject="support.family")
    assert private.record.scope == "agent"
    assert "Lena just got a job" in after.search("acme", Q_WORK, k=4)[0].record.content
    assert [r.record.content for r in pre.search("acme", Q_WORK, k=4)] == before
    assert "Lena just got a job" not in before[0]

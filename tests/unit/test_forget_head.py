"""The forget head: requests about a text or a task take back no statement; requests said
with a reason are read.

The intent head read "remove the last line from that card verse" as taking back the last
statement (0.77), and the user's dog went with it. The forget head has read such requests
(`memory.understanding.corpus.TRAPS`), and taking back "that" needs it; these phrasings are
in no corpus line.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.runner import open_session
from graphs.settings import Settings
from memory.backends import BackendConfig
from memory.requests import forget_requests

NOT_REQUESTS = [
    "把刚才那封邮件开头那句删了，太啰嗦",
    "don't forget to add page numbers to that report",
    "forget it, my sister found the charger",
    "上面那段最后一句去掉，语气太冲了",
    "drop the closing line from that speech you wrote, too sappy",
    "cut the final paragraph of that letter please",
]
REQUESTS_WITH_A_REASON = [
    "hold on, forget what I just told you, the deal isn't signed yet",
    "ok scratch what I just said, I mixed up the dates",
    "等等，刚才那句先别记，合同还没签呢",
]


@pytest.mark.parametrize("text", NOT_REQUESTS)
def test_a_request_about_a_text_or_a_task_takes_back_no_statement(text: str) -> None:
    # A topic it might name ("page numbers") is matched by words, and mostly matches nothing.
    assert [r for r in forget_requests(text) if r.query in ("that", "这个")] == []


@pytest.mark.parametrize(
    "text",
    ["don't forget to add a greeting to that letter", "请把表格里多余的空格删掉",
     "don't forget to attach the invoice to that email", "记得别忘了给那份报告加页码"],
)  # fmt: skip
def test_a_task_not_worded_as_a_forget_request_is_none(text: str) -> None:
    # No pattern finds a request in them: the intent head's forget alone is not enough, the
    # forget head must read one too (it reads 0.10-0.44 here, the intent head 0.75-0.93).
    assert forget_requests(text) == []


@pytest.mark.parametrize(
    "text", ["删除的微信好友还能加回来吗？", "删除的邮件还在回收站里吗？", "能不能把我的地址删了？"]
)
def test_a_question_worded_like_a_request_is_one_only_where_the_forget_head_reads_one(
    text: str,
) -> None:
    # Worded "删除的…", a question about deleted things was taken as a request to forget
    # "的邮件还在回收站里"; a favour asked as a question still is one.
    asked = forget_requests(text)
    assert bool(asked) == text.startswith("能不能"), asked


@pytest.mark.parametrize("text", REQUESTS_WITH_A_REASON)
def test_a_request_said_with_a_reason_is_one(text: str) -> None:
    assert forget_requests(text)


@pytest.mark.parametrize(
    ("statement", "request_", "word"),
    [
        ("My parrot Kiwi is 14 and says hello to everyone.", NOT_REQUESTS[4], "Kiwi"),
        ("我家鹦鹉叫豆豆，今年十四岁了。", NOT_REQUESTS[0], "豆豆"),
    ],
)
async def test_the_last_statement_outlives_a_request_about_a_text(
    statement: str, request_: str, word: str
) -> None:
    async with open_session(Settings.from_env()) as session:
        await session.turn("u1", "t1", statement)
        result = await session.turn("u1", "t1", request_)
        kept = await session.service.alist("u1", include_turns=True)
    assert not any(line.startswith("forgotten") for line in result.saved), result.saved
    assert any(word in r.content for r in kept), [r.content for r in kept]


@pytest.mark.parametrize(
    ("text", "named", "reason"),
    [
        (
            "Can you stop keeping the stuff about my rowing machine? feels private",
            "rowing",
            "feels",
        ),
        (
            "delete what you know about my climbing trips, I'm selling the gear",
            "climbing",
            "selling",
        ),
        ("forget what I told you about my cousin in Lagos, she's private", "cousin", "private"),
        ("drop the notes on my knee surgery — I'd rather keep that to myself", "knee", "rather"),
    ],
)
def test_a_reason_after_what_a_request_names_is_not_part_of_it(
    text: str, named: str, reason: str
) -> None:
    # The reason's words were matched as the topic's: "kinda private" kept the topic from
    # being found by meaning, and a name in it could take another record.
    (request,) = forget_requests(text)
    assert named in request.query and reason not in request.query, request.query


def test_a_list_a_request_names_stays_whole() -> None:
    # Each relative of the list is asked about, filed under their own subject: under the
    # first alone, the others' statements stayed.
    requests = forget_requests("please forget my sister, my brother and my dad")
    subjects = {r.subject for r in requests}
    assert subjects == {"family.sister", "family.brother", "family.father"}, requests


async def test_a_relative_named_by_place_is_not_the_home(tmp_path: Path) -> None:
    # "my lad in Australia" read as about home, and the home went whole with it.
    settings = Settings(backend=BackendConfig(home=str(tmp_path / "h")), model="offline")
    async with open_session(settings) as session:
        await session.turn("u1", "t1", "We moved out to Kinsale in Co. Cork a few years back")
        await session.turn(
            "u1", "t1", "Eldest Ciaran is out in Toronto, works as a plumber on the sites"
        )
        await session.turn(
            "u1", "t1", "forget what I told you about my lad in Canada, he's a private sort"
        )
        kept = await session.service.alist("u1", include_turns=True)
    assert any("Kinsale" in r.content for r in kept if r.kind != "episode"), [
        r.content for r in kept
    ]


@pytest.mark.parametrize(
    ("text", "named"),
    [
        # Why first, then the request: the request was read whole, reason and all, or not at all.
        ("got a new laptop, wipe my old work email from your notes", "email"),
        ("the wedding's off - so delete the stuff about the venue", "venue"),
    ],
)
def test_a_request_after_its_reason_is_read_from_its_wording(text: str, named: str) -> None:
    (request,) = forget_requests(text)
    assert named in request.query and "off" not in request.query, request.query


def test_a_request_after_its_topic_still_names_the_topic() -> None:
    # "麻烦帮我忘掉" alone would be "that", the last statement; the topic came first.
    (request,) = forget_requests("我公司地址这个信息，麻烦帮我忘掉")
    assert "公司" in request.query, request


def test_a_statement_worded_like_a_request_after_a_comma_is_none() -> None:
    assert forget_requests("I love baking, don't remember the last time I bought bread") == []

"""The forget head: requests about a text or a task take back no statement; requests said
with a reason are read.

The intent head read "remove the last line from that card verse" as taking back the last
statement (0.77), and the user's dog went with it. The forget head has read such requests
(`memory.understanding.corpus.TRAPS`), and taking back "that" needs it; these phrasings are
in no corpus line.
"""

from __future__ import annotations

import pytest

from agent.runner import open_session
from graphs.settings import Settings
from memory.extraction import forget_requests

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

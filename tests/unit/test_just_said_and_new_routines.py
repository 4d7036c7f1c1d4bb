"""What was just said, however "what" is typed, and a new routine that is no news (issue 22).

"Forget whit I just said there, …" (Scots) and "wot I just said" (English) name the
latest statement as "what I just said" does: one pattern (`memory.text.phrases.JUST_SAID`)
serves the request's span and its target. And a statement read as news of a routine, when
no memory listed is clearly the routine it changes, is kept as a statement of its own:
before, a new evening routine was read as news of the morning pill, matched nothing among
all that was listed, and nothing at all was kept of it.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from graphs.offline_rules import extract_rules
from memory.lifecycle import is_deictic
from memory.requests import forget_requests


@pytest.mark.parametrize(
    "request_text",
    [
        "so forget whit I just said there, dinnae bother wi it",
        "forget wot I just told you, dinnae save it",
        "Forget wot I just mentioned there, dinnae need it on file",
        "hmm, disregard what I just mentioned",
        "never mind the last bit I said just now",
    ],
)
def test_what_was_just_said_however_spelled_is_the_latest_statement(request_text: str) -> None:
    (found,) = forget_requests(request_text)
    assert is_deictic(found.query), found


@pytest.mark.parametrize(
    ("request_text", "names"),
    [
        ("forget whit I said about the allotment", "allotment"),
        ("please forget what I told you about my cousin Ewan", "ewan"),
    ],
)
def test_what_was_said_about_a_topic_names_the_topic(request_text: str, names: str) -> None:
    (found,) = forget_requests(request_text)
    assert not is_deictic(found.query)
    assert names in found.query.casefold(), found


def test_a_new_routine_read_as_news_of_no_listed_routine_is_kept() -> None:
    known = [
        ("m1", "habit.每天早饭前吃一粒", "用户说：每天早饭前吃一粒。"),
        ("m2", "episode.turn.main", "最近胃不太行 医生开了奥美拉唑 每天早饭前吃一粒"),
    ]
    text = "每晚十点前必练半小时瑜伽 不练睡不踏实 已经坚持两个月了"
    found = extract_rules(text, datetime(2026, 3, 2, 9, tzinfo=UTC), known).memories
    assert any("瑜伽" in c.content for c in found), found
    # A statement of its own: it changes neither the pill nor the message it came in.
    assert not any(c.updates for c in found), found

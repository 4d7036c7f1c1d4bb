"""What was just said, however "what" is typed, and a new routine that is no news (issue 22).

"Forget whit I just said there, …" (Scots) and "wot I just said" (English) name the
latest statement as "what I just said" does: one pattern (`memory.text.phrases.JUST_SAID`)
serves the request's span and its target. And a statement read as news of a routine, when
no memory listed is clearly the routine it changes, is kept as a statement of its own:
before, a new evening routine read as news of the pill taken after lunch matched nothing
among all that was listed, and nothing at all was kept of it.
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
        ("forget whit I said about the greenhouse", "greenhouse"),
        ("forget wot I said about cousin Ewan's divorce", "ewan"),
    ],
)
def test_what_was_said_about_a_topic_names_the_topic(request_text: str, names: str) -> None:
    (found,) = forget_requests(request_text)
    assert not is_deictic(found.query)
    assert names in found.query.casefold(), found


_PILL = [
    ("m1", "habit.每天午饭后吃两片", "用户说：每天午饭后吃两片。"),
    ("m2", "episode.turn.main", "肝不太好 大夫给开了水飞蓟宾 每天午饭后吃两片"),
]
_NOW = datetime(2026, 3, 2, 9, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "routine"),
    [
        # Read as news of the pill routine among the typed memories; among all listed, the
        # message it came in weighs as near, and no memory is clearly it.
        ("每天睡前必听半小时播客 不听睡不着 坚持三个月了", "播客"),
    ],
)
def test_a_new_routine_no_listed_memory_is_clearly_about_is_kept(text: str, routine: str) -> None:
    found = extract_rules(text, _NOW, _PILL).memories
    assert any(routine in c.content for c in found), found
    assert not any(c.updates for c in found), found

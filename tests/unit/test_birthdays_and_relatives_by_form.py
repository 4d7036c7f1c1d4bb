"""How old someone turns on a day is their birthday; a relative needs no "my" to be one.

"My nephew Tomas turns 12 on 9 October" is a yearly day of the nephew's, filed with what
else is said of him, not an event that expires in October; "老公在银行上班" is said of the
husband though no 我 says whose. Phrasings here are the project's own.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from agent.runner import Session
from graphs.offline_rules import extract_rules
from memory.dates.recurring import recurring_fact
from memory.requests import forget_requests

NOW = datetime(2026, 12, 3, 9, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("said", "kept"),
    [("my nephew Tomas turns 12 on 9 October", ("Tomas", "12")), ("我儿子5月6号满十岁", ("十岁",))],
)
def test_a_name_and_how_old_are_kept_in_the_users_words(said: str, kept: tuple[str, ...]) -> None:
    # The yearly day itself is `test_dated_statements`' (YEARLY).
    found = recurring_fact(said)
    assert found is not None and all(k in found.content for k in kept), found


@pytest.mark.parametrize("said", ["the train turns left on May 3", "my nephew turns 12 soon"])
def test_no_day_of_the_year_or_no_one_turning_is_no_birthday(said: str) -> None:
    assert recurring_fact(said) is None


async def test_a_relatives_birthday_is_found_by_a_question_about_them(
    offline_session: Session,
) -> None:
    s = offline_session
    for said in (
        "my niece Mia turns 9 on the 3rd of May, she's into dinosaurs",
        "I work nights at the depot",
        "I'm allergic to kiwi",
        "my brother lives in Cork",
    ):
        await s.turn("ana", "ana-1", said)
    res = await s.turn("ana", "ana-2", "when is my niece's birthday again?")
    assert any("Mia" in r["content"] for r in res.recalled[:5]), res.recalled


@pytest.mark.parametrize(
    ("said", "words", "relative"),
    [
        ("老公在银行上班，天天加班", "银行", "老公"),
        ("the wife works at the post office", "post office", "wife"),
    ],
)
def test_a_relative_named_without_my_is_still_the_users_relative(
    said: str, words: str, relative: str
) -> None:
    (of_them,) = [m for m in extract_rules(said, NOW).memories if words in m.content]
    assert of_them.subject.startswith(f"family.{relative}."), of_them.subject


def test_the_doctor_who_said_something_is_no_relative() -> None:
    found = extract_rules("the doctor said my cholesterol is high", NOW).memories
    assert found and not any(m.subject.startswith(("family.", "people.")) for m in found)


@pytest.mark.parametrize(
    "said", ["Sunday arvos are for the allotment", "choir practice is mon and wed nights"]
)
def test_days_said_short_or_as_arvos_are_a_routine(said: str) -> None:
    kinds = {m.kind for m in extract_rules(said, NOW).memories}
    assert "event" not in kinds and kinds, kinds


@pytest.mark.parametrize(
    "said", ["唉，刚才那句不算，我女儿还没同意，你先别记着", "诶，刚刚那句删了吧，我还没问我爸"]
)
def test_taking_back_what_was_just_said_with_an_interjection_and_a_reason(said: str) -> None:
    # Not a request about the relative the reason names.
    (found,) = forget_requests(said)
    assert found.query == "这个", found

"""A thing of the user's replaced by a new one of its kind ends the old one (issue 22).

"Finally sold the jazz, picked up a little electric Nissan Leaf" shares no word the encoder
weighs with "I drive a 2009 Honda Jazz", and reads as remembered, not as an update: both
cars were kept, and "what car do I drive?" answered the old one. The `swaps` head
(`memory/understanding/corpus/swaps.*.txt`) reads the replacement, the `things` head the kind
of thing; the one thing of that kind the user is remembered with is what it replaces
(`graphs.offline_rules._swapped`). Trouble with a thing, a second one and a relative's new
one replace nothing.
"""

from __future__ import annotations

import pytest
from kept import kept_for

from agent.runner import Session
from memory.understanding import read_utterances


@pytest.mark.parametrize(
    ("before", "after", "old", "new"),
    [
        (
            "I drive a 2009 Honda Jazz, bit of a rust bucket",
            "finally sold the jazz, picked up a little electric Nissan Leaf on saturday",
            "2009 Honda Jazz",
            "Nissan Leaf",
        ),
        ("我手机是华硕的，用了三年了", "旧手机彻底开不了机了，昨天换了台一加", "华硕", "一加"),
        (
            "my laptop's a chunky old Dell Latitude",
            "the dell finally died so I've got a refurbished MacBook Air now",
            "Dell Latitude",
            "MacBook Air",
        ),
    ],
)
async def test_a_thing_replaced_ends_the_old_one(
    offline_session: Session, before: str, after: str, old: str, new: str
) -> None:
    s = offline_session
    await s.turn("kai", "kai-1", before)
    res = await s.turn("kai", "kai-2", after)
    kept = await kept_for(s, "kai", include_turns=False)
    assert new in kept and old not in kept, (kept, res.saved)


@pytest.mark.parametrize(
    "said",
    [
        "my car's in the garage again, the clutch is going",
        "we bought a second car for my wife, a Polo",
        "my husband got a new car, a Polo",
        "thinking of getting a Polo next year",
    ],
)
async def test_trouble_a_second_thing_or_someone_elses_ends_nothing(
    offline_session: Session, said: str
) -> None:
    s = offline_session
    await s.turn("lu", "lu-1", "I drive a 2009 Honda Jazz")
    await s.turn("lu", "lu-2", said)
    assert "2009 Honda Jazz" in await kept_for(s, "lu", include_turns=False)


def test_the_swaps_head_reads_a_replacement_not_trouble_or_a_wish() -> None:
    swaps, trouble, wish = read_utterances(
        [
            "traded the old hatchback in for a hybrid, no regrets",
            "the hatchback failed its MOT, needs new brakes",
            "I'd love a hybrid one day",
        ]
    )
    assert swaps.swaps and swaps.thing == "vehicle"
    assert not trouble.swaps and not wish.swaps

"""A Chinese plan may leave out its speaker: "周五得去趟银行" is the user's, and dated.

The speaker is still needed where the model reads no statement of the user's: a weather
remark with a date ("明天要下雨") is no event.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from graphs.offline_rules import extract_rules

NOW = datetime(2026, 12, 3, 9, 0, tzinfo=UTC)  # a Thursday


@pytest.mark.parametrize(
    ("text", "day"),
    [
        ("周五得去趟银行", "2026-12-04"),
        ("下周二飞上海", "2026-12-08"),
        ("月底前要把房租交了", "2026-12-31"),
    ],
)
def test_a_plan_without_its_speaker_is_a_dated_event(text: str, day: str) -> None:
    events = [m for m in extract_rules(text, NOW).memories if m.kind == "event"]
    assert [m.event_date for m in events] == [day], [m.content for m in events]


def test_a_dated_remark_about_the_weather_is_no_event() -> None:
    assert not [m for m in extract_rules("明天要下雨", NOW).memories if m.kind == "event"]

"""A comma inside an exact format is not a clause break (`graphs.offline_rules._clauses`).

The offline path files a message clause by clause, cut at commas. A comma inside a number
("85,000") or between a day and its year ("June 3, 2019") belongs to the value: cut there,
"My salary is 85,000 a year." became two memories, "85" and "000 a year", and "We got married
on June 3, 2019." an event on next year's June 3 with the year filed as a memory of its own.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from graphs.offline_rules import extract_rules

NOW = datetime(2026, 12, 5, 9, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("said", "kept"),
    [
        ("My salary is 85,000 a year.", "85,000"),
        ("The flat cost 1,250,000 when we bought it.", "1,250,000"),
        # The day a couple married comes back every year, kept as said, year and all.
        ("We got married on June 3, 2019.", "June 3, 2019 (every year)"),
        ("We got married September 21st, 2008 in Porto.", "September 21st, 2008"),
        ("My daughter was born on May 9, 2016, and she loves horses.", "2016-05-09"),
    ],
)
def test_a_comma_inside_a_number_or_a_date_stays_in_its_clause(said: str, kept: str) -> None:
    memories = extract_rules(said, NOW).memories
    assert memories, said
    assert any(kept in m.content for m in memories), [m.content for m in memories]
    # No memory is a stray piece of the value ("000 a year", "2016, she loves horses").
    for m in memories:
        body = m.content.split(":", 1)[-1].strip()
        assert not body[:1].isdigit(), m.content


def test_a_comma_between_clauses_still_cuts() -> None:
    memories = extract_rules("I have 2 cats, and I live in Lyon.", NOW).memories
    assert len(memories) >= 2, [m.content for m in memories]
    assert any("Lyon" in m.content and "cats" not in m.content for m in memories)

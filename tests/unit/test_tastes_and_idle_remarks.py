"""A food said as a taste at a meal (issue 22).

Phrasings here are the project's own, none from the fresh sets.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from fakes import save_said

from memory.service import MemoryService

NOW = datetime(2026, 12, 6, 9, tzinfo=UTC)


def _top(service: MemoryService, question: str) -> list[str]:
    return [
        " · ".join([h.record.content, *(r.content for r in h.said_with)])
        for h in service.search("u", question, 5)
    ]


@pytest.mark.parametrize(
    ("statements", "question", "limit"),
    [
        (
            ["i hate okra, that slimy texture gets me every time",
             "im allergic to sesame so no tahini", "I work nights at the depot, cooking is rushed",
             "Our kitchen got redone last spring", "I bowl on tuesdays with the guys from work",
             "My truck is a 2011 silverado", "I live out past the grain elevator",
             "the wife does the books for the church"],
            "long shift, what should i cook tonight",
            "okra",
        ),
    ],
)  # fmt: skip
def test_a_food_said_as_a_taste_comes_with_a_meal(
    service: MemoryService, statements: list[str], question: str, limit: str
) -> None:
    save_said(service, statements, NOW)
    top = _top(service, question)
    assert any(limit in t for t in top), top

"""News of a relative named by name changes what is said of them, never the name (issue 22).

"My sister is called Ingrid." links the sister and the name (`memory.recall.aliases`). News
that calls her by it ("Ingrid got a job at a school in Oslo now") shares the name with that
link, and was matched to it by meaning: the update ended the name, and the old workplace
stayed. A link is changed only by news that names the relative by relation: a name given
them again, or a new person in that relation.
"""

from __future__ import annotations

import pytest

from memory.understanding.updates import changed_record

SISTER = [
    ("family.sister.name", "User said: My sister is called Ingrid."),
    ("family.sister.work", "User said: she teaches at a school in Bergen."),
]
COUSIN = [
    ("family.表哥.name", "用户说：我表哥叫王磊。"),
    ("family.表哥.work", "用户说：他在苏州开饭馆。"),
]


@pytest.mark.parametrize(
    ("records", "news"),
    [
        (SISTER, "Ingrid got a job at a school in Oslo now"),
        (COUSIN, "王磊的饭馆搬到无锡去了"),
    ],
)
def test_news_called_by_the_name_changes_what_is_said_of_them(
    records: list[tuple[str, str]], news: str
) -> None:
    assert changed_record(news, "family", records) == 1


@pytest.mark.parametrize(
    ("records", "renamed"),
    [
        (SISTER, "Sorry, my sister is called Ingunn, not Ingrid."),
        (COUSIN, "说错了，我表哥叫王雷，不是王磊"),
        # A new person in the relation, named by it: the old name goes.
        (
            [
                ("family.girlfriend.name", "User said: My girlfriend is called Lotte."),
                ("family.girlfriend.study", "User said: she studies law in Leiden."),
            ],
            "there is a new girlfriend in my life now, she is called Mei",
        ),
    ],
)
def test_news_naming_the_relative_may_change_the_name(
    records: list[tuple[str, str]], renamed: str
) -> None:
    assert changed_record(renamed, "family", records) == 0

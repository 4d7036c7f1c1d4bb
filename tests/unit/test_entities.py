"""Entity extraction (offline rules, zh and en) and the entity index's one-hop links."""

from __future__ import annotations

import pytest

from memory.recall.entities import EntityIndex, entities_in


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("我在阿里巴巴公司上班，住在西湖区。", {("org", "阿里巴巴公司"), ("place", "西湖区")}),
        ("我对花生过敏，现在在杭州当护士。", {("place", "杭州")}),
        (
            "我室友叫李明，他在北京大学读书",
            {("person", "李明"), ("org", "北京大学"), ("person", "室友")},
        ),
        (
            "王老师说我女儿很喜欢《哈利波特》",
            {("person", "王老师"), ("person", "女儿"), ("thing", "哈利波特")},
        ),
        (
            "I went to a support group in Boston with Melanie.",
            {("place", "boston"), ("person", "melanie")},
        ),
        ("My daughter loves Lake Tahoe.", {("place", "lake tahoe")}),
        ("I volunteer at the Boston Public Library.", {("org", "boston public library")}),
        ('We read "The Little Prince" together.', {("thing", "the little prince")}),
    ],
)
def test_entities_in_finds_what_the_text_names(text: str, expected: set[tuple[str, str]]) -> None:
    found = {(e.kind, e.key) for e in entities_in(text)}
    assert expected <= found


@pytest.mark.parametrize(
    "text",
    [
        "Hey! Thanks, that sounds great.",
        "What did you do last Saturday in May?",
        "今天天气不错，我们出去走走吧。",
        "",
    ],
)
def test_entities_in_ignores_greetings_dates_and_plain_chat(text: str) -> None:
    assert entities_in(text) == []


def test_entities_are_unique_by_key() -> None:
    keys = [e.key for e in entities_in("Melanie met Melanie's friend. melanie!")]
    assert keys.count("melanie") == 1


def test_index_links_records_through_shared_entities_but_not_hubs() -> None:
    texts = {f"chat{i}": f"Caroline: small talk number {i}." for i in range(40)}
    texts |= {
        "a": "Caroline: my daughter started at Oakwood Academy.",
        "b": "Caroline: Oakwood Academy has a great art program.",
        "c": "Caroline: I visited Lisbon last year.",
    }
    index = EntityIndex(texts, max_share=0.05)
    assert "caroline" in index.hubs  # named in every record: links nothing
    assert index.neighbours(["a"]) == {"b": 1}
    assert index.neighbours(["c"]) == {}
    assert index.neighbours(["a"], ignore=["oakwood academy"]) == {}

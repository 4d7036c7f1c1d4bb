"""Ranking knobs that depend on the encoder and on the query's language (`memory.recall.ranking`).

A Chinese question rarely shares a word with the turn that answers it, so raw turns must be
able to come back on dense similarity alone (the episode floor), while a margin to the best
similarity keeps a handful of unrelated memories out of a small memory block.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime

import pytest

from memory.recall import ranking
from memory.recall.ranking import RankConfig, is_chinese, rank, tuned

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


@dataclass
class Rec:
    content: str
    kind: str = "episode"


def ids(out: list[tuple[str, float]]) -> list[str]:
    return [i for i, _ in out]


@pytest.mark.parametrize(
    ("query", "chinese"),
    [("我在哪里工作？", True), ("where do I work", False), ("我的 iPhone 15 Pro 放哪了", True),
     ("What does 小王 do for a living these days?", False), ("", False)],
)  # fmt: skip
def test_query_language(query: str, chinese: bool) -> None:
    assert is_chinese(query) is chinese


def test_tuning_is_looked_up_per_encoder_and_language_and_explicit_values_win() -> None:
    zh, en = tuned(RankConfig(), "我在哪里工作"), tuned(RankConfig(), "where do I work")
    assert (zh.language, en.language) == ("zh", "en")
    table = ranking.LANGUAGE_TUNING
    assert zh.dense_weight == table["local", "zh"]["dense_weight"] > en.dense_weight
    assert en.relevance_floor == ranking.RELEVANCE_FLOORS["local"]
    e5 = tuned(RankConfig(embedder="local-e5"), "我在哪里工作")
    assert e5.relevance_floor == table["local-e5", "zh"]["relevance_floor"] > 0.5
    # A set value beats the table; an unknown encoder gets the safe defaults.
    assert tuned(RankConfig(dense_weight=0.7), "我在哪里工作").dense_weight == 0.7
    other = tuned(RankConfig(embedder="openai:x"), "我在哪里工作")
    assert other.relevance_floor == 0.0 and math.isinf(other.episode_floor)
    assert math.isinf(other.dense_margin) and other.dense_weight == ranking.DEFAULT_DENSE_WEIGHT


def test_a_raw_turn_without_shared_words_needs_the_episode_floor() -> None:
    records = {"turn": Rec("我在杭州当护士"), "fact": Rec("User is a nurse.", kind="fact")}
    dense = [("turn", 0.5), ("fact", 0.5)]
    never = RankConfig(embedder="x", episode_floor=math.inf, dedupe_jaccard=1.0)
    assert ids(rank("我在哪里工作", dense, [], records, NOW, config=never)) == ["fact"]
    low = RankConfig(embedder="x", episode_floor=0.4, dedupe_jaccard=1.0)
    assert set(ids(rank("我在哪里工作", dense, [], records, NOW, config=low))) == {"turn", "fact"}
    high = RankConfig(embedder="x", episode_floor=0.6, dedupe_jaccard=1.0)
    assert ids(rank("我在哪里工作", dense, [], records, NOW, config=high)) == ["fact"]
    # A shared word brings the turn back whatever its similarity.
    assert "turn" in ids(rank("护士", dense, [("turn", 2.0)], records, NOW, config=never))


def test_margins_keep_far_neighbours_out_but_not_close_ones() -> None:
    records = {i: Rec(f"memory {i}", kind="fact") for i in "abcd"}
    dense = [("a", 0.40), ("b", 0.33), ("c", 0.20), ("d", 0.18)]
    lexical = [("d", 1.0)]
    base = RankConfig(embedder="x", relevance_floor=0.1, dedupe_jaccard=1.0)
    assert set(ids(rank("q", dense, lexical, records, NOW, config=base))) == set("abcd")
    dense_only = RankConfig(embedder="x", relevance_floor=0.1, dense_margin=0.1, dedupe_jaccard=1)
    # c is 0.2 below the best and has no word in common; d has one, so it stays.
    assert set(ids(rank("q", dense, lexical, records, NOW, config=dense_only))) == {"a", "b", "d"}
    both = RankConfig(embedder="x", relevance_floor=0.1, dense_margin=0.1, lexical_margin=0.1,
                      dedupe_jaccard=1.0)  # fmt: skip
    assert set(ids(rank("q", dense, lexical, records, NOW, config=both))) == {"a", "b"}


def test_chinese_queries_weigh_dense_higher_with_the_default_encoder() -> None:
    # One lexical hit on a shared character against a close paraphrase: in English the
    # lexical hit wins, in Chinese the paraphrase does.
    records = {"word": Rec("我在北京出差", kind="fact"), "meaning": Rec("我当护士", kind="fact")}
    dense = [("meaning", 0.45), ("word", 0.35)]
    lexical = [("word", 1.0)]
    zh = ids(rank("我在哪里工作", dense, lexical, records, NOW, config=RankConfig()))
    en = ids(rank("where do I work", dense, lexical, records, NOW, config=RankConfig()))
    assert zh[0] == "meaning" and en[0] == "word"

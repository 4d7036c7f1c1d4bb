"""The Chinese recall benchmark (`benchmarks/zh_recall.py`): its data, and a small slice run.

The data is checked for what the benchmark's figures rely on: enough questions of every
category, evidence that points at the user's own turns, and questions that mostly do not
repeat their evidence's words. The slice runs the real thing (SQLite store, embedded
Chroma, bundled embedder, offline extraction) on 2 conversations, 3 questions per category.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))

import zh_recall  # noqa: E402

DATA = REPO / "benchmarks" / "data" / "zh_recall.json"
CATEGORY_NAMES = set(zh_recall.CATEGORIES.values())


def user_turns(sample: dict[str, Any]) -> dict[str, str]:
    conv = sample["conversation"]
    return {
        t["dia_id"]: t["text"]
        for key, turns in conv.items()
        if re.fullmatch(r"session_\d+", key)
        for t in turns
        if t["speaker"] == conv["speaker_a"]
    }


def test_data_is_large_enough_and_evidence_resolves() -> None:
    raw = json.loads(DATA.read_text(encoding="utf-8"))
    assert "MIT" in raw["licence"] and "Original" in raw["licence"]
    samples = raw["samples"]
    assert 6 <= len(samples) <= 8
    questions = 0
    categories: dict[int, int] = {}
    for sample in samples:
        conv = sample["conversation"]
        sessions = [k for k in conv if re.fullmatch(r"session_\d+", k)]
        assert 3 <= len(sessions) <= 5
        for key in sessions:
            zh_recall.parse_session_date(conv[f"{key}_date_time"])  # every session is dated
            ids = [t["dia_id"] for t in conv[key]]
            n = key.split("_")[1]
            assert ids == [f"D{n}:{i}" for i in range(1, len(ids) + 1)], key
        said = user_turns(sample)
        for qa in sample["qa"]:
            assert qa["evidence"] and set(qa["evidence"]) <= set(said), qa
            assert qa["answer"].strip()
            categories[qa["category"]] = categories.get(qa["category"], 0) + 1
            questions += 1
    assert questions >= 150
    assert set(categories) == set(zh_recall.CATEGORIES) and min(categories.values()) >= 20


def test_most_questions_share_no_content_word_with_their_evidence() -> None:
    convs, _ = zh_recall.load(DATA)
    texts = {(c.sample_id, t.id): t.text for c in convs for t in c.turns}
    shared = [
        q.question
        for c in convs
        for q in c.questions
        if zh_recall.content_words(q.question)
        & set().union(*(zh_recall.content_words(texts[c.sample_id, e]) for e in q.evidence))
    ]
    total = sum(len(c.questions) for c in convs)
    assert len(shared) <= 0.2 * total, shared
    # The measure itself: a bigram the two share counts, a function-word bigram does not.
    assert zh_recall.content_words("我在杭州当护士") & zh_recall.content_words("杭州的天气")
    assert not zh_recall.content_words("我对花生过敏") & zh_recall.content_words("我在哪里工作？")


@pytest.fixture(scope="module")
def slice_result() -> dict[str, Any]:
    return zh_recall.run(DATA, limit=2, per_category=3)


def test_slice_scores_every_category_for_every_system(slice_result: dict[str, Any]) -> None:
    assert slice_result["conversations"] == 2 and slice_result["questions"] == 30
    assert set(slice_result["systems"]) == {"service", "dense", "bm25"}
    for name, system in slice_result["systems"].items():
        assert system["n"] == 30
        assert set(system["by_category"]) == CATEGORY_NAMES, name
        assert all(c["n"] == 6 for c in system["by_category"].values())
        for stats in [system, *system["by_category"].values()]:
            assert 0.0 <= stats["R@1_all"] <= stats["R@5_all"] <= stats["R@10_all"] <= 1.0
            assert stats["R@10_all"] <= stats["R@10_any"]
    # The product path wrote both kinds of memory: raw turns and extracted records.
    assert slice_result["service_ingest"]["turns_archived"] > 100
    assert slice_result["service_ingest"]["records_saved"] > 0


def test_slice_ranks_only_the_users_turns(slice_result: dict[str, Any]) -> None:
    convs, _ = zh_recall.load(DATA)
    said = {c.sample_id: {t.id for t in c.turns} for c in convs}
    for row in slice_result["details"]:
        for name in ("service", "dense", "bm25"):
            assert set(row[name]) <= said[row["conversation"]], (name, row["question"])
            assert len(row[name]) == len(set(row[name]))
        # The service may add "core" memories beyond k (they are in the memory block too).
        assert len(row["dense"]) == 10 and len(row["bm25"]) <= 10


def test_service_recalls_more_evidence_than_bm25(slice_result: dict[str, Any]) -> None:
    systems = slice_result["systems"]
    assert systems["service"]["R@10_all"] > systems["bm25"]["R@10_all"]
    assert systems["service"]["R@5_all"] >= systems["bm25"]["R@5_all"]

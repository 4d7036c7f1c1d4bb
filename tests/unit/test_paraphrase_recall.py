"""Recall without shared words: a statement comes back for a question in other words.

`tests/data/paraphrase_pairs.json` holds, per language, 40+ pairs of a statement a user
makes ("我对花生过敏，现在在杭州当护士。") and a later natural question about it that shares
no content word with it ("我在哪里工作？"), plus 3 unrelated statements of the same user.
Each pair is one user of a real `MemoryService` (in-memory store, embedded Chroma, bundled
embedder): the four statements are remembered as the graph's save node does with the
offline model (`zh_recall.tell`: extracted records plus raw turns), then the question is
asked with the graph's default recall size. Measured per language:

- ``top3``: share of questions whose statement (its record or raw turn) is in the first 3;
- ``distractors``: unrelated statements in the recalled memory block, per question.

The targets (`TOP3_TARGET`, `DISTRACTOR_CEILING`) are what the ranking must reach.

The ranking's margins and floors were calibrated on that table, so its figures are
in-sample. `tests/data/paraphrase_heldout.json` (30 pairs per language, same format, other
topics and phrasings: casual messages, two facts in one message, indirect questions) was
written afterwards and is held out: no weight, floor or margin is chosen on it. Its bars
(`HELDOUT_BARS`) follow one measurement on it.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))

import zh_recall  # noqa: E402

from graphs.settings import Settings  # noqa: E402

TABLES: dict[str, dict[str, Any]] = {
    name: json.loads((REPO / "tests/data" / file).read_text(encoding="utf-8"))
    for name, file in (
        ("calibration", "paraphrase_pairs.json"),
        ("heldout", "paraphrase_heldout.json"),
    )
}
MIN_PAIRS = {"calibration": 40, "heldout": 30}
LANGS = ("zh", "en")
TOP3_TARGET = 0.8
"""Share of questions whose statement must be among the first 3 memories recalled."""
DISTRACTOR_CEILING = 0.5
"""Unrelated statements allowed in the memory block, on average per question."""

# Bars for the held-out table: (least top3, most distractors per question). Set after ONE
# measurement on it (bundled encoder, the ranking calibrated on the other table), and that
# data was not used for tuning anything: zh top3 0.967 with 0.567 distractors, en 0.933
# with 0.167. Each bar is 0.1 looser than that figure, and top3 never below the figures of
# the ranking before the calibration (zh 0.45, en 0.10 on the calibration table). Note zh
# distractors already exceed the calibration table's DISTRACTOR_CEILING out of sample.
HELDOUT_BARS = {"zh": (0.86, 0.67), "en": (0.83, 0.27)}


@pytest.mark.parametrize("table", TABLES)
@pytest.mark.parametrize("lang", LANGS)
def test_table_pairs_share_no_content_word(table: str, lang: str) -> None:
    rows = TABLES[table][lang]
    assert len(rows) >= MIN_PAIRS[table]
    assert len({r["statement"] for r in rows}) == len(rows)
    for r in rows:
        shared = zh_recall.content_words(r["statement"]) & zh_recall.content_words(r["question"])
        assert not shared, (r["statement"], r["question"], shared)
        assert len(r["distractors"]) == 3 and r["statement"] not in r["distractors"]


def test_held_out_table_shares_no_statement_with_the_calibration_table() -> None:
    said = {
        text
        for lang in LANGS
        for row in TABLES["calibration"][lang]
        for text in (row["statement"], *row["distractors"])
    }
    for lang in LANGS:
        for row in TABLES["heldout"][lang]:
            assert not {row["statement"], *row["distractors"]} & said, row


def measure(service: Any, rows: list[dict[str, Any]], lang: str, k: int) -> dict[str, Any]:
    """Remember each pair's statements as one user, ask its question, score the recall."""
    said_at = datetime.now(UTC) - timedelta(days=1)
    hits = 0
    flooded = 0
    misses: list[str] = []
    for i, row in enumerate(rows):
        user = f"{lang}-{i}"
        # The statement goes in second, so neither order nor recency singles it out.
        said = [row["distractors"][0], row["statement"], *row["distractors"][1:]]
        turns = [(f"m{j}", text) for j, text in enumerate(said)]
        zh_recall.tell(service, user, "t1", turns, said_at)
        found = service.search(user, row["question"], k=k)
        ids = list(dict.fromkeys(r.record.source.message_ids[0] for r in found))
        if "m1" in ids[:3]:
            hits += 1
        else:
            misses.append(row["question"])
        flooded += sum(1 for m in ids if m != "m1")
    n = len(rows)
    return {
        "pairs": n,
        "top3": round(hits / n, 3),
        "distractors_per_question": round(flooded / n, 3),
        "missed": misses,
    }


@pytest.fixture(scope="module")
def rates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, dict[str, Any]]]:
    """Measure each table on its own service, so neither can shift the other's figures."""
    from langgraph.store.memory import InMemoryStore

    from memory.index.chroma import ChromaIndex
    from memory.index.embeddings import make_embedder
    from memory.service import MemoryService

    out: dict[str, dict[str, dict[str, Any]]] = {}
    for table, pairs in TABLES.items():
        path = str(tmp_path_factory.mktemp(f"chroma-{table}"))
        service = MemoryService(
            InMemoryStore(), ChromaIndex.open(make_embedder("local"), path=path)
        )
        recall_k = Settings().recall_k
        out[table] = {lang: measure(service, pairs[lang], lang, recall_k) for lang in LANGS}
    print(json.dumps({table: {lang: {k: v for k, v in r.items() if k != "missed"}
                              for lang, r in by_lang.items()}
                      for table, by_lang in out.items()}))  # fmt: skip
    return out


# Measured when the table was written (bundled encoder, the ranking of the time): zh top3
# 0.45 with 0.475 distractors per question, en top3 0.10 with 0.0: raw turns came back only
# on a shared word. With the episode floor and the margins of `memory.recall.ranking`
# (LANGUAGE_TUNING): zh 0.975 with 0.45, en 0.975 with 0.025. The margins were calibrated on
# this table (the loosest that stay under DISTRACTOR_CEILING), and so was the English episode
# floor (LoCoMo's cross-validation is flat in it), so these figures are in-sample.
@pytest.mark.parametrize("lang", LANGS)
def test_statement_recalled_by_a_question_in_other_words(
    lang: str, rates: dict[str, dict[str, dict[str, Any]]]
) -> None:
    got = rates["calibration"][lang]
    assert got["top3"] >= TOP3_TARGET, got
    assert got["distractors_per_question"] <= DISTRACTOR_CEILING, got


@pytest.mark.parametrize("lang", LANGS)
def test_held_out_statement_recalled_by_a_question_in_other_words(
    lang: str, rates: dict[str, dict[str, dict[str, Any]]]
) -> None:
    got = rates["heldout"][lang]
    least_top3, most_distractors = HELDOUT_BARS[lang]
    assert got["top3"] >= least_top3, got
    assert got["distractors_per_question"] <= most_distractors, got

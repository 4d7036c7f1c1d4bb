"""The understanding model: its corpus, its shipped weights, and what the offline path does
with its readings (forget requests, statements no pattern knows, kinds that never expire)."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from graphs.offline import OfflineChatModel
from graphs.offline_rules import _from_reading, extract_rules
from memory.requests import forget_requests
from memory.understanding import FAMILY_PREFIX, Reading, read_utterances
from memory.understanding.corpus import (
    ASKED,
    ASKING,
    FAMILIES,
    INTENTS,
    KINDS,
    SPLITS,
    TRAIN_ONLY,
    TRAP,
    Utterance,
    asking_test,
    corpus_splits,
    load_split,
    read_sources,
    split,
)
from memory.understanding.model import MODEL_DIR, load_model
from memory.understanding.train import fit_head, macro_f1, settings_score

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)  # a Monday


def test_the_corpus_is_big_balanced_and_labelled() -> None:
    items = read_sources()
    langs = Counter(u.lang for u in items)
    assert len(items) >= 2000 and min(langs.values()) >= 0.45 * len(items)
    assert {u.intent for u in items} == set(INTENTS)
    assert {u.kind for u in items} <= set(KINDS) and {u.family for u in items} <= set(FAMILIES)
    # kind is what a statement makes; forget and update requests say what they point at
    assert all(u.kind != "none" for u in items if u.intent == "remember")
    assert all(u.target != "none" for u in items if u.intent == "forget")


def test_a_header_glued_to_the_line_above_it_is_refused(tmp_path: Path) -> None:
    # Appending a section to a file with no final newline glues its header to the last
    # line: the lines below it must not take the section above's labels unnoticed.
    (tmp_path / "en.txt").write_text(
        "## remember fact home\nI live in Lyon.## question none none\nFix my essay.\n",
        encoding="utf-8",
    )
    with pytest.raises(ValueError, match="en.txt:2: a header inside a line"):
        read_sources(tmp_path, ("en.txt",))


def test_the_splits_are_disjoint_fixed_and_hold_traps_and_forgets() -> None:
    parts = {name: load_split(name) for name in SPLITS}
    texts = [{u.text for u in items} for items in parts.values()]
    assert not (texts[0] & texts[1] or texts[0] & texts[2] or texts[1] & texts[2])
    # the files on disk are what the seed gives: anyone can rebuild them
    assert {k: [u.text for u in v] for k, v in corpus_splits().items()} == {
        k: [u.text for u in v] for k, v in parts.items()
    }
    # lines added for training only go to train and move no line of dev or test
    plain = split(read_sources())
    assert plain["dev"] == parts["dev"] and plain["test"] == parts["test"]
    extra = {u.text for u in read_sources(names=TRAIN_ONLY)}
    assert extra and extra <= texts[0]
    for items in parts.values():
        for lang in ("en", "zh"):
            mine = [u for u in items if u.lang == lang]
            assert any(u.intent == "forget" for u in mine)
            assert any(u.intent != "forget" and TRAP.search(u.text) for u in mine)


def test_the_indirect_questions_hold_a_quarter_out_of_every_fit() -> None:
    asking = read_sources(names=(*ASKING, *ASKED))
    held = asking_test()
    train = {u.text for u in load_split("train")}
    # the held-out quarter is in no split a fit or a setting reads; the rest is in train
    assert held and not {u.text for u in held} & train
    assert {u.text for u in asking} - {u.text for u in held} <= train
    assert not {u.text for u in held} & {u.text for u in [*load_split("dev"), *load_split("test")]}
    for lang in ("en", "zh"):
        mine = [u for u in held if u.lang == lang]
        assert 0.15 * len([u for u in asking if u.lang == lang]) < len(mine)
        assert {u.intent for u in mine} == {"question"}
        # both questions that depend on the user's facts and general ones that do not
        assert "none" in {u.family for u in mine} and len({u.family for u in mine}) > 5


def test_the_shipped_weights_are_small_and_load_offline() -> None:
    size = sum(p.stat().st_size for p in MODEL_DIR.glob("model.*"))
    assert size < 1_000_000
    model = load_model()
    meta = json.loads((MODEL_DIR / "model.json").read_text(encoding="utf-8"))
    heads = {"intent", "kind", "family", "target", "medicine", "food", "moves", "things"}
    heads |= {"forget", "asked", "swaps", "instructs", "asks"}
    assert set(model.heads) == set(meta["labels"]) == heads
    assert set(model.heads["intent"].labels) == set(model.heads["forget"].labels) == set(INTENTS)
    assert model.heads["asked"].labels == model.heads["family"].labels
    assert model.heads["medicine"].labels == ("medicine", "other")
    assert model.heads["food"].labels == ("food", "other")
    assert model.heads["moves"].labels == ("moves", "other")
    assert model.heads["swaps"].labels == ("other", "swaps")
    assert model.heads["instructs"].labels == ("instructs", "other")
    assert model.heads["asks"].labels == ("asks", "states")
    assert set(model.heads["things"].labels) == {
        "pet",
        "vehicle",
        "device",
        "trip",
        "exercise",
        "other",
    }
    assert 0.5 <= model.forget_threshold < 1.0
    assert 0.5 <= model.medicine_threshold < 1.0
    assert 0.5 <= model.food_threshold < 1.0
    assert 0.5 <= model.moves_threshold < 1.0
    assert 0.5 <= model.things_threshold < 1.0
    assert 0.5 <= model.asks_threshold < 1.0
    assert 0.5 <= model.instructs_threshold < 1.0
    assert set(model.span_forget_floor) == {"en", "zh"}


def test_a_head_fits_deterministically_and_separates_what_it_can() -> None:
    rng = np.random.default_rng(0)
    x = np.vstack([rng.normal(-1, 0.3, (20, 4)), rng.normal(1, 0.3, (20, 4))]).astype(np.float32)
    labels = ["a"] * 20 + ["b"] * 20
    first, second = fit_head(x, labels, 1e-4), fit_head(x, labels, 1e-4)
    assert np.array_equal(first.weight, second.weight)
    pred = [first.labels[i] for i in first.probabilities(x).argmax(axis=1)]
    assert macro_f1(labels, pred) == 1.0


def test_settings_are_scored_only_on_utterances_their_heads_did_not_see() -> None:
    # One feature of its own per utterance and labels at random: a head that saw an
    # utterance remembers its label, one that did not can only guess. A score taken on
    # the utterances a head was fitted on would be near 1.0 here.
    rng = np.random.default_rng(1)
    n = 60
    intents = rng.choice(["statement", "question"], n)
    kinds = rng.choice(["fact", "habit"], n)
    items = [
        Utterance(f"u{i}", "en", str(intents[i]), str(kinds[i]), "none", "none") for i in range(n)
    ]
    own = np.eye(n, dtype=np.float32)
    f1, accuracy = settings_score(items, own, np.zeros((n, 1), np.float32), 1.0, 1e-4)
    assert f1 < 0.75 and accuracy < 0.75, (f1, accuracy)
    # The same utterances with a feature that says their labels are scored as separable.
    said = np.stack([intents == "statement", kinds == "fact"], axis=1).astype(np.float32)
    f1, accuracy = settings_score(items, np.hstack([own, 3 * said]), own[:, :1], 1.0, 1e-4)
    assert f1 == accuracy == 1.0, (f1, accuracy)


def test_readings_are_one_per_text_in_order() -> None:
    texts = ["Where do I live?", "我不吃辣。", "Where do I live?"]
    readings = read_utterances(texts)
    assert len(readings) == 3 and readings[0] == readings[2]
    assert readings[0].intent == "question" and readings[1].intent == "remember"


@pytest.mark.parametrize(
    "text",
    ["I never forget my mother's birthday.", "我从来不会忘记带钥匙。", "I run the sales team."],
)
def test_statements_with_trap_words_are_not_forget_requests(text: str) -> None:
    out = extract_rules(text, NOW)
    assert out.forget == []


def test_a_question_about_memory_is_no_forget_request() -> None:
    # whatever the model reads, a sentence that asks by its form and names no request asks
    assert forget_requests("Have you deleted my address") == []
    assert forget_requests("你删了我的地址吗") == []


def _reading(intent: str, kind: str, family: str) -> Reading:
    return Reading(intent, kind, family, "family", 0.9)


def test_a_statement_no_pattern_knows_is_kept_in_the_users_words() -> None:
    cand = _from_reading("Shellfish gives me hives", _reading("remember", "fact", "health"), NOW)
    assert cand is not None and cand.kind == "fact"
    assert cand.subject.startswith(FAMILY_PREFIX["health"] + ".")
    assert cand.content == "User said: Shellfish gives me hives."


def test_a_birthday_is_a_fact_with_a_yearly_date_not_an_event() -> None:
    cand = _from_reading("我生日是十月五号", _reading("remember", "recurring_date", "family"), NOW)
    assert cand is not None and cand.kind == "fact" and cand.event_date is None
    assert (cand.subject, cand.value) == ("profile.birthday", "--10-05")
    sister = _from_reading(
        "My sister's birthday is May 3", _reading("remember", "recurring_date", "family"), NOW
    )
    assert sister is not None and sister.subject == "family.sister.birthday"


def test_a_routine_is_a_habit_that_never_expires() -> None:
    cand = _from_reading(
        "Every Saturday I play tennis", _reading("remember", "habit", "schedule"), NOW
    )
    assert cand is not None and cand.kind == "preference" and cand.event_date is None
    assert cand.subject.startswith("habit.")


def test_a_new_city_is_filed_where_the_old_one_is_and_nobody_elses_is() -> None:
    mine = _from_reading(
        "Last spring I relocated to Ghent", _reading("update", "fact", "home"), NOW
    )
    assert mine is not None and mine.subject == FAMILY_PREFIX["home"]
    theirs = _from_reading("My colleague lives in Rome", _reading("remember", "fact", "home"), NOW)
    assert theirs is not None and theirs.subject.startswith("people.")


def test_a_one_off_without_a_future_day_is_left_to_the_dates() -> None:
    assert _from_reading("I went hiking", _reading("remember", "event", "hobbies"), NOW) is None


def test_the_zh_reply_has_one_mark_between_memories() -> None:
    reply = OfflineChatModel.reply("我是谁？", ["用户叫小王。", "用户不吃辣。"])
    assert "用户叫小王；用户不吃辣。" in reply
    assert "。；" not in reply and "。。" not in reply


def test_the_corpus_sources_are_in_the_package() -> None:
    root = Path(__file__).resolve().parents[2]
    pyproject = (root / "pyproject.toml").read_text(encoding="utf-8")
    assert "memory.understanding" in pyproject and "model.npz" in pyproject

"""Train the understanding model from the corpus: `python -m memory.understanding.train`.

Deterministic (zero-initialised softmax heads, full-batch Adam, fixed steps): the same
corpus gives the same weights. Settings (n-gram weight, L2) are chosen out of fold on train
and dev together, the forget threshold on dev; the final heads are fitted on train and dev
together (the forget head with the trap lines too, `memory.understanding.corpus.TRAPS`), and
the heads fitted on lines of their own beside them (`memory.understanding.heads`). The test
split is never read here.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence

import numpy as np

from memory.understanding.corpus import (
    ASKED,
    ASKING,
    TRAPS,
    Utterance,
    load_split,
    read_sources,
)
from memory.understanding.features import ENCODER_DIM, features, ngram_matrix, sentence_vectors
from memory.understanding.heads import (
    fit_asks,
    fit_food,
    fit_head,
    fit_instructs,
    fit_medicine,
    fit_moves,
    fit_swaps,
    fit_things,
)
from memory.understanding.model import HEADS, Head, UnderstandingModel, save_model

NGRAM_WEIGHTS = (0.5, 1.0, 2.0)
L2_VALUES = (1e-4, 1e-3)
SPAN_FLOOR_MIN = 0.05
"""The least forget probability a request's wording may get by with, whatever dev says."""


def head_rows(items: Sequence[Utterance], head: str) -> tuple[list[int], list[str]]:
    """Return which utterances train `head`, and their labels."""
    rows, labels = [], []
    for i, u in enumerate(items):
        if head == "intent":
            label = u.intent
        elif head == "kind":
            if u.kind == "none":
                continue  # kind is read only for what is remembered or updated
            label = u.kind
        elif head == "family":
            label = u.family
        else:
            if u.intent not in ("forget", "update"):
                continue
            label = u.target if u.target != "none" else "family"
        rows.append(i)
        labels.append(label)
    return rows, labels


def macro_f1(gold: Sequence[str], pred: Sequence[str]) -> float:
    """Return the macro-averaged F1 over the gold labels."""
    scores = []
    for label in sorted(set(gold)):
        tp = sum(g == p == label for g, p in zip(gold, pred, strict=True))
        fp = sum(p == label != g for g, p in zip(gold, pred, strict=True))
        fn = sum(g == label != p for g, p in zip(gold, pred, strict=True))
        scores.append(2 * tp / (2 * tp + fp + fn) if tp else 0.0)
    return float(np.mean(scores))


def _inputs(vectors: np.ndarray, grams: np.ndarray, ngram_weight: float) -> np.ndarray:
    return np.hstack([vectors, ngram_weight * grams])


def fit(
    items: Sequence[Utterance],
    vectors: np.ndarray,
    grams: np.ndarray,
    ngram_weight: float,
    l2: float,
    heads_to_fit: Sequence[str] = HEADS,
) -> dict[str, Head]:
    """Fit the named heads (all by default) on `items`."""
    x = _inputs(vectors, grams, ngram_weight)
    heads = {}
    for name in heads_to_fit:
        rows, labels = head_rows(items, name)
        heads[name] = fit_head(x[rows], labels, l2)
    return heads


def choose_threshold(probabilities: np.ndarray, gold: list[str], labels: tuple[str, ...]) -> float:
    """Return the lowest forget probability that keeps every dev non-forget out of forget."""
    col = labels.index("forget")
    others = [probabilities[i, col] for i, g in enumerate(gold) if g != "forget"]
    return float(min(0.9, max(0.5, max(others, default=0.0) + 1e-3)))


FOLDS = 5
"""Folds of the out-of-fold forget probabilities the span floor is chosen on."""


def out_of_fold_forget(
    items: Sequence[Utterance],
    vectors: np.ndarray,
    grams: np.ndarray,
    ngram_weight: float,
    l2: float,
) -> list[list[tuple[float, bool, bool]]]:
    """Return, per utterance, `(forget probability, forget wins, worded)` of each sentence.

    Each utterance is read by an intent head fitted on the other folds (a fixed fold per
    position), sentence by sentence as the offline path reads it; "worded" is whether a
    request's wording (`memory.requests.forget_span`) finds a span in the sentence that
    names something (`memory.requests.names_something`).
    """
    from memory.requests import forget_span, names_something
    from memory.text.asking import split_sentences
    from memory.understanding import read_utterances

    fold = np.arange(len(items)) % FOLDS
    sentences = [split_sentences(u.text) or [u.text] for u in items]
    flat_all = [s for ss in sentences for s in ss]
    # The shipped model reads what a span names (its family): the fold's heads read intent.
    worded = {
        s: names_something(forget_span(s), r)
        for s, r in zip(flat_all, read_utterances(flat_all), strict=True)
    }
    out: list[list[tuple[float, bool, bool]]] = [[] for _ in items]
    for k in range(FOLDS):
        fit_on = [int(i) for i in np.flatnonzero(fold != k)]
        held = [int(i) for i in np.flatnonzero(fold == k)]
        head = fit([items[i] for i in fit_on], vectors[fit_on], grams[fit_on], ngram_weight, l2,
                   ("intent",))["intent"]  # fmt: skip
        col = head.labels.index("forget")
        flat = [s for i in held for s in sentences[i]]
        probs = head.probabilities(features(flat, ngram_weight))
        at = 0
        for i in held:
            for s in sentences[i]:
                row = probs[at]
                at += 1
                out[i].append((float(row[col]), int(row.argmax()) == col, worded[s]))
    return out


def settings_score(
    items: Sequence[Utterance],
    vectors: np.ndarray,
    grams: np.ndarray,
    ngram_weight: float,
    l2: float,
) -> tuple[float, float]:
    """Return the out-of-fold intent macro-F1 and kind accuracy of one setting.

    Scored over train and dev in `FOLDS` folds (never test), the two heads the targets are
    set on. One dev split was too small to choose on: forty added corpus lines flipped the
    chosen n-gram weight and moved results on phrasings no line was written for.
    """
    fold = np.arange(len(items)) % FOLDS
    intents: list[str] = [""] * len(items)
    kinds: dict[int, str] = {}
    for k in range(FOLDS):
        fit_on = [int(i) for i in np.flatnonzero(fold != k)]
        held = [int(i) for i in np.flatnonzero(fold == k)]
        heads = fit([items[i] for i in fit_on], vectors[fit_on], grams[fit_on], ngram_weight, l2,
                    ("intent", "kind"))  # fmt: skip
        x_held = _inputs(vectors[held], grams[held], ngram_weight)
        intent, kind = heads["intent"], heads["kind"]
        for i, row in zip(held, intent.probabilities(x_held), strict=True):
            intents[i] = intent.labels[int(row.argmax())]
        for i, row in zip(held, kind.probabilities(x_held), strict=True):
            kinds[i] = kind.labels[int(row.argmax())]
    f1 = macro_f1([u.intent for u in items], intents)
    rows, gold = head_rows(items, "kind")
    accuracy = float(np.mean([kinds[i] == g for i, g in zip(rows, gold, strict=True)]))
    return f1, accuracy


def forget_scores(
    items: Sequence[Utterance],
    oof: Sequence[Sequence[tuple[float, bool, bool]]],
    threshold: float,
    floors: Mapping[str, float],
) -> dict[str, dict[str, float]]:
    """Return forget precision, recall, F1 and F0.5 per language, at a threshold and floors."""
    out = {}
    for lang in sorted({u.lang for u in items}):
        floor = floors[lang]
        tp = fp = fn = 0
        for u, sents in zip(items, oof, strict=True):
            if u.lang != lang:
                continue
            said = any(
                (wins and p >= threshold) or (worded and p >= floor) for p, wins, worded in sents
            )
            gold = u.intent == "forget"
            tp += said and gold
            fp += said and not gold
            fn += gold and not said
        precision = tp / (tp + fp) if tp + fp else 1.0
        recall = tp / (tp + fn) if tp + fn else 1.0
        out[lang] = {
            "precision": precision,
            "recall": recall,
            "f1": _f_beta(precision, recall, 1.0),
            "f0.5": _f_beta(precision, recall, 0.5),
        }
    return out


def _f_beta(precision: float, recall: float, beta: float) -> float:
    b2 = beta * beta
    return (1 + b2) * precision * recall / (b2 * precision + recall) if precision + recall else 0.0


def choose_span_floor(
    items: Sequence[Utterance],
    oof: Sequence[Sequence[tuple[float, bool, bool]]],
    threshold: float,
) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """Return, per language, the forget probability a request's wording needs, and the scores.

    The offline path takes a sentence worded as a request (`memory.requests.forget_span`)
    for one when the model gives forget at least this. Chosen on train and dev out of fold
    (never on test), for each language on its own: the floor with the best forget F0.5 (a
    tie: the higher floor). F0.5, because an ordinary statement taken for a request loses
    what the user said, and a request missed is told back and can be said again (the targets
    ask precision 0.98 and recall 0.90); one floor for both languages, on their mean F1, let
    the Chinese wording take five ordinary sentences for the six requests it added. One dev
    split held too few worded non-requests to set it ("Don't forget to call mum" alone set a
    floor that let "忘了吧，没事了" through).
    """
    floors: dict[str, float] = {}
    for lang in sorted({u.lang for u in items}):
        mine = [(u, o) for u, o in zip(items, oof, strict=True) if u.lang == lang]
        worded = sorted({round(p + 1e-3, 4) for _, sents in mine for p, _, w in sents if w})
        # The threshold itself: the wording adds nothing the model would not take alone.
        candidates = [
            SPAN_FLOOR_MIN,
            *(f for f in worded if SPAN_FLOOR_MIN < f < threshold),
            threshold,
        ]
        best: tuple[float, float] | None = None
        for floor in candidates:
            score = forget_scores(
                [u for u, _ in mine], [o for _, o in mine], threshold, {lang: floor}
            )[lang]["f0.5"]
            if best is None or score >= best[0] - 1e-12:
                best = (score, floor)
        assert best is not None
        floors[lang] = best[1]
    return floors, forget_scores(items, oof, threshold, floors)


def main(argv: Sequence[str] | None = None) -> int:
    """Choose settings out of fold, fit on train + dev, write the model; print the figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.parse_args(argv)
    # The indirect questions train the family and asked heads only: as questions they moved
    # the intent head's line between a statement and a question, and statements went unkept.
    asking = {u.text for u in read_sources(names=ASKING)}
    asked = {u.text for u in read_sources(names=ASKED)}
    traps = {u.text for u in read_sources(names=TRAPS)}
    fitted = load_split("train")
    train = [u for u in fitted if u.text not in asking | asked and u.text not in traps]
    questions = [u for u in fitted if u.text in asking]
    more = [u for u in fitted if u.text in asked]
    trapped = [u for u in fitted if u.text in traps]
    dev = load_split("dev")
    both = [*train, *dev]
    vectors = sentence_vectors([u.text for u in both])
    grams = ngram_matrix([u.text for u in both])
    n = len(train)
    best: tuple[float, float, float] | None = None
    report = []
    for ngram_weight in NGRAM_WEIGHTS:
        for l2 in L2_VALUES:
            f1, accuracy = settings_score(both, vectors, grams, ngram_weight, l2)
            report.append(
                {"ngram_weight": ngram_weight, "l2": l2, "out_of_fold_intent_macro_f1": f1,
                 "out_of_fold_kind_accuracy": accuracy}
            )  # fmt: skip
            score = (f1 + accuracy) / 2
            if best is None or score > best[0] + 1e-9:
                best = (score, ngram_weight, l2)
    assert best is not None
    _, ngram_weight, l2 = best
    heads = fit(train, vectors[:n], grams[:n], ngram_weight, l2, ("intent",))
    dev_p = heads["intent"].probabilities(_inputs(vectors[n:], grams[n:], ngram_weight))
    threshold = choose_threshold(dev_p, [u.intent for u in dev], heads["intent"].labels)
    oof = out_of_fold_forget(both, vectors, grams, ngram_weight, l2)
    floor, oof_scores = choose_span_floor(both, oof, threshold)
    final = fit(both, vectors, grams, ngram_weight, l2)

    def with_lines(extra: list[Utterance], head: str) -> Head:
        texts = [u.text for u in extra]
        v, g = (
            np.vstack([vectors, sentence_vectors(texts)]),
            np.vstack([grams, ngram_matrix(texts)]),
        )
        return fit([*both, *extra], v, g, ngram_weight, l2, (head,))[head]

    if trapped:
        # The forget head: the intent head fitted with the trap lines too, of which only the
        # forget column is read (`memory.understanding.Reading.forget_head`).
        final["forget"] = with_lines(trapped, "intent")
    if questions:
        final["family"] = with_lines(questions, "family")
    if more:
        # The `asked` head: the family a question's answer depends on (`Reading.asked`),
        # fitted with every indirect question; the family head with the first ones only.
        final["asked"] = with_lines([*questions, *more], "family")
    final["medicine"], medicine_threshold, medicine = fit_medicine(ngram_weight, l2, both)
    final["food"], food_threshold, food = fit_food(ngram_weight, l2, both)
    final["moves"], moves_threshold, moves = fit_moves(ngram_weight, l2, both)
    final["things"], things_threshold, things = fit_things(ngram_weight, l2, both)
    final["swaps"], swaps_threshold, swaps = fit_swaps(ngram_weight, l2, both)
    final["instructs"], instructs_threshold, instructs = fit_instructs(
        ngram_weight, l2, [*fitted, *dev]
    )
    final["asks"], asks_threshold, asks = fit_asks(ngram_weight, l2, [*fitted, *dev])
    save_model(
        UnderstandingModel(
            final,
            ngram_weight,
            threshold,
            floor,
            medicine_threshold,
            food_threshold,
            moves_threshold,
            things_threshold,
            swaps_threshold,
            instructs_threshold,
            asks_threshold,
        )
    )
    summary = {
        "grid": report,
        "chosen": {"ngram_weight": ngram_weight, "l2": l2},
        "forget_threshold": threshold,
        "span_forget_floor": floor,
        "span_forget_floor_out_of_fold": oof_scores,
        "medicine": medicine,
        "food": food,
        "moves": moves,
        "things": things,
        "swaps": swaps,
        "instructs": instructs,
        "asks": asks,
        "encoder_dim": ENCODER_DIM,
    }
    sys.stdout.write(json.dumps(summary, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

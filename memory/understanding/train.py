"""Train the understanding model from the corpus: `python -m memory.understanding.train`.

Deterministic (zero-initialised softmax heads, full-batch Adam, fixed steps): the same
corpus gives the same weights. Settings (n-gram weight, L2) are chosen out of fold on train
and dev together, the forget threshold on dev; the final heads are fitted on train and dev
together. The test split is never read here.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

import numpy as np

from memory.understanding.corpus import Utterance, load_split
from memory.understanding.features import ENCODER_DIM, features, ngram_matrix, sentence_vectors
from memory.understanding.model import HEADS, Head, UnderstandingModel, save_model

STEPS = 300
LEARNING_RATE = 0.05
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


def fit_head(x: np.ndarray, labels: list[str], l2: float) -> Head:
    """Fit one class-balanced softmax head by full-batch Adam."""
    classes = tuple(sorted(set(labels)))
    y = np.array([classes.index(label) for label in labels])
    onehot = np.eye(len(classes), dtype=np.float32)[y]
    counts = onehot.sum(axis=0)
    sample_weight = (len(y) / (len(classes) * counts))[y][:, None].astype(np.float32)
    weight = np.zeros((x.shape[1], len(classes)), dtype=np.float32)
    bias = np.zeros(len(classes), dtype=np.float32)
    m_w, v_w = np.zeros_like(weight), np.zeros_like(weight)
    m_b, v_b = np.zeros_like(bias), np.zeros_like(bias)
    beta1, beta2, eps = 0.9, 0.999, 1e-8
    for step in range(1, STEPS + 1):
        logits = x @ weight + bias
        logits -= logits.max(axis=1, keepdims=True)
        p = np.exp(logits)
        p /= p.sum(axis=1, keepdims=True)
        grad_logits = (p - onehot) * sample_weight / len(y)
        g_w = x.T @ grad_logits + l2 * weight
        g_b = grad_logits.sum(axis=0)
        for param, grad, m, v in ((weight, g_w, m_w, v_w), (bias, g_b, m_b, v_b)):
            m *= beta1
            m += (1 - beta1) * grad
            v *= beta2
            v += (1 - beta2) * grad * grad
            m_hat = m / (1 - beta1**step)
            v_hat = v / (1 - beta2**step)
            param -= LEARNING_RATE * m_hat / (np.sqrt(v_hat) + eps)
    return Head(classes, weight, bias)


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
    request's wording (`memory.extraction.forget_span`) finds a span in the sentence.
    """
    from memory.extraction import forget_span
    from memory.text.asking import split_sentences

    fold = np.arange(len(items)) % FOLDS
    sentences = [split_sentences(u.text) or [u.text] for u in items]
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
                out[i].append(
                    (float(row[col]), int(row.argmax()) == col, forget_span(s) is not None)
                )
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
    floor: float,
) -> dict[str, dict[str, float]]:
    """Return forget precision, recall and F1 per language, with the threshold and floor."""
    out = {}
    for lang in sorted({u.lang for u in items}):
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
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        out[lang] = {"precision": precision, "recall": recall, "f1": f1}
    return out


def choose_span_floor(
    items: Sequence[Utterance],
    oof: Sequence[Sequence[tuple[float, bool, bool]]],
    threshold: float,
) -> tuple[float, dict[str, dict[str, float]]]:
    """Return the forget probability a request's wording needs, and its out-of-fold scores.

    The offline path takes a sentence worded as a request (`memory.extraction.forget_span`)
    for one when the model gives forget at least this. Chosen on train and dev out of fold
    (never on test): the floor with the best forget F1, averaged over the languages (a
    tie: the higher floor). One dev split held too few worded non-requests to set it ("Don't
    forget to call mum" alone set a floor that let "忘了吧，没事了" through).
    """
    worded = sorted({round(p + 1e-3, 4) for sents in oof for p, _, w in sents if w})
    candidates = [SPAN_FLOOR_MIN, *(f for f in worded if SPAN_FLOOR_MIN < f <= threshold)]
    best: tuple[float, float] | None = None
    for floor in candidates:
        scores = forget_scores(items, oof, threshold, floor)
        mean = float(np.mean([s["f1"] for s in scores.values()]))
        if best is None or mean >= best[0] - 1e-12:
            best = (mean, floor)
    assert best is not None
    return best[1], forget_scores(items, oof, threshold, best[1])


def main(argv: Sequence[str] | None = None) -> int:
    """Choose settings out of fold, fit on train + dev, write the model; print the figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.parse_args(argv)
    train, dev = load_split("train"), load_split("dev")
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
    save_model(UnderstandingModel(final, ngram_weight, threshold, floor))
    summary = {
        "grid": report,
        "chosen": {"ngram_weight": ngram_weight, "l2": l2},
        "forget_threshold": threshold,
        "span_forget_floor": floor,
        "span_forget_floor_out_of_fold": oof_scores,
        "encoder_dim": ENCODER_DIM,
    }
    sys.stdout.write(json.dumps(summary, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

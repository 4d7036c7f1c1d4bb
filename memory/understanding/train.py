"""Train the understanding model from the corpus: `python -m memory.understanding.train`.

Deterministic (zero-initialised softmax heads, full-batch Adam, fixed steps): the same
corpus gives the same weights. Settings (n-gram weight, L2) are chosen out of fold on train
and dev together, the forget threshold on dev; the final heads are fitted on train and dev
together (the forget head with the trap lines too, `memory.understanding.corpus.TRAPS`). The
test split is never read here.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Mapping, Sequence

import numpy as np

from memory.dates import without_date
from memory.understanding.corpus import (
    ASKED,
    ASKING,
    TRAPS,
    Utterance,
    load_split,
    read_food,
    read_instructs,
    read_medicine,
    read_moves,
    read_sources,
    read_swaps,
    read_things,
)
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


MEDICINE_PRECISION = 0.98
"""The precision the medicine head's threshold must reach on its held-out lines: a statement
taken for a medicine is forgotten with "the pills I'm on"."""
FOOD_PRECISION = 0.95
"""The precision the food head's threshold must reach on its held-out lines: a relative's
remark taken for a food limit comes up with every meal."""
MOVES_PRECISION = 0.9
"""The precision the moves head's threshold must reach on its held-out lines: a one-off
taken for a move is filed over the user's employer or home, and ends it. Its held-out
precision stays near 0.94 at every threshold (at 0.95 nothing passes); what it takes wrongly
there is someone else's move or a maybe, which the offline path files under the person, or
drops as tentative, before any slot (`graphs.offline_rules._lasting`)."""
THINGS_PRECISION = 0.95
"""The precision the things head's threshold must reach on its held-out lines, over what it
reads as a thing: a forget request read as the wrong thing forgets a message it never
named."""
SWAPS_PRECISION = 0.9
"""The precision the swaps head's threshold must reach on its held-out lines: a statement
taken for a replacement ends the one remembered thing of its kind (the car, the phone). At
0.95 only the highest threshold passes (recall 0.44); what is taken wrongly at 0.9 still
ends a thing only when the things head reads it as that kind of thing and the user is
listed with one thing of it (`graphs.offline_rules._swapped`)."""
INSTRUCTS_PRECISION = 0.98
"""The precision the instructs head's threshold must reach on its held-out lines: a request
about one answer taken for a standing one is shown in every conversation after it."""
THRESHOLDS = tuple(round(0.5 + 0.05 * i, 2) for i in range(10))


def _held_out(text: str) -> bool:
    """Return True for the quarter of a head's lines its threshold is chosen on."""
    return int(hashlib.sha256(text.encode("utf-8")).hexdigest(), 16) % 4 == 0


def fit_binary(
    rows: Sequence[tuple[str, str, str]], label: str, precision: float, ngram_weight: float,
    l2: float,
) -> tuple[Head, float, dict[str, float]]:  # fmt: skip
    """Fit a head of `label` against `other`; return it, its threshold and figures.

    The threshold is the lowest of `THRESHOLDS` at which a head fitted on three quarters of
    the lines reaches `precision` on the fourth (else the highest); the head shipped is
    then fitted on all of them.
    """
    fit_on = [r for r in rows if not _held_out(r[0])]
    held = [r for r in rows if _held_out(r[0])]
    head = fit_head(features([t for t, _, _ in fit_on], ngram_weight), [x for *_, x in fit_on], l2)
    col = head.labels.index(label)
    probs = head.probabilities(features([t for t, _, _ in held], ngram_weight))[:, col]
    gold = np.array([x == label for *_, x in held])
    chosen = (THRESHOLDS[-1], 0.0, 0.0)
    for threshold in THRESHOLDS:
        said = probs >= threshold
        reached = float((said & gold).sum() / max(1, said.sum()))
        if reached >= precision:
            chosen = (threshold, reached, float((said & gold).sum() / max(1, gold.sum())))
            break
    final = fit_head(features([t for t, _, _ in rows], ngram_weight), [x for *_, x in rows], l2)
    report = {"threshold": chosen[0], "held_out_precision": chosen[1],
              "held_out_recall": chosen[2], "lines": len(rows), "held_out": len(held)}  # fmt: skip
    return final, chosen[0], report


def fit_medicine(
    ngram_weight: float, l2: float, corpus: Sequence[Utterance] = ()
) -> tuple[Head, float, dict[str, float]]:
    """Fit the `medicine` head on the `MEDICINE` lines (`fit_binary`).

    The corpus lines (train and dev) of no health family are `other` too: without them the
    head had seen no pet, job or language course, and took "家里养了只柯基叫阿福" for a
    medicine.
    """
    rows = read_medicine()
    rows += [(u.text, u.lang, "other") for u in corpus if u.family != "health"]
    return fit_binary(rows, "medicine", MEDICINE_PRECISION, ngram_weight, l2)


def fit_moves(
    ngram_weight: float, l2: float, corpus: Sequence[Utterance] = ()
) -> tuple[Head, float, dict[str, float]]:
    """Fit the `moves` head on the `MOVES` lines (`fit_binary`).

    The corpus's lines (train and dev) of dated events, or of any family but home and work,
    are `other` too: a day at work or at home is most often a one-off, and a trip to a city
    ("flying out to Boston on the 14th", "国庆回我妈那儿") was taken for a move without them.
    """
    rows = read_moves()
    rows += [
        (u.text, u.lang, "other")
        for u in corpus
        if u.kind == "event" or u.family not in ("home", "work")
    ]
    # Read without their day, as the offline path reads a clause (`without_date`).
    rows = [(without_date(text), lang, label) for text, lang, label in rows]
    return fit_binary(rows, "moves", MOVES_PRECISION, ngram_weight, l2)


def fit_swaps(
    ngram_weight: float, l2: float, corpus: Sequence[Utterance] = ()
) -> tuple[Head, float, dict[str, float]]:
    """Fit the `swaps` head on the `SWAPS` lines (`fit_binary`).

    The corpus's lines (train and dev) of any family but possessions are `other` too: a new
    job or a new home is no thing replaced (the moves head reads those).
    """
    rows = read_swaps()
    rows += [(u.text, u.lang, "other") for u in corpus if u.family != "possessions"]
    return fit_binary(rows, "swaps", SWAPS_PRECISION, ngram_weight, l2)


def fit_instructs(
    ngram_weight: float, l2: float, corpus: Sequence[Utterance] = ()
) -> tuple[Head, float, dict[str, float]]:
    """Fit the `instructs` head on the `INSTRUCTS` lines (`fit_binary`).

    Every line of the corpus (train and dev, with the indirect questions and the trap lines:
    requests about a text, questions) is `other` too, but for the preferences about work or
    nothing in particular: some of those are how the user likes answers ("回复短一点，我在手机
    上看"). Without the corpus's allergies and diets, a warning given with an allergy for
    whenever the assistant suggests food read as an instruction.
    """
    rows = read_instructs()
    rows += [
        (u.text, u.lang, "other")
        for u in corpus
        if not (u.kind == "preference" and u.family in ("work", "none"))
    ]
    return fit_binary(rows, "instructs", INSTRUCTS_PRECISION, ngram_weight, l2)


def fit_things(
    ngram_weight: float, l2: float, corpus: Sequence[Utterance] = ()
) -> tuple[Head, float, dict[str, float]]:
    """Fit the `things` head on the `THINGS` lines: a thing's kind, or `other`.

    The corpus lines (train and dev) of a family no such thing is filed under (work, diet,
    health, name, age, contact, education) are `other` too. The threshold is the lowest of
    `THRESHOLDS` at which what a head fitted on three quarters of the lines reads as a thing
    on the fourth is that thing at `THINGS_PRECISION` (else the highest); the head shipped
    is then fitted on all of them.
    """
    rows = read_things()
    rows += [
        (u.text, u.lang, "other")
        for u in corpus
        if u.family in ("work", "diet", "health", "name", "age", "contact", "education")
    ]
    fit_on = [r for r in rows if not _held_out(r[0])]
    held = [r for r in rows if _held_out(r[0])]
    head = fit_head(features([t for t, _, _ in fit_on], ngram_weight), [x for *_, x in fit_on], l2)
    probs = head.probabilities(features([t for t, _, _ in held], ngram_weight))
    best = probs.argmax(axis=1)
    read = np.array([head.labels[i] for i in best])
    gold = np.array([x for *_, x in held])
    thing = gold != "other"
    chosen = (THRESHOLDS[-1], 0.0, 0.0)
    for threshold in THRESHOLDS:
        said = (read != "other") & (probs.max(axis=1) >= threshold)
        right = said & (read == gold)
        reached = float(right.sum() / max(1, said.sum()))
        if reached >= THINGS_PRECISION:
            chosen = (threshold, reached, float(right.sum() / max(1, thing.sum())))
            break
    final = fit_head(features([t for t, _, _ in rows], ngram_weight), [x for *_, x in rows], l2)
    report = {"threshold": chosen[0], "held_out_precision": chosen[1],
              "held_out_recall": chosen[2], "lines": len(rows), "held_out": len(held)}  # fmt: skip
    return final, chosen[0], report


def fit_food(
    ngram_weight: float, l2: float, corpus: Sequence[Utterance] = ()
) -> tuple[Head, float, dict[str, float]]:
    """Fit the `food` head on the `FOOD` lines (`fit_binary`).

    The corpus lines (train and dev) of a family that is never about eating (home, work,
    pets, trips…) are `other` too; diet, health and family lines may be a relative's limit.
    """
    rows = read_food()
    rows += [
        (u.text, u.lang, "other")
        for u in corpus
        if u.family not in ("diet", "health", "family", "none")
    ]
    return fit_binary(rows, "food", FOOD_PRECISION, ngram_weight, l2)


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
        "encoder_dim": ENCODER_DIM,
    }
    sys.stdout.write(json.dumps(summary, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

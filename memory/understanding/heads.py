"""Fitting one head, and the heads fitted on lines of their own.

`fit_head` fits a class-balanced softmax head by full-batch Adam (deterministic: zero
initialised, fixed steps). Beside the intent, kind, family and target heads
(`memory.understanding.train`), each head here is fitted on its own lines
(`memory.understanding.corpus`) and the corpus's, and read at a threshold chosen on a held-out
quarter of its lines at the precision its mistakes allow.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence

import numpy as np

from memory.dates import without_date
from memory.understanding.corpus import (
    ASKED,
    ASKING,
    Utterance,
    read_asks,
    read_food,
    read_instructs,
    read_medicine,
    read_moves,
    read_sources,
    read_swaps,
    read_things,
)
from memory.understanding.features import features
from memory.understanding.model import Head

STEPS = 300
LEARNING_RATE = 0.05


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
ASKS_PRECISION = 0.99
"""The precision the asks head's threshold must reach on its held-out lines: a statement
taken for a question is kept nowhere, not even raw."""
THRESHOLDS = (*(round(0.5 + 0.05 * i, 2) for i in range(10)), 0.96, 0.97, 0.98, 0.99)
"""The thresholds a head's is chosen from, lowest first (the finer steps at the top for the
asks head, which reaches its precision only there)."""


def _held_out(text: str) -> bool:
    """Return True for the quarter of a head's lines (by `text`) its threshold is chosen on."""
    return int(hashlib.sha256(text.encode("utf-8")).hexdigest(), 16) % 4 == 0


def fit_binary(
    rows: Sequence[tuple[str, str, str]], label: str, precision: float, ngram_weight: float,
    l2: float, group: Callable[[str], str] = str,
) -> tuple[Head, float, dict[str, float]]:  # fmt: skip
    """Fit a head of `label` against `other`; return it, its threshold and figures.

    The threshold is the lowest of `THRESHOLDS` at which a head fitted on three quarters of
    the lines reaches `precision` on the fourth (else the highest); the head shipped is
    then fitted on all of them. Lines of one `group` (forms of one line) are held out
    together.
    """
    fit_on = [r for r in rows if not _held_out(group(r[0]))]
    held = [r for r in rows if _held_out(group(r[0]))]
    head = fit_head(features([t for t, _, _ in fit_on], ngram_weight), [x for *_, x in fit_on], l2)
    col = head.labels.index(label)
    probs = head.probabilities(features([t for t, _, _ in held], ngram_weight))[:, col]
    gold = np.array([x == label for *_, x in held])
    return _chosen(rows, held, lambda t: probs >= t, gold, gold, precision, ngram_weight, l2)


def _chosen(
    rows: Sequence[tuple[str, str, str]], held: Sequence[tuple[str, str, str]],
    said_at: Callable[[float], np.ndarray], right: np.ndarray, wanted: np.ndarray,
    precision: float, ngram_weight: float, l2: float,
) -> tuple[Head, float, dict[str, float]]:  # fmt: skip
    """Return the head fitted on all `rows`, its threshold and the held-out figures.

    The threshold is the lowest of `THRESHOLDS` at which what `said_at` it marks of the
    `held` lines is `right` at `precision`; the recall is over the `wanted` lines.
    """
    chosen = (THRESHOLDS[-1], 0.0, 0.0)
    for threshold in THRESHOLDS:
        said = said_at(threshold)
        reached = float((said & right).sum() / max(1, said.sum()))
        if reached >= precision:
            chosen = (threshold, reached, float((said & right).sum() / max(1, wanted.sum())))
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
    return _fit_beside(read_medicine(), "medicine", "health", corpus, MEDICINE_PRECISION,
                       ngram_weight, l2)  # fmt: skip


def _fit_beside(
    rows: Sequence[tuple[str, str, str]], label: str, family: str, corpus: Sequence[Utterance],
    precision: float, ngram_weight: float, l2: float,
) -> tuple[Head, float, dict[str, float]]:  # fmt: skip
    """Fit a head of `label` on its lines and the corpus's lines of any other family as `other`."""
    more = [(u.text, u.lang, "other") for u in corpus if u.family != family]
    return fit_binary([*rows, *more], label, precision, ngram_weight, l2)


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
    return _fit_beside(read_swaps(), "swaps", "possessions", corpus, SWAPS_PRECISION,
                       ngram_weight, l2)  # fmt: skip


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


_END_MARKS = re.compile(r"[\s.!。！~～…]+$")


def unmarked(text: str) -> str:
    """Return a text without its question marks and the marks that end it."""
    return _END_MARKS.sub("", " ".join(text.replace("?", " ").replace("？", " ").split()))


def fit_asks(
    ngram_weight: float, l2: float, corpus: Sequence[Utterance] = ()
) -> tuple[Head, float, dict[str, float]]:
    """Fit the `asks` head on the `ASKS` lines and the corpus's (`fit_binary`), marked or not.

    The corpus's questions (train and dev, but the indirect ones) ask; its statements to
    remember and its updates state. Every line is fitted as written, `unmarked` and in lower
    case too: most of the corpus's questions end in a question mark and its statements in a
    full stop, most lines typed without marks are in lower case, and a head fitted on the
    lines as written, or on the questions alone unmarked, read the marks and the case ("the
    garage wants it for a form" asked). The forms of a line are held out together. A line
    said both ways keeps its first label.
    """
    # The indirect questions are left out: most say something of the user's before they ask
    # ("孩子最近老是咳嗽，要不要带去医院看看？"), and beside them a long statement read as asking.
    indirect = {u.text for u in read_sources(names=(*ASKING, *ASKED))}
    rows = read_asks()
    rows += [
        (u.text, u.lang, "asks")
        for u in corpus
        if u.intent == "question" and u.text not in indirect
    ]
    rows += [(u.text, u.lang, "states") for u in corpus if u.intent in ("remember", "update")]
    seen: dict[str, tuple[str, str, str]] = {}
    for text, lang, label in rows:
        for form in (text, unmarked(text), unmarked(text).lower()):
            seen.setdefault(form, (form, lang, label))
    return fit_binary(
        list(seen.values()), "asks", ASKS_PRECISION, ngram_weight, l2,
        group=lambda t: unmarked(t).lower(),
    )  # fmt: skip


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
    # Read as a kind of thing is right only as its own kind; the recall is over every thing.
    return _chosen(
        rows, held, lambda t: (read != "other") & (probs.max(axis=1) >= t), read == gold,
        gold != "other", THINGS_PRECISION, ngram_weight, l2,
    )  # fmt: skip


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

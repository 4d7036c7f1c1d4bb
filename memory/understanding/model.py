"""The trained understanding model: softmax heads over `features`, weights in the package.

`model.npz` holds one weight matrix and bias per head (float16, a few hundred KB) and
`model.json` the heads' labels and the feature settings; `memory.understanding.train`
writes both from the corpus, deterministically.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from memory.understanding.features import features

MODEL_DIR = Path(__file__).resolve().parent
HEADS = ("intent", "kind", "family", "target")


@dataclass(frozen=True)
class Head:
    """One classifier: `softmax(x @ weight + bias)` over `labels`."""

    labels: tuple[str, ...]
    weight: np.ndarray
    bias: np.ndarray

    def probabilities(self, x: np.ndarray) -> np.ndarray:
        """Return the class probabilities of each row of `x`."""
        logits = x @ self.weight + self.bias
        logits -= logits.max(axis=1, keepdims=True)
        exp = np.exp(logits)
        probs: np.ndarray = exp / exp.sum(axis=1, keepdims=True)
        return probs


@dataclass(frozen=True)
class UnderstandingModel:
    """Every head, and how to build the features they read."""

    heads: dict[str, Head]
    ngram_weight: float
    forget_threshold: float
    """Probability the forget label needs to win (an ordinary statement must not forget)."""
    span_forget_floor: Mapping[str, float] = field(default_factory=lambda: {"en": 0.1, "zh": 0.1})
    """Per language, the forget probability a sentence worded as a request ("Please forget
    that …") needs (`memory.requests.forget_requests`): chosen out of fold on train and dev
    (`memory.understanding.train.choose_span_floor`), never on test."""

    medicine_threshold: float = 1.0
    """The `medicine` head's probability at which a text is about a medicine the user takes:
    chosen on the medicine lines held out of its fit (`memory.understanding.train`); 1.0
    (never) for a model without the head."""
    food_threshold: float = 1.0
    """The `food` head's probability at which a text tells what someone eats or must not
    (an allergy, a diet, a dislike), chosen as the medicine head's is; 1.0 without the head."""
    moves_threshold: float = 1.0
    """The `moves` head's probability at which a dated statement is the user's employer or home
    changing from that day, chosen as the medicine head's is; 1.0 without the head."""
    things_threshold: float = 1.0
    """The `things` head's probability at which a text is about the kind of thing it reads
    (a pet, a vehicle, a device, a trip, exercise); 1.0 without the head."""
    swaps_threshold: float = 1.0
    """The `swaps` head's probability at which a statement says a thing of the user's was
    replaced by a new one of its kind, chosen as the medicine head's is; 1.0 without it."""
    instructs_threshold: float = 1.0
    """The `instructs` head's probability at which a message is a standing instruction on how
    to answer the user, chosen as the medicine head's is; 1.0 without the head."""
    asks_threshold: float = 1.0
    """The `asks` head's probability at which a sentence asks, question mark or none, chosen
    as the medicine head's is; 1.0 without the head."""

    def span_floor(self, lang: str) -> float:
        """Return the span floor of a language (`memory.text.language.language_of`)."""
        return self.span_forget_floor.get(lang, max(self.span_forget_floor.values()))

    def predict(self, texts: list[str]) -> dict[str, np.ndarray]:
        """Return each head's probabilities for `texts`, rows in order."""
        x = features(texts, self.ngram_weight)
        return {name: head.probabilities(x) for name, head in self.heads.items()}


def save_model(model: UnderstandingModel, directory: Path = MODEL_DIR) -> None:
    """Write `model.npz` and `model.json` (float16 weights: half the bytes, same labels)."""
    arrays: dict[str, np.ndarray] = {}
    for name, head in model.heads.items():
        arrays[f"{name}_weight"] = head.weight.astype(np.float16)
        arrays[f"{name}_bias"] = head.bias.astype(np.float16)
    np.savez_compressed(directory / "model.npz", **arrays)  # type: ignore[arg-type]
    meta = {
        "labels": {name: list(head.labels) for name, head in model.heads.items()},
        "ngram_weight": model.ngram_weight,
        "forget_threshold": model.forget_threshold,
        "span_forget_floor": dict(model.span_forget_floor),
        "medicine_threshold": model.medicine_threshold,
        "food_threshold": model.food_threshold,
        "moves_threshold": model.moves_threshold,
        "things_threshold": model.things_threshold,
        "swaps_threshold": model.swaps_threshold,
        "instructs_threshold": model.instructs_threshold,
        "asks_threshold": model.asks_threshold,
    }
    (directory / "model.json").write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")


@functools.cache
def load_model(directory: Path = MODEL_DIR) -> UnderstandingModel:
    """Return the shipped model (read once per process)."""
    meta = json.loads((directory / "model.json").read_text(encoding="utf-8"))
    with np.load(directory / "model.npz", allow_pickle=False) as arrays:
        heads = {
            name: Head(
                tuple(labels),
                arrays[f"{name}_weight"].astype(np.float32),
                arrays[f"{name}_bias"].astype(np.float32),
            )
            for name, labels in meta["labels"].items()
        }
    return UnderstandingModel(
        heads,
        float(meta["ngram_weight"]),
        float(meta["forget_threshold"]),
        _floors(meta.get("span_forget_floor", 0.1)),
        float(meta.get("medicine_threshold", 1.0)),
        float(meta.get("food_threshold", 1.0)),
        float(meta.get("moves_threshold", 1.0)),
        float(meta.get("things_threshold", 1.0)),
        float(meta.get("swaps_threshold", 1.0)),
        float(meta.get("instructs_threshold", 1.0)),
        float(meta.get("asks_threshold", 1.0)),
    )


def _floors(value: float | dict[str, float]) -> dict[str, float]:
    """Return per-language span floors (a model written before them held one for both)."""
    if isinstance(value, dict):
        return {lang: float(f) for lang, f in value.items()}
    return {"en": float(value), "zh": float(value)}

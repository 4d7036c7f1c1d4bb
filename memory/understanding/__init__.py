"""What a user's utterance is, read by a model trained on a labelled zh/en corpus.

`read_utterances` returns, for each text, its intent (remember, chitchat, question,
forget, update, plan), the kind of memory it states, the subject family it is about and,
for a forget or an update, what it points at (a family, "that" = the previous statement,
or everything). The graph's rules only pull values out of the text and read exact formats;
what a sentence *is* comes from here.

The corpus, the training script and the benchmark: `memory/understanding/corpus/`,
`python -m memory.understanding.train`, `benchmarks/understanding.py`.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from memory.understanding.model import load_model

__all__ = ["FAMILY_PREFIX", "RECORD_KIND", "Reading", "read_utterance", "read_utterances"]

RECORD_KIND: dict[str, str] = {
    "fact": "fact",
    "preference": "preference",
    "event": "event",
    # A birthday recurs: a fact with a yearly date, never an event that expires.
    "recurring_date": "fact",
    # A routine is how the user lives, not a one-off: it never expires either.
    "habit": "preference",
}
"""The record kind each predicted kind is stored as (`memory.store.records.KINDS`)."""

FAMILY_PREFIX: dict[str, str] = {
    "home": "profile.city",
    "name": "profile.name",
    "age": "profile.age",
    "work": "work",
    "family": "family",
    "diet": "diet",
    "health": "health",
    "contact": "contact",
    "schedule": "event",
    "possessions": "possessions",
    "skills": "skills",
    "hobbies": "likes",
    "education": "education",
    "travel": "travel",
}
"""The subject prefix of each family: the one vocabulary of rules, forget requests and updates."""


@dataclass(frozen=True)
class Reading:
    """What one utterance is, as the model reads it."""

    intent: str
    kind: str
    family: str
    target: str
    """For forget and update: `family`, `that` (the previous statement) or `all`."""
    confidence: float
    """The intent's probability."""
    forget: float = 0.0
    """The probability of `forget`, whatever intent won (a request's wording may tip it)."""


_CACHE: dict[str, Reading] = {}
_CACHE_LIMIT = 8192
_LOCK = threading.Lock()


def _label(labels: tuple[str, ...], row: list[float]) -> str:
    return labels[max(range(len(row)), key=row.__getitem__)]


def read_utterances(texts: list[str]) -> list[Reading]:
    """Return the model's reading of each text (one encoder batch for the ones not cached)."""
    with _LOCK:
        todo = list(dict.fromkeys(t for t in texts if t not in _CACHE))
    if todo:
        model = load_model()
        probs = model.predict(todo)
        intents = model.heads["intent"].labels
        forget = intents.index("forget")
        fresh = {}
        for i, text in enumerate(todo):
            row = [float(p) for p in probs["intent"][i]]
            if _label(intents, row) == "forget" and row[forget] < model.forget_threshold:
                row[forget] = 0.0  # not sure enough to forget: the next best reading
            intent = _label(intents, row)
            fresh[text] = Reading(
                intent=intent,
                kind=_label(model.heads["kind"].labels, list(probs["kind"][i])),
                family=_label(model.heads["family"].labels, list(probs["family"][i])),
                target=_label(model.heads["target"].labels, list(probs["target"][i])),
                confidence=row[intents.index(intent)],
                forget=float(probs["intent"][i][forget]),
            )
        with _LOCK:
            if len(_CACHE) + len(fresh) > _CACHE_LIMIT:
                _CACHE.clear()
            _CACHE.update(fresh)
    with _LOCK:
        return [_CACHE[t] for t in texts]


def read_utterance(text: str) -> Reading:
    """Return the model's reading of one text."""
    return read_utterances([text])[0]

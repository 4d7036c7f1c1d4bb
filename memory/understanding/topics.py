"""What a forget request's topic names when no remembered word says it: by family and meaning.

"Delete the stuff about my blood sugar" must reach "I inject insulin every morning", which
shares no word with it. The request's words are read by the understanding model for their
subject family (health), and only the user's records filed under that family are weighed,
by the bundled encoder's similarity to the words. Only what was kept in the user's own
words is weighed (a record with a value, a name or a request naming a statement is matched by
its words alone). One record is taken, and only when it is
both near enough and clearly nearer than every other record of the family: a request that
names a topic must never take a neighbour with it (the allergy beside the insulin), so
when two records are about as near, neither goes and the request is reported unmatched.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from memory.store.records import MemoryRecord
from memory.text.phrases import phrase_of
from memory.text.statements import split_text
from memory.understanding import FAMILY_PREFIX, family_prefixes, read_utterance
from memory.understanding.features import sentence_vectors

MEANING_FLOOR = 0.30
"""The least cosine similarity (bundled encoder) between a request's words and a record.
Set on the calibration pairs of `tests/unit/test_forget_by_meaning.py` (a neighbour of the
same family reaches 0.26: "我海鲜过敏" vs the insulin), and checked on its held-out ones."""
MEANING_MARGIN = 0.04
"""How much nearer than the family's next record the one taken must be."""
_EXTRA_PREFIXES = {"hobbies": ("likes",), "home": ("home",)}
"""Where the offline path files remarks of a family besides its prefix (`graphs.offline_rules`)."""


def family_of(subject: str) -> str | None:
    """Return the subject family a record's subject is filed under, or None."""
    for family in FAMILY_PREFIX:
        prefixes = (*family_prefixes(family), *_EXTRA_PREFIXES.get(family, ()))
        if any(subject == p or subject.startswith(p + ".") for p in prefixes):
            return family
    return None


def by_meaning(words: str, records: Sequence[MemoryRecord]) -> list[MemoryRecord]:
    """Return the one record of `records` a forget request's `words` name in other words.

    Args:
        words: What the request names, without its request words ("我血糖的事").
        records: The user's live records (raw turns and summaries are not weighed).

    Returns:
        `[record]`, or `[]` when the words name no family, no record of theirs is near
        enough, or two are about as near.
    """
    if not words.strip() or phrase_of(words, request=True).names:
        return []  # a name ("Forget about Tomtom") is matched by its words only
    family = read_utterance(words).family
    if family not in FAMILY_PREFIX:
        return []
    # A record with a value names one thing ("allergic to shellfish", "lives in Hangzhou"):
    # only its words reach it, or "my peanut allergy" would take the shellfish one. What is
    # kept in the user's own words is what other words may mean.
    pool = [
        r
        for r in records
        if r.kind != "episode" and r.value is None and family_of(r.subject) == family
    ]
    if not pool:
        return []
    # A record kept as a whole sentence is as near as it is, or as its nearest statement
    # ("I take levothyroxine …" in "Just so you know, I take levothyroxine …").
    pieces = [list(dict.fromkeys([r.content, *split_text(r.content)])) for r in pool]
    near = similarities(words, [p for ps in pieces for p in ps])
    bounds = np.cumsum([0, *(len(ps) for ps in pieces)])
    sims = np.array([near[a:b].max() for a, b in zip(bounds[:-1], bounds[1:], strict=True)])
    at = pick(sims, MEANING_FLOOR, MEANING_MARGIN)
    return [] if at is None else [pool[at]]


def similarities(words: str, texts: Sequence[str]) -> np.ndarray:
    """Return the bundled encoder's cosine similarity of `words` to each of `texts`."""
    vectors = sentence_vectors([words, *texts])
    return np.asarray(vectors[1:] @ vectors[0], dtype=np.float64)


def nearest(words: str, texts: Sequence[str], floor: float, margin: float) -> int | None:
    """Return the index of the one text `words` mean, or None.

    Only when it is at least `floor` near and `margin` nearer than every other text: two
    about as near are both left alone.
    """
    return pick(similarities(words, texts), floor, margin) if texts else None


def pick(sims: np.ndarray, floor: float, margin: float) -> int | None:
    """Return the index of the one similarity at least `floor` and `margin` above the rest."""
    if not len(sims):
        return None
    order = np.argsort(-sims)
    best = float(sims[order[0]])
    runner_up = float(sims[order[1]]) if len(order) > 1 else -1.0
    if best < floor or best - runner_up < margin:
        return None
    return int(order[0])

"""The keyword rules the understanding model replaced, kept as the benchmark's baseline.

`benchmarks/understanding.py` measures the trained model against these, in the same run:
`rule_is_question` is the old `memory.requests.is_question` (the question grammar alone,
with no model to rule out forget requests).
"""

from __future__ import annotations

import re

from memory.text.asking import asks_by_form, is_filler, split_sentences


def rule_is_question(text: str) -> bool:
    """Return True if the question grammar alone reads a message as asking."""
    sentences = [p for p in split_sentences(text) if p.strip(" \t\"'“”‘’。.,，!！?？")]
    asking = [asks_by_form(p) for p in sentences]
    if not any(asking):
        return False
    return all(a or is_filler(p) for a, p in zip(asking, sentences, strict=True))


# The first-person pattern `memory.turn.latest_statements` used to tell a statement about the
# user from a request, before the understanding model's reading replaced it.
FIRST_PERSON = re.compile(r"(?i)\b(?:i|i'm|i've|i'd|my|me|mine|we|our|us)\b|我")

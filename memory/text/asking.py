"""How a request is asked: a polite tag at its end ("…, ok?", "…好吗？") asks nothing.

"Let's keep my salary off the record, ok?" is a request, not a question:
its question mark belongs to the tag. The one place the polite endings are written.
"""

from __future__ import annotations

import re

_TAG = (
    r"[,，\s]+(?:please|thanks|thank you|ok|okay|alright|all right)"
    r"|[，,]?(?:好吗|好不好|可以吗|行吗|行不行|谢谢)"
)
POLITE_TAG = re.compile(rf"(?i)(?:{_TAG})+[\s?？!！.。~～]*$")
"""A polite tag ending a sentence, with the punctuation after it."""
POLITE_END = re.compile(rf"(?i)(?:{_TAG}|[，,]?(?:吗|呢))+$")
"""How a request's end is softened or asked ("…删掉吗", "…, please"): not what it names."""


def without_tag(sentence: str) -> str:
    """Return a sentence without the polite tag it ends with ("…, ok?" → "…")."""
    s = sentence.strip()
    return POLITE_TAG.sub("", s) or s


# How a favour is asked: a modal question, not one whether something was done or known.
_ASKS_A_FAVOUR = re.compile(
    r"(?i)^(?:please\s+)?(?:would|could|can|will|won't|mind|do you mind|is it (?:ok|okay|alright"
    r"|possible|fine)|would it be|how about|why don't|why not)\b"
    r"|能不能|能否|可不可以|可以|要不|行吗|好吗|好不好|行不行|麻烦"
)


def asks_a_favour(sentence: str) -> bool:
    """Return True if a sentence asks a favour ("Would you mind …", "能不能…"), not a question."""
    return bool(_ASKS_A_FAVOUR.search(sentence))

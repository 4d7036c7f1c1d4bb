"""Numbers said digit by digit in words ("four one one one ...", "幺三八一二三...") as digits.

People hide a card, phone or PIN from a pattern by writing it out; the detectors in
`memory.privacy.screen` read digits. `spell_out` rewrites each run of digit words as the digits it
says and keeps a map back to the original offsets, so a span found in the rewritten text
can be reported in the text the user wrote.

Only runs read: a single "one" or "一" is a word, not a number. English runs need four words
("four three two one"); Chinese runs need six numerals, because shorter ones (一二三, 五六个)
are everyday words. 十, 百 and 千 make a counted number, not digits, and end a run.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass

__all__ = ["SpelledText", "spell_out"]

_EN = {"zero": "0", "oh": "0", "o": "0", "one": "1", "two": "2", "three": "3", "four": "4",
       "five": "5", "six": "6", "seven": "7", "eight": "8", "nine": "9"}  # fmt: skip
_REPEAT = {"double": 2, "triple": 3}
_ZH = dict(zip("〇零幺一二两三四五六七八九", "0011223456789", strict=True))
_EN_WORD = r"(?:zero|one|two|three|four|five|six|seven|eight|nine)"
_EN_RUN = re.compile(
    rf"(?=[ZzOoTtFfSsEeNnDd])(?i:(?<![A-Za-z])(?:(?:double|triple)[ -])?{_EN_WORD}"
    rf"(?:[ ,-]+(?:(?:double|triple)[ -])?(?:{_EN_WORD}|oh|o)(?![A-Za-z])){{3,}})"
)
_ZH_TABLE = str.maketrans(_ZH)
_ZH_RUN = re.compile("[〇零幺一二两三四五六七八九]{6,}")
_EN_SPLIT = re.compile(r"[ ,-]+")


@dataclass(frozen=True)
class SpelledText:
    """A text with its digit-word runs written as digits.

    Attributes:
        text: The rewritten text.
        runs: (new start, new end, old start, old end) of each rewritten run, in order.
    """

    text: str
    runs: tuple[tuple[int, int, int, int], ...]

    def original(self, start: int, end: int) -> tuple[int, int]:
        """Map a span of the rewritten text back to the text as written.

        A span that starts or ends inside a rewritten run covers the whole run there.
        """
        starts = [r[0] for r in self.runs]
        i = bisect_right(starts, start) - 1  # the last run starting at or before `start`
        if i >= 0:
            new_start, new_end, old_start, old_end = self.runs[i]
            start = old_start if start < new_end else start - new_end + old_end
        j = bisect_left(starts, end) - 1  # the last run starting before `end`
        if j >= 0:
            new_start, new_end, old_start, old_end = self.runs[j]
            end = old_end if end <= new_end else end - new_end + old_end
        return start, end


def _en_digits(words: str) -> str:
    out, repeat = [], 1
    for word in _EN_SPLIT.split(words.lower()):
        if word in _REPEAT:
            repeat = _REPEAT[word]
        elif word:
            out.append(_EN[word] * repeat)
            repeat = 1
    return "".join(out)


def spell_out(text: str) -> SpelledText | None:
    """Rewrite the digit-word runs of a text as digits.

    Args:
        text: Any text.

    Returns:
        The rewritten text and its map, or None if the text has no run (the usual case).
    """
    found = [(m.start(), m.end(), _en_digits(m.group())) for m in _EN_RUN.finditer(text)]
    found += [(m.start(), m.end(), m.group().translate(_ZH_TABLE)) for m in _ZH_RUN.finditer(text)]
    if not found:
        return None
    found.sort()
    parts: list[str] = []
    runs: list[tuple[int, int, int, int]] = []
    at = size = 0
    for start, end, digits in found:
        if start < at:
            continue
        parts.append(text[at:start])
        size += start - at
        parts.append(digits)
        runs.append((size, size + len(digits), start, end))
        size += len(digits)
        at = end
    parts.append(text[at:])
    return SpelledText("".join(parts), tuple(runs))

"""A correction's two values: "175 cm, not 172", "不是周二，是周四", "刚才说的40不对".

A correction names the value it replaces in a fixed form: "X, not Y", "not Y but X",
"Y was wrong", "不是Y，是X", "X，不是Y", "Y不对 / 说错了". Only the form is read here (which
words are the old value, what is left once they are cut); whether the sentence corrects a
statement at all is the understanding model's reading (an update), and which memory the
old value was said in is the extractor's to find among what is remembered.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memory.text.language import has_han
from memory.text.phrases import phrase_of, states

_VALUE_EN = r"(?P<old>(?:the\s+)?[\w.:/'-]+(?:\s+[\w.:/'-]+){0,2}?)"
_VALUE_ZH = r"(?P<old>[^，,。.!！?？\s]{1,10}?)"
_FORMS: tuple[re.Pattern[str], ...] = (
    # "I'm 175 cm, not 172." / "It's at 4pm, not 2pm" / "Lyon and not Lille" / "I meant
    # Darren, not Derek, long day" (a remark may follow the old value)
    re.compile(
        rf"(?i)^(?P<new>.+?)(?:\s*,\s*|\s+and\s+|\s+but\s+)not\s+{_VALUE_EN}"
        r"(?:\s*[,;—–]\s*[^,;]{0,40}|\s*[^\w\s,;]{1,6})?[\s.!]*$"
    ),
    # "Not Tuesday, Thursday." / "It's not 40, it's 55."
    re.compile(
        rf"(?i)^(?:(?:no|sorry|oops|actually|wait)[,\s]+)*(?:it'?s\s+|it\s+is\s+)?not\s+"
        rf"{_VALUE_EN}\s*[,;]\s*(?:but\s+)?(?P<new>.+)$"
    ),
    # "My flat is on the fifth floor, the fourth was a typo." / "the 40 I said was wrong"
    re.compile(
        rf"(?i)^(?P<new>.+?)\s*[,;]\s*{_VALUE_EN}(?:\s+(?:i|that i)\s+(?:said|mentioned|wrote"
        rf"|told you))?\s+(?:was|is)\s+(?:wrong|a typo|a mistake|incorrect|not right)[\s.!]*$"
    ),
    # "不是周二，是周四。" / "不是38，而是39"
    re.compile(rf"^(?:[^，,。]{{0,6}}?)不是{_VALUE_ZH}[，,]\s*(?:而)?(?:是)?(?P<new>.+)$"),
    # "我是39，不是38。" / "孩子是三个不是两个"
    re.compile(rf"^(?P<new>.+?)[，,]\s*(?:而)?不是{_VALUE_ZH}(?:了|啊|哈)?[。.!！]*$"),
    re.compile(rf"^(?P<new>.*是[^，,不]{{1,8}})不是{_VALUE_ZH}(?:了|啊|哈)?[。.!！]*$"),
    # "通勤要55分钟，刚才说的40不对" / "住八楼，之前说的六楼说错了"
    re.compile(
        rf"^(?P<new>.+?)[，,]\s*(?:我)?(?:刚才|刚刚|之前|上次|前面)?(?:说|讲|写)?(?:的)?"
        rf"{_VALUE_ZH}(?:是)?(?:不对|错了|说错了|是错的|写错了|记错了)(?:了|啊)?[。.!！]*$"
    ),
)
_ARTICLE = re.compile(r"(?i)^the\s+")


@dataclass(frozen=True)
class Correction:
    """The two parts of a correction: the sentence without the old value, and that value."""

    new: str
    """What the sentence states once the old value is cut ("I'm 175 cm")."""
    old: str
    """The value it replaces ("172", "周二")."""


def correction(sentence: str) -> Correction | None:
    """Return the parts of a sentence that corrects a value in a known form, or None."""
    s = sentence.strip()
    for form in _FORMS:
        m = form.match(s)
        if m is None:
            continue
        old = _ARTICLE.sub("", m["old"]).strip(" .,'\"")
        new = m["new"].strip(" ,，。.!！")
        if old and new and old.casefold() not in new.casefold():
            return Correction(new=new, old=old)
    return None


_NUMBER = r"\d+(?:\.\d+)?"


def _as_number(value: str) -> str:
    """Return a number's pattern as a whole number ("35" is not in "135")."""
    return rf"(?<![\d.]){re.escape(value)}(?![\d])"


def new_value(fix: Correction) -> str:
    """Return the words of a correction that take the old value's place.

    They are shaped as the old value is: a number for a number ("I'm 175 cm, not 172" →
    175), else as many words from the end of what is stated ("I meant Darren, not Derek" →
    Darren), or characters in Chinese ("孩子是三个不是两个" → 三个).
    """
    old_numbers = re.findall(_NUMBER, fix.old)
    new_numbers = re.findall(_NUMBER, fix.new)
    if len(old_numbers) == 1 and new_numbers:
        return str(new_numbers[-1])
    if has_han(fix.old):
        return fix.new[-len(fix.old) :]
    return " ".join(fix.new.split()[-len(fix.old.split()) :])


def with_new_value(text: str, fix: Correction) -> str | None:
    """Return `text` with a correction's old value replaced by the new, or None.

    None unless the old value is said exactly once ("My manager's name is Derek" →
    "… is Darren"); a number is replaced as a number ("2pm" → "4pm").
    """
    numbers = re.findall(_NUMBER, fix.old)
    if len(numbers) == 1 and re.search(_NUMBER, fix.new):
        pattern = _as_number(numbers[0])
    elif has_han(fix.old):
        pattern = re.escape(fix.old)
    else:
        pattern = rf"(?i)(?<!\w){re.escape(fix.old)}(?!\w)"
    if len(re.findall(pattern, text)) != 1:
        return None
    value = new_value(fix)
    return re.sub(pattern, lambda _: value, text)


def says_value(text: str, value: str) -> bool:
    """Return True if `text` states a correction's old `value` (a number as a number)."""
    numbers = re.findall(_NUMBER, value)
    if numbers:
        return all(re.search(_as_number(n), text) for n in numbers)
    if has_han(value):
        return value in text
    return states(text, phrase_of(value))

"""Days that come back every year (birthdays, anniversaries) as facts, not events.

"我生日是三月二号" is not a plan for next March: an event would expire the day after and the
birthday would be forgotten. `recurring_fact` reads such a statement into a fact whose value
is the yearly day in ISO 8601 form (`--03-02`), which never expires.

Whose day it is stays in the subject: the user's birthday is `profile.birthday` (the subject
forget requests for "birthday" / "生日" point at), a relative's `family.<relation>.birthday`
(with what else is said of them), anyone else's `dates.birthday.<who>`, and anniversaries
`dates.anniversary` (`dates.anniversary.wedding` for a wedding).
"""

from __future__ import annotations

import re

from memory.dates.grammar import YearlyDate, find_yearly
from memory.extraction import CandidateMemory
from memory.recall.aliases import relation_in
from memory.store.records import normalize_text

__all__ = ["recurring_fact"]

_EN_OCCASION = re.compile(
    r"(?:\b(?:my|our)\s+(?:([a-z]+(?:[- ]in[- ]law)?)['’]s\s+)?|\b((?-i:[A-Z][a-z]+))['’]s\s+)"
    r"(birthday|bday|b-day|wedding anniversary|anniversary)\b"
    r"|\bi\s+was\s+born\s+(?:on|in)\b"
    r"|\b(?P<wed>(?:we|i)\s+(?:got|were|was)\s+married)\b"
    # How old someone turns on a day is their birthday: "my niece Mia turns 9 on 3 May".
    r"|(?:\b(?:my|our)\s+(?P<kin>[a-z]+(?:[- ]in[- ]law)?)(?:\s+[a-z]+)?"
    r"|\b(?P<name>(?-i:[A-Z][a-z]+))|\b(?P<me>i))"
    r"\s+(?:turns|turn|is turning|'s turning|am turning|'m turning|will be)\s+\d{1,3}\b",
    re.I,
)
_ZH_OCCASION = re.compile(
    r"(?:我们|我)(?:的)?(?:([\u4e00-\u9fff]{1,4}?)的?)?(生日|生辰|结婚纪念日|纪念日)"
    r"|我(?:是|在)?.{0,12}?(?:出生|生)的?$"
    r"|(?P<wed>我.{0,16}?(?:结的婚|结婚的|领的证))"
    r"|我(?:的|家)?(?P<turns>[\u4e00-\u9fff]{1,3}?)[^，,。]{0,12}?(?:满|过)[\d一二两三四五六七八九十]+岁"
)
_NOT_NAMES = frozenset({"Today", "Tomorrow", "Yesterday", "Tonight", "This", "Next", "Last"})
_NEGATED = re.compile(r"\b(?:not|isn't|wasn't|never)\b|不是|没有", re.I)


def _content(owner: str | None, occasion: str, day: YearlyDate, zh: bool) -> str:
    # The day as the user said it ("14 June", "三月二号", with its year when said: how long a
    # couple has been married, how old one turns); its value is the ISO form.
    if zh:
        whose = f"用户{owner}的" if owner else "用户的"
        return f"{whose}{occasion}是{day.text}（每年）。"
    # A relation is the user's ("User's mom's"); a name stands alone ("Lena's").
    whose = "User's" if not owner else f"{owner}'s" if owner[0].isupper() else f"User's {owner}'s"
    return f"{whose} {occasion} is {day.text} (every year)."


def recurring_fact(clause: str) -> CandidateMemory | None:
    """Read a birthday or an anniversary into a yearly fact.

    Args:
        clause: One clause of a user's statement ("my anniversary is June 5", "我妈妈的生日是
            十月一号", "I was born on March 2, 1990").

    Returns:
        A `fact` candidate whose value is the day as `--MM-DD`, or None if the clause names
        no occasion, no day of the year, or says the day is not it.
    """
    day = find_yearly(clause)
    if day is None or _NEGATED.search(clause):
        return None
    zh = _ZH_OCCASION.search(clause)
    en = None if zh else _EN_OCCASION.search(clause)
    found = zh or en
    if found is None:
        return None
    wed = found["wed"] is not None  # the day they married comes back as the anniversary
    # Said as how old someone turns: their name and age are kept in the user's words.
    turns = found["turns"] if zh is not None else found["kin"] or found["name"] or found["me"]
    if zh is not None:
        owner = zh[1] or (turns and (relation_in(clause) or turns))
        word = zh[2] or ("结婚纪念日" if wed else "生日")
        if word == "纪念日" and owner and owner.endswith(("结婚", "恋爱")):
            word, owner = ("结婚纪念日" if owner.endswith("结婚") else word), owner[:-2] or None
        occasion = word if "纪念日" in word else "生日"
    else:
        assert en is not None
        word = (en[3] or ("wedding anniversary" if wed else "birthday")).lower()
        occasion = "birthday" if word in ("bday", "b-day") else word
        kin = en[1] or en["kin"]
        owner = kin.lower() if kin else en[2] or en["name"]  # "my Mom's" → mom; Lena stays
        if owner in _NOT_NAMES:
            return None
    who = f".{normalize_text(owner)[:40]}" if owner else ""
    relative = relation_in(("我" if zh is not None else "my ") + owner) if owner else None
    if relative is not None and occasion in ("birthday", "生日"):
        # A relative's birthday is said of them, filed with what else is (`family.<who>`):
        # "when is my sister's birthday?" and "forget my sister" reach it there.
        subject = f"family.{relative}.birthday"
    elif "纪念日" in occasion or "anniversary" in occasion:
        wedding = occasion in ("结婚纪念日", "wedding anniversary")
        subject = "dates.anniversary" + (".wedding" if wedding else "") + who
    else:
        subject = f"dates.birthday{who}" if owner else "profile.birthday"
    content = _content(owner, occasion, day, zh is not None)
    if turns:
        content = f"{content[:-1]}：{clause.strip()}。" if zh else f"{content[:-1]}: {clause}."
    return CandidateMemory(
        kind="fact",
        subject=subject,
        content=content,
        value=day.iso,
        confidence=0.9,
    )

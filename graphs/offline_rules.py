"""The offline model's rules: what to remember from a message, and a thread's summary.

`extract_rules` fills an `Extraction` from explicit zh/en first-person statements;
`extractive_summary` fills a `ThreadSummary` with the sentences that state goals, rules and
decisions.

Only the built-in offline model (`graphs.offline`) uses these rules; a real model fills
the same schemas through structured output, prompted by `prompts/extract.*.md` and
`prompts/summary.*.md`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from datetime import datetime
from difflib import SequenceMatcher

from memory.dates import find_date, is_date_phrase, statement_lean, without_date
from memory.dates.recurring import recurring_fact
from memory.extraction import MAX_CANDIDATES, CandidateMemory, Extraction, has_cjk, trim_phrase
from memory.recall.aliases import PEOPLE, relation_in, relation_words
from memory.requests import forget_requests
from memory.store.records import STYLE_SUBJECT, TURN_SUBJECT, normalize_text
from memory.summary import MAX_ITEM_CHARS, ThreadSummary, add_item
from memory.text.asking import asks_by_form, only_asks_for_help, split_sentences
from memory.text.corrections import Correction, correction, says_value, with_new_value
from memory.text.language import HAN, HAN_SPACE, simplified
from memory.text.statements import I_ALONE, NOT_A_SUBJECT_END, THE_USER, continues, split_text
from memory.understanding import (
    FAMILY_PREFIX,
    RECORD_KIND,
    UPDATE_SUBJECT,
    Reading,
    in_context,
    probability_of,
    read_utterance,
    read_utterances,
    slot_of,
)
from memory.understanding.topics import similarities
from memory.understanding.updates import (
    NEWS_FLOOR,
    changed_record,
    in_users_words,
    is_routine,
    record_text,
)

# 要是 is "if" on its own, not inside 主要是 (mainly is), 只要是, 需要是.
_HYPOTHETICAL = re.compile(
    r"^(if|suppose|imagine|assuming|what if|let's say)\b|如果|假如|(?<![主需只重想])要是|假设|万一"
    r"|倘若",
    re.I,
)
_TENTATIVE = re.compile(
    r"\b(maybe|might|perhaps|probably|not sure|i think i|i guess|considering)\b"
    r"|可能|也许|或许|大概|说不定|考虑",
    re.I,
)
_JOBS_EN = (
    r"engineer|developer|designer|teacher|doctor|nurse|student|manager|scientist|researcher|"
    r"writer|lawyer|accountant|programmer|architect|consultant|analyst|chef|artist|founder|"
    r"professor|journalist|photographer|musician|pilot"
)
_JOBS_ZH = (
    r"工程师|程序员|设计师|老师|教师|医生|护士|学生|经理|研究员|作家|律师|会计|架构师|分析师|"
    r"厨师|创始人|教授|记者|摄影师|产品经理|运维|测试"
)


def _slug(value: str) -> str:
    return normalize_text(value)[:40] or "item"


Rule = tuple[re.Pattern[str], Callable[[re.Match[str]], CandidateMemory | None]]


def _cand(kind: str, subject: str, content: str, value: str | None, conf: float) -> CandidateMemory:
    return CandidateMemory(
        kind=kind,
        subject=subject,
        content=content,
        value=value,
        confidence=conf,
    )


MOVE_ODDS = 0.5
"""The moves head's probability at which news of home takes the slot (`_subject`)."""


def _instruction(sentence: str) -> CandidateMemory:
    """Return a standing instruction on how to answer the user, in their own words."""
    said = trim_phrase(sentence)
    content = f"用户要求：{said}。" if has_cjk(said) else f"User asked: {said}."
    return _cand("preference", f"{STYLE_SUBJECT}{_slug(said)[:24]}", content, None, 0.9)


def _like(verb: str, obj: str, zh: bool) -> CandidateMemory | None:
    obj = trim_phrase(obj)
    if not normalize_text(obj):
        return None  # 'I like "".' names nothing
    negative = verb in {
        "hate",
        "dislike",
        "can't stand",
        "don't like",
        "do not like",
        "不喜欢",
        "讨厌",
        "不爱",
    }
    if zh:
        content = f"用户{'不喜欢' if negative else '喜欢'}{obj}。"
    else:
        content = f"User {'dislikes' if negative else 'likes'} {obj}."
    return _cand(
        "preference", f"likes.{_slug(obj)}", content, "dislike" if negative else "like", 0.85
    )


_EN_RULES: list[Rule] = [
    (
        re.compile(
            r"^(?i:my name is|i'm called|i am called|call me)\s+([A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)?)"
        ),
        lambda m: _cand("fact", "profile.name", f"User's name is {m[1]}.", m[1], 0.95),
    ),
    (
        re.compile(
            r"^i(?:'m| am)?\s*(?:live|living|based|now live|currently live) in ([A-Z][\w .'-]*)",
            re.I,
        ),
        lambda m: _cand(
            "fact", "profile.city", f"User lives in {trim_phrase(m[1])}.", trim_phrase(m[1]), 0.9
        ),
    ),
    (
        re.compile(r"^i (?:have |just )?moved to ([A-Z][\w .'-]*)", re.I),
        lambda m: _cand(
            "fact", "profile.city", f"User lives in {trim_phrase(m[1])}.", trim_phrase(m[1]), 0.9
        ),
    ),
    (
        re.compile(r"^i(?:'m| am) from ([A-Z][\w .'-]*)", re.I),
        lambda m: _cand(
            "fact", "profile.hometown", f"User is from {trim_phrase(m[1])}.", trim_phrase(m[1]), 0.9
        ),
    ),
    (
        re.compile(r"^i(?:'m| am) (?:a |an )?(vegetarian|vegan|pescatarian)\b", re.I),
        lambda m: _cand("preference", "diet.type", f"User is {m[1].lower()}.", m[1].lower(), 0.95),
    ),
    (
        re.compile(r"^i(?:'m| am) allergic to (.+)", re.I),
        lambda m: _cand(
            "fact",
            f"health.allergy.{_slug(m[1])}",
            f"User is allergic to {trim_phrase(m[1])}.",
            trim_phrase(m[1]),
            0.95,
        ),
    ),
    (
        re.compile(r"^i (?:don't|do not|never|can't|cannot) eat (.+)", re.I),
        lambda m: _cand(
            "preference",
            f"diet.avoid.{_slug(m[1])}",
            f"User does not eat {trim_phrase(m[1])}.",
            trim_phrase(m[1]),
            0.9,
        ),
    ),
    (
        re.compile(r"^i work as (?:a |an )?(.+)", re.I),
        lambda m: _cand(
            "fact", "work.role", f"User works as {trim_phrase(m[1])}.", trim_phrase(m[1]), 0.9
        ),
    ),
    (
        re.compile(
            rf"^i(?:'m| am) (?:a |an )((?:[\w-]+ ){{0,3}}(?:{_JOBS_EN}))\b(?: (?:at|for) (.+))?",
            re.I,
        ),
        lambda m: _cand(
            "fact",
            "work.role",
            f"User is a {m[1]}" + (f" at {trim_phrase(m[2])}." if m[2] else "."),
            trim_phrase(m[1]),
            0.9,
        ),
    ),
    (
        re.compile(r"^i work (?:at|for) ([A-Z][\w .&'-]*)", re.I),
        lambda m: _cand(
            "fact", "work.company", f"User works at {trim_phrase(m[1])}.", trim_phrase(m[1]), 0.9
        ),
    ),
    (
        re.compile(r"^(?:our|my) (?:tech )?stack is (.+)", re.I),
        lambda m: _cand(
            "fact",
            "tech.stack",
            f"User's tech stack is {trim_phrase(m[1])}.",
            trim_phrase(m[1]),
            0.9,
        ),
    ),
    (
        # A tool is named ("I use Python"): a capital letter, whatever case the rest is in,
        # so "I use my inhaler every morning" is no tech stack.
        re.compile(
            r"^(?i:(?:i|we) (?:mostly |mainly |usually )?"
            r"(?:use|work with|code in|program in|(?:'m|am|'re|are) using)) ([A-Z][\w+#. -]*)"
        ),
        lambda m: _cand(
            "fact",
            f"tech.stack.{_slug(m[1])}",
            f"User uses {trim_phrase(m[1])}.",
            trim_phrase(m[1]),
            0.85,
        ),
    ),
    (
        re.compile(
            r"^i (?:really |absolutely |do )?"
            r"(don't like|do not like|hate|dislike|can't stand) (.+)",
            re.I,
        ),
        lambda m: _like(m[1].lower(), m[2], zh=False),
    ),
    (
        re.compile(r"^i (?:really |absolutely |do )?(like|love|enjoy|adore|prefer) (.+)", re.I),
        lambda m: _like(m[1].lower(), m[2], zh=False),
    ),
]

_ZH_RULES: list[Rule] = [
    (
        re.compile(r"^我(?:的名字)?叫([\w·]{1,12})"),
        lambda m: _cand("fact", "profile.name", f"用户叫{m[1]}。", m[1], 0.95),
    ),
    (
        re.compile(r"^我的名字是([\w·]{1,12})"),
        lambda m: _cand("fact", "profile.name", f"用户叫{m[1]}。", m[1], 0.95),
    ),
    (
        re.compile(r"^我(?:现在|目前)?住在(.+)"),
        lambda m: _cand(
            "fact", "profile.city", f"用户住在{trim_phrase(m[1])}。", trim_phrase(m[1]), 0.9
        ),
    ),
    (
        re.compile(r"^我(?:已经)?搬(?:到|去)了?(.+?)(?:了|啦)?$"),
        lambda m: _cand(
            "fact", "profile.city", f"用户住在{trim_phrase(m[1])}。", trim_phrase(m[1]), 0.9
        ),
    ),
    (
        re.compile(r"^我(?:现在|目前)?在(.+?)(?:工作|上班)"),
        lambda m: _cand(
            "fact", "work.place", f"用户在{trim_phrase(m[1])}工作。", trim_phrase(m[1]), 0.9
        ),
    ),
    (
        re.compile(r"^我(?:吃素|是素食(?:主义)?者?)"),
        lambda m: _cand("preference", "diet.type", "用户吃素。", "vegetarian", 0.95),
    ),
    (
        re.compile(r"^我对(.+?)过敏"),
        lambda m: _cand(
            "fact",
            f"health.allergy.{_slug(m[1])}",
            f"用户对{trim_phrase(m[1])}过敏。",
            trim_phrase(m[1]),
            0.95,
        ),
    ),
    (
        re.compile(r"^我(?:从来)?(?:不吃|不能吃|忌口)(.+)"),
        lambda m: _cand(
            "preference",
            f"diet.avoid.{_slug(m[1])}",
            f"用户不吃{trim_phrase(m[1])}。",
            trim_phrase(m[1]),
            0.9,
        ),
    ),
    (
        re.compile(rf"^我是(?:一名|一个|个|名)?(.{{0,12}}?(?:{_JOBS_ZH}))"),
        lambda m: _cand(
            "fact", "work.role", f"用户是{trim_phrase(m[1])}。", trim_phrase(m[1]), 0.9
        ),
    ),
    (
        re.compile(r"技术栈是(.+)"),
        lambda m: _cand(
            "fact", "tech.stack", f"用户的技术栈是{trim_phrase(m[1])}。", trim_phrase(m[1]), 0.9
        ),
    ),
    (
        re.compile(
            r"^(?:我|我们)(?:主要|一般|平时|现在)?(?:用|使用|在用)([A-Za-z][A-Za-z0-9+#. ]*)"
        ),
        lambda m: _cand(
            "fact",
            f"tech.stack.{_slug(m[1])}",
            f"用户使用{trim_phrase(m[1])}。",
            trim_phrase(m[1]),
            0.85,
        ),
    ),
    (
        re.compile(r"^我(?:很|非常|特别|真的)?(不喜欢|讨厌|不爱)(.+)"),
        lambda m: _like(m[1], m[2], zh=True),
    ),
    (
        re.compile(r"^我(?:很|非常|特别|最|真的)?(喜欢|爱|热爱)(.+)"),
        lambda m: _like(m[1], m[2], zh=True),
    ),
]

_NEGATIONS: list[re.Pattern[str]] = [
    re.compile(r"^i (?:no longer|don't|do not|never) (.+?)(?: any ?more)?$", re.I),
    re.compile(r"^我(?:现在|已经)?(?:不再|不)(.+?)了$"),
    re.compile(r"^我(?:现在|已经)?不再(.+)$"),
]

_CONTACT: list[Rule] = [
    (
        re.compile(
            r"^my (phone number|phone|mobile|email(?: address)?|password|card number|api key|"
            r"id number|bank account) is (.+)",
            re.I,
        ),
        lambda m: _cand(
            "fact",
            f"contact.{_slug(m[1])}",
            f"User's {m[1].lower()} is {trim_phrase(m[2])}.",
            trim_phrase(m[2]),
            0.9,
        ),
    ),
    (
        re.compile(r"^我的(手机号码?|电话(?:号码)?|邮箱|密码|银行卡号|身份证号(?:码)?|账号)是(.+)"),
        lambda m: _cand(
            "fact",
            f"contact.{_slug(m[1])}",
            f"用户的{m[1]}是{trim_phrase(m[2])}。",
            trim_phrase(m[2]),
            0.9,
        ),
    ),
]


def _third_person(verb: str) -> str:
    low = verb.lower()
    irregular = {"have": "has", "do": "does", "go": "goes", "be": "is"}
    if low in irregular:
        return irregular[low]
    if low.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if low.endswith("y") and low[-2:-1] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def _negation(clause: str) -> CandidateMemory | None:
    zh = has_cjk(clause)
    for pat in _NEGATIONS:
        m = pat.match(clause)
        if not m:
            continue
        if zh:
            phrase = trim_phrase(m[1])
            content = f"用户现在不{phrase}了。"
        else:
            if not re.search(r"\bno longer\b|any ?more$", clause, re.I):
                return None  # "I don't eat pork" is a plain preference, not a change
            phrase = trim_phrase(m[1])
            verb, _, rest = phrase.partition(" ")
            content = f"User no longer {_third_person(verb)} {rest}".strip() + "."
        return CandidateMemory(
            kind="preference",
            subject=f"habit.{_slug(phrase)}",
            content=content,
            value="no",
            confidence=0.9,
            replaces=phrase,
        )
    return None


# The speaker anywhere in the clause: "Next Friday I fly to Paris" leads with its date.
_PLAN = re.compile(r"\b(?:i|we|i'm|i am|we're|we are|my|our)\b|我|咱们", re.I)
_PAST_SPAN_DAYS = 31  # a past month is an event ("二〇二三年三月我在东京"); a past year is not


_CONJUNCTION = re.compile(
    r"^(?:and|but|also|so|plus)\s+|^(?:而且|还有|另外|但是|不过|并且|然后|哎呀|哎|唉|诶|欸|嗯|呃)",
    re.I,
)


# A comma inside a number ("85,000") or between a day and its year ("March 2, 1990", "October
# 14th, 1995") is part of an exact format, not a clause break. A tentative verb phrase joined
# by "and" ("she's a potter and will probably take over my table") is a clause of its own: it
# states nothing, what it is joined to still does (`_TENTATIVE`).
_CLAUSE_BREAK = re.compile(
    r"(?<!\d)(?<!\dst|\dnd|\drd|\dth)[，,]\s*|(?<=\d)[，,](?!\d{3}\b|\s*\d{4}\b)\s*"
    r"|(?<=\dst|\dnd|\drd|\dth)[，,](?!\s*\d{4}\b)\s*"
    rf"|{NOT_A_SUBJECT_END}\s+(?:and|but|also)\s+(?=(?:{I_ALONE}|i'm|we|we're|my)\b)"
    r"|\s+and\s+(?=(?:will\s+|would\s+)?(?:probably|maybe|perhaps|might)\b)"
    rf"|{HAN_SPACE}",
    re.I,
)


def _clauses(sentence: str) -> list[str]:
    parts = _CLAUSE_BREAK.split(sentence)
    out: list[str] = []
    for part in (_CONJUNCTION.sub("", p.strip(" .!。！")) for p in parts if p):
        if not part.strip(" .!。！"):
            continue
        if out and is_date_phrase(out[-1]):  # "Next Friday, I ...": the date is the next clause's
            out[-1] = f"{out[-1]}{'，' if has_cjk(part) else ', '}{part}"
        else:
            out.append(part)
    return out


def _stated_part(sentence: str) -> str:
    """Return what a sentence states: itself, or its clauses that do not ask ("" if none).

    Of a sentence the model reads as a statement, a clause that asks by its form states
    nothing, and the others say what they say without it: read whole, "周五要加班到九点 是不是
    赶不上那节课了" was news of the user's weekly swim and ended it. "银行柜员以后会不会
    被机器取代啊，好担心" asks, and what is left only says how the user feels: a clause the
    model is sure is small talk says nothing (`Reading.small_talk`, the raw archive's bar).
    A sentence read as a question keeps nothing, its context included ("周末想带孩子出去转转，
    附近有啥好去处", kept, came back for every question about the weekend).
    """
    parts = _clauses(sentence)
    asks = [asks_by_form(p) for p in parts]
    if len(parts) < 2 or not any(asks):
        return sentence
    rest = [p for p, a in zip(parts, asks, strict=True) if not a]
    readings = read_utterances(rest) if rest else []
    if all(r.small_talk for r in readings):
        return ""
    return ("，" if has_cjk(sentence) else ", ").join(rest)


# A clause led by a third person ("…, his name is Biscuit", "…，她叫朵朵") says more of what
# the clause before it named: read alone, "his name is Biscuit" would be the user's name.
_ANAPHOR = re.compile(r"(?i)^(?:he|she|his|her|they|their|it|its|it's|him|them)\b|^[他她它]")


def _states_a_clause(sentence: str) -> bool:
    """Return True if a clause of a sentence is a statement, likelier than not."""
    readings = read_utterances(_clauses(sentence))
    return any(r.intent in _STATES and r.confidence >= 0.5 for r in readings)


def _firm_clauses(sentence: str) -> list[str]:
    """Return a sentence's clauses, bound (`_bound`), without the tentative ones."""
    return [c for c in _bound(_clauses(sentence)) if not _TENTATIVE.search(c)]


def _bound(clauses: list[str]) -> list[str]:
    """Return clauses with each one led by a third-person pronoun joined to the one before."""
    out: list[str] = []
    for clause in clauses:
        if out and _ANAPHOR.match(clause):
            out[-1] = f"{out[-1]}{'，' if has_cjk(clause) else ', '}{clause}"
        else:
            out.append(clause)
    return out


def _event(
    clause: str, now: datetime, *, past: bool = False, moved: bool = False, said: bool = False
) -> CandidateMemory | None:
    """Return a dated event: a plan (`past` False) or, with `past`, what already happened.

    A plan or a past event needs its speaker ("we launch on Friday"), unless it moves one
    (`moved`, the model reads an update): "上线改到下周五了" moves the launch the user
    spoke of. A clause may leave its speaker out ("周五得去趟银行", "got a dentist appt on
    the 14th"): `said`, the model reads it as the user's own statement or plan, stands for
    the speaker there.
    """
    mention = find_date(clause, now, lean=statement_lean(clause))
    speaker = _PLAN.search(clause) or said
    if mention is None or not (moved or speaker):
        return None
    days = (mention.end - mention.day).days if mention.end else 0
    if past != ((mention.end or mention.day) < now.date()):
        return None
    if days > (_PAST_SPAN_DAYS if past else 7):
        return None  # a plan for a month or a year (no day to remind of), or a past year
    iso = mention.day.isoformat()
    zh = has_cjk(clause)
    content = f"{trim_phrase(clause)}（{iso}）" if zh else f"{trim_phrase(clause)} ({iso})."
    topic = _slug(clause.replace(mention.text, ""))[:24]
    return CandidateMemory(
        kind="event",
        subject=f"event.{topic}",
        content=content,
        value=iso,
        confidence=0.9,
        event_date=iso,
    )


def _undated(clause: str, now: datetime) -> str:
    """Drop a leading date phrase, so "上个月我搬到无锡了" reads as "我搬到无锡了"."""
    mention = find_date(clause, now)
    if mention is None or not clause.startswith(mention.text):
        return clause
    return clause[len(mention.text) :].lstrip(" ,，、") or clause


# A weekday said as what recurs ("Thursday nights are curling league", "Sundays I run", "每
# 逢周五"): a routine, though the model may read the weekday as one day ahead.
_DAY = r"(?:mon|tue|tues|wed|weds|thu|thur|thurs|fri|sat|sun)"
_TIMES = r"(?:nights|mornings|evenings|afternoons|arvos|nites|lunchtimes)"
_RECURRING_DAY = re.compile(
    rf"(?i)\b(?:mon|tues|wednes|thurs|fri|satur|sun)days?\s+{_TIMES}\b"
    r"|\b(?:mon|tues|wednes|thurs|fri|satur|sun)days\b|每逢周|每个?(?:周|星期|礼拜)"
    # "every sunday", "each other Friday", "at weekends"; "一般他周末过来", "我喜欢周末去钓鱼"
    r"|\b(?:every|each)\s+(?:other\s+)?(?:(?:mon|tues|wednes|thurs|fri|satur|sun)day|weekend)\b"
    r"|\b(?:at|on|most|the)\s+weekends\b"
    # Short days: "mon wed fri mornings", "tues/thurs evenings", "sat nights"
    rf"|\b{_DAY}(?:\s*(?:[/,&+]|\band\b)?\s*{_DAY})+\b"
    rf"|\b{_DAY}\s+{_TIMES}\b"
    r"|(?:一般|通常|平时|经常|总是|老是|喜欢|爱)[^，,。；;]{0,6}?(?:周末|(?:周|星期|礼拜)[一二三四五六日天])"
)


def _routine_by_form(clause: str, reading: Reading) -> Reading:
    """Return the reading of a clause, a routine where its weekday is said as recurring.

    "Every sunday", "on weekends", "我喜欢周末去钓鱼" name no one day: read as an event or a
    preference, the clause would be stored as a one-off dated to the next one, which expires.

    A day that recurs names its occasion (a birthday, an anniversary): read as one without,
    "4月30号出发，一路玩到五一" is a trip, never the user's birthday.
    """
    # A fact said with one stays what it is about ("our grandson stays with us most weekends
    # and he's got a peanut allergy" is said of the grandson).
    if reading.kind in ("event", "preference") and _RECURRING_DAY.search(clause):
        return replace(reading, kind="habit")
    if reading.kind == "recurring_date" and not _OCCASION.search(clause):
        return replace(reading, kind="event")
    return reading


def _from_rules(clause: str, now: datetime, reading: Reading) -> CandidateMemory | None:
    """Return what a pattern pulls out of one clause (a value span), if one matches."""
    reading = _routine_by_form(clause, reading)
    rules = _ZH_RULES if has_cjk(clause) else _EN_RULES
    cand = None
    dated = find_date(clause, now) is not None
    # The user's own statement or plan (a question the model is unsure of asks nothing).
    said = reading.intent not in ("chitchat", "forget") and not reading.asks
    # A birthday recurs: a yearly fact, never an expiring event; a routine names a date but
    # is no one-off event either (the model says which).
    if dated:
        cand = recurring_fact(clause)
        # Nor is a day said as recurring ("she bakes soda bread every sunday"), read as a fact.
        one_off = reading.kind not in ("habit", "recurring_date") and not _RECURRING_DAY.search(
            clause
        )
        if cand is None and one_off:
            cand = _event(clause, now, moved=reading.intent == "update", said=said)
    if cand is None:
        cand = _negation(clause)
    if cand is None:
        body = _undated(clause, now) if dated else clause
        for pat, build in _CONTACT + rules:
            m = pat.search(body)
            if m:
                cand = build(m)
                break
    if cand is None and dated and reading.kind not in ("habit", "recurring_date"):
        # History, when no typed rule read the clause; a correction of one needs no speaker
        # ("the lease actually ends June 12" corrects the day of the lease the user spoke of).
        cand = _event(clause, now, past=True, moved=reading.intent == "update", said=said)
    if cand is not None and isinstance(cand.value, str) and not normalize_text(cand.value):
        return None  # the pattern matched, but the value it names is empty
    return cand


# A statement whose subject is someone else ("My colleague lives in Rome", "我老婆喜欢吃辣"):
# it is kept, but never filed as the user's own city, name or taste. Someone else is a
# relation by any of its words (`PEOPLE`), or anyone the user knows by their role.
_OTHER_PERSON = re.compile(
    r"(?i)^(?:my|our)\s+(?:[\w-]+\s+)?(?:"
    + "|".join(map(re.escape, [*relation_words(False, PEOPLE), "friend", "teacher", "doctor"]))
    # "the wife works at the post office", "老公在银行上班": a relative, though no "my" says so.
    + r")s?\b|^the\s+(?:"
    + "|".join(map(re.escape, relation_words(False, PEOPLE)))
    + r")s?\b|^(?:(?:我们|咱们|我|咱|俺)的?)?(?:"
    # A word that has the speaker in it ("我家那位") goes on from the 我 that starts the clause.
    + "|".join(
        re.escape(w.removeprefix("我")) for w in [*relation_words(True, PEOPLE), "朋友", "同学"]
    )
    + ")"
)
_BIRTHDAY = re.compile(r"(?i)birthday|bday|\bturn(?:s|ing)\s+\d{1,3}\b|生日")
_OCCASION = re.compile(
    rf"{_BIRTHDAY.pattern}|anniversary|married|wedding|born|纪念日|周年|结婚|出生|生的|忌日"
)
# Whose name or number it is: a third person's ("her name's Hannah", "他叫小林") is not the
# user's own, whatever family the model reads.
_THIRD_PERSON = re.compile(
    r"(?i)\b(?:he|she|his|her|hers|him|they|their|them|it|its|it's)\b|[他她它]|(?<!我)的名字"
)
# A name said of whoever opens the clause is theirs ("老大叫明明", "个仔叫阿豪"); the user's own
# is said of no one else ("小名叫豆豆", "大家都叫我阿May").
_NAMED_FIRST = re.compile(rf"^(?!我|本人|俺|咱)[{HAN}]{{1,5}}(?<![名号称])叫(?!我)")
# What the user owns or knows is the subject, not the user ("我的健身教练叫李伟", "my trainer
# is called Mike", "我家狗今年五岁"): its name or age is no value of the user's own.
_POSSESSED = re.compile(
    r"(?i)\b(?:my|our)\s+(?!(?:full |first |last |nick)?name\b|age\b)[a-z]"
    r"|我(?:的|家|们的?)(?!名字|全名|小名|英文名|网名|昵称|年龄|岁数)[\u4e00-\u9fff]"
)
# News of someone else ("my trainer switched jobs, he is at Equinox now"): a person spoken
# of, and no word for the user as a subject. It changes no value the user has one of.
_HE_OR_SHE = re.compile(r"(?i)(?:he|she)s?\b|[他她](?![们])")  # "shes": no apostrophe typed
_SOMEONE_ELSE = re.compile(r"(?i)\b(?:he|she|him|his|her|hers)\b|[他她]")
# A measure of the body is no age, though the model reads "I'm 180 cm" near "I'm 38".
_MEASURE = re.compile(
    r"(?i)\d\s*(?:cm|mm|m|kg|kgs|lbs?|ft|in)\b|\b(?:centimet|met(?:er|re)|kilo|pound|feet|foot"
    r"|inch|stone|tall|height|weigh)\w*|厘米|公分|公斤|千克|斤|米|身高|体重|个子"
)
# An amount of money is no age ("saving like $40 a month"): an exact format.
_MONEY = re.compile(
    r"(?i)[$€£¥]\s*\d|\d\s*(?:k\b|块|元|刀|美元|英镑|欧元|dollars?\b|bucks\b|quid\b|pounds?\b|euros?\b)"
)
# An age is a number ("I'm 38", "turning forty", "今年五十八岁"): one that counts a time or a
# thing ("retired two years now", "taught for 38 years", "练了大半年", "16年的车") or labels
# one ("the 44 route", "the 9 bus") is none, however the model reads the sentence. An exact
# format: the words for numbers and units, and "the" before a number.
_EN_NUMBER = (
    r"\d{1,3}(?:s\b)?|(?:twen|thir|for|fif|six|seven|eigh|nine)ties"
    r"|(?:twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)(?:[- ]?(?:one|two|three|four"
    r"|five|six|seven|eight|nine)\b)?|eleven|twelve|(?:thir|four|fif|six|seven|eigh|nine)teen"
    r"|one|two|three|four|five|six|seven|eight|nine|ten"
)
_AGE_NUMBER = re.compile(
    rf"(?i)(?<![\w.,:/$€£¥])(?<!\bthe )(?:{_EN_NUMBER})(?![\w.,:/])"
    r"(?!\s*-?\s*(?:years?|yrs?|months?|weeks?|days?|hours?|hrs?|minutes?|mins?|times?|km|miles?"
    r"|am|pm|o'clock)\b(?!\s*-?\s*old))"
    r"|(?<![第\d一二两三四五六七八九十$€£¥])(?:\d{1,3}|[一二两三四五六七八九十]{1,3})"
    r"(?:多|出头)?(?:岁|周岁|了|(?=[，。,.!！?？~～]|$))|奔[二三四五六七八九]"
)
_MIN_STATEMENT_CHARS = 4


def _subject(reading: Reading, clause: str, context: str = "", goes_on_from: str = "") -> str:
    """Return the subject a statement the patterns did not know is filed under.

    `context` is the sentence before it in the message: "Her name's Hannah." after "I have
    a new girlfriend." is the girlfriend's name. `goes_on_from` is the clause of its own
    sentence it goes on with, having no subject of its own (`continues`) or speaking of him
    or her: in "我外婆叫张秀兰，今年八十五了" the age is the grandmother's, and in "我哥叫王磊，
    在成都开火锅店" the restaurant is the brother's, not the user's work.
    """
    slug = _slug(re.sub(r"(?i)^(?:i|i'm|my|我|我的)\b", "", clause))[:24]
    who = relation_in(clause)
    # Led by "she" or "he", it speaks of the relative just named, whoever else it names:
    # "she's still back home with my mum" after "my sister is 17" is the sister's.
    if _HE_OR_SHE.match(clause) and (of := relation_in(goes_on_from) or relation_in(context)):
        who = of
    if reading.family in ("name", "age"):
        # Whose name or age: a third person's, the relative's the clause goes on from, or
        # that of someone the user speaks of; else the user's own (below).
        if _THIRD_PERSON.search(clause):
            who = who or relation_in(context)
            return f"family.{who}.{slug}" if who else f"people.{slug}"
        if of := relation_in(goes_on_from):
            return f"family.{of}.{slug}"
        if _POSSESSED.search(clause) or (reading.family == "name" and _NAMED_FIRST.search(clause)):
            return f"family.{who}.{slug}" if who else f"people.{slug}"
    if (
        (of := relation_in(goes_on_from))
        and who is None
        and reading.kind in ("fact", "preference")
        and not THE_USER.search(clause)
    ):
        return f"family.{of}.{slug}"
    if reading.family == "age" and _MEASURE.search(clause):
        return f"profile.body.{slug}"
    if reading.family == "age" and (_MONEY.search(clause) or not _AGE_NUMBER.search(clause)):
        return f"note.{slug}"  # "saving like $40 a month", "I'm retired two years now"
    if reading.kind == "recurring_date":
        what = "birthday" if _BIRTHDAY.search(clause) else "anniversary"
        return f"family.{who}.{what}" if who else f"profile.{what}"
    if reading.kind == "habit":
        return f"habit.{slug}"
    if who and (reading.family == "family" or _OTHER_PERSON.search(clause)):
        return f"family.{who}.{slug}"
    if _of_someone_else(clause):  # "my doctor put me on statins" is the user's health
        return f"people.{slug}"
    # One value per user: a new age or name, or a move, replaces the one on record whatever
    # its words. A remark about home that is no move ("楼下新开了一家面包店") is not the city.
    if reading.family in ("age", "name"):
        return FAMILY_PREFIX[reading.family]
    # Where the user lives changes on news of a move, likelier than not to the moves head,
    # not on a trip read as news of home ("去年五月和老陈去了桂林，坐竹筏游漓江…", update at
    # 0.69, a move at 0.07): that is a remark about home, as what is no update is.
    if (
        reading.intent == "update"
        and reading.family in UPDATE_SUBJECT
        and (reading.family != "home" or read_utterance(without_date(clause)).moving >= MOVE_ODDS)
    ):
        if _SOMEONE_ELSE.search(clause) and not THE_USER.search(clause):
            return f"people.{slug}"
        return UPDATE_SUBJECT[reading.family]  # the family's slot: it replaces the old value
    if reading.family == "home":
        return f"home.{slug}"
    return f"{FAMILY_PREFIX[reading.family]}.{slug}"


def _from_reading(
    clause: str, reading: Reading, now: datetime, context: str = "", goes_on_from: str = ""
) -> CandidateMemory | None:
    """Return a statement no pattern knew, typed as the model reads it, said in its own words."""
    reading = _routine_by_form(clause, reading)
    if len(normalize_text(clause)) < _MIN_STATEMENT_CHARS or reading.kind == "event":
        return None  # a one-off without a future day is history: dates decide events
    if reading.family not in FAMILY_PREFIX and reading.kind not in ("habit", "recurring_date"):
        return None  # about no subject of the user's ("墙上的挂钟停了"): the raw turn keeps it
    zh = has_cjk(clause)
    said = trim_phrase(clause)
    value = None
    if reading.kind == "recurring_date" and (mention := find_date(clause, now)) is not None:
        value = mention.day.strftime("--%m-%d")  # yearly: the month and day, no year
    return CandidateMemory(
        kind=RECORD_KIND.get(reading.kind, "fact"),
        subject=_subject(reading, clause, context, goes_on_from),
        content=f"用户说：{said}。" if zh else f"User said: {said}.",
        value=value,
        confidence=0.8,
    )


_STATES = ("remember", "update")


def _statements(
    sentence: str,
    reading: Reading,
    now: datetime,
    *,
    typed: bool = True,
    context: str = "",
    news: bool = True,
    moving: Reading | None = None,
) -> list[CandidateMemory]:
    """Return the candidates of one sentence: what patterns find, and (`typed`) the rest.

    With `news`, a dated clause that moves the user's employer or home from its day is kept
    as the new value too (`_lasting`); not beside a forget request, where a day says why.
    So is the whole sentence when the model reads it as such a move (`moving`, its reading
    without its day) and no clause said the new value: "Huge news, I took an offer as a
    paralegal at a firm in town, first day Monday" is cut at its comma, and neither part says
    both.
    """
    # A tentative clause states nothing ("我下个月可能要去上海出差"); the firm one said with
    # it still does ("，我住在杭州"), and the sentence is no longer one update or correction.
    # A plan is kept for the clauses of it that state, each read on its own: bound to the
    # clause after it, "my partner's name is Jo" was read with the plan said of her and lost.
    said = _clauses(sentence) if reading.intent == "plan" else _bound(_clauses(sentence))
    clauses = [c for c in said if not _TENTATIVE.search(c)]
    firm = len(clauses) == len(said)
    # A day said of a routine is no one-off, though the sentence reads as a fact: of
    # "周六上午她去学游泳，学了两年了" the first clause, read on its own, recurs.
    own = read_utterances(clauses) if len(clauses) > 1 else [reading] * len(clauses)
    found = [
        _from_rules(c, now, replace(reading, kind="habit") if r.kind == "habit" else reading)
        for c, r in zip(clauses, own, strict=True)
    ]
    if not typed:
        # A plan in one clause is kept in no words of the user's, but the move it says lasts
        # ("下周一开始去新公司上班了", read as a plan).
        kept = [cand for cand in found if cand is not None]
        moves = [_lasting(c, cand, now) for c, cand in zip(clauses, found, strict=True) if news]
        return _with_move(sentence, kept + [m for m in moves if m is not None], moving, now)
    # A correction is one statement: "Sorry, I'm 39, not 38" cut at its commas would keep
    # "not 38" as a statement of its own. So is news of a value the user has one of that no
    # pattern typed: "I left the big four job, starting at Fernway on Monday" is the new
    # employer, not a remark and a Monday event beside the old one.
    slot_news = reading.family in UPDATE_SUBJECT and not any(
        cand is not None and slot_of(cand.subject) is not None for cand in found
    )
    if firm and reading.intent == "update" and (slot_news or not any(found)):
        whole = _from_reading(sentence, reading, now, context)
        return _with_move(sentence, [whole] if whole is not None else [], moving, now)
    # One clause is the sentence the model already read; several are read each on its own.
    # A clause about nothing by itself is read together with its sentence (`in_context`):
    # "I read every label" is about health after "my throat gets tight". One that names a
    # subject keeps it: "we have been together two years" after "my partner Priya" is no
    # second fact about the partner for an update to be torn between.
    by_clause = {
        c: r if len(clauses) == 1 else _in_sentence(c, r, reading)
        for c, r, cand in zip(clauses, own, found, strict=True)
        if cand is None
    }
    out = []
    head = ""
    for n, (clause, cand) in enumerate(zip(clauses, found, strict=True)):
        # A clause with no subject of its own goes on with the clause its run began with
        # ("我男朋友叫陈昊，在深圳当程序员": his job, not the user's), as one that speaks of
        # him or her does ("my sister's called Lena, she's a vet").
        goes_on = n > 0 and (continues(clauses[n - 1], clause) or bool(_HE_OR_SHE.match(clause)))
        head = head if goes_on else clause
        if cand is None and by_clause[clause].intent in _STATES:
            before = head if goes_on else ""
            cand = _from_reading(clause, by_clause[clause], now, context, before)
        if cand is not None:
            out.append(cand)
    moves = [_lasting(c, cand, now) for c, cand in zip(clauses, found, strict=True) if news]
    return _with_move(sentence, out + [m for m in moves if m is not None], moving, now)


def _with_move(
    sentence: str, found: list[CandidateMemory], moving: Reading | None, now: datetime
) -> list[CandidateMemory]:
    """Return `found` and the slot news of the move `moving` reads, if no clause said it."""
    news = _moved_to(sentence, moving, now) if moving is not None else None
    if news is None or any(slot_of(c.subject) == slot_of(news.subject) for c in found):
        return found
    return [*found, news]


def _lasting(clause: str, cand: CandidateMemory | None, now: datetime) -> CandidateMemory | None:
    """Return the new employer or home a dated clause moves to from its day, or None.

    "I start at the planning office next Monday" is a day (kept as an event, which expires
    after it) and a new employer from then on: kept only as the event, the job was gone a
    day after it began, and the old one answered "where do I work?" again. The `moves` head
    tells such a clause from a one-off there ("a job interview on Friday", a team outing, a
    flat viewing) and from a change at the same job (a new manager, new shifts). It is then
    also kept as the news of its family's slot (`_moved_to`).
    """
    if cand is None or cand.kind != "event" or find_date(clause, now) is None:
        return None  # what the clause's day makes
    said = read_utterance(without_date(clause))  # what changes, not when (`without_date`)
    return _moved_to(clause, said, now) if said.moves else None


def _moved_to(text: str, said: Reading, now: datetime) -> CandidateMemory | None:
    """Return the news of the slot a move the model reads in `text` changes, or None.

    The employer or the home, whichever the family head puts first, in the user's words
    with the move's day when it has one: it replaces the old value. None when it is said of
    someone else ("my wife starts at the bank on Monday"), which is filed under the person.
    """
    home = probability_of(said, "home") > probability_of(said, "work")
    moved = replace(said, intent="update", kind="fact", family="home" if home else "work")
    news = _from_reading(text, moved, now)
    if news is None or slot_of(news.subject) is None:
        return None
    mention = find_date(text, now)
    if mention is None:
        return news
    day = mention.day.isoformat()
    content = news.content.rstrip("。.")
    dated = f"{content}（{day}）。" if has_cjk(text) else f"{content} ({day})."
    return news.model_copy(update={"content": dated})


def _in_sentence(clause: str, reading: Reading, whole: Reading) -> Reading:
    """Return a clause's reading with the subject its sentence gives it where it names none.

    A clause about nothing by itself takes its sentence's family (`in_context`). One read
    as a value the user has one of (an age, a name) that does not say it is the user's
    (`THE_USER`) is of what the sentence is about: "9 now" in "greyhound, 9 now, slowing down
    a lot" is the dog's age, and filed as the user's it would replace theirs.
    A relative's is found by `_subject` ("我女儿叫朵朵，今年五岁").
    """
    if (
        reading.intent == "question"
        and whole.intent in _STATES
        and not asks_by_form(clause)
        and not only_asks_for_help(clause)
    ):
        # A clause of a statement with no form of a question states ("跟你讲一下我对虾过敏",
        # "吃一口就过敏", read as asking at 0.5-0.6): only the words can ask.
        reading = replace(reading, intent="remember")
    if reading.family == "none":
        if reading.intent == "update" and whole.intent != "update":
            # A clause that names no subject cannot say which value changed; only its sentence
            # can. "今年换了新招牌" (the shop's, read as an update) in a sentence about the
            # user's shop would take the home slot from the sentence and end where they live.
            reading = replace(reading, intent="remember")
        return in_context(reading, whole)
    if (
        reading.family in ("age", "name")
        and whole.family not in (reading.family, "none", "family")
        and not THE_USER.search(clause)
    ):
        return replace(reading, family=whole.family)
    return reading


Known = tuple[str, str, str]
"""What the extraction prompt lists as remembered: `(id, subject, content)`."""


def _updates(cand: CandidateMemory, known: Sequence[Known]) -> CandidateMemory:
    """Return an update's candidate naming the memory it changes, as a real model would.

    A moved date moves the event: an update that states an event changes the first event
    the extraction prompt lists (they come ranked by how well they match the message), so
    "评审改到周四了" supersedes "评审在周二" whatever the subjects' words.
    """
    if cand.kind != "event" or cand.updates:
        return cand
    event = next((rid for rid, subject, _ in known if subject.startswith("event.")), None)
    return cand.model_copy(update={"updates": event}) if event else cand


_RELATIVE = re.compile(r"^family\.([^.]+)\.")


def _relative(subject: str) -> str | None:
    """Return the relative a subject is filed under (`family.<relation>.…`), or None."""
    found = _RELATIVE.match(subject)
    return found[1] if found else None


def _of_someone_else(sentence: str) -> bool:
    """Return True if a sentence is said of someone else alone, not of the user too.

    It opens with a relative or someone the user knows and says nothing of the user after
    it ("my husband got a new phone"; in "我老公…" the 我 is no speaker).
    """
    opening = _OTHER_PERSON.search(sentence)
    return opening is not None and not THE_USER.search(sentence[opening.end() :])


def _meant_by(sentence: str, reading: Reading, known: Sequence[Known]) -> tuple[str, str] | None:
    """Return `(id, subject)` of the memory listed that an update changes, found by meaning.

    No words need be shared: "组会时间改了，以后是每周四上午十点" changes "每周二下午三点我要
    跟导师开组会" (`memory.understanding.updates`); None when no one memory is clearly it.
    """
    # What is said of one relative changes nothing said of another (mum's birthday is no
    # news of the sister's name), and what is said of a relative alone nothing of the
    # user's own ("my husband got a new job at Tesco" is no news of the user's employer).
    who = relation_in(sentence)
    theirs = _of_someone_else(sentence)
    mine = [
        k for k in known
        if who is None or _relative(k[1]) == who or (_relative(k[1]) is None and not theirs)
    ]  # fmt: skip
    at = changed_record(sentence, reading.family, [(subject, c) for _, subject, c in mine])
    return None if at is None else (mine[at][0], mine[at][1])


def _swapped(sentence: str, reading: Reading, known: Sequence[Known]) -> tuple[str, str] | None:
    """Return `(id, subject)` of the one thing listed that a statement says was replaced.

    "Finally sold the hatchback, we've got a little EV now" shares no word with "I drive a
    2012 Honda Jazz" and reads as remembered, not as an update: the `swaps` head reads the
    replacement, the `things` head what kind of thing it is and of what is listed. The one
    thing of that kind the user is listed with is what it replaces; of two (a car and a
    van), neither. A relative's new thing replaces nothing of the user's.
    """
    if not reading.swaps or reading.thing == "other" or _of_someone_else(sentence):
        return None
    mine = [
        k for k in known
        if not k[1].startswith(("event.", TURN_SUBJECT)) and _relative(k[1]) is None
    ]  # fmt: skip
    kinds = read_utterances([record_text(content) for _, _, content in mine]) if mine else []
    same = [k for k, r in zip(mine, kinds, strict=True) if r.thing == reading.thing]
    return (same[0][0], same[0][1]) if len(same) == 1 else None


def _news(sentence: str, reading: Reading, known: Sequence[Known]) -> bool:
    """Return True if a statement the model reads as remembered moves a remembered routine.

    News of a change is often read as a plain statement, with the update second ("Guitar
    lessons have moved to Saturday mornings" at 0.19): at `NEWS_FLOOR` or above, it is taken
    as an update when the one memory listed it is clearly about is a routine (`is_routine`)
    the model reads in the statement's family. A remark near a list (a second allergy) adds
    to it, and one about another family is no news of the routine ("我们公司在天府三街，坐
    地铁过去差不多半小时" is about work, not the morning pill).
    """
    if reading.intent != "remember" or reading.update < NEWS_FLOOR:
        return False
    if reading.family not in FAMILY_PREFIX:
        return False  # a remark about nothing the model can name is no news (`pool_of`)
    old = _meant_by(sentence, reading, known)
    if old is None or not is_routine(old[1]):
        return False
    content = next(c for rid, _, c in known if rid == old[0])
    return read_utterance(record_text(content)).family == reading.family


_ISO_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


def _not_past(known: Sequence[Known], now: datetime, day: str) -> list[Known]:
    """Return what is listed, less the events whose day has passed when `day` is still ahead.

    An event that happened is not moved to a day to come. With only "大前天我去了超市" listed,
    "Next Friday I have a dentist appointment" (news at 0.22) moved the trip to the shop; a
    day passed may still be said to be another passed one ("the review was on the 2nd").
    """
    today = now.date().isoformat()
    if day < today:
        return list(known)
    days = [_ISO_DAY.search(content) if subject.startswith("event.") else None
            for _, subject, content in known]  # fmt: skip
    return [k for k, at in zip(known, days, strict=True) if at is None or at[0] >= today]


def _moved(
    sentence: str,
    reading: Reading,
    found: list[CandidateMemory],
    known: Sequence[Known],
    now: datetime,
) -> list[CandidateMemory]:
    """Return a statement's candidates, a dated event that moves a remembered one marked so.

    News that a day moved is often read as a plain statement ("physio place rang, bumped
    me back to the 21st, same slot", read as about work): at `NEWS_FLOOR` or above
    (the sentence's, or its clause's that says it most),
    a new day for the one dated event the statement is clearly about (`changed_record`,
    weighed among the events) moves it, as a correction does. A day already remembered
    for it moves nothing.
    """
    event = next((c for c in found if c.kind == "event" and c.event_date and not c.updates), None)
    if event is None:
        return found
    # The news may be one clause of several ("bumped me back to the 21st, which suits me
    # better"): the clause that says it most counts.
    clauses = _clauses(sentence)
    said = [reading, *(read_utterances(clauses) if len(clauses) > 1 else [])]
    if max(r.update for r in said) < NEWS_FLOOR:
        return found
    ahead = _not_past(known, now, str(event.event_date)[:10])
    old = _meant_by(sentence, replace(reading, family="schedule"), ahead)
    if old is None or not old[1].startswith(f"{FAMILY_PREFIX['schedule']}."):
        return found
    if any(rid == old[0] and str(event.event_date) in content for rid, _, content in known):
        return found
    return [c.model_copy(update={"updates": old[0]}) if c is event else c for c in found]


def _changes(
    sentence: str,
    reading: Reading,
    found: list[CandidateMemory],
    known: Sequence[Known],
    old: tuple[str, str] | None = None,
) -> list[CandidateMemory]:
    """Return an update's candidates, the memory it changes by meaning named on one of them.

    `old` is `(id, subject)` of the memory it changes when already known (`_swapped`).

    A statement filed under a slot ("User lives in Bath") replaces its slot by itself;
    another typed value (a moved event's date, a number) carries the update; with none, it is
    one statement in the user's words, filed over what it changes (the store gives it that
    memory's kind and subject: a moved weekly meeting stays a habit).
    """
    # A value a pattern typed under a slot replaces the slot; the user's words filed under
    # their family's slot only by default ("I quit the café, I'm starting as a developer")
    # go over the memory they are clearly about (the role), when one is.
    if any(slot_of(c.subject) is not None and not in_users_words(c.content) for c in found):
        return found
    old = old or _meant_by(sentence, reading, known)
    if old is None:
        return found
    # A moved date carries the update of what is remembered as dated; a date found in a
    # correction of anything else ("刚才说反了") is no value of it.
    dated = old[1].startswith("event.")
    typed = next((c for c in found if c.value and (c.kind == "event") == dated), None)
    if typed is not None:
        return [c.model_copy(update={"updates": old[0]}) if c is typed else c for c in found]
    zh = has_cjk(sentence)
    # What it states is its firm clauses: "瑜伽课改到周四了，我可能也换个馆" moves the class and
    # keeps no word of the studio it might leave.
    firm = _firm_clauses(sentence)
    said = (
        trim_phrase(sentence)
        if not _TENTATIVE.search(sentence)
        else ("，" if zh else ", ").join(firm)
    )
    content = f"用户说：{said}。" if zh else f"User said: {said}."
    kind = RECORD_KIND.get(reading.kind, "fact")
    # A raw statement listed stands for what was extracted from it (the store files the
    # update over that: `StoreReader.active_record`), or for itself; its own subject is no
    # memory's. The update changes that statement, not also a slot: "车位费涨了，现在一个月要
    # 350" (read as home) ends "小区的车位一个月租金300", not the city the user lives in.
    subject = old[1]
    if subject.startswith(TURN_SUBJECT):
        named = reading.family in FAMILY_PREFIX
        stated = replace(reading, intent="remember")
        subject = _subject(stated, sentence) if named else ""
        if not subject or slot_of(subject) is not None:
            subject = f"note.{_slug(sentence)[:24]}"  # "bus pass went up, 65 now" is no age
    return [_cand(kind, subject, content, None, 0.8).model_copy(update={"updates": old[0]})]


def _news_in_a_clause(
    sentence: str, reading: Reading, found: list[CandidateMemory], known: Sequence[Known]
) -> list[CandidateMemory] | None:
    """Return `found` with the one clause read as news filed over what it changes, or None.

    A user speaks in statements: a sentence read whole as a remark or a plan ("the gym opens
    at seven now, finally I can go before work") may say in one clause that a value
    changed. That clause, read on its own as an update, changes what it is clearly about
    (`_changes`); the rest of the sentence is kept as it was. None when no clause, or more
    than one, reads as news, or nothing remembered is clearly what it changes.
    """
    clauses = _firm_clauses(sentence)
    if len(clauses) < 2:
        return None
    readings = read_utterances(clauses)
    news = [
        (c, said)
        for c, r in zip(clauses, readings, strict=True)
        if (said := _in_sentence(c, r, reading)).intent == "update"
    ]
    if len(news) != 1:
        return None
    clause, said = news[0]
    mine = [cand for cand in found if trim_phrase(clause) in cand.content]
    changed = _changes(clause, said, mine, known)
    old = next((c.updates for c in changed if c.updates), None)
    if old is None:
        return None
    # The clause read as news may only say that something happened ("广场舞队昨天开会了，从
    # 下个月开始每人每月交三十块" ended the fee with the meeting): what changed is the clause
    # nearest to what it changes.
    rid, subject, content = next(k for k in known if k[0] == old)
    nearest = clauses[int(similarities(record_text(content), clauses).argmax())]
    if nearest != clause:
        mine = [cand for cand in found if trim_phrase(nearest) in cand.content]
        changed = _changes(nearest, said, mine, known, (rid, subject))
    return [c for c in found if c not in mine] + changed


def _said_by(fix: Correction, known: Sequence[Known]) -> tuple[str, str] | None:
    """Return `(id, subject)` of the first memory listed that says the old value, not the new."""
    return next(
        (
            (rid, subject)
            for rid, subject, content in known
            if says_value(content, fix.old) and not says_value(content, fix.new)
        ),
        None,
    )


def _corrected(
    sentence: str, fix: Correction, reading: Reading, now: datetime, known: Sequence[Known]
) -> CandidateMemory | None:
    """Return a correction as one statement, filed over the memory that said the old value.

    "I'm 175 cm, not 172" states 175 (the patterns read the sentence without "not 172",
    so "不是周二，是周四" is one event on Thursday, not two) and changes what is
    remembered as 172, whatever its subject: the memory listed as remembered that says
    the old value and not the new one. None of them says it: an event still moves the
    first one listed (`_updates`).
    """
    found = (_from_rules(c, now, reading) for c in _clauses(fix.new))
    cand = next((c for c in found if c is not None), None)
    if cand is not None and cand.kind == "event":
        said = trim_phrase(sentence)
        at = cand.event_date or ""
        cand = cand.model_copy(
            update={"content": f"{said}（{at}）" if has_cjk(said) else f"{said} ({at})."}
        )
    elif cand is None or not cand.value:
        cand = _from_reading(sentence, reading, now)  # the correction in the user's words
    old = _said_by(fix, known) or _meant_by(sentence, reading, known)
    if old is None:
        return _updates(cand, known) if cand is not None else None
    was = next((content for rid, _, content in known if rid == old[0]), "")
    fixed = with_new_value(was, fix) if cand is None or not cand.value else None
    if fixed is not None and cand is not None and cand.kind != "event":
        # Kept in the user's words, the memory says what it said with the new value ("My
        # manager's name is Darren"), not "oops I meant Darren, not Derek, long day".
        cand = cand.model_copy(update={"content": fixed})
    if cand is None:
        zh = has_cjk(sentence)
        said = trim_phrase(sentence)
        content = fixed or (f"用户说：{said}。" if zh else f"User said: {said}.")
        cand = _cand(RECORD_KIND.get(reading.kind, "fact"), old[1], content, None, 0.8)
    return cand.model_copy(update={"updates": old[0], "subject": old[1]})


def extract_rules(text: str, now: datetime, known: Sequence[Known] = ()) -> Extraction:
    """Extract the statements of one user message, in the user's own characters.

    A message in traditional Chinese ("下個月12號要去牙醫那邊洗牙") is read in simplified
    characters, as the model and the patterns were written (`simplified`), and what is kept
    from it is given back in the user's characters (`_in_own_characters`). See `_extract`.
    """
    said = simplified(text)
    out = _extract(said, now, known)
    return out if said == text else _in_own_characters(out, text, said)


def _in_own_characters(out: Extraction, text: str, said: str) -> Extraction:
    """Return `out` with what it took from `said` in the characters of `text` it was read from.

    What was copied from the message (a run of two characters or more) is given back as the
    user typed it at that place; the frame around it ("用户说：…") stays as written. A
    conversion that changed the length of the text (a phrase made shorter) cannot be
    followed: what was taken stays as read.
    """
    if len(said) != len(text):
        return out

    def own(value: str) -> str:
        blocks = SequenceMatcher(None, value, said, autojunk=False).get_matching_blocks()
        parts, at = [], 0
        # A run of one character may be a word of the frame that the message also says.
        for i, j, n in (b for b in blocks if b.size > 1):
            parts += [value[at:i], text[j : j + n]]
            at = i + n
        return "".join(parts) + value[at:]

    memories = [
        m.model_copy(
            update={
                "content": own(m.content),
                "subject": own(m.subject),
                "value": own(m.value) if isinstance(m.value, str) else m.value,
            }
        )
        for m in out.memories
    ]
    return Extraction(memories=memories, forget=out.forget)


def _extract(text: str, now: datetime, known: Sequence[Known] = ()) -> Extraction:
    """Extract the statements of one user message, read by the understanding model.

    The model (`memory.understanding`) says what each sentence is: a statement (to remember
    or an update), a question, a forget request, chit-chat or a plan; only statements yield
    memories. Patterns pull the value out of the statements they know ("I live in X");
    the others are kept in the user's words, typed and filed by the model's kind and
    subject family. Hypotheticals and tentative remarks yield nothing.

    Args:
        text: The user's message.
        now: When it was said; relative dates resolve against it.
        known: `(id, subject, content)` of what is remembered on the message's subjects,
            best match first (the extraction prompt's list): an update names the memory it
            changes. A raw statement listed (`episode.turn.…`) stands for the memory
            extracted from it, which a recall hid behind it: only an update by meaning
            names it (a correction's old value, a moved event are read from memories).

    """
    listed = list(known)
    known = [k for k in listed if not k[1].startswith(TURN_SUBJECT)]
    out = Extraction()
    sentences = split_sentences(text)
    readings = read_utterances([*sentences, text] if len(sentences) > 1 else sentences)
    if len(sentences) > 1:
        # A sentence's subject is read together with its message, as a clause's is with its
        # sentence (`_statements`): "Sesame wrecks me." before "My throat gets tight." is health.
        whole = readings.pop()
        readings = [in_context(r, whole) for r in readings]
    # Whether each sentence, and the message, says the user's employer or home changes: read
    # without its day, as the `moves` head was fitted (`_lasting`), and with it. A sentence
    # is read whole where the head was fitted with clauses: read either way alone, a new
    # e-bike for the commute or a ceremony fixed for a day was a move; and one with no day
    # must read as an update, or "我住在杭州，在一家银行上班" is one. A move said in
    # several sentences is one piece of news ("new job as of this week! I'm at a timber yard
    # out in Parramatta now", "终于搬完了！现在住滨江"): no sentence alone says both.
    pieces = [*sentences, text] if len(sentences) > 1 else sentences
    undated = [
        r
        if said.moves and (said.intent == "update" or find_date(t, now))
        else replace(r, moves=False)
        for t, r, said in zip(
            pieces,
            read_utterances([without_date(t) for t in pieces]),
            read_utterances(pieces),
            strict=True,
        )
    ]
    moving = len(sentences) > 1 and undated[-1].moves and whole.intent in (*_STATES, "plan")
    if moving and not any(forget_requests(sentence) for sentence in sentences):
        sentences, readings, undated = [text], [whole], [undated[-1]]
    # So is an instruction on how to answer ("short answers from now on, yeah? three lines
    # tops"): the message is kept as one where the instructs head reads no sentence alone so.
    instructed = any(r.instructs for r in readings)
    if len(sentences) > 1 and whole.instructs and whole.intent != "forget" and not instructed:
        out.memories.append(_instruction(text))
    context = ""
    asking = False
    for sentence, reading, alone in zip(sentences, readings, undated, strict=False):
        asked = forget_requests(sentence)
        if asked:
            out.forget.extend(asked)
            asking = True
            continue
        if reading.instructs and not asking:
            # How the user wants to be answered from now on is theirs to keep, whatever it
            # reads as besides (a plan, a request, a question by its form): filed under the
            # profile, it is shown in every conversation (`memory.recall.search.pin`). What
            # the food or medicine head reads in it is kept as that too ("whenever you plan my
            # meals, mind I'm allergic to sesame" is an allergy, whatever else it is); no
            # other family ("answer me in plain English, I'm not a techie" read as news of
            # work took the employer's slot).
            if len(out.memories) < MAX_CANDIDATES:
                out.memories.append(_instruction(sentence))
            if not (reading.food or reading.medicine):
                context = sentence
                continue
        asks = reading.asks or reading.asking or reading.intent == "forget"
        if asks or asks_by_form(sentence) or not (stated := _stated_part(sentence)):
            continue  # what asks (by either head or by its form) states nothing
        if stated != sentence and reading.intent in _STATES:  # nor does a clause that asks
            sentence, reading = stated, in_context(read_utterance(stated), reading)
        if only_asks_for_help(sentence) and not reading.plans:
            continue  # a request to the assistant, not a plan of the user's ("帮我把…翻成英文：…")
        if _HYPOTHETICAL.search(sentence) or all(
            _TENTATIVE.search(c) for c in _clauses(sentence) or [sentence]
        ):
            continue
        # A plan or a remark may still state what a pattern knows ("我们用Go写后端", "Call me
        # Alex."); only what the model reads as a statement is kept in its own words.
        # After a forget request, what follows says why ("Feels a bit too personal."): a
        # value a pattern knows is still kept ("I live in Oslo now."), the rest is no memory.
        # News of a routine is one statement in the user's words, filed over the routine.
        # A reason changes nothing remembered either ("he passed last week" after "stop
        # keeping stuff about my dog" moved another event to last week).
        firm = not _TENTATIVE.search(sentence)  # else only its firm clauses state anything
        news = firm and bool(known) and not asking and _news(sentence, reading, known)
        swapped = _swapped(sentence, reading, known) if firm and not (news or asking) else None
        said = reading
        if news or swapped is not None:
            reading = replace(reading, intent="update")
        # A plan is often said with the situation it comes from ("计划明年春天去新疆自驾，我有
        # 辆二手的途观"): its clauses are read each on its own, and a statement is kept. So is
        # a request read as a question that asks by no form, said with what it comes from
        # ("我女儿见不得葱 一点都不沾 你做菜推荐别带葱的哈"): that is kept, not the request,
        # when a clause is a statement likelier than not (by hand): "我有没得啥子东西是碰都不
        # 能碰的，吃了要出事那种" is a question, its first clause a statement at 0.49.
        several = len(_clauses(sentence)) > 1
        typed = not asking and (
            reading.intent in _STATES
            or (reading.intent == "plan" and several)
            or (reading.intent == "question" and several and _states_a_clause(sentence))
        )
        fix = correction(sentence) if firm and reading.intent in _STATES else None
        # Read as a statement, a correction's form counts only if something remembered said
        # the old value ("我每周游泳三次，刚才说的两次不对"); read as an update, always.
        if fix is not None and reading.intent != "update" and not _said_by(fix, known):
            fix = None
        if fix is not None:
            one = _corrected(sentence, fix, reading, now, known)
            found = [one] if one is not None else []
        else:
            found = (
                []
                if news
                else _statements(
                    sentence,
                    reading,
                    now,
                    typed=typed,
                    context=context,
                    news=not asking,
                    moving=alone if alone.moves and not asking else None,
                )
            )
            if reading.intent == "update" and listed and not asking:
                found = _changes(sentence, reading, found, listed, swapped)
            elif firm and listed and not asking:
                changed = _news_in_a_clause(sentence, reading, found, listed)
                found = (
                    _moved(sentence, reading, found, listed, now) if changed is None else changed
                )
            if news and not found:
                # The routine it was news of was weighed among the typed memories; among
                # all listed (raw statements too) none is clearly it. Then it is a statement
                # of its own, never dropped ("每天睡前必听半小时播客，坚持三个月了" is no
                # news of a pill taken after lunch).
                reading = said
                found = _statements(sentence, reading, now, typed=typed, context=context)
        if asking:
            # A dated happening said with a forget request is why ("wipe what you have on the
            # old dog. we had him put down Monday"): kept, it would keep what is forgotten.
            found = [c for c in found if c.kind != "event"]
        for cand in found:
            if reading.intent == "update" and fix is None and not asking:
                cand = _updates(cand, known)
            if len(out.memories) < MAX_CANDIDATES:
                out.memories.append(cand)
        context = sentence
    return out


# --- the extractive thread summary ----------------------------------------------------------

_CONSTRAINT = re.compile(
    r"\b(don't|do not|never|always|must|must not|only|avoid|no more than|at most|at least)\b"
    r"|不要|别|不能|不许|禁止|必须|一定要|只能|务必|千万",
    re.I,
)
_GOAL = re.compile(
    r"\b(i want|i need|my goal|i'm trying|i am trying|help me|i'd like|we need|we want)\b"
    r"|我想|我要|我需要|目标|帮我|我们需要|打算",
    re.I,
)
_DECISION = re.compile(
    r"\b(let's|we decided|i decided|decided|go with|we'll use|i'll use|settled on)\b"
    r"|决定|就用|定了|选择了|确定",
    re.I,
)
_OPEN = re.compile(
    r"\b(todo|to do|later|pending|not yet|still need|tbd)\b|待办|还没|稍后|回头|待定", re.I
)


def _summary_sentences(text: str) -> list[str]:
    # The statements the gate splits a message into: an item is then one statement, word
    # for word, so forgetting it cuts exactly that item.
    return [" ".join(p.split())[:MAX_ITEM_CHARS] for p in split_text(text)]


def extractive_summary(user_texts: Iterable[str], previous: ThreadSummary | None) -> ThreadSummary:
    """Summarize user messages by keeping the sentences that state goals, rules and decisions.

    Deterministic, so the offline model can summarize with no LLM. The previous summary
    is carried forward: older constraints are never dropped for newer small talk.
    """
    out = previous.model_copy(deep=True) if previous else ThreadSummary()
    for text in user_texts:
        for sentence in _summary_sentences(text):
            # A question states no rule, goal or decision, whatever its words ("Who wrote
            # 'Never Let Me Go'?" is no constraint): judged by its form, as the extractor does.
            if asks_by_form(sentence):
                continue
            if _CONSTRAINT.search(sentence):
                add_item(out.constraints, sentence)
            elif _DECISION.search(sentence):
                add_item(out.decisions, sentence)
            elif _GOAL.search(sentence):
                add_item(out.goals, sentence)
            elif _OPEN.search(sentence):
                add_item(out.open_items, sentence)
    return out

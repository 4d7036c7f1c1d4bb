"""What a turn yields for memory: the extraction schema and the offline rule-based extractor.

Real models fill `Extraction` through structured output; the offline model runs
`extract_rules`, which fills the same schema from explicit zh/en statements.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from datetime import datetime, time, timedelta
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError, field_validator

from memory.records import clean_text, normalize_text
from memory.timeparse import find_date

log = logging.getLogger(__name__)

MAX_CANDIDATES = 20
MAX_CONTENT_CHARS = 500
DEFAULT_EVENT_TTL = timedelta(days=7)


class CandidateMemory(BaseModel):
    """One thing worth remembering about the user, as the model states it."""

    kind: Literal["fact", "preference", "event", "episode"] = Field(
        description="fact: stable truth about the user; preference: likes, dislikes, diet, "
        "style; event: something time-bound (a plan, a deadline, a trip); episode: a summary "
        "of a conversation (written by the agent, not extracted)."
    )
    subject: str = Field(
        description="Normalized dotted key, lower case, e.g. profile.name, profile.city, "
        "work.role, diet.type, diet.avoid.spicy, likes.jazz, tech.stack.python, event.launch."
    )
    content: str = Field(
        description="One self-contained sentence in the user's language, e.g. "
        "'User is vegetarian.' or '用户不吃辣。'"
    )
    value: str | None = Field(default=None, description="The bare value, e.g. 'Berlin'.")
    confidence: float = Field(
        default=0.8, ge=0.0, le=1.0, description="0.9+ explicit statement, <0.6 inferred."
    )
    event_date: str | None = Field(
        default=None, description="For events: the ISO date (YYYY-MM-DD) it happens on."
    )
    updates: str | None = Field(
        default=None,
        description="The id of an already remembered memory this statement changes (from the "
        "list of what is remembered), e.g. a new city for the one on record.",
    )
    replaces: str | None = Field(
        default=None,
        description="For a negation ('I no longer drink coffee'): the words of the earlier "
        "statement it ends ('drink coffee'); only matching values are superseded.",
    )

    @field_validator("subject")
    @classmethod
    def _subject(cls, v: str) -> str:
        v = re.sub(r"\s+", "_", v.strip().lower())
        if not v or len(v) > 120:
            raise ValueError("subject must be 1-120 characters")
        return v

    @field_validator("content")
    @classmethod
    def _content(cls, v: str) -> str:
        v = clean_text(v)
        if not v:
            raise ValueError("content is empty")
        return v[:MAX_CONTENT_CHARS]


class ForgetRequest(BaseModel):
    """The user asked to forget something."""

    query: str = Field(description="What to forget, in the user's words, e.g. 'I live in Berlin'.")
    subject: str | None = Field(default=None, description="The subject key, if known.")


class Extraction(BaseModel):
    """Everything a turn yields for long-term memory."""

    memories: list[CandidateMemory] = Field(default_factory=list)
    forget: list[ForgetRequest] = Field(default_factory=list)


def coerce_extraction(raw: Any) -> Extraction:
    """Turn model output into an `Extraction`, dropping items that do not validate.

    Malformed output is logged and skipped item by item, so one bad candidate does not
    cost the others; output that is not an object at all yields an empty extraction.
    """
    if isinstance(raw, Extraction):
        return raw
    if isinstance(raw, BaseModel):
        raw = raw.model_dump()
    if not isinstance(raw, dict):
        log.warning("extraction output is %s, not an object: skipped", type(raw).__name__)
        return Extraction()
    out = Extraction()
    for field, model, target in (
        ("memories", CandidateMemory, out.memories),
        ("forget", ForgetRequest, out.forget),
    ):
        items = raw.get(field) or []
        if not isinstance(items, list):
            log.warning("extraction field %r is not a list: skipped", field)
            continue
        for item in items[:MAX_CANDIDATES]:
            try:
                target.append(model.model_validate(item))  # type: ignore[arg-type]
            except ValidationError as exc:
                log.warning("malformed %s item skipped: %s", field, exc.errors()[:1])
    return out


def event_expiry(
    event_day: datetime | None, said_at: datetime, ttl: timedelta = DEFAULT_EVENT_TTL
) -> datetime:
    """Return when an event leaves recall: the day after it happens, or `ttl` after it was said."""
    if event_day is None:
        return said_at + ttl
    return datetime.combine(event_day.date() + timedelta(days=1), time(), tzinfo=said_at.tzinfo)


# --- the offline rule-based extractor -------------------------------------------------------

_QUESTION_EN = re.compile(
    r"^(do|does|did|what|where|when|why|how|who|which|can|could|should|would|will|is|are|am)\b",
    re.I,
)
_HYPOTHETICAL = re.compile(
    r"^(if|suppose|imagine|assuming|what if|let's say)\b|如果|假如|要是|假设|万一|倘若", re.I
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


def _clean(value: str) -> str:
    return value.strip(" \t\"'“”‘’。.,，!！").strip()


Rule = tuple[re.Pattern[str], Callable[[re.Match[str]], CandidateMemory | None]]


def _cand(kind: str, subject: str, content: str, value: str | None, conf: float) -> CandidateMemory:
    return CandidateMemory(
        kind=kind,  # type: ignore[arg-type]
        subject=subject,
        content=content,
        value=value,
        confidence=conf,
    )


def _like(verb: str, obj: str, zh: bool) -> CandidateMemory | None:
    obj = _clean(obj)
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
            "fact", "profile.city", f"User lives in {_clean(m[1])}.", _clean(m[1]), 0.9
        ),
    ),
    (
        re.compile(r"^i (?:have |just )?moved to ([A-Z][\w .'-]*)", re.I),
        lambda m: _cand(
            "fact", "profile.city", f"User lives in {_clean(m[1])}.", _clean(m[1]), 0.9
        ),
    ),
    (
        re.compile(r"^i(?:'m| am) from ([A-Z][\w .'-]*)", re.I),
        lambda m: _cand(
            "fact", "profile.hometown", f"User is from {_clean(m[1])}.", _clean(m[1]), 0.9
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
            f"User is allergic to {_clean(m[1])}.",
            _clean(m[1]),
            0.95,
        ),
    ),
    (
        re.compile(r"^i (?:don't|do not|never|can't|cannot) eat (.+)", re.I),
        lambda m: _cand(
            "preference",
            f"diet.avoid.{_slug(m[1])}",
            f"User does not eat {_clean(m[1])}.",
            _clean(m[1]),
            0.9,
        ),
    ),
    (
        re.compile(r"^i work as (?:a |an )?(.+)", re.I),
        lambda m: _cand("fact", "work.role", f"User works as {_clean(m[1])}.", _clean(m[1]), 0.9),
    ),
    (
        re.compile(
            rf"^i(?:'m| am) (?:a |an )((?:[\w-]+ ){{0,3}}(?:{_JOBS_EN}))\b(?: (?:at|for) (.+))?",
            re.I,
        ),
        lambda m: _cand(
            "fact",
            "work.role",
            f"User is a {m[1]}" + (f" at {_clean(m[2])}." if m[2] else "."),
            _clean(m[1]),
            0.9,
        ),
    ),
    (
        re.compile(r"^i work (?:at|for) ([A-Z][\w .&'-]*)", re.I),
        lambda m: _cand(
            "fact", "work.company", f"User works at {_clean(m[1])}.", _clean(m[1]), 0.9
        ),
    ),
    (
        re.compile(r"^(?:our|my) (?:tech )?stack is (.+)", re.I),
        lambda m: _cand(
            "fact", "tech.stack", f"User's tech stack is {_clean(m[1])}.", _clean(m[1]), 0.9
        ),
    ),
    (
        re.compile(
            r"^(?:i|we) (?:mostly |mainly |usually )?"
            r"(?:use|work with|code in|program in|(?:'m|am|'re|are) using) ([A-Z][\w+#. -]*)",
            re.I,
        ),
        lambda m: _cand(
            "fact", f"tech.stack.{_slug(m[1])}", f"User uses {_clean(m[1])}.", _clean(m[1]), 0.85
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
        lambda m: _cand("fact", "profile.city", f"用户住在{_clean(m[1])}。", _clean(m[1]), 0.9),
    ),
    (
        re.compile(r"^我(?:已经)?搬(?:到|去)了?(.+?)(?:了|啦)?$"),
        lambda m: _cand("fact", "profile.city", f"用户住在{_clean(m[1])}。", _clean(m[1]), 0.9),
    ),
    (
        re.compile(r"^我(?:现在|目前)?在(.+?)(?:工作|上班)"),
        lambda m: _cand("fact", "work.place", f"用户在{_clean(m[1])}工作。", _clean(m[1]), 0.9),
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
            f"用户对{_clean(m[1])}过敏。",
            _clean(m[1]),
            0.95,
        ),
    ),
    (
        re.compile(r"^我(?:从来)?(?:不吃|不能吃|忌口)(.+)"),
        lambda m: _cand(
            "preference",
            f"diet.avoid.{_slug(m[1])}",
            f"用户不吃{_clean(m[1])}。",
            _clean(m[1]),
            0.9,
        ),
    ),
    (
        re.compile(rf"^我是(?:一名|一个|个|名)?(.{{0,12}}?(?:{_JOBS_ZH}))"),
        lambda m: _cand("fact", "work.role", f"用户是{_clean(m[1])}。", _clean(m[1]), 0.9),
    ),
    (
        re.compile(r"技术栈是(.+)"),
        lambda m: _cand("fact", "tech.stack", f"用户的技术栈是{_clean(m[1])}。", _clean(m[1]), 0.9),
    ),
    (
        re.compile(
            r"^(?:我|我们)(?:主要|一般|平时|现在)?(?:用|使用|在用)([A-Za-z][A-Za-z0-9+#. ]*)"
        ),
        lambda m: _cand(
            "fact", f"tech.stack.{_slug(m[1])}", f"用户使用{_clean(m[1])}。", _clean(m[1]), 0.85
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
            f"User's {m[1].lower()} is {_clean(m[2])}.",
            _clean(m[2]),
            0.9,
        ),
    ),
    (
        re.compile(r"^我的(手机号码?|电话(?:号码)?|邮箱|密码|银行卡号|身份证号(?:码)?|账号)是(.+)"),
        lambda m: _cand(
            "fact", f"contact.{_slug(m[1])}", f"用户的{m[1]}是{_clean(m[2])}。", _clean(m[2]), 0.9
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
            phrase = _clean(m[1])
            content = f"用户现在不{phrase}了。"
        else:
            if not re.search(r"\bno longer\b|any ?more$", clause, re.I):
                return None  # "I don't eat pork" is a plain preference, not a change
            phrase = _clean(m[1])
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


_LEAD = (
    r"^(?:(?:please|pls|can you|could you|would you|will you|hey|ok|okay|so|and|also|just"
    r"|actually|oh|now|then)[ ,]+)*"
)
_FORGET_EN: list[re.Pattern[str]] = [
    re.compile(
        _LEAD + r"forget(?: about| that| it all| everything(?: you know)? about| all about"
        r"| what i (?:said|told you) about| the fact that)?(?:\s+(?P<q>.*))?$",
        re.I,
    ),
    re.compile(
        _LEAD + r"(?:(?:you )?(?:don't|do not|dont|no need to|needn't|never) (?:need to )?"
        r"|stop |i (?:don't|do not) want you to )"
        r"(?:remember|remembering|keep|keeping|store|storing|save|saving|record|recording|know)"
        r"(?: that| this| it| about)*(?:\s+(?P<q>.*?))?(?: (?:anymore|any more|please))?$",
        re.I,
    ),
    re.compile(
        _LEAD + r"(?:delete|remove|erase|drop|wipe|clear|purge|scrub)(?: out)? "
        r"(?:(?:everything|all|anything|whatever|what)(?: (?:that )?you (?:know|have|remember|"
        r"stored|saved|keep))?(?: about| on| of)? |the (?:fact|memory|note|part) (?:that |about )?"
        r"|any (?:memory|memories|notes?) (?:of|about) )?"
        r"(?P<q>.*?)(?: from (?:your |the )?(?:memory|memories|notes|records|mind))?$",
        re.I,
    ),
    re.compile(
        _LEAD + r"(?:stop mentioning|don't mention|do not mention|never mention|don't bring up"
        r"|do not bring up|stop bringing up|no more talk about|drop the subject of) "
        r"(?P<q>.*?)(?: again| anymore| any more| ever again)?$",
        re.I,
    ),
]
# Whole sentences that take back the latest statement.
_RETRACT_EN = re.compile(
    _LEAD + r"(?:scratch that|strike that|undo that|disregard (?:that|what i (?:just )?said)"
    r"|ignore what i (?:just )?said|never ?mind what i (?:just )?said"
    r"|that's private,? (?:don't|do not) (?:remember|keep|store) it)$",
    re.I,
)
_ZH_LEAD = (
    r"^(?:(?:请问|请|麻烦|麻烦你|你|帮我|可以|能不能|能|那|那就|还是|算了|以后|另外|还有)[，, ]*)*"
)
_FORGET_ZH: list[re.Pattern[str]] = [
    re.compile(
        _ZH_LEAD + r"(?:忘掉|忘记|删掉|删除|删了|去掉|清除|清掉|抹掉|抹去|移除)(?:掉)?"
        r"(?:你记得的|你记住的|你知道的)?(?:关于|有关)?(?:我的)?(?P<q>.*)$"
    ),
    re.compile(_ZH_LEAD + r"忘了(?P<q>(?:我|关于|有关|这|那|刚|它|吧|$).*)$"),
    re.compile(
        _ZH_LEAD + r"把(?P<q>.+?)(?:给|都|全)?(?:删掉|删了|删除|去掉|忘掉|忘了|忘记|清除|清掉|抹掉)"
        r"(?:吧|了|掉|啊|呀)*$"
    ),
    re.compile(
        _ZH_LEAD + r"(?:不要|别|不用|不必|无需|用不着|千万别)(?:再)?"
        r"(?:记住|记着|记下|记录|记|保存|存下|存)(?:下来|住)?(?P<q>.*)$"
    ),
    re.compile(
        _ZH_LEAD + r"(?P<q>.+?)(?:就)?(?:不用|不要|别|不必|无需)(?:再)?"
        r"(?:记住|记着|记下|记录|记)(?:了|啦|吧)*$"
    ),
    re.compile(
        _ZH_LEAD
        + r"(?:不要|别|不许|不准|不用)(?:再)?(?:提起|提到|提|说起|讲)(?P<q>.*?)(?:了|啦|吧)*$"
    ),
]
_RETRACT_ZH = re.compile(
    _ZH_LEAD + r"(?:就)?(?:当我没说(?:过)?|撤回(?:刚才|刚刚|上一句)?(?:的话|那句)?"
    r"|收回(?:刚才|刚刚)?(?:的话|那句)"
    r"|(?:刚才|刚刚|上一句|最后一句|这句|那句)(?:说的|那句|这句|的)?(?:话)?(?:给|就)?"
    r"(?:删掉|删了|删除|去掉|忘掉|忘了|撤回|不算))"
    r"(?:吧|了|啊)*$"
)


def forget_requests(sentence: str) -> list[ForgetRequest]:
    """Return the forget request a sentence makes ("forget …", "don't remember …", "把…删掉").

    Checked before anything else: "请忘记我住在哪里" asks to forget, even though it has a
    question word in it. "That" / "这个" means what the user just said.
    """
    s = sentence.strip().rstrip("。.!！?？~～")
    if _ASKS_DONE.search(s):
        return []  # "你忘了吗？" asks whether something was forgotten
    # "…删掉吗？", "…, please?": how it is asked does not change what is asked.
    s = _POLITE_END.sub("", s) or s
    # "What I just said" is asked as "that" / "这个", the words a model is told to use.
    that = "这个" if has_cjk(s) else "that"
    if _RETRACT_EN.match(s) or _RETRACT_ZH.match(s):
        return [ForgetRequest(query=that)]
    for pat in _FORGET_ZH if has_cjk(s) else _FORGET_EN:
        m = pat.match(s)
        if m is None:
            continue
        # "Delete the file" is a task, not a memory: deleting needs a word about memory.
        if pat is _FORGET_EN[2] and not _ABOUT_MEMORY.search(s):
            continue
        query = _EMAIL_ADDRESS.sub(lambda e: e[1] or e[2], _clean(m.group("q") or ""))
        return [ForgetRequest(query=query or that)]
    return []


_ASKS_DONE = re.compile(r"(?:忘掉|忘记|忘|删掉|删除|删)了(?:吗|么|没有?)$")
_POLITE_END = re.compile(
    r"(?i)(?:[,，\s]+(?:please|thanks|thank you|ok|okay)"
    r"|[，,]?(?:好吗|好不好|可以吗|行吗|吗|呢|谢谢))+$"
)
# "my email address" names the email, not where the user lives (the `address` alias).
_EMAIL_ADDRESS = re.compile(r"(?i)\b(e-?mail|mail)\s+address\b|(邮箱|电子邮件|邮件)地址")


_ABOUT_MEMORY = re.compile(
    r"(?i)\b(?:my|mine|about|you know|you have|you remember|memory|memories|notes|records"
    r"|that|this|it|everything)\b"
)


_PLAN = re.compile(
    r"^(?:i|we)\b|^(?:i'm|i am|we're|we are|my|our)\b|^(?:我|我们|咱们)|(?:我|我们|咱们)", re.I
)
_CJK = re.compile(r"[\u3400-\u9fff]")


def has_cjk(text: str) -> bool:
    """Return True if the text contains Chinese characters."""
    return bool(_CJK.search(text))


def _sentences(text: str) -> list[str]:
    # A full stop inside a word ("bob@example.com", "3.11") does not end a sentence.
    parts = re.split(r"(?<=[!?。！？；;\n])\s*|(?<=\.)(?:\s+|$)", text)
    return [p.strip() for p in parts if p.strip()]


def _clauses(sentence: str) -> list[str]:
    parts = re.split(
        r"[，,]\s*|\s+(?:and|but|also)\s+(?=(?:i|i'm|we|we're|my)\b)", sentence, flags=re.I
    )
    return [p.strip(" .!。！") for p in parts if p and p.strip(" .!。！")]


def asks_to_forget(text: str) -> bool:
    """Return True if a message asks to forget something ("forget that …", "别记这个")."""
    return any(forget_requests(s) for s in _sentences(text))


def is_question(sentence: str) -> bool:
    """Return True if a sentence asks rather than states."""
    s = sentence.strip()
    return (
        s.endswith(("?", "？"))
        or bool(_QUESTION_EN.match(s))
        or bool(re.search(r"[吗呢么][。.!！]?$", s))
        or bool(re.search(r"什么|哪里|哪儿|几点|为什么|怎么", s))
    )


def _event(clause: str, now: datetime) -> CandidateMemory | None:
    mention = find_date(clause, now)
    if mention is None or not _PLAN.search(clause):
        return None
    if mention.day < now.date():
        return None  # a past date describes history, not a plan to remember for later
    iso = mention.day.isoformat()
    zh = has_cjk(clause)
    content = f"{_clean(clause)}（{iso}）" if zh else f"{_clean(clause)} ({iso})."
    topic = _slug(clause.replace(mention.text, ""))[:24]
    return CandidateMemory(
        kind="event",
        subject=f"event.{topic}",
        content=content,
        value=iso,
        confidence=0.9,
        event_date=iso,
    )


def extract_rules(text: str, now: datetime) -> Extraction:
    """Extract explicit first-person statements from one user message.

    Questions, hypotheticals, tentative remarks and other people's preferences yield
    nothing: each rule is anchored on the speaker ("I ...", "我...").

    Args:
        text: The user's message.
        now: When it was said; relative dates resolve against it.

    """
    out = Extraction()
    for sentence in _sentences(text):
        asked = forget_requests(sentence)
        if asked:
            out.forget.extend(asked)
            continue
        if is_question(sentence) or _HYPOTHETICAL.search(sentence) or _TENTATIVE.search(sentence):
            continue
        for clause in _clauses(sentence):
            rules = _ZH_RULES if has_cjk(clause) else _EN_RULES
            cand = None
            if find_date(clause, now) is not None:
                cand = _event(clause, now)
            if cand is None:
                cand = _negation(clause)
            if cand is None:
                for pat, build in _CONTACT + rules:
                    m = pat.search(clause)
                    if m:
                        cand = build(m)
                        break
            if cand is not None and isinstance(cand.value, str) and not normalize_text(cand.value):
                cand = None  # the pattern matched, but the value it names is empty
            if cand is not None and len(out.memories) < MAX_CANDIDATES:
                out.memories.append(cand)
    return out

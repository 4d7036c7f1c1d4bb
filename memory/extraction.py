"""What a turn yields for memory: the extraction schema, and what a message asks.

Real models fill `Extraction` through structured output and `coerce_extraction` keeps
what validates; the offline model fills it with rules (`graphs.offline_rules`). Whatever
the model, the graph needs the same reading of a message: whether it is
a question, whether it asks to forget (`forget_requests`), where its sentences end.
"""

from __future__ import annotations

import json
import logging
import re
from datetime import datetime, time, timedelta
from typing import Any

from pydantic import BaseModel, Field, ValidationError, field_validator

from memory.recall.aliases import relation_in
from memory.store.records import Kind, clean_text, kinds_help
from memory.text.asking import (
    POLITE_END,
    asks_a_favour,
    asks_by_form,
    split_sentences,
    without_tag,
)
from memory.text.asking import is_filler as _is_filler
from memory.text.language import HAN, HAN_SPACE, has_han, language_of
from memory.text.phrases import TOLD, phrase_of, topic_clause, topic_words
from memory.text.statements import parts_of, split_text
from memory.understanding import FAMILY_PREFIX, Reading, read_utterance, read_utterances
from memory.understanding.model import load_model

log = logging.getLogger(__name__)

MAX_CANDIDATES = 20
MAX_CONTENT_CHARS = 500
MAX_SUBJECT_CHARS = 64
MAX_SUBJECT_PARTS = 6
MAX_SUBJECT_PART_CHARS = 40
"""A subject is a short key: `profile.city`, `habit.<a squashed phrase of up to 40>`."""
DEFAULT_EVENT_TTL = timedelta(days=7)


class CandidateMemory(BaseModel):
    """One thing worth remembering about the user, as the model states it."""

    kind: Kind = Field(description=kinds_help() + ".")
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
                valid = model.model_validate(item)
            except ValidationError as exc:
                log.warning("malformed %s item skipped: %s", field, exc.errors()[:1])
                continue
            junk = junk_reason(valid) if isinstance(valid, CandidateMemory) else None
            if junk:
                log.warning("extracted memory refused (%s): %.120r", junk, item)
                continue
            target.append(valid)  # type: ignore[arg-type]
    return out


_SLUG = re.compile(r"^[\w-]+(?:\.[\w-]+)*$")
# What a weak model writes when it copies the schema instead of filling it: a template
# slot (`{{}}`, `{content}`, `<content>`), a type name, an ellipsis, or no word at all.
_SLOT = re.compile(r"\{+[^{}]{0,40}\}+|<[\w ]{1,40}>")
_PLACEHOLDER = re.compile(
    r"^\W*(?:string|str|text|content|none|null|nil|n/?a|todo|tbd|xxx|example|sentence"
    r"|value|subject)?\W*$",
    re.I,
)


def junk_reason(candidate: CandidateMemory) -> str | None:
    """Return why a well-formed candidate is junk that must not be stored, or None.

    The schema admits any strings; a weak model (or one caught in a repeat loop) fills it
    with sentences as subjects (`munich_is_a_city_with_many_interesting_things,...`) and
    placeholders as content (`{{}}`). Such items are refused here, before they reach
    the store, however confident the model says it is.
    """
    subject = candidate.subject
    parts = subject.split(".")
    if (
        len(subject) > MAX_SUBJECT_CHARS
        or len(parts) > MAX_SUBJECT_PARTS
        or any(len(p) > MAX_SUBJECT_PART_CHARS for p in parts)
        or not _SLUG.match(subject)
    ):
        return f"subject {subject[:MAX_SUBJECT_CHARS]!r} is not a short dotted key"
    if subject.startswith("episode.") and not candidate.updates:
        # A raw statement listed in the prompt lends its id to an update, never its subject.
        return f"subject {subject!r} is a raw statement's, not a memory's"
    words = _SLOT.sub(" ", candidate.content)
    if _PLACEHOLDER.match(words) or not any(c.isalpha() for c in words):
        return f"content {candidate.content[:40]!r} is a placeholder, not a sentence"
    return None


def salvage_json(text: str) -> Any:
    """Return the JSON object in a model's reply, or what survives of one that was cut.

    A reply may wrap the object in prose or a code fence, or end mid-item where the length
    limit cut it: then every item completed before the cut is kept (the object is closed
    after the last complete one) and the cut one is dropped. None if no object is found.
    """
    start = text.find("{")
    if start < 0:
        return None
    body = text[start:]
    try:
        return json.JSONDecoder().raw_decode(body)[0]
    except json.JSONDecodeError:
        pass
    end = len(body)
    for _ in range(MAX_CANDIDATES * 4):  # each candidate closes a few braces at most
        end = body.rfind("}", 0, end)
        if end < 0:
            return None
        closed = _closed(body[: end + 1])
        if closed is not None:
            try:
                return json.loads(closed)
            except json.JSONDecodeError:
                pass
    return None


def _closed(prefix: str) -> str | None:
    """Return a JSON prefix with its open arrays and objects closed (None: cut in a string)."""
    stack: list[str] = []
    in_string = escaped = False
    for ch in prefix:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            stack.append("]" if ch == "[" else "}")
        elif ch in "]}" and stack:
            stack.pop()
    if in_string:
        return None
    return prefix + "".join(reversed(stack))


def event_expiry(
    event_day: datetime | None, said_at: datetime, ttl: timedelta = DEFAULT_EVENT_TTL
) -> datetime | None:
    """Return when an event leaves recall: the day after it happens, or `ttl` after it was said.

    An event that had already happened when it was said ("大前天我去了超市") is history and
    never leaves (None): expiring it the day after would drop it as it is written.
    """
    if event_day is None:
        return said_at + ttl
    if event_day.date() < said_at.date():
        return None
    return datetime.combine(event_day.date() + timedelta(days=1), time(), tzinfo=said_at.tzinfo)


# --- what a message asks ------------------------------------------------------------------
# What a sentence *is* (a statement, a forget request, an update) is the understanding
# model's reading (`memory.understanding`). Whether it asks stays a matter of its form (a
# question mark, an inverted auxiliary, 吗, A-not-A): the model read questions without a
# mark and statements with a question word in them worse than this grammar (see
# `benchmarks/understanding.py`), so the grammar decides and the model only rules out a
# forget request ("请问你能忘记我住在哪里吗？" asks to forget, not a question).


def has_cjk(text: str) -> bool:
    """Return True if the text contains Chinese characters (`memory.text.language.has_han`)."""
    return has_han(text)


def trim_phrase(value: str) -> str:
    """Return a phrase taken out of a sentence without its spaces, quotes and end marks."""
    return value.strip(" \t\"'“”‘’。.,，!！").strip()


def is_question(text: str) -> bool:
    """Return True if a sentence, or a whole message, asks rather than states.

    A message asks when at least one sentence asks and every other one is a greeting or a
    filler ("Hi! Where do I live?"); one that also states something ("我对花生过敏。你知道我
    在哪工作吗？") states, so the graph keeps it as a raw turn. Question words used as
    pronouns ("我什么都吃", "谁都知道我爱喝茶", "What I want is a dog") or in an embedded
    clause ("我不知道为什么喜欢猫") do not make a question, nor does a forget request.
    """
    sentences = [p for p in split_sentences(text) if p.strip(" \t\"'“”‘’。.,，!！?？")]
    asking = [asks_by_form(p) for p in sentences]
    if not any(asking):
        return False
    asking = [a and not forget_requests(p) for a, p in zip(asking, sentences, strict=True)]
    if not any(asking):
        return False
    return all(a or _is_filler(p) for a, p in zip(asking, sentences, strict=True))


# How a request is opened, asked or softened ("would you mind", "is it okay to", "let's").
_LEAD = (
    r"^(?:(?:please|pls|kindly|sorry|oops|wait|hmm|can you|could you|would you|will you|hey|ok"
    r"|okay|so|and"
    r"|also|just|actually|oh|now|then|would you mind|do you mind|mind|could you possibly"
    r"|can we|could we"
    r"|let's|maybe|why don't (?:you|we)|why not|how about (?:you|we)|i'd like you to"
    r"|i want you to"
    r"|(?:is it|would it be) (?:ok|okay|alright|possible|fine) (?:if you|for you to|to))"
    r"[ ,]+)*"
)
_FORGET_EN: list[re.Pattern[str]] = [
    re.compile(
        _LEAD + r"forget(?:ting)?(?: about| that| it all| everything(?: you know)? about| all about"
        r"| what i (?:said|told you) about| the fact that)?(?:\s+(?P<q>.*))?$",
        re.I,
    ),
    re.compile(
        _LEAD + r"(?:(?:you )?(?:don't|do not|dont|no need to|needn't|never|not) (?:need to )?"
        r"|stop |i (?:don't|do not) want you to )"
        r"(?:remember|remembering|keep|keeping|store|storing|save|saving|record|recording|know)"
        r"(?: that| this| it| about)*(?:\s+(?P<q>.*?))?(?: (?:anymore|any more|please))?$",
        re.I,
    ),
    re.compile(
        _LEAD + r"(?:delet|remov|eras|dropp?|wip|clear|purg|scrubb?)(?:e|ing)?(?: out)? "
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
    re.compile(
        _LEAD + r"(?:keep|leave|take|get) (?P<q>.+?) (?:out of|off|from) (?:your |the )?"
        r"(?:memory|memories|notes|records|files?|mind)(?: from now on)?$",
        re.I,
    ),
]
# Where it is kept, said before a reason ("… from your memory, I have stopped"): no topic.
_FROM_NOTES = re.compile(r"(?i)\s+from (?:your |the )?(?:memory|memories|notes|records|mind)$")
# Whole sentences that take back the latest statement.
_RETRACT_EN = re.compile(
    _LEAD + r"(?:(?:scratch|strike) that(?: last (?:one|bit|thing|part))?|undo that"
    r"|disregard (?:that|what i (?:just )?said)"
    r"|ignore what i (?:just )?said|never ?mind what i (?:just )?said"
    r"|that's private,? (?:don't|do not) (?:remember|keep|store) it)$",
    re.I,
)
# "forget what I just said, …": what it names is the statement before it (a closed class).
_JUST_SAID_EN = re.compile(
    r"(?i)^(?:what|the (?:thing|bit|last thing|last bit)(?: that)?) i (?:just |literally just )?"
    r"(?:said|told you|mentioned|wrote)(?: (?:just now|there|a sec ago|a second ago))?$"
)
_ZH_LEAD = (
    r"^(?:(?:请问|请|麻烦|麻烦你|你|帮我|可以|能不能|能|那|那就|还是|算了|以后|另外|还有"
    r"|哎呀|哎|唉|诶|欸|嗯|噢|哦|呃|对了)[，, ]*)*"
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
        _ZH_LEAD + r"(?P<q>.+?)[，,]?(?:你)?(?:也|都|就)?(?:不用|不要|别|不必|无需)(?:再)?"
        r"(?:记住|记着|记下|记录|记)(?:了|啦|吧)*$"
    ),
    re.compile(
        _ZH_LEAD
        + r"(?:不要|别|不许|不准|不用)(?:再)?(?:提起|提到|提|说起|讲)(?P<q>.*?)(?:了|啦|吧)*$"
    ),
]
# What was just said, named before it is taken back ("刚那条当我没说"): a closed class.
_JUST_SAID_ZH = r"(?:(?:刚才|刚刚|刚|上面)?(?:那条|这条|那句|这句|说的)(?:话)?)?"
_RETRACT_ZH = re.compile(
    _ZH_LEAD + _JUST_SAID_ZH + r"(?:就)?(?:当我没说(?:过)?|撤回(?:刚才|刚刚|上一句)?(?:的话|那句)?"
    r"|收回(?:刚才|刚刚)?(?:的话|那句)"
    r"|(?:刚才|刚刚|上一句|最后一句|这句|那句)(?:说的|那句|这句|的)?(?:话)?(?:给|就)?"
    r"(?:删掉|删了|删除|去掉|忘掉|忘了|撤回|不算))"
    r"(?:吧|了|啊|哈|呀|啦|哦)*$"
)


def forget_span(sentence: str) -> ForgetRequest | None:
    """Return what a forget request names, pulled out by its wording ("forget …", "把…删掉").

    Only the span: whether the sentence asks to forget at all is `forget_requests`' call.
    "That" / "这个" means what the user just said.
    """
    s = sentence.strip().rstrip("。.!！?？~～")
    if _ASKS_DONE.search(s):
        return None  # "你忘了吗？" asks whether something was forgotten
    # "…删掉吗？", "…, please?": how it is asked does not change what is asked.
    s = POLITE_END.sub("", s) or s
    # "What I just said" is asked as "that" / "这个", the words a model is told to use.
    that = "这个" if has_cjk(s) else "that"
    if _RETRACT_EN.match(s) or _RETRACT_ZH.match(s):
        return ForgetRequest(query=that)
    topic_first = _TOPIC_FIRST_ZH if has_cjk(s) else _TOPIC_FIRST_EN
    for pat in [*(_FORGET_ZH if has_cjk(s) else _FORGET_EN), topic_first]:
        m = pat.match(s)
        if m is None:
            continue
        # "Delete the file" is a task, not a memory: deleting needs a word about memory.
        if pat is _FORGET_EN[2] and not _ABOUT_MEMORY.search(s):
            continue
        # "刚才那句不算，我女儿还没同意，你先别记着": what it names is what was just said.
        first = _REASON_BREAK.split(m["q"] or "", maxsplit=1)[0]
        if _RETRACT_EN.match(first) or _RETRACT_ZH.match(first) or _JUST_SAID_EN.match(first):
            return ForgetRequest(query=that)
        topic = _FROM_NOTES.sub("", TOLD.sub("", trim_phrase(topic_clause(m["q"] or ""))))
        query = _EMAIL_ADDRESS.sub(lambda e: e[1] or e[2], topic)
        return ForgetRequest(query=query or that)
    # A reason may follow a request said topic first ("…也删掉呗，最近不去了"): up to a comma.
    parts = _REASON_BREAK.split(s)
    for n in range(len(parts) - 2, 0, -2):
        head = parts[0] + "".join(parts[1:n])
        if _RETRACT_EN.match(head) or _RETRACT_ZH.match(head):
            return ForgetRequest(query=that)  # "actually scratch that, it's not sorted yet"
        if (m := topic_first.match(head)) is not None:
            # A topic that takes back what was just said is "that" ("刚那条当我没说哈，别记了").
            said_that = _RETRACT_EN.match(m.group("q")) or _RETRACT_ZH.match(m.group("q"))
            return ForgetRequest(query=that if said_that else topic_words(m.group("q")) or that)
    return None


# The topic first, then the request with a pronoun for it ("the quiz thing — please
# forget that too", "my old job, delete it").
_TOPIC_FIRST_EN = re.compile(
    r"^(?:(?:and|also|oh|plus|ok|okay|so)\s+)*(?P<q>.+?)\s*[,—–:;-]+\s*"
    r"(?:(?:please|pls|can you|could you|just|and|also)\s+)*"
    r"(?:forget|delete|drop|remove|erase|wipe|scratch|clear)\s+"
    r"(?:that|it|this|those|them)(?:\s+(?:out|off|away))?"
    r"(?:\s+(?:too|as well|also|please|from (?:your )?memory))*$",
    re.I,
)
# The topic first, with no 把 (`_FORGET_ZH` reads those), asked ("我周末打球那个也删掉呗");
# "照片都删掉了" says what was done, so it must end as a request does.
_TOPIC_FIRST_ZH = re.compile(
    r"^(?:(?:请|麻烦你?|另外|还有|然后|对了|哦|那就|还是)[，, ]*)*(?P<q>[^把]+?)[，,]?"
    r"(?:你)?(?:帮我)?(?:也|都|就|一起|一并)?(?:给我)?"
    r"(?:(?:删掉|删了|删除|去掉|忘掉|忘了|清掉|抹掉)(?:吧|呗|啊|呀|哈)+"
    r"|(?:别|不用|不要|不必)(?:再)?(?:记住|记着|记下|记|存着|存|留着|保存)(?:了|啦|吧|呗)*)$"
)
_REASON_BREAK = re.compile(rf"(\s*[，,]\s*|{HAN_SPACE})")
_LAST_CLAUSE = re.compile(rf"\s*(?:[,，;；]|\s[-–—]\s|[—–])\s*|{HAN_SPACE}")


_ONE_WORD = re.compile(rf"[{HAN}]{{1,4}}|[A-Za-z][A-Za-z'-]*")
_ANYTHING = frozenset(
    ("东西", "什么", "它", "它们", "这些", "那些", "it", "them", "stuff", "things", "anything")
)
"""Words that stand for anything (a closed class): a span of one of them names nothing."""


def names_something(found: ForgetRequest | None, reading: Reading) -> bool:
    """Return True if a request's wording (`forget_span`) names what it would forget.

    "That" / "这个", everything (the model's target), or words the model reads as about a
    subject ("我的公司", "how old I am") or as a statement of the user's ("I want to surprise
    Lena with a trip to Kyoto"): "别提了，真倒霉" (don't bring it up, what bad luck),
    "别记仇啊" and "你能删除东西吗？" are worded the same and name nothing, and the wording is
    evidence of a request only where it names something (`forget_requests`). One word is a
    topic of its own ("不要再提熊猫了").
    """
    if found is None:
        return False
    if found.query in ("that", "这个") or reading.target == "all":
        return True
    words = found.query.strip(" ，。,.!！?？~～").rstrip("了吧啊")
    # One word is a topic ("熊猫", "chess") unless it is a word for anything at all.
    if _ONE_WORD.fullmatch(words) and words.casefold() not in _ANYTHING:
        return True
    said = read_utterance(words)
    return said.family != "none" or said.intent in ("remember", "update", "plan")


def forget_requests(sentence: str) -> list[ForgetRequest]:
    """Return the forget request a sentence makes, if the understanding model reads one.

    The model decides whether the sentence asks to forget ("I never forget birthdays" does
    not; "Oops, take that back." does) and what it points at: "that" (the previous
    statement), a subject family, or everything, whether the request is asked ("Do you
    mind dropping the notes on my cousin?") or not; a question about memory ("Have I told
    you about my job?") is the model's to tell apart. Its words are the wording's where a
    pattern knows it (`forget_span`), else the sentence's less its request words.
    """
    reading = read_utterance(sentence)
    found = forget_span(sentence)
    # An interjection first ("Oh god, forget what I just said, …", "哎呀，…"): the request
    # is what follows it.
    opening, *rest = _REASON_BREAK.split(sentence.strip(), maxsplit=1)
    if found is None and rest and _is_filler(opening) and forget_span(rest[-1]) is not None:
        return forget_requests(rest[-1])
    # Said first, then why ("wait, forget that, Jo can't come"): both heads read the request.
    head = _REASON_BREAK.split(sentence.strip(), maxsplit=1)[0]
    if found is None and reading.intent != "forget" and head != sentence.strip():
        first = read_utterance(head)
        if first.intent == "forget" and min(first.forget_head, reading.forget_head) >= 0.5:
            return forget_requests(head)
    # Why first, then the request, naming what ("got a new phone, delete my old number"): the
    # forget head reads the whole and the request (0.5, as for "that"), which is read alone.
    # A request that names nothing ("我住哪儿这个信息，麻烦帮我忘掉") is about what came first.
    tail = _LAST_CLAUSE.split(sentence.strip())[-1]
    span = forget_span(tail) if found is None and tail != sentence.strip() else None
    named = span is not None and span.query not in ("that", "这个")
    if named and min(read_utterance(tail).forget_head, reading.forget_head) >= 0.5:
        return forget_requests(tail)
    # Worded, the intent head need only not rule it out (floor chosen out of fold); unworded,
    # both heads read forget likelier than not ("帮我把这段话里的错别字删掉": 0.91 and 0.16).
    worded = names_something(found, reading)
    floor = load_model().span_floor(language_of(sentence))
    if reading.intent != "forget" and (not worded or reading.forget < floor):
        return []
    if not worded and reading.forget_head < 0.5:
        return []
    # Asked as a favour ("Would you mind dropping …?", "能不能别记…？", "…, ok?") it is one;
    # asked whether it was done ("Have you deleted my address") it asks (`memory.text.asking`).
    if found is None and asks_by_form(without_tag(sentence)) and not asks_a_favour(sentence):
        return []
    that = "这个" if has_cjk(sentence) else "that"
    if reading.target == "that":
        # Read as taking back the last statement, "remove the last line from that card
        # verse" is about a text: unworded, the forget head must say so too (`_says_that`).
        said_that = found is not None and found.query == that
        return [ForgetRequest(query=that)] if said_that or _says_that(sentence) else []
    if found is None:
        found = ForgetRequest(query=_topic_words(sentence) or that)
    query = _ZH_ADDRESSEE.sub("", found.query) or found.query
    subject = found.subject
    if subject is None and reading.target == "family" and reading.family in _ONE_VALUE:
        subject = FAMILY_PREFIX[reading.family]
    elif subject is None and reading.target == "family" and reading.family == "family":
        # "my husband" is all that is filed about him; a relative named in the reason only
        # ("…the allotment. my brother wants it kept quiet") is not what is asked.
        who = relation_in(query)
        subject = f"{FAMILY_PREFIX['family']}.{who}" if who else None
    return [ForgetRequest(query=query, subject=subject)]


def _says_that(sentence: str) -> bool:
    """Return True if a part of a sentence read as "that" says so itself (or its one part).

    "That" takes back a whole message (`memory.lifecycle.forget_targets`): in "actually
    scratch that last thing, don't keep it" the first part says it; in "don't worry about
    formatting, just give me the list", read whole as "that", no part does.
    """
    parts = parts_of(sentence)[1:] or [sentence]
    # Forget is the likelier reading (0.5, by hand, not tuned) of both heads: the forget head
    # has read requests about a text ("drop the last bullet point from that list").
    readings = read_utterances(parts)
    return any(r.target == "that" and min(r.forget, r.forget_head) >= 0.5 for r in readings)


def _topic_words(sentence: str) -> str:
    """Return the words a forget request names its topic by, without its request words.

    Of a sentence of several clauses only those the model reads as about a subject count:
    "我吃药那个事儿你别存着了，挺隐私的" names 吃药, not why it is private.
    """
    clauses = split_text(sentence)
    if len(clauses) > 1:
        readings = read_utterances(clauses)
        # The clause that asks names what to forget when it names anything: "bin what i said
        # about the allotment. my brother wants it kept quiet" is about the allotment, though
        # the reason speaks of a relative.
        asking = max(range(len(clauses)), key=lambda i: readings[i].forget)
        own = topic_words(TOLD.sub("", clauses[asking]))
        if readings[asking].forget >= 0.5 and phrase_of(own, request=True):
            return own
        about = [c for c, r in zip(clauses, readings, strict=True) if r.family != "none"]
        clauses = about or clauses
    return topic_words(" ".join(clauses))


# Families with one value per user: the family alone says which record ("stop storing my
# location"). Other families hold many (a sister and a brother), so only words pick them.
_ONE_VALUE = frozenset({"home", "name", "age"})
_ZH_ADDRESSEE = re.compile(r"(?:你|您)(?:就|都)?$")


# "你忘了吗？", "你删了我的地址吗": asks whether it was done (an object may come between).
_ASKS_DONE = re.compile(r"(?:忘掉|忘记|忘|删掉|删除|删)了[^吧，,。]{0,12}?(?:吗|么|没有?)$")
# "my email address" names the email, not where the user lives (the `address` alias).
_EMAIL_ADDRESS = re.compile(r"(?i)\b(e-?mail|mail)\s+address\b|(邮箱|电子邮件|邮件)地址")


_ABOUT_MEMORY = re.compile(
    r"(?i)\b(?:my|mine|about|you know|you have|you remember|memory|memories|notes|records"
    r"|that|this|it|everything)\b"
)


def asks_to_forget(text: str) -> bool:
    """Return True if a message asks to forget something ("forget that …", "别记这个")."""
    sentences = split_sentences(text)
    if sentences:
        read_utterances(sentences)  # one encoder batch for the message
    return any(forget_requests(s) for s in sentences)

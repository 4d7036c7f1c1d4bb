"""What a turn yields for memory: the extraction schema.

Real models fill `Extraction` through structured output and `coerce_extraction` keeps
what validates; the offline model fills it with rules (`graphs.offline_rules`). Whatever
the model, the graph reads a message the same way: whether it is a question or asks to
forget is `memory.requests`'.
"""

from __future__ import annotations

import json
import logging
import re
from datetime import datetime, time, timedelta
from typing import Any

from pydantic import BaseModel, Field, ValidationError, field_validator

from memory.store.records import Kind, clean_text, kinds_help
from memory.text.language import has_han

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

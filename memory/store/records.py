"""The memory record, its identity rules and the namespace helpers.

The helpers below are the only place a store namespace is built.
"""

from __future__ import annotations

import functools
import hashlib
import re
import unicodedata
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from types import MappingProxyType
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    Field,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
)

from memory.privacy.screen import find_sensitive


@dataclass(frozen=True)
class KindSpec:
    """How the engine treats one kind of memory: its row in `KINDS`.

    Attributes:
        description: What a memory of this kind holds; the extraction schema, the CLI and
            the MCP `remember` tool show it.
        half_life: The age at which recency's share of its ranking weight halves. None: it
            does not decay (a fact is superseded when it changes, not faded).
        pins: Its dated records (`valid_from`) are recalled around their date whatever the
            query, from the day before to a few days ahead.
        stated: The user states it: the `kind` line of both extract prompts
            (`prompts/extract.<lang>.md`) offers it to the model, and `memories add` and the
            MCP `remember` tool accept it. False for what the agent writes itself.

    """

    description: str
    half_life: timedelta | None
    pins: bool = False
    stated: bool = True


KINDS: Mapping[str, KindSpec] = MappingProxyType(
    {
        "fact": KindSpec("a stable truth about the user", half_life=None),
        "preference": KindSpec("likes, dislikes, diet, style", half_life=timedelta(days=365)),
        "event": KindSpec(
            "something time-bound (a plan, a deadline, a trip)",
            half_life=timedelta(days=30),
            pins=True,
        ),
        "episode": KindSpec(
            "a thread summary or a raw user turn, recalled across threads (written by the "
            "agent, not extracted)",
            half_life=timedelta(days=180),
            stated=False,
        ),
    }
)
"""Every kind of memory, the one table. Adding a kind is an entry here plus its words on the
`kind` line of `prompts/extract.en.md` and `prompts/extract.zh.md` (if the user states it);
tests/unit/test_kinds.py fails if a place is missed."""
STATED_KINDS: tuple[str, ...] = tuple(k for k, spec in KINDS.items() if spec.stated)
"""The kinds a user states: extracted from what they say, or added by hand."""
HALF_LIFE_DAYS: Mapping[str, float | None] = MappingProxyType(
    {k: spec.half_life / timedelta(days=1) if spec.half_life else None for k, spec in KINDS.items()}
)
"""Recency half-life per kind, in days (None: no decay); the default of every decay policy."""


def kinds_help(kinds: Iterable[str] = KINDS) -> str:
    """Return "kind: description; …" for `kinds`, e.g. for a schema field or a `--help`."""
    return "; ".join(f"{k}: {KINDS[k].description}" for k in kinds)


def _one_of(kinds: tuple[str, ...]) -> Callable[[str], str]:
    def check(value: str) -> str:
        if value not in kinds:
            raise ValueError(f"unknown kind {value!r}: use one of {', '.join(kinds)}")
        return value

    return check


Kind = Annotated[
    str,
    AfterValidator(_one_of(tuple(KINDS))),
    WithJsonSchema({"type": "string", "enum": list(KINDS)}),
]
"""A memory kind, one of `KINDS` (pydantic checks it; its JSON schema lists them)."""
StatedKind = Annotated[
    str,
    AfterValidator(_one_of(STATED_KINDS)),
    WithJsonSchema({"type": "string", "enum": list(STATED_KINDS)}),
]
"""A kind the user states, one of `STATED_KINDS` (what `memories add` and MCP accept)."""
Status = Literal["active", "candidate", "superseded", "forgotten", "archived", "expired"]
"""`active` is recalled; `candidate` waits for confirmation; `archived` went cold; `expired`
passed its `expires_at`; `superseded` and `forgotten` stay only as history."""
NAMESPACE_ROOT = "memories"
THREADS_ROOT = "threads"
OWNERS_ROOT = "thread_owners"
REPAIR_ROOT = "index_repair"
CHANGES_ROOT = "memory_changes"
MAX_USER_ID_CHARS = 128

# Letters and digits of any script, plus a few separators. `.` is the store's namespace
# separator and `/` a path separator, so both are refused rather than silently rewritten.
_USER_ID_RE = re.compile(r"^[\w\-@+:]+$")


class InvalidUserId(ValueError):
    """A user id that cannot name a memory namespace."""


_SHIFT: ContextVar[timedelta] = ContextVar("memory_clock_shift", default=timedelta(0))


def utcnow() -> datetime:
    """Return the current time, timezone-aware, in UTC, as `as_of` sets it."""
    return datetime.now(UTC) + _SHIFT.get()


@contextmanager
def as_of(when: datetime) -> Iterator[None]:
    """Run what follows as if the clock read `when` on entry, and let it run on from there.

    A turn said at a time of its own (a conversation imported with its real times, a
    benchmark played on a fixed day) resolves its dates against that time; what it writes
    and reads must be judged at the same time, or an event said in June for June is already
    over when a December clock writes it. The clock keeps running from `when`, so records
    written one after the other keep their order.
    """
    aware = when if when.tzinfo else when.replace(tzinfo=UTC)
    token = _SHIFT.set(aware - datetime.now(UTC))
    try:
        yield
    finally:
        _SHIFT.reset(token)


class UserId(str):
    """A user id that `check_user_id` accepted.

    Validated once at an entry point, then carried as this type: nothing further in
    checks it again.
    """

    __slots__ = ()


def check_user_id(user_id: object) -> UserId:
    """Validate a user id and return it normalized.

    Args:
        user_id: The id as it came from the runtime context, a CLI flag or an API call.
            A `UserId` is returned as it is: it was checked when it was made.

    Returns:
        The id in Unicode NFC form (composed characters: `e` + U+0301 becomes `é`).

    Raises:
        InvalidUserId: If the id is empty, too long, has a space or an invisible character
            anywhere (Unicode categories Z* and C*: spaces, tabs, no-break and zero-width
            spaces, controls), or has characters outside letters, digits, `_`, `-`, `@`,
            `+` and `:`.

    """
    if isinstance(user_id, UserId):
        return user_id
    return _validate_user_id(user_id)


def _validate_user_id(user_id: object) -> UserId:
    """Do the checks `check_user_id` documents; the one place a `UserId` is made."""
    if not isinstance(user_id, str) or not user_id.strip():
        raise InvalidUserId(
            "user_id is empty: pass the user through the run context, e.g. "
            "context={'user_id': 'alice'}"
        )
    norm = unicodedata.normalize("NFC", user_id)
    if len(norm) > MAX_USER_ID_CHARS:
        raise InvalidUserId(f"user_id is {len(norm)} characters; the limit is {MAX_USER_ID_CHARS}")
    # fullmatch: `$` alone would let a trailing newline through.
    if _USER_ID_RE.fullmatch(norm):
        return UserId(norm)
    # Never trimmed: "alice " quietly becoming "alice" would hand one caller another's
    # memories, and an invisible character makes two ids that look the same.
    hidden = dict.fromkeys(c for c in norm if unicodedata.category(c)[0] in "ZC")
    if hidden:
        kinds = {"Cc": "CONTROL", "Cs": "SURROGATE", "Co": "PRIVATE USE", "Cn": "UNASSIGNED"}
        names = ", ".join(
            f"{c!r} (U+{ord(c):04X} "
            f"{unicodedata.name(c, '') or kinds.get(unicodedata.category(c), 'UNNAMED')})"
            for c in hidden
        )
        raise InvalidUserId(
            f"user_id {user_id!r} contains {names}: spaces and invisible characters are "
            "refused, not trimmed; remove them"
        )
    bad = sorted({c for c in norm if not _USER_ID_RE.match(c)})
    raise InvalidUserId(
        f"user_id {user_id!r} contains {''.join(bad)!r}: use letters, digits "
        "(any script), '_', '-', '@', '+' or ':'"
    )


# The namespace helpers: every store namespace is built here, for reads and writes alike.


def subject_under(subject: str, prefix: str) -> bool:
    """Return True if a subject is `prefix` itself or filed below it (`work.team` under `work`)."""
    return subject == prefix or subject.startswith(prefix + ".")


def namespace(user_id: str, kind: str | None = None) -> tuple[str, ...]:
    """Return the store namespace of a user's memories, or of one kind of them."""
    label = check_user_id(user_id)
    return (NAMESPACE_ROOT, label) if kind is None else (NAMESPACE_ROOT, label, kind)


def threads_namespace(user_id: str) -> tuple[str, str]:
    """Return the namespace listing the threads a user opened (key: the thread id)."""
    return (THREADS_ROOT, check_user_id(user_id))


def thread_owners_namespace() -> tuple[str]:
    """Return the namespace naming the user who opened each thread (key: the thread id)."""
    return (OWNERS_ROOT,)


def repair_namespace(user_id: str) -> tuple[str, str]:
    """Return the namespace of a user's index repair markers (index writes still owed)."""
    return (REPAIR_ROOT, check_user_id(user_id))


def changes_namespace(user_id: str) -> tuple[str, str]:
    """Return the namespace of a user's change log (key `log`, see `memory.lexical.changes`)."""
    return (CHANGES_ROOT, check_user_id(user_id))


@functools.lru_cache(maxsize=4096)
def user_key(user_id: str) -> str:
    """Return a short stable hash of a user id, safe for index collection names.

    Cached: records carry their owner as a plain `str`, and every index call on them
    would otherwise check the id again.
    """
    return hashlib.sha256(check_user_id(user_id).encode()).hexdigest()[:24]


def normalize_text(text: str) -> str:
    """Fold a sentence for duplicate detection: NFKC, lower case, no punctuation or spaces."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return "".join(ch for ch in folded if ch.isalnum())


def clean_text(text: str) -> str:
    """Drop control characters (Postgres JSON refuses NUL) and fold whitespace to spaces."""
    kept = "".join(ch for ch in text if ch in "\t\n\r" or unicodedata.category(ch) != "Cc")
    return " ".join(kept.split())


def stable_id(*parts: str) -> str:
    """Return a deterministic record id, so replaying the same turn writes the same keys."""
    return uuid.uuid5(uuid.NAMESPACE_URL, "\x1f".join(parts)).hex


class Source(BaseModel):
    """Where a memory came from: provenance back to the checkpointer."""

    thread_id: str | None = None
    message_ids: list[str] = Field(default_factory=list)
    said_at: datetime | None = None
    via: str = "conversation"
    """`conversation`, `cli`, `api`, `mcp` or `import`."""
    statement_ids: list[str] = Field(default_factory=list)
    """The statements (raw items, `memory.text.statements`) a memory was extracted from: what
    forgetting or superseding it reaches, and nothing else said beside it."""


class HistoryEntry(BaseModel):
    """One past state of a memory, kept when it is reinforced, superseded or forgotten."""

    at: datetime
    action: str
    content: str
    confidence: float
    status: Status
    record_id: str | None = None


def turn_ids(record: MemoryRecord) -> list[str]:
    """Return the ids of the raw statements a record was said in.

    A record linked to its statements (`Source.statement_ids`) reaches those alone; one
    from before statements existed reaches the raw turns of its messages.
    """
    if record.source.statement_ids:
        return list(record.source.statement_ids)
    thread = record.source.thread_id or ""
    return [stable_id(record.user_id, "turn", thread, mid) for mid in record.source.message_ids]


TURN_SUBJECT = "episode.turn."
"""Subject prefix of raw user turns kept word for word (`episode.turn.<thread>`)."""
STYLE_SUBJECT = "profile.style."
"""Subject prefix of how the user asked to be answered from now on ("keep it short"): a core
memory of its own (`memory.recall.search.pin`), labelled as such in the memory block."""


class MemoryRecord(BaseModel):
    """One long-term memory of one user.

    The same `id` is the store key and the Chroma id.
    """

    id: str
    user_id: str
    agent_id: str = "memory-agent"
    scope: str = "user"
    kind: Kind
    subject: str
    content: str
    value: Any = None
    confidence: float = Field(default=0.8, ge=0.0, le=1.0)
    source: Source = Field(default_factory=Source)
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)
    valid_from: datetime | None = None
    valid_until: datetime | None = None
    expires_at: datetime | None = None
    status: Status = "active"
    conflict_group: str | None = None
    """Set on active records that contradict each other and cannot be ordered."""
    supersedes: str | None = None
    superseded_by: str | None = None
    history: list[HistoryEntry] = Field(default_factory=list)
    hits: int = 0
    last_recalled_at: datetime | None = None

    @field_validator("content")
    @classmethod
    def _clean_content(cls, v: str, info: ValidationInfo) -> str:
        # Imported or model-written text may carry newlines or NULs: one clean line. What
        # the store holds was cleaned on its way in, and re-cleaning costs ~1 µs a character
        # on every read of a user's memories.
        if info.context and info.context.get("from_store"):
            return v
        return clean_text(v)

    @classmethod
    def from_store(cls, value: Any) -> MemoryRecord:
        """Return the record a store item's value holds (as written by `to_store`)."""
        return cls.model_validate(value, context={"from_store": True})

    @property
    def context(self) -> list[str]:
        """What was said around a raw turn (`value["context"]`, kept by `archive_turns`).

        Empty for every other record, and for turns archived without context.
        """
        if not is_raw_turn(self):
            return []
        around = self.value.get("context") if isinstance(self.value, dict) else None
        if isinstance(around, str):
            return [around] if around else []
        if isinstance(around, list):
            return [str(c) for c in around if c]
        return []

    @property
    def replaced(self) -> str:
        """What the memory this one superseded said ("" if it superseded none).

        News of a change rarely says again what it changes ("Lorraine's retired, so I go to
        Denise now" never says "hair"): the index reads the two together, so a question in
        the old words finds the new value. Only shown as history, never as a memory.
        """
        ended = [h for h in self.history if h.action == "superseded" and h.record_id != self.id]
        return ended[-1].content if ended else ""

    def is_recallable(self, now: datetime) -> bool:
        """Return True if this record may be shown to the model at `now`."""
        if self.status != "active":
            return False
        return self.expires_at is None or self.expires_at > now

    def to_store(self) -> dict[str, Any]:
        """Return the JSON-safe dict written to the store."""
        return self.model_dump(mode="json")

    def snapshot(self, action: str, at: datetime) -> HistoryEntry:
        """Return a history entry describing this record as it is now."""
        return HistoryEntry(
            at=at,
            action=action,
            content=self.content,
            confidence=self.confidence,
            status=self.status,
            record_id=self.id,
        )


def message_of(record: MemoryRecord) -> tuple[str, str] | None:
    """Return the thread and the first message a record was said in, or None if not known."""
    if not record.source.message_ids:
        return None
    return record.source.thread_id or "", record.source.message_ids[0]


def is_raw_turn(record: MemoryRecord) -> bool:
    """Return True for a user turn kept word for word (an `episode.turn.*` record)."""
    return record.kind == "episode" and record.subject.startswith(TURN_SUBJECT)


def neutral_subject(subject: str, content: str) -> str:
    """Return a subject that holds no value: the family of `subject` and a hash.

    Used when a subject would carry something sensitive (`note.我的银行卡号是6222…`): a
    value must never enter a subject, key or id.
    """
    family = subject.split(".", 1)[0] if "." in subject else "note"
    if find_sensitive(family):
        family = "note"
    return f"{family}.{stable_id(subject, content)[:10]}"

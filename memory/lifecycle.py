"""What to trust, update, forget: every rule about a memory's life lives here.

The save node, the memory service, the CLI and the MCP server share these rules. The
functions are pure: they take records and return the changes to write.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal

from memory.extraction import ForgetRequest
from memory.records import MemoryRecord, normalize_text, stable_id

Action = Literal[
    "added", "held", "reinforced", "promoted", "superseded", "conflict", "forgotten",
    "merged", "archived", "expired", "withheld", "refused", "unchanged",
]  # fmt: skip
"""`withheld`: sensitive data, not written; `refused`: the access policy (`memory.access`)
does not let the writing agent make this change, not written."""
REINFORCE_STEP = 0.05

# Words a user says when asking to forget, mapped to the subjects they mean.
_FORGET_ALIASES: dict[str, tuple[str, ...]] = {
    "address": ("profile.city", "profile.address"),
    "where i live": ("profile.city",),
    "地址": ("profile.city", "profile.address"),
    "住址": ("profile.city", "profile.address"),
    "住在哪": ("profile.city",),
    "name": ("profile.name",),
    "名字": ("profile.name",),
    "job": ("work.",),
    "工作": ("work.",),
    "diet": ("diet.",),
    "饮食": ("diet.",),
    "phone": ("contact.",),
    "电话": ("contact.",),
}
# A forget request made of these words points at what was just talked about.
_DEICTIC = re.compile(
    r"^(?:it|that|this|those|these|that one|this one|这个|这|那个|那|这件事|那件事|这些|它)$", re.I
)


@dataclass(frozen=True)
class Policy:
    """The lifecycle's tunable rules.

    Attributes:
        candidate_threshold: Below this confidence a statement is held as a `candidate`:
            never recalled until confirmed.
        conflict_margin: Confidences closer than this count as near-equal.
        candidate_ttl: How long an unconfirmed candidate waits before it expires.
        event_ttl: Expiry of an event whose date is unknown.
        half_life_days: Per kind, the age at which recency's share of a memory's ranking
            weight halves (None: no decay; facts are superseded instead).
        archive_after: Memories neither recalled nor restated for this long are archived.
        turn_ttl: How long raw user turns (`episode` memories) stay recallable.
        archive_turns: Keep each user turn as a raw `episode` memory beside the extracted ones.
        sensitive: What to do with passwords, keys, card and ID numbers, phone numbers and
            emails found in a statement: `drop` it, or keep it with the data `redact`ed.
    """

    candidate_threshold: float = 0.6
    conflict_margin: float = 0.1
    candidate_ttl: timedelta = timedelta(days=30)
    event_ttl: timedelta = timedelta(days=7)
    half_life_days: dict[str, float | None] = field(
        default_factory=lambda: {"fact": None, "preference": 365.0, "event": 30.0, "episode": 180.0}
    )
    archive_after: timedelta = timedelta(days=180)
    turn_ttl: timedelta = timedelta(days=365)
    archive_turns: bool = True
    sensitive: Literal["drop", "redact"] = "drop"


@dataclass
class Change:
    """One decision about one record; `record` is what gets written."""

    action: Action
    record: MemoryRecord
    previous: MemoryRecord | None = None
    note: str = ""

    def describe(self) -> str:
        """Return a one-line human description."""
        r = self.record
        base = f"{self.action}: [{r.kind} {r.subject}] {r.content}"
        if self.previous is not None and self.action in ("added", "merged"):
            base = f"{base} (supersedes: {self.previous.content})"
        return f"{base} ({self.note})" if self.note else base


def said_at(record: MemoryRecord) -> datetime:
    """Return when a record's statement was made."""
    return record.source.said_at or record.created_at


def same_statement(a: MemoryRecord, b: MemoryRecord) -> bool:
    """Return True if two records say the same thing."""
    if normalize_text(a.content) == normalize_text(b.content):
        return True
    return a.subject == b.subject and a.value is not None and a.value == b.value


def _reinforce(old: MemoryRecord, new: MemoryRecord, now: datetime, policy: Policy) -> Change:
    old.history.append(old.snapshot("reinforced", now))
    old.confidence = min(1.0, max(old.confidence, new.confidence) + REINFORCE_STEP)
    old.updated_at = now
    old.source.message_ids = list(dict.fromkeys(old.source.message_ids + new.source.message_ids))
    if new.kind == "event" and new.expires_at:
        old.expires_at = max(old.expires_at or new.expires_at, new.expires_at)
    if old.status in ("candidate", "archived"):
        # Seen again: a candidate is confirmed, an archived memory is warm again.
        old.status = "active"
        if old.kind != "event":
            old.expires_at = None
        return Change("promoted", old)
    return Change("reinforced", old)


def _supersede(old: MemoryRecord, new: MemoryRecord, now: datetime) -> Change:
    old.history.append(old.snapshot("superseded", now))
    old.status = "superseded"
    old.valid_until = now
    old.superseded_by = new.id
    old.updated_at = now
    old.conflict_group = None
    new.supersedes = old.id
    new.history = [*new.history, *old.history]
    return Change("superseded", old)


def reconcile(
    new: MemoryRecord,
    existing: list[MemoryRecord],
    now: datetime,
    policy: Policy | None = None,
    replaced: list[MemoryRecord] | None = None,
) -> list[Change]:
    """Decide how a new statement changes a user's memories.

    Args:
        new: The candidate, already built as a record.
        existing: The user's records that share its kind and subject, or say the same thing.
        now: The time of the decision.
        policy: The rules; defaults to `Policy()`.
        replaced: For a negation, the active records it ends (see `negation_targets`).

    Returns:
        The changes to write, store first and index second. Replaying the same
        statement (same record id) returns an `unchanged` change.
    """
    policy = policy or Policy()
    for old in existing:
        if old.id == new.id:
            return [Change("unchanged", old)]
    for old in existing:
        if old.status in ("active", "candidate", "archived") and same_statement(old, new):
            return [_reinforce(old, new, now, policy)]

    if new.confidence < policy.candidate_threshold:
        new.status = "candidate"
        expiry = now + policy.candidate_ttl
        new.expires_at = min(new.expires_at, expiry) if new.expires_at else expiry
        return [Change("held", new, note="low confidence: waits for confirmation")]

    changes: list[Change] = []
    if replaced:
        new.subject = replaced[0].subject if len(replaced) == 1 else new.subject
        changes.extend(_supersede(old, new, now) for old in replaced)
        return [Change("added", new, replaced[0]), *changes]

    rivals = [
        r
        for r in existing
        if r.status == "active" and r.subject == new.subject and r.kind == new.kind
    ]
    previous = None
    for old in rivals:
        later = said_at(new) > said_at(old)
        gap = new.confidence - old.confidence
        if (later and gap >= 0) or gap > policy.conflict_margin:
            changes.append(_supersede(old, new, now))
            previous = old
        elif abs(gap) <= policy.conflict_margin:
            group = old.conflict_group or stable_id("conflict", old.id)
            old.conflict_group = new.conflict_group = group
            old.updated_at = now
            changes.append(Change("conflict", old, note="both kept; ask the user"))
        else:
            new.status = "candidate"
            new.expires_at = now + policy.candidate_ttl
            return [Change("held", new, note=f"less confident than: {old.content}")]
    return [Change("added", new, previous), *changes]


def _overlap(query: str, content: str) -> float:
    """Share of the query's character bigrams found in the content."""
    grams = {query[i : i + 2] for i in range(len(query) - 1)}
    if not grams:
        return 0.0
    return sum(g in content for g in grams) / len(grams)


def mentions(words: str, record: MemoryRecord) -> float:
    """Return how strongly `words` point at a record (0..1)."""
    query = normalize_text(words)
    content = normalize_text(record.content)
    value = normalize_text(str(record.value)) if isinstance(record.value, str) else ""
    if len(query) >= 2 and (query in content or content in query):
        return 1.0
    if len(value) >= 2 and value not in ("like", "dislike", "no") and value in query:
        return 0.9
    return _overlap(query, content)


def negation_targets(phrase: str, records: list[MemoryRecord]) -> list[MemoryRecord]:
    """Return the active records a negation ("I no longer drink coffee") ends.

    In English the verb is dropped before matching ("drink coffee" → "coffee"), since the
    earlier statement may have used another one ("User likes coffee.").
    """
    words = phrase.split()
    obj = " ".join(words[1:]) if len(words) > 1 else phrase
    return [
        r
        for r in records
        if r.status == "active" and max(mentions(phrase, r), mentions(obj, r)) >= 0.6
    ]


def forget_targets(
    request: ForgetRequest, records: list[MemoryRecord], context: str = ""
) -> list[MemoryRecord]:
    """Return the active records a forget request points at.

    Args:
        request: What the user asked to forget.
        records: The user's records.
        context: What the assistant said last; "forget that" / "别再提这个了" point into it.
    """
    active = [r for r in records if r.status in ("active", "candidate")]
    query = request.query.strip(" ，。,.!！?？了吧")
    if _DEICTIC.match(query) or not query:
        if not context:
            return []
        scored = sorted(((mentions(r.content, _probe(context)), r) for r in active),
                        key=lambda x: -x[0])  # fmt: skip
        return [scored[0][1]] if scored and scored[0][0] >= 0.6 else []
    prefixes = [request.subject] if request.subject else []
    low = query.casefold()
    prefixes += [s for word, subjects in _FORGET_ALIASES.items() if word in low for s in subjects]
    return [
        r
        for r in active
        if any(r.subject.startswith(p) for p in prefixes) or mentions(query, r) >= 0.6
    ]


def _probe(text: str) -> MemoryRecord:
    return MemoryRecord(id="probe", user_id="probe", kind="fact", subject="probe", content=text)


def forget(record: MemoryRecord, now: datetime, reason: str = "forgotten") -> Change:
    """Soft-forget a record: it stays in history but never returns to recall."""
    record.history.append(record.snapshot(reason, now))
    record.status = "forgotten"
    record.valid_until = now
    record.updated_at = now
    record.conflict_group = None
    return Change("forgotten", record)


def consolidate(
    records: list[MemoryRecord], now: datetime, policy: Policy | None = None
) -> list[Change]:
    """Tidy one user's memories: sweep expired, merge duplicates, resolve, archive cold.

    Idempotent: running it on its own output returns no changes. A record may appear in
    several changes; each carries the same (edited) record object.
    """
    policy = policy or Policy()
    changes: list[Change] = []
    for r in records:
        if r.status in ("active", "candidate") and r.expires_at and r.expires_at <= now:
            r.history.append(r.snapshot("expired", now))
            r.status = "expired"
            r.updated_at = now
            r.conflict_group = None
            changes.append(Change("expired", r))

    by_subject: dict[tuple[str, str], list[MemoryRecord]] = defaultdict(list)
    for r in records:
        if r.status == "active":
            by_subject[(r.kind, r.subject)].append(r)
    for group in by_subject.values():
        group.sort(key=lambda r: (r.confidence, said_at(r)), reverse=True)
        keepers: list[MemoryRecord] = []
        for r in group:
            twin = next((k for k in keepers if _near_duplicate(k, r)), None)
            if twin is None:
                keepers.append(r)
                continue
            _supersede(r, twin, now)
            twin.history.append(r.snapshot("merged", now))
            twin.updated_at = now
            changes.append(Change("merged", twin, r))
            changes.append(Change("superseded", r))

    groups: dict[str, list[MemoryRecord]] = defaultdict(list)
    for r in records:
        if r.conflict_group:
            groups[r.conflict_group].append(r)
    for members in groups.values():
        live = [m for m in members if m.status == "active"]
        if len(live) == 1:
            live[0].conflict_group = None
            changes.append(Change("reinforced", live[0], note="conflict resolved"))
            continue
        live.sort(key=lambda r: r.confidence, reverse=True)
        if len(live) > 1 and live[0].confidence - live[1].confidence > policy.conflict_margin:
            winner = live[0]
            for loser in live[1:]:
                changes.append(_supersede(loser, winner, now))
            winner.conflict_group = None
            winner.supersedes = winner.supersedes or live[1].id
            changes.append(Change("reinforced", winner, note="conflict resolved"))

    for r in records:
        if r.status != "active" or r.kind == "event":
            continue
        last = max(r.updated_at, r.last_recalled_at or r.updated_at)
        if now - last >= policy.archive_after:
            r.history.append(r.snapshot("archived", now))
            r.status = "archived"
            r.updated_at = now
            changes.append(Change("archived", r))
    return changes


def _near_duplicate(a: MemoryRecord, b: MemoryRecord) -> bool:
    x, y = normalize_text(a.content), normalize_text(b.content)
    return x == y or (min(len(x), len(y)) >= 4 and _overlap(x, y) >= 0.8 and _overlap(y, x) >= 0.8)

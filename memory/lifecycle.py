"""Reconcile what a turn yields with what is already remembered.

Every write decision lives here so that the save node, the memory service and the CLI
share one set of rules. Functions are pure: they return the records to write.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from memory.extraction import ForgetRequest
from memory.records import MemoryRecord, normalize_text

Action = Literal["added", "reinforced", "superseded", "forgotten", "unchanged"]
REINFORCE_STEP = 0.05

# Words a user says when asking to forget, mapped to the subjects they mean.
_FORGET_ALIASES: dict[str, tuple[str, ...]] = {
    "address": ("profile.city", "profile.address"),
    "where i live": ("profile.city",),
    "地址": ("profile.city", "profile.address"),
    "住址": ("profile.city", "profile.address"),
    "住在": ("profile.city",),
    "name": ("profile.name",),
    "名字": ("profile.name",),
    "job": ("work.",),
    "工作": ("work.",),
    "diet": ("diet.",),
    "饮食": ("diet.",),
}


@dataclass
class Change:
    """One decision about one record; `record` is what gets written."""

    action: Action
    record: MemoryRecord
    previous: MemoryRecord | None = None

    def describe(self) -> str:
        """Return a one-line human description."""
        r = self.record
        base = f"{self.action}: [{r.kind} {r.subject}] {r.content}"
        if self.previous is not None and self.action == "added":
            return f"{base} (supersedes: {self.previous.content})"
        return base


def same_statement(a: MemoryRecord, b: MemoryRecord) -> bool:
    """Return True if two records say the same thing."""
    if normalize_text(a.content) == normalize_text(b.content):
        return True
    return a.subject == b.subject and a.value is not None and a.value == b.value


def reconcile(new: MemoryRecord, existing: list[MemoryRecord], now: datetime) -> list[Change]:
    """Decide how a new statement changes a user's memories.

    Args:
        new: The candidate, already built as a record.
        existing: The user's records that share its kind and subject, or say the same thing.
        now: The time of the decision.

    Returns:
        The changes to write, store first and index second. Replaying the same
        statement (same record id) returns an `unchanged` change.

    """
    for old in existing:
        if old.id == new.id:
            return [Change("unchanged", old)]
    active = [r for r in existing if r.status == "active"]
    for old in active:
        if same_statement(old, new):
            old.history.append(old.snapshot("reinforced", now))
            old.confidence = min(1.0, max(old.confidence, new.confidence) + REINFORCE_STEP)
            old.updated_at = now
            old.source.message_ids = list(
                dict.fromkeys(old.source.message_ids + new.source.message_ids)
            )
            if new.expires_at and (old.expires_at is None or new.expires_at > old.expires_at):
                old.expires_at = new.expires_at
            return [Change("reinforced", old)]
    changes: list[Change] = []
    previous: MemoryRecord | None = None
    for old in active:
        if old.subject == new.subject and old.kind == new.kind:
            old.history.append(old.snapshot("superseded", now))
            old.status = "superseded"
            old.valid_until = now
            old.superseded_by = new.id
            old.updated_at = now
            new.supersedes = old.id
            new.history = [*old.history]
            previous = old
            changes.append(Change("superseded", old))
    changes.insert(0, Change("added", new, previous))
    return changes


def forget_targets(request: ForgetRequest, records: list[MemoryRecord]) -> list[MemoryRecord]:
    """Return the active records a forget request points at."""
    query = normalize_text(request.query)
    prefixes: list[str] = []
    if request.subject:
        prefixes.append(request.subject)
    low = request.query.casefold()
    for word, subjects in _FORGET_ALIASES.items():
        if word in low:
            prefixes.extend(subjects)
    hits = []
    for r in records:
        if r.status != "active":
            continue
        content = normalize_text(r.content)
        value = normalize_text(str(r.value)) if r.value is not None else ""
        if (
            any(r.subject.startswith(p) for p in prefixes)
            or (len(query) >= 2 and (query in content or content in query))
            or (len(value) >= 2 and value in query)
            or _overlap(query, content) >= 0.6
        ):
            hits.append(r)
    return hits


def forget(record: MemoryRecord, now: datetime, reason: str = "forgotten") -> Change:
    """Soft-forget a record: it stays in history but never returns to recall."""
    record.history.append(record.snapshot(reason, now))
    record.status = "forgotten"
    record.valid_until = now
    record.updated_at = now
    return Change("forgotten", record)


def _overlap(query: str, content: str) -> float:
    """Share of the query's character bigrams found in the content."""
    grams = {query[i : i + 2] for i in range(len(query) - 1)}
    if not grams:
        return 0.0
    return sum(g in content for g in grams) / len(grams)

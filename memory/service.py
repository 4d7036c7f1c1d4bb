"""The memory service: every read and write of long-term memory goes through here.

The logic is synchronous; each `a*` method runs it in a worker thread so that async
callers (graph nodes, servers) never block their event loop on SQLite, Postgres or Chroma.
Any `BaseStore` works: sync stores directly, async ones through their thread-safe sync API.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import functools
import gc
import heapq
import logging
import threading
import uuid
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, ParamSpec, TypeVar

from langgraph.store.base import BaseStore, GetOp, PutOp, SearchOp

from memory import retrieval
from memory.access import AccessDenied, AccessPolicy, can_read, check_write, same_partition
from memory.access import scope_for as access_scope
from memory.backends import writer_locks
from memory.extraction import CandidateMemory, Extraction, event_expiry
from memory.index import ChromaIndex, IndexMismatch, IndexUnavailable, fingerprint
from memory.lexical import LexicalIndexes, UserIndex
from memory.lifecycle import (
    TURN_SUBJECT,
    Change,
    Policy,
    consolidate,
    forget,
    forget_phrase,
    forget_targets,
    is_deictic,
    is_raw_turn,
    is_summary,
    negation_targets,
    reconcile,
)
from memory.phrases import Phrase, key_phrase, states
from memory.privacy import find_sensitive, redact
from memory.records import (
    KINDS,
    NAMESPACE_ROOT,
    Kind,
    MemoryRecord,
    Source,
    check_user_id,
    clean_text,
    namespace,
    normalize_text,
    stable_id,
    utcnow,
)

log = logging.getLogger(__name__)
P = ParamSpec("P")
T = TypeVar("T")
PAGE = 500
SCAN_PAGE = 50_000
CANDIDATES = 200
PINNED = 4
CORE_SUBJECTS = ("profile.", "diet.", "health.")
IMMINENT = timedelta(days=14)
THREADS_ROOT = "threads"
OWNERS_ROOT = "thread_owners"
REPAIR_ROOT = "index_repair"
CHANGES_ROOT = "memory_changes"
CHANGE_LOG_KEYS = 500
FREEZE_AT = 20_000
NOT_WRITTEN = ("withheld", "refused", "unchanged", "unmatched")


def _pin(record: MemoryRecord) -> tuple[str, float] | None:
    """Place memories that may be worth knowing in any conversation with the user.

    Dated events, by date (core from the day before to `IMMINENT` days ahead), and
    profile, diet and health memories, newest first (always core).
    """
    if record.kind == "event" and record.valid_from is not None:
        return "event", record.valid_from.timestamp()
    if record.subject.startswith(CORE_SUBJECTS):
        return "core", -record.updated_at.timestamp()
    return None


@dataclass
class _ChangeLog:
    """A user's change log: the version before its first entry, and the entries.

    Each entry is ``{"v": version, "keys": ["kind/id", ...]}``, or ``"keys": None`` when
    readers must rebuild from a scan.
    """

    base: str
    entries: builtins.list[dict[str, Any]]

    @property
    def head(self) -> str:
        """The version after the last entry."""
        return str(self.entries[-1]["v"]) if self.entries else self.base

    def since(self, version: str) -> set[tuple[str, str]] | None:
        """Return the `(kind, id)` written after `version`; None if the log cannot tell."""
        versions = [self.base] + [e["v"] for e in self.entries]
        if version not in versions:
            return None
        later = self.entries[versions.index(version) :]
        if any(e["keys"] is None for e in later):
            return None
        return {(k, i) for e in later for k, i in (key.split("/", 1) for key in e["keys"])}


class ThreadNotYours(AccessDenied):
    """A thread id that another user opened: its messages and memories are not this user's."""


def _turn_ids(user_id: str, record: MemoryRecord) -> builtins.list[str]:
    """Return the ids of the raw turns a record was said in (see `archive_turns`)."""
    thread = record.source.thread_id or ""
    return [stable_id(user_id, "turn", thread, mid) for mid in record.source.message_ids]


def _probe(user_id: str, words: str) -> MemoryRecord:
    """Return a stand-in record for a change about no stored memory (a forget that missed)."""
    return MemoryRecord(
        id="request", user_id=user_id, kind="fact", subject="request", content=words or "-"
    )


class MemoryNotFound(KeyError):
    """No memory with that id exists for that user."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "memory not found"


@dataclass
class ConsolidationReport:
    """What `consolidate` changed (or would change, on a dry run)."""

    users: int = 0
    merged: int = 0
    resolved: int = 0
    archived: int = 0
    expired: int = 0
    reindexed: int = 0
    orphans_removed: int = 0
    changes: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """Return the counters only."""
        return {k: v for k, v in self.__dict__.items() if isinstance(v, int)}


@dataclass(frozen=True)
class Recalled:
    """A memory returned by search, with its score and why it was returned."""

    record: MemoryRecord
    score: float
    why: str = "relevant"
    """`relevant` (ranked for the query), `core` (always worth knowing) or `conflict`
    (the other side of a conflicting note that was recalled)."""


_LEXICAL: weakref.WeakKeyDictionary[Any, LexicalIndexes] = weakref.WeakKeyDictionary()


def _lexical_for(store: Any) -> LexicalIndexes:
    with _LOCKS_GUARD:
        try:
            return _LEXICAL.setdefault(store, LexicalIndexes(pin=_pin))
        except TypeError:  # a store that cannot be weakly referenced keeps its own
            return LexicalIndexes(pin=_pin)


_LOCKS: dict[tuple[int, str], threading.RLock] = {}
_LOCKS_GUARD = threading.Lock()


def _per_user(fn: Callable[..., T]) -> Callable[..., T]:
    """Run a read-modify-write of one user's memories under that user's lock.

    Two turns of one user in parallel (two threads, or a recall count landing during a
    save) would otherwise read the same records and the last write would undo the other.
    Threads of a process wait on a lock of the process; on Postgres, processes also wait
    on an advisory lock of the database (`memory.backends.writer_locks`).
    """

    @functools.wraps(fn)
    def wrapper(self: MemoryService, user_id: str, *args: Any, **kwargs: Any) -> T:
        with self._user_lock(user_id):
            shared = writer_locks(self.store)
            with shared.hold(user_id) if shared else contextlib.nullcontext():
                return fn(self, user_id, *args, **kwargs)

    return wrapper


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while a user's memories are loaded.

    Loading creates many long-lived objects and nothing cyclic to free; the collector
    would otherwise walk the growing heap again and again (it doubled the load time of
    30k memories).
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _in_thread(fn: Callable[P, T]) -> Callable[P, Any]:
    @functools.wraps(fn)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        return await asyncio.to_thread(fn, *args, **kwargs)

    wrapper.__doc__ = f"Async form of `{fn.__name__}` (runs it in a worker thread)."
    return wrapper


class MemoryService:
    """Long-term memory of many users: store first, index second, store-checked reads."""

    def __init__(
        self,
        store: BaseStore,
        index: ChromaIndex | None,
        *,
        agent_id: str = "memory-agent",
        checkpointer: Any | None = None,
        policy: Policy | None = None,
        access: AccessPolicy | None = None,
    ) -> None:
        """Create a service.

        Args:
            store: The source of truth (any LangGraph `BaseStore`).
            index: The Chroma index for semantic recall; None recalls by words from the store.
            agent_id: Recorded on every memory this service writes.
            checkpointer: If given, `delete_user` also deletes the user's threads from it.
            policy: Lifecycle rules (confidence threshold, decay, archiving, privacy).
            access: Which memories `agent_id` may read and write (`memory.access`); None
                lets it read and write everything, with scope `user`.
        """
        self.store = store
        self.index = index
        self.agent_id = agent_id
        self.checkpointer = checkpointer
        self.policy = policy or Policy()
        # Per-user BM25 over the store's records, kept in step with every write below and
        # shared by every service on the same store (graph nodes build one per call).
        self.lexical = _lexical_for(store)

        self.access = access

    def _user_lock(self, user_id: str) -> threading.RLock:
        # Process-wide, per store: graph nodes build a service per call, so per-instance
        # locks would never meet. Stores on one Postgres database share one lock: they share
        # one advisory-lock session too, whose locks do not exclude each other.
        shared = writer_locks(self.store)
        key: tuple[Any, str] = (shared.conninfo if shared else id(self.store), user_id)
        with _LOCKS_GUARD:
            return _LOCKS.setdefault(key, threading.RLock())

    def _may_read(self, rec: MemoryRecord) -> bool:
        """Return True if this service's agent may read a memory (see `memory.access`)."""
        return can_read(self.access, self.agent_id, rec)

    # --- reads -----------------------------------------------------------------------------

    def get(self, user_id: str, memory_id: str) -> MemoryRecord:
        """Return one memory of a user, whatever its status.

        Raises:
            MemoryNotFound: If the user has no memory with that id.

        """
        found = self._get_many(user_id, [(kind, memory_id) for kind in KINDS])
        for rec in found.values():
            if self._may_read(rec):
                return rec
        raise MemoryNotFound(f"user {user_id!r} has no memory {memory_id!r}")

    def _get_many(self, user_id: str, keys: Iterable[tuple[str, str]]) -> dict[str, MemoryRecord]:
        """Read records by (kind, id) in one store round trip; absent ones are left out."""
        user_id = check_user_id(user_id)
        wanted = [(kind, key) for kind, key in keys if kind in KINDS]
        items = self.store.batch([GetOp(namespace(user_id, kind), key) for kind, key in wanted])
        out: dict[str, MemoryRecord] = {}
        for item in items:
            if item is not None:
                rec = MemoryRecord.from_store(item.value)  # type: ignore[union-attr]
                if rec.user_id == user_id:
                    out[rec.id] = rec
        return out

    def list(
        self,
        user_id: str,
        *,
        include_inactive: bool = False,
        kind: Kind | None = None,
        include_turns: bool = False,
    ) -> builtins.list[MemoryRecord]:
        """Return a user's memories that this agent may read, newest first.

        Args:
            user_id: Whose memories.
            include_inactive: Also return superseded, forgotten and expired ones.
            kind: Only this kind.
            include_turns: Also return the raw-turn archive (see `archive_turns`).

        """
        records = self._scan(user_id, include_inactive=include_inactive, kind=kind)
        return [
            r
            for r in records
            if self._may_read(r) and (include_turns or not r.subject.startswith(TURN_SUBJECT))
        ]

    def _scan(
        self, user_id: str, *, include_inactive: bool = False, kind: Kind | None = None
    ) -> builtins.list[MemoryRecord]:
        """Return a user's memories, newest first, whatever the access policy says."""
        now = utcnow()
        ns = namespace(user_id, kind)
        out: builtins.list[MemoryRecord] = []
        offset = 0
        while True:
            # Large pages: each page re-sorts the whole namespace in the store; reading
            # 100k memories 5,000 at a time took 7.9 s, in one query 1 s.
            items = self.store.search(ns, limit=SCAN_PAGE, offset=offset)
            for item in items:
                rec = MemoryRecord.from_store(item.value)
                if include_inactive or rec.is_recallable(now):
                    out.append(rec)
            if len(items) < SCAN_PAGE:
                break
            offset += SCAN_PAGE
        out.sort(key=lambda r: r.updated_at, reverse=True)
        return out

    def search(
        self, user_id: str, query: str, k: int = 8, *, now: datetime | None = None
    ) -> builtins.list[Recalled]:
        """Return the active memories of a user relevant to `query`, best first.

        Hybrid recall: BM25 over the user's records (CJK-aware) fused with Chroma
        similarity, a relevance floor calibrated for the embedder, recency, confidence,
        time-window and name boosts (`memory.retrieval`). Every result is re-read from the
        store; records missing, not active, expired or owned by someone else are dropped.
        If Chroma is down, recall goes on from the lexical index alone.

        Up to `k` ranked memories are returned, plus up to `PINNED` "core" ones that are
        always worth knowing (name, home, diet, health, imminent events) when the query
        did not already bring them. Nothing is returned for a query nothing matches,
        except those core memories.
        """
        user_id = check_user_id(user_id)
        now = now or utcnow()
        if k <= 0:
            return []
        snap = self._lexical(user_id, now)
        records = snap.records
        lexical = snap.bm25.search(query, CANDIDATES) if query.strip() else []
        dense: builtins.list[tuple[str, float]] = []
        if self.index is not None and query.strip():
            try:
                vector = self.index.embedder.embed([query])[0]
                hits = self.index.query(user_id, vector, CANDIDATES)
                dense = [(h.id, h.similarity) for h in hits]
                missing = [(h.kind, h.id) for h in hits if h.id not in records]
                if missing:  # written elsewhere and not (yet) in the change log we read
                    with self._user_lock(user_id):
                        found = self._get_many(user_id, missing).values()
                        usable = {r.id: r for r in found if r.is_recallable(now)}
                        records.update(usable)
                        self.lexical.upsert(user_id, usable.values())
            except IndexUnavailable as exc:
                log.warning("index unavailable, recalling by words only: %s", exc)
        # Only candidates and core memories are looked at: the cost of a query must not
        # grow with every memory the user has.
        candidates = {i for i, _ in dense} | {i for i, _ in lexical}
        live = {i: records[i] for i in candidates if i in records and records[i].is_recallable(now)}
        ranked = retrieval.rank(
            query, dense, lexical, live, now, config=self._rank_config(), k=3 * k + 10
        )
        # Raw conversation turns come back only when their words match: a vague dense
        # neighbour from an old conversation is noise next to the extracted memories.
        matched = {i for i, s in lexical if s > 0}
        ranked = [(i, s) for i, s in ranked if live[i].kind != "episode" or i in matched]
        pinned = self._pinned(snap, now)
        # The lexical snapshot may be stale: the store has the last word.
        wanted = [(live[i].kind, i) for i, _ in ranked] + [(r.kind, r.id) for r in pinned]
        fresh = self._get_many(user_id, wanted)
        gone = [i for _, i in wanted if i not in fresh or not fresh[i].is_recallable(now)]
        if gone:
            with self._user_lock(user_id):
                self.lexical.remove(user_id, gone)
        out = self._finish(
            user_id,
            [Recalled(fresh[i], s) for i, s in ranked if i in fresh and i not in gone],
            k,
            now,
        )
        have = {r.record.id for r in out}
        extra = [r for r in pinned if r.id in fresh and r.id not in gone and r.id not in have]
        out += [Recalled(fresh[r.id], 0.0, "core") for r in extra if self._may_read(r)][:PINNED]
        return out

    def _lexical(self, user_id: str, now: datetime) -> UserIndex:
        """Return the user's lexical snapshot, caught up with the store's change log.

        Every write appends the ids it touched to a small per-user log in the store (in the
        same batch as the records). A snapshot that is behind, because another process (a
        second server worker, the CLI) wrote since, re-reads just those records; one that
        is too far behind for the log, or was never built, is built from a full scan.
        """
        snap = self.lexical.peek(user_id)
        if snap is not None and snap.version == self._change_log(user_id).head:
            return snap
        # Under the user's lock, as writes apply themselves to the snapshot: a write landing
        # between our read of the log and our install would otherwise be marked as applied
        # to a snapshot that never saw it.
        with self._user_lock(user_id):
            return self._catch_up(user_id, now)

    def _catch_up(self, user_id: str, now: datetime) -> UserIndex:
        log = self._change_log(user_id)
        snap = self.lexical.peek(user_id)
        if snap is not None and snap.version == log.head:
            return snap
        keys = log.since(snap.version) if snap is not None else None
        if snap is not None and keys is not None:
            found = self._get_many(user_id, keys)
            live = [r for r in found.values() if r.is_recallable(now)]
            self.lexical.upsert(user_id, live)
            self.lexical.remove(user_id, {i for _, i in keys} - {r.id for r in live})
            self.lexical.advance(user_id, snap.version, log.head)
            return snap
        # Read the log before the scan: a write landing in between is then applied again
        # by the next catch-up, which is harmless, instead of being missed.
        with _collector_paused():
            snap = self.lexical.build(user_id, self._scan(user_id), log.head)
            if len(snap.records) >= FREEZE_AT:
                # Out of the cyclic collector's sight: with 100k memories loaded, each later
                # full collection took 1-4 s in the middle of some turn. Frozen objects are
                # still freed when nothing refers to them (the records hold no cycles); the
                # collection first frees any cycles that would otherwise be frozen for good.
                gc.collect()
                gc.freeze()
        return snap

    def _reset_change_log(self, user_id: str) -> None:
        """Give a user's change log a fresh version and no entries: every snapshot rebuilds."""
        value = {"base": uuid.uuid4().hex[:16], "entries": []}
        self.store.put((CHANGES_ROOT, user_id), "log", value)
        self.lexical.drop(user_id)

    def _change_log(self, user_id: str) -> _ChangeLog:
        """Return a user's change log as the store holds it (empty if there is none)."""
        item = self.store.get((CHANGES_ROOT, user_id), "log")
        value = item.value if item is not None else {}
        return _ChangeLog(str(value.get("base", "")), builtins.list(value.get("entries", [])))

    def _log_change(
        self, user_id: str, keys: builtins.list[tuple[str, str]] | None, *, erase: bool = False
    ) -> tuple[PutOp, str, str]:
        """Return the put appending one write to a user's change log, and its old and new version.

        Args:
            user_id: Whose log.
            keys: `(kind, id)` of the records written; None (or more keys than the log
                holds) tells readers to rebuild from a scan.
            erase: The records were deleted for good: their ids (hashes of what was said)
                are taken out of the log too, and readers rebuild from a scan.
        """
        log = self._change_log(user_id)
        base, entries, old = log.base, log.entries, log.head
        new = uuid.uuid4().hex[:16]
        if erase and keys:
            gone = {f"{k}/{i}" for k, i in keys}
            for e in entries:
                if e["keys"] is not None:
                    e["keys"] = [key for key in e["keys"] if key not in gone]
            keys = None
        logged = None if keys is None or len(keys) > CHANGE_LOG_KEYS else keys
        entries.append(
            {"v": new, "keys": None if logged is None else [f"{k}/{i}" for k, i in logged]}
        )
        # Keep the newest entries, up to CHANGE_LOG_KEYS ids.
        while len(entries) > 1 and sum(len(e["keys"] or ()) + 1 for e in entries) > CHANGE_LOG_KEYS:
            base = entries.pop(0)["v"]
        value = {"base": base, "entries": entries}
        return PutOp((CHANGES_ROOT, user_id), "log", value), old, new

    def _pinned(self, snap: UserIndex, now: datetime) -> builtins.list[MemoryRecord]:
        """Return the newest core memories (see `_pin`) that can be shown, plus spares.

        The spares stand in for any that the store re-check drops.
        """
        want = PINNED * 2
        found: builtins.list[MemoryRecord] = []
        if "core" in snap.pinned:
            for rec in snap.pinned["core"].between():
                if rec.is_recallable(now):
                    found.append(rec)
                    if len(found) == want:
                        break
        if "event" in snap.pinned:
            soon = snap.pinned["event"].between(
                (now - timedelta(days=1)).timestamp(), (now + IMMINENT).timestamp()
            )
            found += [r for r in soon if r.is_recallable(now)]
        return heapq.nlargest(want, found, key=lambda r: r.updated_at)

    def _rank_config(self) -> retrieval.RankConfig:
        return retrieval.RankConfig(
            embedder=self.index.embedder.spec if self.index is not None else "local",
            half_life_days=self.policy.half_life_days,
        )

    def _finish(
        self, user_id: str, ranked: builtins.list[Recalled], k: int, now: datetime
    ) -> builtins.list[Recalled]:
        """Drop unreadable ones and duplicates, cut to k, pull in the other side of conflicts."""
        out: builtins.list[Recalled] = []
        seen: set[str] = set()
        for r in (r for r in ranked if self._may_read(r.record)):
            key = normalize_text(r.record.content)
            if key not in seen and len(out) < k:
                seen.add(key)
                out.append(r)
        groups = {r.record.conflict_group for r in out if r.record.conflict_group}
        if groups:
            have = {r.record.id for r in out}
            for rec in self.list(user_id):
                if rec.conflict_group in groups and rec.id not in have:
                    out.append(Recalled(rec, 0.0, "conflict"))
        return out

    def export(self, user_id: str) -> builtins.list[dict[str, Any]]:
        """Return all of a user's memories, with history, as JSON-safe dicts."""
        rows = self.list(user_id, include_inactive=True, include_turns=True)
        return [r.to_store() for r in rows]

    # --- writes ----------------------------------------------------------------------------

    def add(
        self,
        user_id: str,
        content: str,
        *,
        kind: Kind = "fact",
        subject: str | None = None,
        value: Any = None,
        confidence: float = 0.9,
        event_date: str | None = None,
        source: Source | None = None,
    ) -> builtins.list[Change]:
        """Remember one statement, reconciled with what is known (dedupe, supersede).

        Raises:
            AccessDenied: If the access policy does not let this agent write it.

        """
        cand = CandidateMemory(
            kind=kind,
            subject=subject or f"note.{normalize_text(content)[:40] or 'item'}",
            content=content,
            value=value,
            confidence=confidence,
            event_date=event_date,
        )
        changes = self.save(user_id, Extraction(memories=[cand]), source or Source(via="api"))
        for c in changes:
            if c.action == "refused":
                raise AccessDenied(c.note)
        return changes

    @_per_user
    def save(
        self,
        user_id: str,
        extraction: Extraction,
        source: Source,
        *,
        context: str = "",
        latest: Sequence[str] = (),
    ) -> builtins.list[Change]:
        """Apply one turn's extraction: reconcile each candidate, then honour forget requests.

        Sensitive data is withheld (or redacted, per policy) before anything is written.
        A candidate or forget request the access policy does not let this agent write is
        `refused` (with the reason as its note); the rest of the turn is still saved.
        Writes go to the store first and the index second; an index write that fails is
        recorded for `reindex` and does not fail the save.

        Args:
            user_id: Whose memories.
            extraction: The candidates and forget requests of one turn.
            source: Provenance of the turn.
            context: What the assistant said last: what "forget that" means when none of
                `latest` stated anything.
            latest: Ids of the user's latest messages in the thread, newest first: "forget
                that" / "别再提这个了" / "scratch that" mean the newest that stated something.
        """
        user_id = check_user_id(user_id)
        now = utcnow()
        said_at = source.said_at or now
        changes: builtins.list[Change] = []
        for i, cand in enumerate(extraction.memories):
            new = self._record(user_id, cand, source, said_at, now, i)
            findings = find_sensitive(f"{new.content}\n{new.value or ''}")
            if findings:
                kinds = ",".join(dict.fromkeys(f.kind for f in findings))
                if self.policy.sensitive == "drop":
                    changes.append(Change("withheld", new, note=f"sensitive: {kinds}"))
                    continue
                new.content = redact(new.content)
                new.value = redact(str(new.value)) if new.value is not None else None
            if cand.updates:
                new.subject = self._updated_subject(user_id, new, cand.updates)
            new.scope = access_scope(self.access, self.agent_id, new.subject)
            replaced = None
            if cand.replaces:
                mine = [r for r in self.list(user_id) if same_partition(r, new)]
                replaced = negation_targets(cand.replaces, mine) or None
            step = reconcile(new, self._related(user_id, new), now, self.policy, replaced)
            refused = self._refusal(new, step)
            if refused is not None:
                changes.append(refused)
                continue
            step += self._cascade(user_id, step, now)
            self._write(user_id, step)
            changes.extend(step)
        for req in extraction.forget:
            records = self._scan(user_id, include_inactive=True)
            targets = forget_targets(req, records, latest, context)
            phrases = [key_phrase(r) for r in targets if not is_raw_turn(r)]
            if not is_deictic(req.query.strip(" .。!！")):
                phrases.append(forget_phrase(req)[0])
            # Raw turns that say it in so many words, though no extracted record links them.
            targets += [
                r
                for r in records
                if is_raw_turn(r)
                and r.is_recallable(now)
                and any(states(r.content, p) for p in phrases if p)
            ]
            step = []
            for r in dict((t.id, t) for t in targets).values():
                refused = self._refusal(r, [])
                if refused is not None:
                    changes.append(refused)
                else:
                    step.append(forget(r, now))
            step += self._cascade(user_id, step, now, phrases=phrases, records=records)
            if not targets:
                changes.append(Change("unmatched", _probe(user_id, req.query), note=req.query))
            self._write(user_id, step)
            changes.extend(step)
        return changes

    def _cascade(
        self,
        user_id: str,
        step: builtins.list[Change],
        now: datetime,
        *,
        phrases: builtins.list[Phrase] | None = None,
        records: builtins.list[MemoryRecord] | None = None,
        hard: bool = False,
    ) -> builtins.list[Change]:
        """Carry superseded and forgotten records over to their other copies.

        This is the one place that decides which copies a change reaches:

        * the raw turns a record was said in (found by its message ids) share its fate:
          superseded with it (so "where do I live?" finds only the new city), or
          forgotten (deleted, if `hard`);
        * a forgotten record's words are cut from every thread summary that states them
          (`phrases`, matched as whole words); a summary left empty is forgotten.

        The rolling summary and working memory in a thread's state, and the thread's own
        messages, are cleaned by the graph's save node from the changes returned by `save`.
        """
        ended = [
            c
            for c in step
            if c.action in ("superseded", "forgotten") and c.record.kind != "episode"
        ]
        out: builtins.list[Change] = []
        done = {c.record.id for c in step}
        linked = [("episode", tid) for c in ended for tid in _turn_ids(user_id, c.record)]
        turns = self._get_many(user_id, linked) if linked else {}
        for c in ended:
            for tid in _turn_ids(user_id, c.record):
                turn = turns.get(tid)
                # A hard delete reaches copies already forgotten or superseded too.
                live = ("active", "archived") if not hard else ("active", "archived",
                        "forgotten", "superseded", "expired")  # fmt: skip
                if turn is None or tid in done or turn.status not in live:
                    continue
                done.add(tid)
                if c.action == "forgotten":
                    out.append(forget(turn, now, "forgotten with what it said"))
                else:
                    turn.history.append(turn.snapshot("superseded", now))
                    turn.status = "superseded"
                    turn.valid_until = now
                    turn.superseded_by = c.record.superseded_by
                    turn.updated_at = now
                    out.append(Change("superseded", turn, note="raw turn"))
        phrases = [p for p in (phrases or []) if p]
        if phrases:
            if records is None:
                records = self._scan(user_id, include_inactive=True, kind="episode")
            statuses = ("active",) if not hard else ("active", "forgotten", "superseded")
            summaries = [r for r in records if is_summary(r) and r.status in statuses]
            for summary in (r for r in summaries if r.id not in done):
                lines = summary.content.split("\n")
                kept = [ln for ln in lines if not any(states(ln, p) for p in phrases)]
                if len(kept) == len(lines):
                    continue
                done.add(summary.id)
                if not any(ln.startswith("- ") for ln in kept):
                    out.append(forget(summary, now, "forgotten with what it said"))
                    continue
                summary.content = "\n".join(kept)
                summary.updated_at = now
                out.append(Change("edited", summary, note="summary without what was forgotten"))
        return out

    def _updated_subject(self, user_id: str, new: MemoryRecord, updates: str) -> str:
        """Return the subject a candidate takes from the memory it says it updates.

        Only an active memory of this user and kind counts; any other id (made up, another
        user's, another kind) is ignored and the candidate keeps its own subject.
        """
        found = self._get_many(user_id, [(new.kind, updates)]).get(updates)
        if found is None or found.status != "active" or not self._may_read(found):
            return new.subject
        return found.subject

    def _refusal(self, new: MemoryRecord, step: builtins.list[Change]) -> Change | None:
        """Return a `refused` change if the access policy forbids any change in `step`.

        Records other agents wrote are checked first, so the reason names their writer.
        """
        touched = [c.record for c in step if c.action != "unchanged" and c.record is not new]
        for rec in [*touched, new]:
            try:
                check_write(self.access, self.agent_id, rec)
            except AccessDenied as exc:
                return Change("refused", new, note=str(exc))
        return None

    @_per_user
    def archive_turns(
        self,
        user_id: str,
        turns: Iterable[tuple[str, str, str | builtins.list[str]]],
        source: Source,
    ) -> int:
        """Keep raw user turns as `episode` memories (seed 000 §5.2: extraction loses detail).

        Each turn is stored under a stable id (replaying a turn writes nothing twice),
        expiring after the policy's `turn_ttl`, with optional context (e.g. the
        neighbouring turns of an imported dialogue) that is searchable at half weight.
        Sensitive data is dropped or redacted as for any other memory.

        Args:
            user_id: Whose turns.
            turns: `(message_id, text, context)` per user message; context is what was said
                around it (the assistant's previous and next messages).
            source: Thread and time they were said.

        Returns:
            How many turns were written.
        """
        user_id = check_user_id(user_id)
        said_at = source.said_at or utcnow()
        records = []
        for message_id, said, around in turns:
            text = clean_text(said)[:2000]
            context = [
                clean_text(c)[:2000] for c in ([around] if isinstance(around, str) else around)
            ]
            context = [c for c in context if c]
            if not text:
                continue
            if find_sensitive("\n".join([text, *context])):
                if self.policy.sensitive == "drop":
                    continue
                text, context = redact(text), [redact(c) for c in context]
            records.append(
                MemoryRecord(
                    id=stable_id(user_id, "turn", source.thread_id or "", message_id),
                    user_id=user_id,
                    agent_id=self.agent_id,
                    scope=access_scope(self.access, self.agent_id, "episode.turn"),
                    kind="episode",
                    subject=f"{TURN_SUBJECT}{source.thread_id or 'none'}",
                    content=text,
                    value={"context": context} if context else None,
                    confidence=1.0,
                    source=source.model_copy(update={"message_ids": [message_id],
                                                     "said_at": said_at}),
                    created_at=said_at,
                    updated_at=said_at,
                    valid_from=said_at,
                    expires_at=said_at + self.policy.turn_ttl,
                )
            )  # fmt: skip
        if not records:
            return 0
        existing = self._get_many(user_id, [("episode", r.id) for r in records])
        new = [r for r in records if r.id not in existing]
        self._write(user_id, [Change("added", r) for r in new])
        return len(new)

    @_per_user
    def mark_recalled(
        self, user_id: str, recalled: Iterable[tuple[str, str]], now: datetime | None = None
    ) -> None:
        """Count a recall of each memory: recent recall lifts ranking and delays archiving.

        Args:
            user_id: Whose memories.
            recalled: `(kind, id)` of each recalled memory.
            now: When they were recalled.
        """
        now = now or utcnow()
        records = self._get_many(user_id, dict.fromkeys(recalled))
        for rec in records.values():
            rec.hits += 1
            rec.last_recalled_at = now
        self.store.batch(
            [PutOp(namespace(user_id, r.kind), r.id, r.to_store()) for r in records.values()]
        )

    def consolidate(
        self, user_id: str | None = None, *, dry_run: bool = False, now: datetime | None = None
    ) -> ConsolidationReport:
        """Tidy memories and make the index agree with the store. Idempotent.

        Merges near-duplicates, resolves conflicts, archives cold memories, sweeps expired
        ones, re-embeds records whose vector is missing or stale, and removes vectors that
        have no active record.

        Args:
            user_id: One user, or None for every user.
            dry_run: Report what would change without writing anything.
            now: The time to judge expiry and coldness against.
        """
        now = now or utcnow()
        report = ConsolidationReport()
        for uid in [check_user_id(user_id)] if user_id else self.users(with_repairs=True):
            self._consolidate_user(uid, dry_run, now, report)
            # Outside the user's lock: re-embedding many memories must not hold up saves.
            if self.index is not None:
                self._repair_index(uid, now, dry_run, report)
        return report

    @_per_user
    def _consolidate_user(
        self, uid: str, dry_run: bool, now: datetime, report: ConsolidationReport
    ) -> None:
        """Merge, resolve, archive and sweep one user's memories."""
        # Under the user's lock: a save landing mid-way would otherwise be undone.
        report.users += 1
        records = self._scan(uid, include_inactive=True)
        changes = consolidate(records, now, self.policy)
        for c in changes:
            if c.action == "merged":
                report.merged += 1
            elif c.action == "archived":
                report.archived += 1
            elif c.action == "expired":
                report.expired += 1
            elif c.note == "conflict resolved":
                report.resolved += 1
            if c.action != "superseded":
                report.changes.append(f"{uid}: {c.describe()}")
        if not dry_run:
            unique = {c.record.id: c for c in changes}
            self._write(uid, list(unique.values()), index=False)

    def _repair_index(
        self, user_id: str, now: datetime, dry_run: bool, report: ConsolidationReport
    ) -> None:
        """Re-embed missing or stale vectors and remove orphans, while saves go on.

        Read in this order, a save landing meanwhile is never undone: its repair marker
        (if any) is not among those settled here unless its record is in the scan, and its
        vector is not among those judged orphans unless its record is gone.
        """
        assert self.index is not None
        markers = self._all((REPAIR_ROOT, user_id))
        have = self.index.fingerprints(user_id)
        records = self._scan(user_id, include_inactive=True)
        live = {r.id: r for r in records if r.is_recallable(now)}
        stale = [r for i, r in live.items() if have.get(i) != fingerprint(r)]
        orphans = [i for i in have if i not in live]
        report.reindexed += len(stale)
        report.orphans_removed += len(orphans)
        report.changes += [f"{user_id}: reindexed: {r.content}" for r in stale]
        report.changes += [f"{user_id}: removed orphan vector {i}" for i in orphans]
        if not dry_run:
            self.index.upsert(stale)
            self.index.delete(user_id, orphans)
            for item in markers:
                self.store.delete(item.namespace, item.key)

    @_per_user
    def forget(self, user_id: str, memory_id: str, *, hard: bool = False) -> MemoryRecord:
        """Forget one memory: soft keeps it in history, hard deletes it from store and index.

        Raises:
            MemoryNotFound: If the user has no memory with that id (that this agent may read).
            AccessDenied: If the access policy does not let this agent change it.

        """
        rec = self.get(user_id, memory_id)
        check_write(self.access, self.agent_id, rec)
        now = utcnow()
        change = forget(rec, now)
        phrases = [] if is_raw_turn(rec) else [key_phrase(rec)]
        copies = self._cascade(user_id, [change], now, phrases=phrases, hard=hard)
        if hard:
            # Only what was targeted: the record, the raw turns it was said in, and summary
            # lines that state it (cut, or the summary dropped when nothing else is left).
            gone = [rec, *(c.record for c in copies if c.action == "forgotten")]
            edited = [c for c in copies if c.action == "edited"]
            # A superseding record carries the old one's history: its words go too.
            ids = {r.id for r in gone}
            for other in self._scan(user_id, include_inactive=True):
                if other.id not in ids and any(h.record_id in ids for h in other.history):
                    other.history = [h for h in other.history if h.record_id not in ids]
                    edited.append(Change("edited", other, note="history of a deleted memory"))
            self._write(user_id, edited)
            self._delete(user_id, gone)
            return rec
        self._write(user_id, [change, *copies])
        return change.record

    def _delete(self, user_id: str, records: builtins.list[MemoryRecord]) -> None:
        """Delete records from the store, the lexical index and Chroma."""
        ids = [r.id for r in records]
        put, old, new = self._log_change(user_id, [(r.kind, r.id) for r in records], erase=True)
        self.store.batch([*(PutOp(namespace(user_id, r.kind), r.id, None) for r in records), put])
        self.lexical.remove(user_id, ids)
        self.lexical.advance(user_id, old, new)
        self._index_call(user_id, "delete", lambda: self._index_delete(user_id, ids))

    MAX_IMPORT_CONTENT_CHARS = 20_000
    """Longest `content` an imported row may have. What the agent writes is far shorter
    (raw turns are cut to 2,000 characters, other memories to 500) and embedding reads only
    a text's start, but a multi-megabyte row would still stall cleaning and indexing."""

    @_per_user
    def import_records(self, user_id: str, rows: Iterable[dict[str, Any]]) -> int:
        """Write exported records for a user (their `user_id` is replaced by this one).

        Rows without an `agent_id` are recorded as written by this service's agent. Every
        row is checked before anything is written, so a refused file leaves no trace.

        Raises:
            ValueError: If a row is not a valid memory record, its `content` is longer than
                `MAX_IMPORT_CONTENT_CHARS`, or two rows have the same `id` (one would
                silently overwrite the other, so the file is refused and neither is kept;
                the message names the id and both row numbers). Nothing is written then.
            AccessDenied: If the access policy does not let this agent write a row
                (nothing is written then).

        """
        user_id = check_user_id(user_id)
        limit = self.MAX_IMPORT_CONTENT_CHARS
        records = []
        row_of: dict[str, int] = {}
        for n, row in enumerate(rows, 1):
            # Checked before validation: cleaning a multi-megabyte text alone takes seconds.
            content = row.get("content") if isinstance(row, dict) else None
            if isinstance(content, str) and len(content) > limit:
                raise ValueError(
                    f"record {n} has {len(content):,} characters of content; the limit is "
                    f"{limit:,}. Shorten or split it, then import again (nothing was imported)"
                )
            try:
                rec = MemoryRecord.model_validate(
                    {"agent_id": self.agent_id, **row, "user_id": user_id}
                )
            except Exception as exc:
                raise ValueError(f"record {n} is not a memory record: {exc}") from exc
            if rec.id in row_of:
                raise ValueError(
                    f"id {rec.id!r} is used twice, by records {row_of[rec.id]} and {n}: give "
                    "one of them another id or remove it, then import again (nothing was "
                    "imported)"
                )
            row_of[rec.id] = n
            try:
                check_write(self.access, self.agent_id, rec)
            except AccessDenied as exc:
                raise AccessDenied(f"record {n}: {exc}") from exc
            records.append(rec)
        records = [r for r in map(self._clean_import, records) if r is not None]
        now = utcnow()
        for start in range(0, len(records), PAGE):
            chunk = records[start : start + PAGE]
            # Each slice carries its change-log entry in its own batch: a crash between
            # slices leaves no record that other processes would never hear of.
            put, old, new = self._log_change(user_id, [(r.kind, r.id) for r in chunk])
            ops = [PutOp(namespace(user_id, r.kind), r.id, r.to_store()) for r in chunk]
            self.store.batch([*ops, put])
            self.lexical.upsert(user_id, [r for r in chunk if r.is_recallable(now)])
            self.lexical.remove(user_id, [r.id for r in chunk if not r.is_recallable(now)])
            self.lexical.advance(user_id, old, new)
        active = [r for r in records if r.is_recallable(now)]
        self._index_call(user_id, "upsert", lambda: self._index_upsert(active))
        return len(records)

    def _clean_import(self, rec: MemoryRecord) -> MemoryRecord | None:
        findings = find_sensitive(f"{rec.content}\n{rec.value or ''}")
        if not findings:
            return rec
        if self.policy.sensitive == "drop":
            return None
        rec.content = redact(rec.content)
        rec.value = redact(str(rec.value)) if rec.value is not None else None
        rec.history = []
        return rec

    @_per_user
    def delete_user(self, user_id: str) -> int:
        """Delete every memory, vector, repair marker and thread of a user.

        Returns:
            How many memories were deleted.

        """
        user_id = check_user_id(user_id)
        # Threads and store records first: they hold the words themselves. If the index is
        # down, its drop is recorded as a repair; recall never serves a vector without its
        # store record, and `reindex` finishes the job.
        listed = self._all((THREADS_ROOT, user_id))
        # Only the threads this user opened: a listing must never reach another's thread.
        threads = [i for i in listed if self.thread_owner(i.key) in (user_id, None)]
        if self.checkpointer is not None:
            for item in threads:
                self.checkpointer.delete_thread(item.key)
        for item in threads:
            self.store.delete((OWNERS_ROOT,), item.key)
        for item in listed:
            self.store.delete(item.namespace, item.key)
        # Marked first: a crash mid-way leaves a marker that global `reindex` /
        # `consolidate` find, even once no memory of the user is left to point at it.
        marker = stable_id("drop_user", user_id)
        self.store.put((REPAIR_ROOT, user_id), marker, {"op": "drop_user"})
        # The change log is reset before and after the deletes: every process's snapshot
        # of the user is rebuilt, and one rebuilt mid-way is rebuilt again (empty). A crash
        # in between is finished by `reindex`, which resets it too. No ids are kept.
        self._reset_change_log(user_id)
        records = self._scan(user_id, include_inactive=True)
        for rec in records:
            self.store.delete(namespace(user_id, rec.kind), rec.id)
        self._reset_change_log(user_id)
        dropped = True
        if self.index is not None:
            index = self.index
            dropped = self._index_call(
                user_id, "drop_user", lambda: index.drop_user(user_id), marker
            )
        if dropped:
            for item in self._all((REPAIR_ROOT, user_id)):
                self.store.delete(item.namespace, item.key)
        return len(records)

    def remember_thread(self, user_id: str, thread_id: str) -> None:
        """Record that a thread belongs to a user: the first user of a thread owns it.

        `delete_user` deletes the threads a user owns, and no other user may use them.

        Raises:
            ThreadNotYours: If another user opened the thread.
        """
        user_id = check_user_id(user_id)
        owner = self.thread_owner(thread_id)
        if owner is not None and owner != user_id:
            raise ThreadNotYours(
                f"thread {thread_id!r} belongs to another user: start a new thread "
                "(the thread id is not yours to continue)"
            )
        if owner is None:
            at = utcnow().isoformat()
            self.store.batch(
                [
                    PutOp((OWNERS_ROOT,), thread_id, {"user_id": user_id, "at": at}),
                    PutOp((THREADS_ROOT, user_id), thread_id, {"thread_id": thread_id, "at": at}),
                ]
            )

    def thread_owner(self, thread_id: str) -> str | None:
        """Return the user who opened a thread (None if no turn of it was seen)."""
        item = self.store.get((OWNERS_ROOT,), thread_id)
        return str(item.value["user_id"]) if item is not None else None

    def unforgotten(self, user_id: str, texts: Iterable[str]) -> builtins.list[str]:
        """Return the texts that state nothing this user asked to forget.

        For copies written after a forget (a later thread summary, say): what was forgotten
        must not come back through them.
        """
        user_id = check_user_id(user_id)
        found = self.store.batch(
            [SearchOp(namespace(user_id, k), {"status": "forgotten"}, limit=PAGE) for k in KINDS]
        )
        items: builtins.list[Any] = [item for page in found for item in page]  # type: ignore[union-attr]
        phrases = [key_phrase(MemoryRecord.from_store(item.value)) for item in items]
        phrases = [p for p in phrases if p]
        return [t for t in texts if not any(states(t, p) for p in phrases)]

    def threads(self, user_id: str) -> builtins.list[str]:
        """Return the ids of the threads recorded for a user."""
        return [item.key for item in self._all((THREADS_ROOT, check_user_id(user_id)))]

    def pending_repairs(self, user_id: str) -> int:
        """Return how many index writes failed for a user and wait for `reindex`."""
        return len(self._all((REPAIR_ROOT, check_user_id(user_id))))

    def reindex(self, user_id: str | None = None) -> dict[str, int]:
        """Rebuild the index from the store for one user or all users.

        Returns:
            Per user, how many vectors were written.

        """
        if self.index is None:
            raise RuntimeError("no index is configured")
        users = [check_user_id(user_id)] if user_id else self.users(with_repairs=True)
        out = {}
        for uid in users:
            self.index.drop_user(uid)
            self._reset_change_log(uid)
            active = self._scan(uid)
            self.index.upsert(active)
            for item in self._all((REPAIR_ROOT, uid)):
                self.store.delete(item.namespace, item.key)
            out[uid] = len(active)
        return out

    def users(self, *, with_repairs: bool = False) -> builtins.list[str]:
        """Return every user that has memories in the store.

        Args:
            with_repairs: Also users with failed index writes waiting (e.g. a deleted user
                whose collection could not be dropped yet).
        """
        roots = (NAMESPACE_ROOT, REPAIR_ROOT) if with_repairs else (NAMESPACE_ROOT,)
        found = set()
        for root in roots:
            spaces = self.store.list_namespaces(prefix=(root,), max_depth=2, limit=100_000)
            found |= {ns[1] for ns in spaces if len(ns) >= 2}
        return sorted(found)

    # --- internals -------------------------------------------------------------------------

    def _record(
        self,
        user_id: str,
        cand: CandidateMemory,
        source: Source,
        said_at: datetime,
        now: datetime,
        position: int,
    ) -> MemoryRecord:
        event_day = None
        if cand.kind == "event" and cand.event_date:
            try:
                event_day = datetime.fromisoformat(cand.event_date).replace(tzinfo=said_at.tzinfo)
            except ValueError:
                log.warning("event_date %r is not an ISO date: ignored", cand.event_date)
        # Same turn + same statement → same id, so a replayed save writes nothing twice.
        origin = ",".join(source.message_ids) or f"{said_at.isoformat()}#{position}"
        rid = stable_id(user_id, cand.kind, cand.subject, normalize_text(cand.content), origin)
        return MemoryRecord(
            id=rid,
            user_id=user_id,
            agent_id=self.agent_id,
            kind=cand.kind,
            subject=cand.subject,
            content=cand.content,
            value=cand.value,
            confidence=cand.confidence,
            source=source.model_copy(update={"said_at": said_at}),
            created_at=now,
            updated_at=now,
            valid_from=event_day if cand.kind == "event" else said_at,
            expires_at=(
                event_expiry(event_day, said_at, self.policy.event_ttl)
                if cand.kind == "event"
                else None
            ),
        )

    def _related(self, user_id: str, new: MemoryRecord) -> builtins.list[MemoryRecord]:
        """Return readable records in the new one's scope sharing its id, subject or statement."""
        ns = namespace(user_id, new.kind)
        # Filtered in the database: a save must not read all of a user's memories.
        same_id, by_subject, by_content = self.store.batch(
            [
                GetOp(ns, new.id),
                SearchOp(ns, {"subject": new.subject}, limit=PAGE),
                SearchOp(ns, {"content": new.content}, limit=PAGE),
            ]
        )
        out = []
        if same_id is not None:
            out.append(MemoryRecord.from_store(same_id.value))  # type: ignore[union-attr]
        seen = {new.id}
        for item in [*by_subject, *by_content]:  # type: ignore[misc]
            rec = MemoryRecord.from_store(item.value)
            if rec.id not in seen and self._may_read(rec) and same_partition(rec, new):
                seen.add(rec.id)
                out.append(rec)
        return out

    def _write(self, user_id: str, changes: builtins.list[Change], *, index: bool = True) -> None:
        """Write changed records to the store, then the lexical index, then Chroma.

        A repair marker goes into the store in the same batch as the records and is removed
        once Chroma has them, so a crash between the two writes is found and repaired by
        `reindex` / `consolidate`. `unchanged` records (a replayed save) are re-sent to
        Chroma, which is idempotent, in case the crash came before their vector.
        """
        now = utcnow()
        replayed = [c.record for c in changes if c.action == "unchanged"]
        changes = [c for c in changes if c.action not in NOT_WRITTEN]
        live = [c.record for c in changes if c.record.is_recallable(now)]
        dead = [c.record.id for c in changes if not c.record.is_recallable(now)]
        to_index = live + [r for r in replayed if r.is_recallable(now)]
        ops: builtins.list[Any] = [
            PutOp(namespace(user_id, c.record.kind), c.record.id, c.record.to_store())
            for c in changes
        ]
        marker = None
        logged: tuple[str, str] | None = None
        if changes:
            put, old, new = self._log_change(
                user_id, [(c.record.kind, c.record.id) for c in changes]
            )
            ops.append(put)
            logged = (old, new)
        if index and self.index is not None and (to_index or dead):
            marker = stable_id("write", *sorted(r.id for r in to_index), *sorted(dead))
            ops.append(
                PutOp((REPAIR_ROOT, user_id), marker, {"op": "write", "at": now.isoformat()})
            )
        if ops:
            self.store.batch(ops)
        self.lexical.upsert(user_id, live)
        self.lexical.remove(user_id, dead)
        if logged is not None:
            self.lexical.advance(user_id, *logged)
        if marker is None:
            return
        done = self._index_call(user_id, "upsert", lambda: self._index_upsert(to_index), marker)
        done &= self._index_call(
            user_id, "delete", lambda: self._index_delete(user_id, dead), marker
        )
        if done:
            self.store.delete((REPAIR_ROOT, user_id), marker)

    def _index_upsert(self, records: builtins.list[MemoryRecord]) -> None:
        if self.index is not None and records:
            self.index.upsert(records)

    def _index_delete(self, user_id: str, ids: builtins.list[str]) -> None:
        if self.index is not None and ids:
            self.index.delete(user_id, ids)

    def _index_call(
        self, user_id: str, op: str, call: Callable[[], None], marker: str | None = None
    ) -> bool:
        """Run an index call; on failure leave a repair marker. Return True on success."""
        try:
            call()
            return True
        except (IndexUnavailable, IndexMismatch) as exc:
            log.warning("index %s failed, recorded for reindex: %s", op, exc)
            self.store.put(
                (REPAIR_ROOT, user_id),
                marker or stable_id(op, utcnow().isoformat()),
                {"op": op, "error": str(exc), "at": utcnow().isoformat()},
            )
            return False

    def _all(self, ns: tuple[str, ...]) -> builtins.list[Any]:
        out: builtins.list[Any] = []
        offset = 0
        while True:
            items = self.store.search(ns, limit=PAGE, offset=offset)
            out.extend(i for i in items if tuple(i.namespace) == ns)
            if len(items) < PAGE:
                return out
            offset += PAGE

    # --- async forms -----------------------------------------------------------------------

    aget = _in_thread(get)
    alist = _in_thread(list)
    asearch = _in_thread(search)
    aexport = _in_thread(export)
    aadd = _in_thread(add)
    asave = _in_thread(save)
    aforget = _in_thread(forget)
    aimport_records = _in_thread(import_records)
    adelete_user = _in_thread(delete_user)
    aremember_thread = _in_thread(remember_thread)
    athread_owner = _in_thread(thread_owner)
    aunforgotten = _in_thread(unforgotten)
    amark_recalled = _in_thread(mark_recalled)
    aarchive_turns = _in_thread(archive_turns)
    athreads = _in_thread(threads)
    apending_repairs = _in_thread(pending_repairs)
    ausers = _in_thread(users)
    aconsolidate = _in_thread(consolidate)
    areindex = _in_thread(reindex)

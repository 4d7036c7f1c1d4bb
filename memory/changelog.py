"""The store's per-user change log, and the lexical snapshots it keeps current.

Every write appends the ids it touched to a small per-user log in the store, in the same
batch as the records. Each `MemoryService` holds its own BM25 snapshots of its users'
records (`memory.lexical`); a snapshot carries the log version it reflects. A snapshot that
is behind, because another process or another service object wrote since, re-reads just
those records; one too far behind for the log, or never built, is built from a full scan.
"""

from __future__ import annotations

import contextlib
import gc
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from langgraph.store.base import BaseStore, PutOp

from memory.lexical import LexicalIndexes, UserIndex
from memory.locks import UserLocks
from memory.reads import StoreReader
from memory.records import MemoryRecord, UserId, changes_namespace

CHANGE_LOG_KEYS = 500
"""How many `kind/id` keys a user's change log keeps; older entries are dropped."""
FREEZE_AT = 20_000
"""Snapshots of at least this many records are moved out of the cyclic collector's sight."""
LOG_KEY = "log"


@dataclass
class ChangeLog:
    """A user's change log: the version before its first entry, and the entries.

    Each entry is ``{"v": version, "keys": ["kind/id", ...]}``, or ``"keys": None`` when
    readers must rebuild from a scan.
    """

    base: str
    entries: list[dict[str, Any]]

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


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
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


class LexicalSnapshots:
    """Per-user lexical snapshots of one store, caught up through the store's change log."""

    def __init__(
        self, store: BaseStore, reader: StoreReader, locks: UserLocks, lexical: LexicalIndexes
    ) -> None:
        """Create the snapshots (built on first use).

        Args:
            store: Where the change log lives.
            reader: Reads the records a catch-up needs.
            locks: Writes apply themselves to a snapshot under the user's lock; so does a
                catch-up.
            lexical: The BM25 indexes the snapshots live in.
        """
        self.store = store
        self.reader = reader
        self.locks = locks
        self.lexical = lexical

    def log(self, user_id: UserId) -> ChangeLog:
        """Return a user's change log as the store holds it (empty if there is none)."""
        item = self.store.get(changes_namespace(user_id), LOG_KEY)
        value = item.value if item is not None else {}
        return ChangeLog(str(value.get("base", "")), list(value.get("entries", [])))

    def log_change(
        self, user_id: UserId, keys: list[tuple[str, str]] | None, *, erase: bool = False
    ) -> tuple[PutOp, str, str]:
        """Return the put appending one write to a user's change log, and its old and new version.

        Args:
            user_id: Whose log.
            keys: `(kind, id)` of the records written; None (or more keys than the log
                holds) tells readers to rebuild from a scan.
            erase: The records were deleted for good: their ids (hashes of what was said)
                are taken out of the log too, and readers rebuild from a scan.
        """
        log = self.log(user_id)
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
        return PutOp(changes_namespace(user_id), LOG_KEY, value), old, new

    def reset(self, user_id: UserId) -> None:
        """Give a user's change log a fresh version and no entries: every snapshot rebuilds."""
        value = {"base": uuid.uuid4().hex[:16], "entries": []}
        self.store.put(changes_namespace(user_id), LOG_KEY, value)
        self.lexical.drop(user_id)

    def applied(
        self,
        user_id: UserId,
        live: Iterable[MemoryRecord],
        dead: Iterable[str],
        versions: tuple[str, str] | None,
    ) -> None:
        """Apply a write the store now holds to this process's snapshot of the user.

        Args:
            user_id: Whose records were written.
            live: Records written that can be recalled.
            dead: Ids of records deleted, or written but no longer recallable.
            versions: The log versions before and after the write (see `log_change`); the
                snapshot is marked current only if it was current before.
        """
        self.lexical.upsert(user_id, live)
        self.lexical.remove(user_id, dead)
        if versions is not None:
            self.lexical.advance(user_id, *versions)

    def current(self, user_id: UserId, now: datetime) -> UserIndex:
        """Return the user's lexical snapshot, caught up with the store's change log."""
        snap = self.lexical.peek(user_id)
        if snap is not None and snap.version == self.log(user_id).head:
            return snap
        # Under the user's lock, as writes apply themselves to the snapshot: a write landing
        # between our read of the log and our install would otherwise be marked as applied
        # to a snapshot that never saw it.
        with self.locks.local(user_id):
            return self._catch_up(user_id, now)

    def _catch_up(self, user_id: UserId, now: datetime) -> UserIndex:
        log = self.log(user_id)
        snap = self.lexical.peek(user_id)
        if snap is not None and snap.version == log.head:
            return snap
        keys = log.since(snap.version) if snap is not None else None
        if snap is not None and keys is not None:
            found = self.reader.get_many(user_id, keys)
            live = [r for r in found.values() if r.is_recallable(now)]
            self.lexical.upsert(user_id, live)
            self.lexical.remove(user_id, {i for _, i in keys} - {r.id for r in live})
            self.lexical.advance(user_id, snap.version, log.head)
            return snap
        # Read the log before the scan: a write landing in between is then applied again
        # by the next catch-up, which is harmless, instead of being missed.
        with collector_paused():
            snap = self.lexical.build(user_id, self.reader.scan(user_id), log.head)
            if len(snap.records) >= FREEZE_AT:
                # Out of the cyclic collector's sight: with 100k memories loaded, each later
                # full collection took 1-4 s in the middle of some turn. Frozen objects are
                # still freed when nothing refers to them (the records hold no cycles); the
                # collection first frees any cycles that would otherwise be frozen for good.
                gc.collect()
                gc.freeze()
        return snap

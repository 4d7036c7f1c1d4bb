"""The store's per-user change log, and the lexical snapshots it keeps current.

Every write appends the ids it touched to a small per-user log in the store, in the same
batch as the records. Each `MemoryService` holds its own BM25 snapshots of its users'
records (`memory.lexical.snapshot`); a snapshot carries the log version it reflects. A snapshot that
is behind, because another process or another service object wrote since, re-reads just
those records; one too far behind for the log, or never built, is built from a full scan.

Persisted snapshots
    Building a snapshot of 100k memories from a scan took 9-19 s, in every new process. So
    users with at least `PERSIST_AT` memories also have their snapshot persisted (records
    without their history, BM25 postings as arrays, pinned records, and the log version it
    reflects; `memory.lexical.snapshot.dump_snapshot`): a file under the memory home beside the
    SQLite store (``lexical/<user hash>.lexical``), or a row of our own table in Postgres
    (`memory.lexical.persisted`). A process with no snapshot of a user loads the persisted
    one, if the change log still reaches back to its version, and applies the log's tail as
    any catch-up does; a missing, corrupt, foreign-layout or too-old one means a full
    rebuild, which is then persisted. One that falls `PERSIST_LAG` keys behind the log is
    written again, before the log forgets its version. In-memory stores persist nothing.

    A persisted snapshot is a copy of what users said. A write that takes words out of
    recall (forget, hard delete, supersede, archive, an edited summary: any record that
    leaves recall or whose words change) rewrites the copy without them, in the same
    locked write, when this process holds the current snapshot; otherwise it deletes the
    copy. `reset` (delete-user, reindex) deletes it. A copy is written only under the
    user's write lock and only if the log has not moved since the snapshot it holds, so a
    copy never outlives a purge it missed.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from langgraph.store.base import BaseStore, PutOp

from memory.lexical.persisted import SnapshotStore, decode_record, encode_record, snapshot_store
from memory.lexical.snapshot import (
    LexicalIndexes,
    SnapshotError,
    UserIndex,
    dump_snapshot,
    load_snapshot,
)
from memory.store.locks import UserLocks
from memory.store.reads import StoreReader
from memory.store.records import MemoryRecord, UserId, changes_namespace, user_key

log = logging.getLogger(__name__)

CHANGE_LOG_KEYS = 500
"""How many `kind/id` keys a user's change log keeps; older entries are dropped."""
FREEZE_AT = 20_000
"""Snapshots of at least this many records are moved out of the cyclic collector's sight."""
LOG_KEY = "log"
PERSIST_AT = 2_000
"""Snapshots of at least this many records are persisted (smaller ones build in < 0.2 s)."""
PERSIST_LAG = CHANGE_LOG_KEYS // 4
"""A persisted snapshot this many keys behind the log is written again."""
SNAPSHOT_TAG = "memory-record/1"
"""What a persisted snapshot's records and pinned groups mean: bump it when the record
encoding (`encode_record`) or the pin rules (`memory.recall.search.pin`) change, so older copies are
rebuilt instead of read."""


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
        self,
        store: BaseStore,
        reader: StoreReader,
        locks: UserLocks,
        lexical: LexicalIndexes,
        *,
        persisted: SnapshotStore | None | bool = True,
    ) -> None:
        """Create the snapshots (built, or loaded from their persisted copies, on first use).

        Args:
            store: Where the change log lives.
            reader: Reads the records a catch-up needs.
            locks: Writes apply themselves to a snapshot under the user's lock; so does a
                catch-up. Persisted copies are written under the user's write lock.
            lexical: The BM25 indexes the snapshots live in.
            persisted: Where snapshots of large users are persisted: True for the store's
                own place (`snapshot_store`), False or None for nowhere.
        """
        self.store = store
        self.reader = reader
        self.locks = locks
        self.lexical = lexical
        self._persisted_arg = persisted
        self._persisted: SnapshotStore | None = None
        self._resolved = False

    @property
    def persisted(self) -> SnapshotStore | None:
        """Where this store's snapshots are persisted (resolved on first use), or None."""
        if not self._resolved:
            arg = self._persisted_arg
            if arg is True:
                try:
                    self._persisted = snapshot_store(self.store)
                except Exception as exc:  # e.g. a closed connection: persist nothing
                    log.warning("lexical snapshots will not be persisted: %s", exc)
            elif arg is not False and arg is not None:
                self._persisted = arg
            self._resolved = True
        return self._persisted

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
        """Give a user's change log a fresh version and no entries: every snapshot rebuilds.

        The persisted copy is deleted too (delete-user must leave no word of the user).
        """
        value = {"base": uuid.uuid4().hex[:16], "entries": []}
        self.store.put(changes_namespace(user_id), LOG_KEY, value)
        self.lexical.drop(user_id)
        if self.persisted is not None:
            self.persisted.delete(user_key(user_id))

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

        Call it under the user's write lock: a write that takes words out of recall purges
        them from the persisted copy here (see the module docstring).
        """
        live, dead = list(live), list(dead)
        purge = self.persisted is not None and self._drops_words(user_id, live, dead, versions)
        self.lexical.upsert(user_id, live)
        self.lexical.remove(user_id, dead)
        if versions is not None:
            self.lexical.advance(user_id, *versions)
        if purge:
            self._purge(user_id, versions[1] if versions is not None else None)

    def _drops_words(
        self,
        user_id: UserId,
        live: list[MemoryRecord],
        dead: list[str],
        versions: tuple[str, str] | None,
    ) -> bool:
        """Return True if a write may take words out of what a persisted copy holds.

        With this process's snapshot current before the write, it holds what any valid
        copy holds (every earlier write that took words out purged the copy), so the
        question is exact: did a recallable record leave, or change its words? Without
        it: a record leaving recall, or any rewrite of a record written before (every
        change sets `updated_at`), may have; a record written for the first time
        (`created_at == updated_at`: an add, an import, a raw turn) only adds words, and
        the copy's readers pick it up from the change log.
        """
        if not live and not dead:
            return False
        snap = self.lexical.peek(user_id)
        if snap is None or versions is None or snap.version != versions[0]:
            return bool(dead) or any(r.updated_at != r.created_at for r in live)
        held = snap.records
        if any(i in held for i in dead):
            return True
        for rec in live:
            old = held.get(rec.id)
            if old is not None and _words(old) != _words(rec):
                return True
        return False

    def _purge(self, user_id: UserId, version: str | None) -> None:
        """Rewrite the persisted copy from this process's current snapshot, or delete it."""
        store = self.persisted
        assert store is not None
        key = user_key(user_id)
        snap = self.lexical.peek(user_id)
        try:
            if snap is not None and snap.version == version and len(snap.records) >= PERSIST_AT:
                data, _ = dump_snapshot(snap, encode_record, tag=SNAPSHOT_TAG)
                store.save(key, data, snap.version)
            else:
                store.delete(key)
        except Exception:
            # The copy may still hold the words: refuse the write's success rather than
            # keep them silently. The records are written; a retry purges again.
            log.exception("could not purge the persisted lexical snapshot of %r", user_id)
            raise

    def current(self, user_id: UserId, now: datetime) -> UserIndex:
        """Return the user's lexical snapshot, caught up with the store's change log.

        A process with no snapshot of the user starts from the persisted copy when there is
        a usable one; a snapshot that had to catch up may be persisted again (`_keep`).
        """
        snap = self.lexical.peek(user_id)
        if snap is not None and snap.version == self.log(user_id).head:
            return snap
        # Under the user's lock, as writes apply themselves to the snapshot: a write landing
        # between our read of the log and our install would otherwise be marked as applied
        # to a snapshot that never saw it.
        with self.locks.local(user_id):
            return self._keep(user_id, self._catch_up(user_id, now))

    def _catch_up(self, user_id: UserId, now: datetime) -> UserIndex:
        changes = self.log(user_id)
        snap = self.lexical.peek(user_id)
        if snap is not None and snap.version == changes.head:
            return snap
        keys = changes.since(snap.version) if snap is not None else None
        if snap is None or keys is None:
            loaded = self._load(user_id, changes)
            if loaded is not None:
                snap, keys = loaded, changes.since(loaded.version)
        if snap is not None and keys is not None:
            if keys:
                found = self.reader.get_many(user_id, keys)
                live = [r for r in found.values() if r.is_recallable(now)]
                self.lexical.upsert(user_id, live)
                self.lexical.remove(user_id, {i for _, i in keys} - {r.id for r in live})
            self.lexical.advance(user_id, snap.version, changes.head)
            return snap
        # Read the log before the scan: a write landing in between is then applied again
        # by the next catch-up, which is harmless, instead of being missed.
        with collector_paused():
            snap = self.lexical.build(user_id, self.reader.scan(user_id), changes.head)
            if len(snap.records) >= FREEZE_AT:
                # Out of the cyclic collector's sight: with 100k memories loaded, each later
                # full collection took 1-4 s in the middle of some turn. Frozen objects are
                # still freed when nothing refers to them (the records hold no cycles); the
                # collection first frees any cycles that would otherwise be frozen for good.
                gc.collect()
                gc.freeze()
        return snap

    def _load(self, user_id: UserId, changes: ChangeLog) -> UserIndex | None:
        """Install the user's persisted snapshot if the change log still reaches its version."""
        store = self.persisted
        if store is None:
            return None
        key = user_key(user_id)
        try:
            version = store.version(key)
            if version is None or changes.since(version) is None:
                return None
            data = store.load(key)
            if data is None:
                return None
            entry = load_snapshot(data, decode_record, tag=SNAPSHOT_TAG)
        except SnapshotError as exc:
            log.warning("persisted lexical snapshot of %r unusable (%s): rebuilding", user_id, exc)
            with contextlib.suppress(Exception):
                store.delete(key)
            return None
        except Exception as exc:  # the database or the disk: recall goes on from a scan
            log.warning("could not read the persisted lexical snapshot of %r: %s", user_id, exc)
            return None
        if changes.since(entry.version) is None:  # replaced between the two reads
            return None
        return self.lexical.install(user_id, entry)

    def _keep(self, user_id: UserId, snap: UserIndex) -> UserIndex:
        """Persist a caught-up snapshot of a large user if its copy is missing or far behind.

        Serialized under the user's lock of this process (held by the caller), written
        under the user's write lock and only if no write landed since: writers purge
        copies under that lock, so a copy written here missed no purge. A snapshot built
        from a scan is then replaced by the one read back from its bytes: the same index,
        without a Python object per record (a 100k-memory user's records took hundreds of
        megabytes), and cheap to write again when a purge rewrites it.

        Returns:
            The snapshot to use from now on.
        """
        store = self.persisted
        if store is None or len(snap.records) < PERSIST_AT:
            return snap
        key = user_key(user_id)
        try:
            have = store.version(key)
            if have is not None:
                behind = self.log(user_id).since(have)
                if behind is not None and len(behind) <= PERSIST_LAG:
                    return snap
            data, _ = dump_snapshot(snap, encode_record, tag=SNAPSHOT_TAG)
            with self.locks.hold(user_id):
                if self.log(user_id).head != snap.version:
                    return snap
                store.save(key, data, snap.version)
            if isinstance(snap.records, dict):
                return self.lexical.install(
                    user_id, load_snapshot(data, decode_record, tag=SNAPSHOT_TAG)
                )
        except Exception as exc:  # a copy not written costs the next process a rebuild only
            log.warning("could not persist the lexical snapshot of %r: %s", user_id, exc)
        return snap


def _words(record: MemoryRecord) -> tuple[str, str, Any]:
    """Return the parts of a record a persisted snapshot copies words from."""
    return record.content, record.subject, record.value

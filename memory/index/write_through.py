"""Store first, index second: writing records through to Chroma, with repair markers.

The store is the source of truth. A write puts the records, the change-log entry and (if
Chroma is to be told) a repair marker in one store batch, applies them to the lexical
snapshot, then writes Chroma and removes the marker. A Chroma write that fails, or a crash
in between, leaves the marker; `repair` (from `consolidate`) and `rebuild` (from `reindex`)
make the index agree with the store again.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

from langgraph.store.base import BaseStore, PutOp

from memory.index.chroma import ChromaIndex, IndexMismatch, IndexUnavailable, fingerprint
from memory.lexical.changes import LexicalSnapshots
from memory.lifecycle import Change
from memory.progress import Progress, slices, stage
from memory.store.disk_purge import purge_sqlite
from memory.store.reads import PAGE, StoreReader
from memory.store.records import (
    MemoryRecord,
    UserId,
    namespace,
    repair_namespace,
    stable_id,
    utcnow,
)

log = logging.getLogger(__name__)
NOT_WRITTEN = ("withheld", "refused", "unchanged", "unmatched")
"""Change actions that name a record without writing it."""
EMBED_SLICE = 256
"""Records embedded and sent to Chroma per call by bulk work: the step its progress moves by
(the bundled encoder embeds in batches of 256)."""


class WriteThrough:
    """Writes one store's records and keeps its Chroma index and lexical snapshots in step."""

    def __init__(
        self,
        store: BaseStore,
        index: ChromaIndex | None,
        reader: StoreReader,
        snapshots: LexicalSnapshots,
    ) -> None:
        """Create the writer.

        Args:
            store: The source of truth.
            index: The Chroma index; None writes the store (and the snapshots) only.
            reader: Reads records and repair markers back.
            snapshots: The lexical snapshots and the change log each write is logged in.
        """
        self.store = store
        self.index = index
        self.reader = reader
        self.snapshots = snapshots

    def write(self, user_id: UserId, changes: list[Change], *, index: bool = True) -> None:
        """Write changed records to the store, then the lexical snapshot, then Chroma.

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
        ops: list[Any] = [
            PutOp(namespace(user_id, c.record.kind), c.record.id, c.record.to_store())
            for c in changes
        ]
        marker = None
        logged: tuple[str, str] | None = None
        if changes:
            put, old, new = self.snapshots.log_change(
                user_id, [(c.record.kind, c.record.id) for c in changes]
            )
            ops.append(put)
            logged = (old, new)
        if index and self.index is not None and (to_index or dead):
            marker = stable_id("write", *sorted(r.id for r in to_index), *sorted(dead))
            ops.append(
                PutOp(repair_namespace(user_id), marker, {"op": "write", "at": now.isoformat()})
            )
        if ops:
            self.store.batch(ops)
        self.snapshots.applied(user_id, live, dead, logged)
        if marker is None:
            return
        done = self._call(user_id, "upsert", lambda: self._upsert(user_id, to_index), marker)
        done &= self._call(user_id, "delete", lambda: self._delete(user_id, dead), marker)
        if done:
            self.store.delete(repair_namespace(user_id), marker)

    def delete(self, user_id: UserId, records: list[MemoryRecord]) -> None:
        """Delete records for good from the store, the lexical snapshot and Chroma.

        For good means from disk too: the embedded SQLite store's free pages and Chroma's
        files are rewritten without them (`memory.store.disk_purge`, `ChromaIndex.erase`).
        """
        ids = [r.id for r in records]
        keys = [(r.kind, r.id) for r in records]
        put, old, new = self.snapshots.log_change(user_id, keys, erase=True)
        self.store.batch([*(PutOp(namespace(user_id, r.kind), r.id, None) for r in records), put])
        self.snapshots.applied(user_id, [], ids, (old, new))
        purge_sqlite(self.store)
        index = self.index
        if index is not None and ids:
            # Rewrites the user's collection: a deleted vector stays in Chroma's files else.
            self._call(user_id, "delete", lambda: index.erase(user_id, ids))

    def put_all(
        self, user_id: UserId, records: list[MemoryRecord], progress: Progress | None = None
    ) -> None:
        """Write many records as they are (an import), `PAGE` per store batch, then Chroma.

        Reports the stages ``writing`` (records) and ``indexing`` (active records) to
        `progress`.
        """
        now = utcnow()
        for chunk in slices(progress, f"{user_id}: writing", records, PAGE):
            if not chunk:
                continue
            # Each slice carries its change-log entry in its own batch: a crash between
            # slices leaves no record that other processes would never hear of.
            put, old, new = self.snapshots.log_change(user_id, [(r.kind, r.id) for r in chunk])
            ops = [PutOp(namespace(user_id, r.kind), r.id, r.to_store()) for r in chunk]
            self.store.batch([*ops, put])
            live = [r for r in chunk if r.is_recallable(now)]
            dead = [r.id for r in chunk if not r.is_recallable(now)]
            self.snapshots.applied(user_id, live, dead, (old, new))
        if self.index is None:
            return
        active = [r for r in records if r.is_recallable(now)]
        for part in slices(progress, f"{user_id}: indexing", active, EMBED_SLICE):
            # After a failed slice the rest is left to `reindex`: the index is down.
            write = functools.partial(self._upsert, user_id, list(part))
            if not self._call(user_id, "upsert", write):
                return

    def erase_user(self, user_id: UserId, progress: Progress | None = None) -> int:
        """Delete every memory, vector and repair marker of a user; return how many memories.

        If the index is down, its drop is recorded as a repair: recall never serves a
        vector without its store record, and `reindex` finishes the job. Reports the stage
        ``deleting memories`` to `progress`.
        """
        # Marked first: a crash mid-way leaves a marker that global `reindex` /
        # `consolidate` find, even once no memory of the user is left to point at it.
        marker = stable_id("drop_user", user_id)
        self.store.put(repair_namespace(user_id), marker, {"op": "drop_user"})
        # The change log is reset before and after the deletes: every process's snapshot
        # of the user is rebuilt, and one rebuilt mid-way is rebuilt again (empty). A crash
        # in between is finished by `reindex`, which resets it too. No ids are kept.
        self.snapshots.reset(user_id)
        records = self.reader.scan(user_id, include_inactive=True)
        advance = stage(progress, f"{user_id}: deleting memories", len(records))
        for rec in records:
            self.store.delete(namespace(user_id, rec.kind), rec.id)
            advance(1)
        self.snapshots.reset(user_id)
        dropped = True
        if self.index is not None:
            index = self.index
            dropped = self._call(user_id, "drop_user", lambda: index.drop_user(user_id), marker)
        if dropped:
            self.clear_repairs(user_id)
        return len(records)

    def pending(self, user_id: UserId) -> int:
        """Return how many index writes failed for a user and wait for a repair."""
        return len(self.reader.items(repair_namespace(user_id)))

    def clear_repairs(self, user_id: UserId) -> None:
        """Delete a user's repair markers (the index was just made to agree)."""
        for item in self.reader.items(repair_namespace(user_id)):
            self.store.delete(item.namespace, item.key)

    def repair(
        self,
        user_id: UserId,
        now: datetime,
        *,
        dry_run: bool = False,
        progress: Progress | None = None,
    ) -> tuple[list[MemoryRecord], list[str]]:
        """Re-embed missing or stale vectors and remove orphans, while saves go on.

        Read in this order, a save landing meanwhile is never undone: its repair marker
        (if any) is not among those settled here unless its record is in the scan, and its
        vector is not among those judged orphans unless its record is gone.

        Reports the stage ``re-embedding`` (stale records; none on a dry run) to `progress`.

        Returns:
            The records re-embedded and the ids of the orphan vectors removed (or that
            would be, on a dry run).
        """
        assert self.index is not None, "repair needs an index"
        markers = self.reader.items(repair_namespace(user_id))
        if not dry_run:
            self.index.settle(user_id)  # strays of a promotion that crashed half-way
        have = self.index.fingerprints(user_id)
        records = self.reader.scan(user_id, include_inactive=True)
        live = {r.id: r for r in records if r.is_recallable(now)}
        stale = [r for i, r in live.items() if have.get(i) != fingerprint(r)]
        orphans = [i for i in have if i not in live]
        if not dry_run:
            for part in slices(progress, f"{user_id}: re-embedding", stale, EMBED_SLICE):
                self.index.upsert(list(part))
            self.index.delete(user_id, orphans)
            self.index.mark_current(user_id)  # every entry left is of today's layout
            for item in markers:
                self.store.delete(item.namespace, item.key)
        return stale, orphans

    def rebuild(
        self, user_id: UserId, progress: Progress | None = None, *, purge: bool = True
    ) -> int:
        """Rebuild a user's index from the store; return how many vectors were written.

        With `purge`, the user's old vectors leave Chroma's files too (their shard is
        rewritten); a rebuild of every user starts from an empty index instead and purges
        once. Reports the stage ``indexing`` (active records) to `progress`.
        """
        assert self.index is not None, "rebuild needs an index"
        self.index.drop_user(user_id, purge=purge)
        self.snapshots.reset(user_id)
        active = self.reader.scan(user_id)
        for part in slices(progress, f"{user_id}: indexing", active, EMBED_SLICE):
            self.index.upsert(list(part))
        self.clear_repairs(user_id)
        return len(active)

    def _upsert(self, user_id: UserId, records: list[MemoryRecord]) -> None:
        if self.index is not None and records:
            # The store's count bounds the user's vectors: most users are far below
            # `promote_at` and need no count in Chroma (a read of the whole shard).
            count = functools.partial(self.reader.count, user_id, self.index.promote_at + 1)
            self.index.upsert(records, count=count)

    def _delete(self, user_id: UserId, ids: list[str]) -> None:
        if self.index is not None and ids:
            self.index.delete(user_id, ids)

    def _call(
        self, user_id: UserId, op: str, call: Callable[[], None], marker: str | None = None
    ) -> bool:
        """Run an index call; on failure leave a repair marker. Return True on success."""
        try:
            call()
            return True
        except (IndexUnavailable, IndexMismatch) as exc:
            log.warning("index %s failed, recorded for reindex: %s", op, exc)
            self.store.put(
                repair_namespace(user_id),
                marker or stable_id(op, utcnow().isoformat()),
                {"op": op, "error": str(exc), "at": utcnow().isoformat()},
            )
            return False

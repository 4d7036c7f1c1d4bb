"""Maintenance of stored memories: consolidate (tidy, then repair the index) and reindex.

Both go one user at a time and report their stages to an optional `Progress` callback, each
label led by the user (and by ``[i/n]`` when they go over more than one user).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from memory.index.write_through import WriteThrough
from memory.lifecycle import Policy, consolidate
from memory.progress import Progress, prefixed, stage
from memory.store.locks import UserLocks
from memory.store.reads import StoreReader
from memory.store.records import UserId, check_user_id


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


class Maintenance:
    """Consolidates and reindexes one store's memories, one user at a time."""

    def __init__(
        self, reader: StoreReader, write_through: WriteThrough, locks: UserLocks, policy: Policy
    ) -> None:
        """Create it over a store's reader, writer and locks, with the lifecycle `policy`."""
        self.reader = reader
        self.write_through = write_through
        self.locks = locks
        self.policy = policy

    def users(self, user_id: UserId | None) -> list[UserId]:
        """Return one user, or (None) every user with memories or repairs owed."""
        if user_id is not None:
            return [user_id]
        return [check_user_id(u) for u in self.reader.users(with_repairs=True)]

    def consolidate(
        self,
        user_id: UserId | None,
        *,
        dry_run: bool,
        now: datetime,
        progress: Progress | None = None,
    ) -> ConsolidationReport:
        """Tidy one user's or every user's memories, then repair the index.

        See `MemoryService.consolidate`. Reports, per user, the stages ``tidying`` (one
        step) and ``re-embedding`` (stale records, with an index) to `progress`.
        """
        report = ConsolidationReport()
        for uid, told in self._each(user_id, progress):
            with self.locks.hold(uid):
                # Under the user's lock: a save landing mid-way would otherwise be undone.
                tidied = stage(told, f"{uid}: tidying", 1)
                self._tidy(uid, dry_run, now, report)
                tidied(1)
            # Outside the user's lock: re-embedding many memories must not hold up saves.
            if self.write_through.index is not None:
                stale, orphans = self.write_through.repair(uid, now, dry_run=dry_run, progress=told)
                report.reindexed += len(stale)
                report.orphans_removed += len(orphans)
                report.changes += [f"{uid}: reindexed: {r.content}" for r in stale]
                report.changes += [f"{uid}: removed orphan vector {i}" for i in orphans]
        return report

    def reindex(self, user_id: UserId | None, progress: Progress | None = None) -> dict[str, int]:
        """Rebuild the index from the store; return per user how many vectors were written.

        Every user: the index is emptied first (collections of every layout, and vectors
        of users the store no longer has), then written anew and its files purged once.
        Reports, per user, the stage ``indexing`` (active records) to `progress`.
        """
        index = self.write_through.index
        assert index is not None, "reindex needs an index"
        if user_id is not None:
            return {user_id: self.write_through.rebuild(user_id, progress)}
        users = self._each(None, progress)
        index.reset()
        written: dict[str, int] = {
            uid: self.write_through.rebuild(uid, told, purge=False) for uid, told in users
        }
        index.purge_files()
        return written

    def _each(
        self, user_id: UserId | None, progress: Progress | None
    ) -> list[tuple[UserId, Progress | None]]:
        """Return the users to work on, each with the callback its stages go to."""
        users = self.users(user_id)
        if len(users) == 1:
            return [(users[0], progress)]
        return [(u, prefixed(progress, f"[{i}/{len(users)}] ")) for i, u in enumerate(users, 1)]

    def _tidy(self, uid: UserId, dry_run: bool, now: datetime, report: ConsolidationReport) -> None:
        """Merge, resolve, archive and sweep one user's memories."""
        report.users += 1
        records = self.reader.scan(uid, include_inactive=True)
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
            self.write_through.write(uid, list(unique.values()), index=False)

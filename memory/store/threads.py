"""Which user opened each thread.

The first user of a thread owns it, and only that user may continue it; `delete_user`
deletes the threads a user owns.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from langgraph.store.base import BaseStore, Item, PutOp

from memory.access import AccessDenied
from memory.progress import Progress, stage
from memory.store.checkpoints import Rewrite, rewrite_latest
from memory.store.locks import UserLocks
from memory.store.reads import StoreReader
from memory.store.records import UserId, thread_owners_namespace, threads_namespace, utcnow

CLAIM_MEMO_S = 10.0
"""How long a claim this process checked is taken as still true (one turn's length)."""
CLAIM_MEMO_SIZE = 10_000
CLAIM_KEY = "\x00thread-claims"
"""The lock key of thread claims: no user label can be it (labels are checked, never empty)."""


class ThreadNotYours(AccessDenied):
    """A thread id that another user opened: its messages and memories are not this user's."""

    @classmethod
    def of(cls, thread_id: str) -> ThreadNotYours:
        """Return the refusal of `thread_id`, in the words every caller shows."""
        return cls(
            f"thread {thread_id!r} belongs to another user: start a new thread "
            "(the thread id is not yours to continue)"
        )


class ThreadRegistry:
    """The threads of one store's users, and who owns each."""

    def __init__(self, store: BaseStore, reader: StoreReader, lock_dir: str | None = None) -> None:
        """Create the registry of a store.

        Args:
            store: Where owners are recorded.
            reader: Lists a user's threads.
            lock_dir: A folder beside an embedded store: claims take a file lock there, so
                two processes on one SQLite file cannot both claim a new thread. (On
                Postgres the claim takes an advisory lock instead.)
        """
        self.store = store
        self.reader = reader
        self._locks = UserLocks.of(store)
        self._lock_file = os.path.join(lock_dir, ".thread-claims.lock") if lock_dir else None
        # Claims this process made or checked in the last moments: one turn checks its
        # thread once (the runner before the graph, the graph's nodes after) without
        # reading the owner again. Short-lived, so another process's delete is seen soon.
        self._seen: dict[str, tuple[str, float]] = {}

    def claim(self, user_id: UserId, thread_id: str) -> bool:
        """Claim a thread for a user, atomically: the first user of a thread owns it.

        The owner is read and, if there is none, written under one lock (this process's,
        the database's advisory lock on Postgres, a file lock beside an embedded store), so
        of two first turns racing on a new thread exactly one wins; the other is refused
        before any of its words is read, stored or archived.

        Returns:
            True if this call made the user the owner (a new thread), False if they already were.

        Raises:
            ThreadNotYours: If another user owns the thread.
        """
        seen = self._seen.get(thread_id)
        if seen is not None and seen[0] == user_id and time.monotonic() - seen[1] < CLAIM_MEMO_S:
            return False
        with self._locks.hold(CLAIM_KEY), self._file_lock():
            owner = self.owner(thread_id)
            if owner is not None and owner != user_id:
                raise ThreadNotYours.of(thread_id)
            if len(self._seen) > CLAIM_MEMO_SIZE:
                self._seen.clear()
            if owner is not None:
                self._seen[thread_id] = (user_id, time.monotonic())
                return False
            at = utcnow().isoformat()
            self.store.batch(
                [
                    PutOp(thread_owners_namespace(), thread_id, {"user_id": user_id, "at": at}),
                    PutOp(
                        threads_namespace(user_id), thread_id, {"thread_id": thread_id, "at": at}
                    ),
                ]
            )
            self._seen[thread_id] = (user_id, time.monotonic())
            return True

    def remember(self, user_id: UserId, thread_id: str) -> None:
        """Record that a thread belongs to a user (see `claim`)."""
        self.claim(user_id, thread_id)

    @contextmanager
    def _file_lock(self) -> Iterator[None]:
        if self._lock_file is None:
            yield
            return
        os.makedirs(os.path.dirname(self._lock_file), exist_ok=True)
        with open(self._lock_file, "a") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    def owner(self, thread_id: str) -> str | None:
        """Return the user who opened a thread (None if no turn of it was seen)."""
        item = self.store.get(thread_owners_namespace(), thread_id)
        return str(item.value["user_id"]) if item is not None else None

    def of_user(self, user_id: UserId) -> list[str]:
        """Return the ids of the threads recorded for a user."""
        return [item.key for item in self.reader.items(threads_namespace(user_id))]

    def _owned(self, user_id: UserId, listed: list[Item]) -> list[Item]:
        # Only the threads this user opened: a listing must never reach another's thread.
        return [i for i in listed if self.owner(i.key) in (user_id, None)]

    def rewrite_owned(self, user_id: UserId, checkpointer: Any, rewrite: Rewrite) -> int:
        """Rewrite the latest state of every thread a user opened; prune their history.

        Returns:
            How many threads changed.
        """
        listed = self.reader.items(threads_namespace(user_id))
        return sum(
            rewrite_latest(checkpointer, i.key, rewrite) for i in self._owned(user_id, listed)
        )

    def delete_owned(
        self, user_id: UserId, checkpointer: Any | None, progress: Progress | None = None
    ) -> None:
        """Delete the threads a user opened, and the user's list of threads.

        Args:
            user_id: Whose threads.
            checkpointer: If given, the threads' checkpoints are deleted from it too.
            progress: Told the stage ``deleting threads`` (threads).
        """
        self._seen = {t: seen for t, seen in self._seen.items() if seen[0] != user_id}
        listed = self.reader.items(threads_namespace(user_id))
        owned = self._owned(user_id, listed)
        advance = stage(progress, f"{user_id}: deleting threads", len(owned))
        for item in owned:
            if checkpointer is not None:
                checkpointer.delete_thread(item.key)
            self.store.delete(thread_owners_namespace(), item.key)
            advance(1)
        for item in listed:
            self.store.delete(item.namespace, item.key)

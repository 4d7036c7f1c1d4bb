"""Who may write into an index collection, and who may rewrite it.

A compaction (a hard forget, `memory.index.layout.compact`) copies a collection into a new
one. A write landing in the old collection meanwhile would be lost, or a deleted vector
copied back, so writes and compactions of one collection exclude each other: among the
threads of a process by a lock of the process, and among processes on one Postgres store
by advisory locks of the database (shared by writers, exclusive for a compaction).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager

from memory.store.locks import PostgresWriterLocks, WriterLockTimeout


class CollectionLocks:
    """The write and rewrite locks of one index's collections."""

    def __init__(
        self, unavailable: type[Exception], *, after_write: Callable[[], None] | None = None
    ) -> None:
        """Create the locks of one process; other processes are shut out once `across` is set.

        Args:
            unavailable: Raised (with the lock's message) when another process kept a
                collection locked for too long.
            after_write: Called at the end of every write, still holding its locks (the
                index scrubs the files a new collection wrote, `memory.index.files`).
        """
        self.unavailable = unavailable
        self.after_write = after_write
        self.across: PostgresWriterLocks | None = None
        # Re-entrant: a write may promote a user, which writes again.
        self._local = threading.RLock()

    @contextmanager
    def in_process(self) -> Iterator[None]:
        """Keep every write of this process out (not other processes')."""
        with self._local:
            yield

    @contextmanager
    def writing(self, name: str, *, rewrite: bool = False) -> Iterator[None]:
        """Hold the right to write into collection `name` (to rewrite it, with `rewrite`)."""
        with self._local, ExitStack() as held:
            if self.across is not None:
                try:
                    held.enter_context(self.across.hold_collection(name, exclusive=rewrite))
                except WriterLockTimeout as exc:
                    raise self.unavailable(str(exc)) from exc
            try:
                yield
            finally:
                if self.after_write is not None:
                    self.after_write()

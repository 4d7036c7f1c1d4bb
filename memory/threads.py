"""Which user opened each thread.

The first user of a thread owns it, and only that user may continue it; `delete_user`
deletes the threads a user owns.
"""

from __future__ import annotations

from typing import Any

from langgraph.store.base import BaseStore, PutOp

from memory.access import AccessDenied
from memory.progress import Progress, stage
from memory.reads import StoreReader
from memory.records import UserId, thread_owners_namespace, threads_namespace, utcnow


class ThreadNotYours(AccessDenied):
    """A thread id that another user opened: its messages and memories are not this user's."""


class ThreadRegistry:
    """The threads of one store's users, and who owns each."""

    def __init__(self, store: BaseStore, reader: StoreReader) -> None:
        """Create the registry of a store (`reader` lists a user's threads)."""
        self.store = store
        self.reader = reader

    def remember(self, user_id: UserId, thread_id: str) -> None:
        """Record that a thread belongs to a user (see `MemoryService.remember_thread`).

        Raises:
            ThreadNotYours: If another user opened the thread.
        """
        owner = self.owner(thread_id)
        if owner is not None and owner != user_id:
            raise ThreadNotYours(
                f"thread {thread_id!r} belongs to another user: start a new thread "
                "(the thread id is not yours to continue)"
            )
        if owner is None:
            at = utcnow().isoformat()
            self.store.batch(
                [
                    PutOp(thread_owners_namespace(), thread_id, {"user_id": user_id, "at": at}),
                    PutOp(
                        threads_namespace(user_id), thread_id, {"thread_id": thread_id, "at": at}
                    ),
                ]
            )

    def owner(self, thread_id: str) -> str | None:
        """Return the user who opened a thread (None if no turn of it was seen)."""
        item = self.store.get(thread_owners_namespace(), thread_id)
        return str(item.value["user_id"]) if item is not None else None

    def of_user(self, user_id: UserId) -> list[str]:
        """Return the ids of the threads recorded for a user."""
        return [item.key for item in self.reader.items(threads_namespace(user_id))]

    def delete_owned(
        self, user_id: UserId, checkpointer: Any | None, progress: Progress | None = None
    ) -> None:
        """Delete the threads a user opened, and the user's list of threads.

        Args:
            user_id: Whose threads.
            checkpointer: If given, the threads' checkpoints are deleted from it too.
            progress: Told the stage ``deleting threads`` (threads).
        """
        listed = self.reader.items(threads_namespace(user_id))
        # Only the threads this user opened: a listing must never reach another's thread.
        owned = [i for i in listed if self.owner(i.key) in (user_id, None)]
        advance = stage(progress, f"{user_id}: deleting threads", len(owned))
        for item in owned:
            if checkpointer is not None:
                checkpointer.delete_thread(item.key)
            self.store.delete(thread_owners_namespace(), item.key)
            advance(1)
        for item in listed:
            self.store.delete(item.namespace, item.key)

"""Per-user write locks: one lock per user among threads, and among processes on Postgres.

Two turns of one user in parallel (two threads, or a recall count landing during a save)
would otherwise read the same records, and the last write would undo the other. Threads of
a process wait on a lock of the process; on Postgres, processes also wait on an advisory
lock of the database (`PostgresWriterLocks`). `in_worker_thread` makes the async forms of
blocking methods.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import logging
import threading
import time
import weakref
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from typing import Any, ParamSpec, TypeVar

log = logging.getLogger(__name__)

WRITER_LOCK_TIMEOUT = 30.0

P = ParamSpec("P")
T = TypeVar("T")


def in_worker_thread(fn: Callable[P, T]) -> Callable[P, Coroutine[Any, Any, T]]:
    """Return the async form of a blocking method: the same call, run in a worker thread.

    Async callers then never block their event loop on SQLite, Postgres or Chroma.
    """

    @functools.wraps(fn)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        return await asyncio.to_thread(fn, *args, **kwargs)

    wrapper.__doc__ = f"Async form of `{fn.__name__}` (runs it in a worker thread)."
    return wrapper


def _advisory_key(text: str) -> int:
    """Return a signed 64-bit advisory-lock key for a text (the first 8 bytes of its SHA-256)."""
    digest = hashlib.sha256(text.encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


class WriterLockTimeout(RuntimeError):
    """Another process kept a user's memories locked for too long."""


class PostgresSession:
    """One autocommit connection of this process to a database, reopened when it drops.

    A restarted server drops the session; the next call opens a new one and tries once more.
    Calls are serialized: the connection is shared by every thread of the process.
    """

    def __init__(self, conninfo: str) -> None:
        """Create the session; the connection is opened on first use."""
        self.conninfo = conninfo
        self._conn: Any = None
        self._mutex = threading.Lock()

    def run(self, call: Callable[[Any], T]) -> T:
        """Return `call(connection)`, on a new connection if the old one was dropped."""
        import psycopg

        with self._mutex:
            try:
                return call(self._connection())
            except psycopg.OperationalError:
                self._conn = None
            return call(self._connection())

    def _connection(self) -> Any:
        import psycopg

        if self._conn is None or self._conn.closed:
            self._conn = psycopg.connect(self.conninfo, autocommit=True, connect_timeout=5)
        return self._conn

    def close(self) -> None:
        """Close the connection (a session's advisory locks are released by Postgres)."""
        with self._mutex:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


class PostgresWriterLocks:
    """Per-user write locks shared by every process on one Postgres database.

    Two server workers (or a worker and the CLI) saving the same user at the same moment
    would each reconcile against the store as it was before the other's write, and store a
    duplicate or undo a supersede. A Postgres advisory lock per user serializes them.

    One connection per process, used only for these locks; a lock is taken with
    `pg_try_advisory_lock` and retried, so waiting for one user never holds the connection
    from the others. Within a process the caller serializes threads of one user itself.
    """

    def __init__(self, conninfo: str, *, timeout: float = WRITER_LOCK_TIMEOUT) -> None:
        """Create the lock set; the connection is opened on first use.

        Args:
            conninfo: The database's connection string.
            timeout: Seconds to wait for a lock before `WriterLockTimeout`.
        """
        self.conninfo = conninfo
        self.timeout = timeout
        # Its own session: advisory locks belong to the session that took them.
        self._session = PostgresSession(conninfo)

    @staticmethod
    def key(user_id: str) -> int:
        """Return the advisory-lock key of a user (a signed 64-bit hash of the id)."""
        return _advisory_key(f"memory-agent:{user_id}")

    def _query(self, sql: str, key: int) -> bool:
        # A dropped session took every lock it held with it.
        return self._session.run(lambda conn: bool(conn.execute(sql, (key,)).fetchone()[0]))

    @contextmanager
    def hold(self, user_id: str) -> Iterator[None]:
        """Hold the write lock of a user.

        Raises:
            WriterLockTimeout: If another process holds it for longer than `timeout`.
        """
        with self._held(self.key(user_id), f"the memories of user {user_id!r}", shared=False):
            yield

    @contextmanager
    def hold_collection(self, name: str, *, exclusive: bool) -> Iterator[None]:
        """Hold the lock of an index collection: shared to write into it, exclusive to rewrite it.

        Users of different processes write into one shared shard at once; a compaction
        copies the shard into a new collection, and a write landing in the old one meanwhile
        would be lost (or a deleted vector copied back). Writers share the lock; a
        compaction holds it alone.

        Raises:
            WriterLockTimeout: If another process holds it for longer than `timeout`.
        """
        key = _advisory_key(f"memory-agent-collection:{name}")
        with self._held(key, f"the index collection {name}", shared=not exclusive):
            yield

    @contextmanager
    def _held(self, key: int, what: str, *, shared: bool) -> Iterator[None]:
        mode = "_shared" if shared else ""
        deadline = time.monotonic() + self.timeout
        delay = 0.005
        while not self._query(f"SELECT pg_try_advisory_lock{mode}(%s)", key):
            if time.monotonic() > deadline:
                raise WriterLockTimeout(
                    f"another process has held {what} for more than {self.timeout:.0f}s; "
                    "nothing was written"
                )
            time.sleep(delay)
            delay = min(delay * 2, 0.1)
        try:
            yield
        finally:
            try:
                self._query(f"SELECT pg_advisory_unlock{mode}(%s)", key)
            except Exception as exc:  # the session is gone, and its locks with it
                log.warning("could not release the lock of %s: %s", what, exc)

    def close(self) -> None:
        """Close the lock connection (locks still held are released by Postgres)."""
        self._session.close()


def postgres_conninfo(store: Any) -> str | None:
    """Return the connection string of a Postgres store (sync or async, on a pool), else None.

    Other stores need no lock across processes: in-memory stores live in one process, and
    the embedded SQLite default is meant for one process at a time (see the README).
    """
    if not type(store).__module__.startswith("langgraph.store.postgres"):
        return None
    conninfo = getattr(getattr(store, "conn", None), "conninfo", None)
    return conninfo if isinstance(conninfo, str) and conninfo else None


class UserLocks:
    """The write locks of one store's users: among threads, and on Postgres among processes.

    Get one with `UserLocks.of(store)`: every service on a store must wait on the same
    locks. A second service on the same store in one process (another agent's, the CLI's
    beside a graph's) would otherwise reconcile against records the first is rewriting:
    the change log keeps its lexical snapshots right, but cannot make writes wait.
    """

    def __init__(self, conninfo: str | None = None) -> None:
        """Create the locks; `conninfo` names the Postgres database to lock across processes."""
        self.shared = PostgresWriterLocks(conninfo) if conninfo else None
        self._locks: dict[str, threading.RLock] = {}
        self._guard = threading.Lock()

    @classmethod
    def of(cls, store: Any) -> UserLocks:
        """Return the locks of a store, the same for every caller in this process.

        Stores on one Postgres database share one set: they share one advisory-lock
        session too, whose locks do not exclude each other.
        """
        conninfo = postgres_conninfo(store)
        with _REGISTRY_GUARD:
            if conninfo is not None:
                if conninfo not in _BY_DATABASE:
                    _BY_DATABASE[conninfo] = cls(conninfo)
                return _BY_DATABASE[conninfo]
            try:
                return _BY_STORE.setdefault(store, cls())
            except TypeError:  # a store that cannot be weakly referenced keeps its own
                return cls()

    def local(self, user_id: str) -> threading.RLock:
        """Return the lock of a user among the threads of this process (re-entrant)."""
        with self._guard:
            return self._locks.setdefault(user_id, threading.RLock())

    @contextmanager
    def hold(self, user_id: str) -> Iterator[None]:
        """Hold a user's write lock: this process's first, then the database's (Postgres).

        Raises:
            WriterLockTimeout: If another process holds the user for too long.
        """
        with self.local(user_id):
            if self.shared is None:
                yield
            else:
                with self.shared.hold(user_id):
                    yield


# The one registry left in a process: locks must be shared by every service on a store (see
# `UserLocks`), while lexical snapshots live on each service and the change log syncs them.
_BY_STORE: weakref.WeakKeyDictionary[Any, UserLocks] = weakref.WeakKeyDictionary()
_BY_DATABASE: dict[str, UserLocks] = {}
_REGISTRY_GUARD = threading.Lock()

"""Where persisted lexical snapshots live.

A file per user beside the SQLite store, or a row of our own table in Postgres;
`memory.lexical.changes` decides when they are read and written.
"""

from __future__ import annotations

import contextlib
import glob
import inspect
import logging
import os
import sqlite3
import threading
from typing import Any, Protocol

import orjson
from langgraph.store.base import BaseStore

from memory.lexical.snapshot import snapshot_version
from memory.store.locks import PostgresSession, postgres_conninfo
from memory.store.records import MemoryRecord

log = logging.getLogger(__name__)


def encode_record(record: MemoryRecord) -> bytes:
    """Encode a record for a persisted snapshot.

    Without its history: recall never reads it, and it holds past wordings (a superseded
    value, the words of a record deleted since) that a copy must not keep.
    """
    return record.model_dump_json(exclude={"history"}, exclude_defaults=True).encode()


def decode_record(raw: bytes) -> MemoryRecord:
    """Decode a record `encode_record` wrote."""
    return MemoryRecord.from_store(orjson.loads(raw))


class SnapshotStore(Protocol):
    """Where persisted snapshots live, one per user key (`memory.store.records.user_key`)."""

    def version(self, key: str) -> str | None:
        """Return the version of the persisted snapshot (reading its header only), or None."""
        ...

    def load(self, key: str) -> bytes | None:
        """Return the persisted snapshot's bytes, or None."""
        ...

    def save(self, key: str, data: bytes, version: str) -> None:
        """Replace the persisted snapshot (atomically: readers see the old or the new one)."""
        ...

    def delete(self, key: str) -> None:
        """Delete the persisted snapshot, if any."""
        ...


class SnapshotFiles:
    """Persisted snapshots as files in a private directory (beside the SQLite store)."""

    HEADER_BYTES = 65_536

    def __init__(self, directory: str) -> None:
        """Keep snapshots in `directory` (created, mode 700, on the first save)."""
        self.directory = directory

    def path(self, key: str) -> str:
        """Return the file of a user key's snapshot."""
        return os.path.join(self.directory, f"{key}.lexical")

    def version(self, key: str) -> str | None:
        """See `SnapshotStore.version`."""
        try:
            with open(self.path(key), "rb") as fh:
                return snapshot_version(fh.read(self.HEADER_BYTES))
        except FileNotFoundError:
            return None

    def load(self, key: str) -> bytes | None:
        """See `SnapshotStore.load`."""
        try:
            with open(self.path(key), "rb") as fh:
                return fh.read()
        except FileNotFoundError:
            return None

    def save(self, key: str, data: bytes, version: str) -> None:
        """See `SnapshotStore.save`: written aside, then renamed over the old file."""
        if not os.path.isdir(self.directory):
            os.makedirs(self.directory, mode=0o700, exist_ok=True)
        # One temporary name per writer (two processes may save at once), all matching
        # the pattern `delete` sweeps, so it finds what a crash left behind.
        tmp = f"{self.path(key)}.{os.getpid()}-{threading.get_ident()}.tmp"
        fd = os.open(tmp, os.O_CREAT | os.O_TRUNC | os.O_WRONLY, 0o600)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, self.path(key))
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    def delete(self, key: str) -> None:
        """See `SnapshotStore.delete` (also a temporary file a crashed save left)."""
        for path in [self.path(key), *glob.glob(glob.escape(self.path(key)) + ".*.tmp")]:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)


SNAPSHOT_TABLE = "memory_agent_lexical_snapshots"
SNAPSHOT_TABLE_DDL = (
    f"CREATE TABLE IF NOT EXISTS {SNAPSHOT_TABLE} (user_key text PRIMARY KEY, "
    "version text NOT NULL, data bytea NOT NULL, saved_at timestamptz NOT NULL DEFAULT now())",
    # EXTERNAL: stored out of line uncompressed; it is read whole, and fast.
    f"ALTER TABLE {SNAPSHOT_TABLE} ALTER COLUMN data SET STORAGE EXTERNAL",
)
"""What `memory-agent setup` (`open_backends(setup=True)`) runs for the snapshot table."""


class SnapshotTable:
    """Persisted snapshots as rows of a table of our own in the store's Postgres database.

    Not in the store: a 100k-memory snapshot is tens of megabytes, which the store would
    hold as JSON. `memory-agent setup` (and the graph's first use of a database) creates
    the table with the store's indexes; a process that finds it missing on its first save
    creates it then, never on import. One connection per process and database, used only
    for this.
    """

    _by_database: dict[str, SnapshotTable] = {}
    _guard = threading.Lock()

    def __init__(self, conninfo: str) -> None:
        """Create the table access; the connection is opened on first use."""
        self.conninfo = conninfo
        self._session = PostgresSession(conninfo)
        self._created = False

    @classmethod
    def of(cls, conninfo: str) -> SnapshotTable:
        """Return the one table access of a database in this process."""
        with cls._guard:
            return cls._by_database.setdefault(conninfo, cls(conninfo))

    def _run(self, sql: str, params: tuple[Any, ...], *, fetch: bool = False) -> Any:
        import psycopg

        def call(conn: Any) -> Any:
            # Binary results: a bytea in text form is hex, twice the size to parse.
            cur = conn.execute(sql, params, binary=True)
            return cur.fetchone() if fetch else None

        try:
            return self._session.run(call)
        except psycopg.errors.UndefinedTable:
            return None

    def version(self, key: str) -> str | None:
        """See `SnapshotStore.version`."""
        row = self._run(
            f"SELECT version FROM {SNAPSHOT_TABLE} WHERE user_key = %s", (key,), fetch=True
        )
        return str(row[0]) if row else None

    def load(self, key: str) -> bytes | None:
        """See `SnapshotStore.load`."""
        row = self._run(
            f"SELECT data FROM {SNAPSHOT_TABLE} WHERE user_key = %s", (key,), fetch=True
        )
        return bytes(row[0]) if row else None

    def save(self, key: str, data: bytes, version: str) -> None:
        """See `SnapshotStore.save`."""
        if not self._created:
            # DDL only where the table is missing: an app role may not be allowed to run it.
            row = self._run("SELECT to_regclass(%s) IS NULL", (SNAPSHOT_TABLE,), fetch=True)
            if row is None or row[0]:
                for sql in SNAPSHOT_TABLE_DDL:
                    self._run(sql, ())
            self._created = True
        self._run(
            f"INSERT INTO {SNAPSHOT_TABLE} (user_key, version, data) VALUES (%s, %s, %s) "
            "ON CONFLICT (user_key) DO UPDATE SET version = EXCLUDED.version, "
            "data = EXCLUDED.data, saved_at = now()",
            (key, version, data),
        )

    def delete(self, key: str) -> None:
        """See `SnapshotStore.delete`.

        The row is gone for every reader at once; Postgres overwrites its dead bytes on
        disk at the table's next vacuum, as for any deleted store row.
        """
        self._run(f"DELETE FROM {SNAPSHOT_TABLE} WHERE user_key = %s", (key,))


def snapshot_store(store: BaseStore) -> SnapshotStore | None:
    """Return where a store's users' snapshots are persisted, or None for stores that don't.

    Postgres (sync or async): a table in its database. The SQLite store (sync or async) of
    a file: the ``lexical`` directory beside the file (the memory home). Anything else,
    including in-memory databases: None.
    """
    conninfo = postgres_conninfo(store)
    if conninfo is not None:
        return SnapshotTable.of(conninfo)
    conn = getattr(store, "conn", None)
    path = ""
    if isinstance(conn, sqlite3.Connection):
        lock = getattr(store, "lock", None)
        with lock if lock is not None else contextlib.nullcontext():
            rows = conn.execute("PRAGMA database_list").fetchall()
        path = next((str(r[2]) for r in rows if r[1] == "main"), "")
    elif type(conn).__module__.startswith("aiosqlite"):
        # The async SQLite store (what the graph runs on): its connection lives in its own
        # thread, so the file is read from the connector aiosqlite was given instead.
        connector = getattr(conn, "_connector", None)
        found = inspect.getclosurevars(connector).nonlocals.get("database") if connector else None
        path = str(os.fspath(found)) if isinstance(found, str | os.PathLike) else ""
        if path == ":memory:" or path.startswith("file:"):
            path = ""
    if not path:
        return None
    return SnapshotFiles(os.path.join(os.path.dirname(os.path.abspath(path)), "lexical"))

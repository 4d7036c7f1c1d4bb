"""The one place that opens persistence: checkpointer, store and Chroma index.

Embedded default: SQLite checkpointer and SQLite store under a home directory, with an
embedded Chroma beside them. With a Postgres URL: `PostgresSaver` and `PostgresStore` on a
connection pool. With a Chroma host: a `chroma run` server instead of embedded Chroma.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress
from dataclasses import dataclass
from typing import Any

from memory.index.chroma import ChromaIndex
from memory.index.embeddings import make_embedder
from memory.lexical.persisted import SNAPSHOT_TABLE_DDL

log = logging.getLogger(__name__)
_POOL_KWARGS: dict[str, Any] = {"autocommit": True, "prepare_threshold": 0}


# Saving a memory looks up the user's records with the same subject or the same statement
# through store filters. Without these the database reads every record of the namespace
# (100k memories: 165 ms per candidate on SQLite). Hash indexes on Postgres: a b-tree entry
# cannot hold a long value, and the table is shared with every other store namespace.
_SQLITE_INDEXES = (
    "CREATE INDEX IF NOT EXISTS memory_agent_subject_idx"
    " ON store (json_extract(value, '$.subject'))",
    "CREATE INDEX IF NOT EXISTS memory_agent_content_idx"
    " ON store (json_extract(value, '$.content'))",
)
_POSTGRES_INDEXES = (
    "DROP INDEX CONCURRENTLY IF EXISTS memory_agent_subject_idx",  # an earlier b-tree
    "CREATE INDEX CONCURRENTLY IF NOT EXISTS memory_agent_subject_hash_idx"
    " ON store USING hash ((value->'subject'))",
    "CREATE INDEX CONCURRENTLY IF NOT EXISTS memory_agent_content_idx"
    " ON store USING hash ((value->'content'))",
)
# What `memory-agent setup` runs after the store's own setup: the indexes first, so a
# refused snapshot-table statement cannot leave a database without them.
_POSTGRES_SETUP = (*_POSTGRES_INDEXES, *SNAPSHOT_TABLE_DDL)


def _pool_options(row_factory: Any) -> dict[str, Any]:
    """Return the options shared by the sync and async Postgres pools.

    The pools are also given `check`: connections die when Postgres restarts, so each is
    checked before it is lent out.
    """
    return {
        "kwargs": {**_POOL_KWARGS, "row_factory": row_factory},
        "open": False,
        "min_size": 1,
        "max_size": 8,
        "timeout": 10,
    }


class BackendUnavailable(RuntimeError):
    """A database or index could not be opened."""


@dataclass(frozen=True)
class BackendConfig:
    """Where memory lives.

    Attributes:
        home: Directory of the embedded default (SQLite files and embedded Chroma).
        database_url: A `postgresql://` URL; when set, Postgres replaces SQLite.
        chroma_path: Embedded Chroma directory; defaults to `<home>/chroma`.
        chroma_host: A `chroma run` server; when set, it replaces embedded Chroma.
        chroma_port: Port of the Chroma server.
        embeddings: Embeddings spec (`local` or `openai:<model>`).
        embeddings_base_url: Endpoint for `openai:` embeddings.
        embeddings_api_key: Key for `openai:` embeddings.

    """

    home: str = ".memory-agent"
    database_url: str | None = None
    chroma_path: str | None = None
    chroma_host: str | None = None
    chroma_port: int = 8000
    embeddings: str = "local"
    embeddings_base_url: str | None = None
    embeddings_api_key: str | None = None

    def describe(self) -> str:
        """Return a one-line description without credentials."""
        db = _redact(self.database_url) if self.database_url else f"SQLite in {self.home}"
        index = (
            f"Chroma server {self.chroma_host}:{self.chroma_port}"
            if self.chroma_host
            else f"embedded Chroma in {self.resolved_chroma_path()}"
        )
        return f"{db}; {index}; embeddings {self.embeddings}"

    def resolved_chroma_path(self) -> str:
        """Return the embedded Chroma directory."""
        return self.chroma_path or os.path.join(self.home, "chroma")


@dataclass
class Backends:
    """What a running agent persists to."""

    checkpointer: Any
    store: Any
    index: ChromaIndex
    config: BackendConfig


# Memories are personal data: what the embedded default creates is readable by its owner only.
PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600


def private_dir(path: str) -> None:
    """Create a directory, and any missing parent, readable by its owner only.

    Directories that already exist keep their mode: the path may be one the user shares on
    purpose (a warning is logged if others can read it).
    """
    missing = []
    current = os.path.abspath(path)
    while not os.path.isdir(current):
        missing.append(current)
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    for directory in reversed(missing):
        try:
            os.mkdir(directory, PRIVATE_DIR_MODE)
        except FileExistsError:
            if not os.path.isdir(directory):
                raise
            continue  # created meanwhile by another process; its mode is its creator's
        # mkdir's mode passes through the umask; set it exactly.
        os.chmod(directory, PRIVATE_DIR_MODE)
    if not missing and os.stat(path).st_mode & 0o077:
        log.warning("%s can be read by other users of this machine; chmod 700 it", path)


def _private_file(path: str) -> None:
    """Create a database file readable by its owner only, or make an existing one so.

    Created empty before SQLite opens it, so it never exists with a wider mode; SQLite gives
    its -wal and -shm files the mode of the database file.
    """
    with suppress(FileExistsError):
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, PRIVATE_FILE_MODE))
    for name in (path, f"{path}-wal", f"{path}-shm"):
        try:
            if os.stat(name).st_mode & 0o077:
                os.chmod(name, PRIVATE_FILE_MODE)
        except FileNotFoundError:
            continue
        except OSError as exc:  # e.g. a file of another owner: still usable, so go on
            log.warning("could not make %s private (chmod 600 it): %s", name, exc)


def _private_home(config: BackendConfig) -> tuple[str, str]:
    """Create the home directory privately; return the checkpoint and store database paths.

    Both database files exist, private, when this returns.
    """
    private_dir(config.home)
    checkpoints = os.path.join(config.home, "checkpoints.sqlite")
    store = os.path.join(config.home, "store.sqlite")
    for path in (checkpoints, store):
        _private_file(path)
    return checkpoints, store


def open_index(config: BackendConfig) -> ChromaIndex:
    """Open the Chroma index the config names (an embedded one in a private directory)."""
    embedder = make_embedder(
        config.embeddings,
        base_url=config.embeddings_base_url,
        api_key=config.embeddings_api_key,
    )
    if config.chroma_host:
        return ChromaIndex.open(embedder, host=config.chroma_host, port=config.chroma_port)
    path = config.resolved_chroma_path()
    private_dir(path)
    return ChromaIndex.open(embedder, path=path)


def _redact(url: str) -> str:
    """Return `host:port/dbname` of a connection string: never its credentials."""
    from psycopg.conninfo import conninfo_to_dict

    try:
        info = conninfo_to_dict(url)
    except Exception:
        return "<unparseable connection string>"
    host, port = info.get("host") or "localhost", info.get("port") or 5432
    return f"{host}:{port}/{info.get('dbname') or ''}"


def _pg_error(config: BackendConfig, exc: BaseException) -> BackendUnavailable:
    # The pool only says it timed out; one direct attempt tells the user why.
    import psycopg

    reason = str(exc)
    try:
        psycopg.connect(config.database_url or "", connect_timeout=3).close()
    except Exception as direct:
        reason = str(direct).strip().splitlines()[0] if str(direct).strip() else reason
    for secret in _secrets(config.database_url or ""):
        reason = reason.replace(secret, "***")
    return BackendUnavailable(
        f"cannot connect to Postgres at {_redact(config.database_url or '')}: {reason}. "
        "Check DATABASE_URL / POSTGRES_URI, or unset them to use the embedded SQLite default."
    )


def _secrets(url: str) -> list[str]:
    from psycopg.conninfo import conninfo_to_dict

    try:
        password = conninfo_to_dict(url).get("password")
    except Exception:
        return []
    return [str(password)] if password else []


@contextmanager
def open_backends(config: BackendConfig, *, setup: bool = False) -> Iterator[Backends]:
    """Open sync backends (for scripts and the sync memory service).

    Args:
        config: Where memory lives.
        setup: Create Postgres tables first (SQLite tables are always created).

    Raises:
        BackendUnavailable: If Postgres cannot be reached.

    """
    if config.database_url:
        from langgraph.checkpoint.postgres import PostgresSaver
        from langgraph.store.postgres import PostgresStore
        from psycopg.rows import dict_row
        from psycopg_pool import ConnectionPool

        pool = ConnectionPool(
            config.database_url, check=ConnectionPool.check_connection, **_pool_options(dict_row)
        )
        try:
            pool.open(wait=True, timeout=5)
        except Exception as exc:
            pool.close()
            raise _pg_error(config, exc) from exc
        try:
            index = open_index(config)
            saver: Any = PostgresSaver(pool)
            store = PostgresStore(pool)
            if setup:
                saver.setup()
                store.setup()
                with pool.connection() as conn:
                    for sql in _POSTGRES_SETUP:
                        conn.execute(sql)
            yield Backends(saver, store, index, config)
        finally:
            pool.close()
        return

    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.store.sqlite import SqliteStore

    # The home first: the default Chroma directory lies inside it.
    checkpoints, store_file = _private_home(config)
    index = open_index(config)
    cconn = sqlite3.connect(checkpoints, check_same_thread=False)
    sconn = sqlite3.connect(store_file, check_same_thread=False, isolation_level=None)
    try:
        ssaver: Any = SqliteSaver(cconn)
        sstore = SqliteStore(sconn)
        ssaver.setup()
        sstore.setup()
        for sql in _SQLITE_INDEXES:
            sconn.execute(sql)
        # -wal and -shm left by an older version with a wider mode exist only now.
        for path in (checkpoints, store_file):
            _private_file(path)
        yield Backends(ssaver, sstore, index, config)
    finally:
        cconn.close()
        sconn.close()


@contextmanager
def open_store(config: BackendConfig) -> Iterator[Any]:
    """Open the store alone, for reads that must work while the index or checkpoints are broken.

    `memory-agent memories list`/`show`/`export` fall back to it when `open_backends` fails
    on a damaged Chroma or checkpoint file: the store is the source of truth.

    Raises:
        BackendUnavailable: If Postgres cannot be reached.

    """
    if config.database_url:
        from langgraph.store.postgres import PostgresStore
        from psycopg.rows import dict_row
        from psycopg_pool import ConnectionPool

        pool = ConnectionPool(config.database_url, **_pool_options(dict_row))
        try:
            pool.open(wait=True, timeout=5)
        except Exception as exc:
            pool.close()
            raise _pg_error(config, exc) from exc
        try:
            yield PostgresStore(pool)
        finally:
            pool.close()
        return
    from langgraph.store.sqlite import SqliteStore

    _, store_file = _private_home(config)
    sconn = sqlite3.connect(store_file, check_same_thread=False, isolation_level=None)
    try:
        sstore = SqliteStore(sconn)
        sstore.setup()
        yield sstore
    finally:
        sconn.close()


@asynccontextmanager
async def aopen_backends(config: BackendConfig, *, setup: bool = False) -> AsyncIterator[Backends]:
    """Open async backends (for running the graph with `ainvoke` / `astream`).

    Args:
        config: Where memory lives.
        setup: Create Postgres tables first (SQLite tables are always created).

    Raises:
        BackendUnavailable: If Postgres cannot be reached.

    """
    import asyncio

    if config.database_url:
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
        from langgraph.store.postgres.aio import AsyncPostgresStore
        from psycopg.rows import dict_row
        from psycopg_pool import AsyncConnectionPool

        pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
            config.database_url,
            check=AsyncConnectionPool.check_connection,
            **_pool_options(dict_row),
        )
        try:
            await pool.open(wait=True, timeout=5)
        except Exception as exc:
            await pool.close()
            raise await asyncio.to_thread(_pg_error, config, exc) from exc
        try:
            index = await asyncio.to_thread(open_index, config)
            asaver: Any = AsyncPostgresSaver(pool)
            store = AsyncPostgresStore(pool)
            if setup:
                await asaver.setup()
                await store.setup()
                async with pool.connection() as aconn:
                    for sql in _POSTGRES_SETUP:
                        await aconn.execute(sql)
            yield Backends(asaver, store, index, config)
        finally:
            await pool.close()
        return

    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
    from langgraph.store.sqlite.aio import AsyncSqliteStore

    # The home first: the default Chroma directory lies inside it.
    checkpoints, store_file = await asyncio.to_thread(_private_home, config)
    index = await asyncio.to_thread(open_index, config)
    async with (
        AsyncSqliteSaver.from_conn_string(checkpoints) as saver,
        AsyncSqliteStore.from_conn_string(store_file) as astore,
    ):
        await saver.setup()
        await astore.setup()
        for sql in _SQLITE_INDEXES:
            await astore.conn.execute(sql)
        await astore.conn.commit()
        for path in (checkpoints, store_file):
            await asyncio.to_thread(_private_file, path)
        yield Backends(saver, astore, index, config)


_INDEXED: set[str] = set()
_INDEXED_GUARD = threading.Lock()


def ensure_postgres_indexes(url: str) -> bool:
    """Create the memory store indexes in a Postgres database, once per process (idempotent).

    `memory-agent setup` creates them; a LangGraph server opens its own store and never
    runs it, so the graph calls this on first use. Nothing is done when the database has
    no `store` table (yet). A failure is logged, not raised: saves work without the
    indexes, only slower.

    Returns:
        True if the indexes exist (now or already), False if they could not be made.
    """
    with _INDEXED_GUARD:
        if url in _INDEXED:
            return True
        try:
            import psycopg

            with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
                row = conn.execute("SELECT to_regclass('store') IS NOT NULL").fetchone()
                if not row or not row[0]:
                    return False
                for sql in _POSTGRES_INDEXES:
                    conn.execute(sql)
                try:
                    for sql in SNAPSHOT_TABLE_DDL:
                        conn.execute(sql)
                except Exception as exc:  # saved snapshots are an optimisation
                    log.warning("could not create the snapshot table in %s: %s", _redact(url), exc)
        except Exception as exc:
            log.warning("could not create the memory indexes in %s: %s", _redact(url), exc)
            return False
        _INDEXED.add(url)
        return True

"""Deleted means gone from disk: rewriting the embedded SQLite files after a delete.

SQLite leaves a deleted row's bytes in free pages (and, in WAL mode, in the `-wal` file until
a checkpoint), so the words of a deleted user or a hard-forgotten memory could be read back
from `store.sqlite` or `checkpoints.sqlite`. `purge_sqlite` checkpoints the WAL and runs
`VACUUM`, which writes the database anew from its live rows. Postgres keeps its files on
its own server: nothing under the memory home to rewrite there.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
from typing import Any

log = logging.getLogger(__name__)


def purge_sqlite(*holders: Any) -> int:
    """Vacuum the SQLite database behind each store or checkpointer that has one.

    A holder is a LangGraph `SqliteStore` or `SqliteSaver` (anything with a `sqlite3`
    connection as `conn`, and optionally a `lock` that guards it); others are skipped.

    Returns:
        How many databases were rewritten.
    """
    done = 0
    for holder in holders:
        conn = getattr(holder, "conn", None)
        if not isinstance(conn, sqlite3.Connection):
            continue
        lock: Any = getattr(holder, "lock", None)
        guard: Any = lock if hasattr(lock, "__enter__") else contextlib.nullcontext()
        try:
            with guard:
                if conn.in_transaction:
                    conn.commit()
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                conn.execute("VACUUM")
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            done += 1
        except sqlite3.Error as exc:  # busy elsewhere: the next purge rewrites it
            log.warning("could not vacuum a SQLite database: %s", exc)
    return done

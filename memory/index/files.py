"""Embedded Chroma's files: what deleting leaves behind, and removing it.

Embedded Chroma (1.x) keeps each collection's HNSW index in a folder named by its vector
segment, and its metadata, ids and write-ahead log in `chroma.sqlite3` (rollback journal,
no `secure_delete`). Dropping a collection leaves its folder on disk (with the vectors and
the ids it held), and deleted rows stay in the free pages of `chroma.sqlite3`. `purge`
removes the folders no segment owns any more and rewrites the database with `VACUUM`, so a
deleted user's ids and vectors are gone from disk. A `chroma run` server keeps its files
on its own machine: there only the collections can be dropped and rewritten.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import sqlite3

log = logging.getLogger(__name__)
DATABASE = "chroma.sqlite3"
_SEGMENT_DIR = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def orphan_folders(path: str) -> list[str]:
    """Return the segment folders under an embedded Chroma directory that no segment owns."""
    database = os.path.join(path, DATABASE)
    if not os.path.exists(database):
        return []
    with contextlib.closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as conn:
        live = {row[0] for row in conn.execute("SELECT id FROM segments")}
    return [
        os.path.join(path, name)
        for name in os.listdir(path)
        if _SEGMENT_DIR.match(name) and name not in live and os.path.isdir(os.path.join(path, name))
    ]


def purge(path: str, *, vacuum: bool = True) -> int:
    """Remove dropped collections' folders and (with `vacuum`) the free pages of the database.

    Safe while the embedded client is open: Chroma holds no transaction between calls, and
    a folder is only removed once the database no longer names its segment.

    Returns:
        How many folders were removed.
    """
    removed = 0
    for folder in orphan_folders(path):
        shutil.rmtree(folder, ignore_errors=True)
        removed += 1
    if vacuum:
        database = os.path.join(path, DATABASE)
        try:
            with contextlib.closing(sqlite3.connect(database, timeout=30)) as conn:
                conn.execute("VACUUM")
        except sqlite3.Error as exc:  # busy: the pages are rewritten at the next purge
            log.warning("could not vacuum %s: %s", database, exc)
    return removed

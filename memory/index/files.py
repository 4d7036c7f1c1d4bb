"""Embedded Chroma's files: what deleting leaves behind, and removing it.

Embedded Chroma (1.x) keeps each collection's HNSW index in a folder named by its vector
segment, and its metadata, ids and write-ahead log in `chroma.sqlite3` (rollback journal,
no `secure_delete`). Dropping a collection leaves its folder on disk (with the vectors and
the ids it held), and deleted rows stay in the free pages of `chroma.sqlite3`. `purge`
removes the folders no segment owns any more and rewrites the database with `VACUUM`, so a
deleted user's ids and vectors are gone from disk. A `chroma run` server keeps its files
on its own machine: there only the collections can be dropped and rewritten.

A new HNSW index (a collection's first write) writes its whole capacity to
`data_level0.bin` and `length.bin` straight from memory it `malloc`ed and never cleared
(chroma-hnswlib's `initPersistentIndex`): the slots past its element count hold whatever
the process freed there before, which can be a copy of any text or vector the process
handled, another user's or a deleted one's. Later writes only write the slots of the
elements they add, cleared first, so those stale bytes stay until the slots are used.
`scrub` zeroes the unused slots of each segment's files.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import sqlite3
import struct
from collections.abc import Iterable

log = logging.getLogger(__name__)
DATABASE = "chroma.sqlite3"
_SEGMENT_DIR = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
# chroma-hnswlib's `header.bin` (persistence version 1): version, offsetLevel0,
# max_elements, cur_element_count, size_data_per_element, label_offset, offsetData,
# maxlevel, enterpoint_node, maxM, maxM0, M, mult, ef_construction.
_HEADER = struct.Struct("<iQQQQQQiIQQQdQ")
_HNSW_VERSION = 1
_CHUNK = 1 << 20


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


def _zero_from(file: str, start: int) -> bool:
    """Overwrite a file with zeros from byte `start` to its end; return True if it wrote."""
    wrote = False
    with open(file, "r+b") as f:
        f.seek(start)
        at = start
        while chunk := f.read(_CHUNK):
            if chunk.count(0) != len(chunk):
                f.seek(at)
                f.write(bytes(len(chunk)))
                wrote = True
            at += len(chunk)
        if wrote:
            f.flush()
            os.fsync(f.fileno())
    return wrote


def scrub_folder(folder: str) -> bool:
    """Zero the slots of a segment's `data_level0.bin` and `length.bin` past its elements.

    Only the bytes past the element count its `header.bin` records are touched: the
    index's own elements are left as they are. Call it while no write of this process
    is under way (Chroma persists elements and header during a write).

    Returns:
        True if the folder is clean now; False if it is not a complete index of the
        known format (not yet written, or another version), which is left alone.
    """
    try:
        with open(os.path.join(folder, "header.bin"), "rb") as f:
            head = f.read(_HEADER.size)
    except (FileNotFoundError, NotADirectoryError):
        return False
    if len(head) != _HEADER.size:
        return False
    version, _, capacity, count, per_element, *_ = _HEADER.unpack(head)
    if version != _HNSW_VERSION or per_element <= 0 or count > capacity:
        log.warning("unknown HNSW files in %s (version %s): not scrubbed", folder, version)
        return False
    try:
        _zero_from(os.path.join(folder, "data_level0.bin"), count * per_element)
        _zero_from(os.path.join(folder, "length.bin"), count * 4)  # a float per element
    except FileNotFoundError:
        return False
    return True


def scrub(path: str, skip: Iterable[str] = ()) -> set[str]:
    """Zero the never-used slots of every segment's HNSW files (see the module docstring).

    Args:
        path: The embedded Chroma directory.
        skip: Folder names already scrubbed: a folder once clean stays clean.

    Returns:
        The names of the segment folders that are clean now (`skip` among them, if present).
    """
    known = set(skip)
    if not os.path.isdir(path):
        return set()
    clean = set()
    for name in os.listdir(path):  # a write looks here: known folders cost no stat
        if name in known or (_SEGMENT_DIR.match(name) and scrub_folder(os.path.join(path, name))):
            clean.add(name)
    return clean


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


class IndexFiles:
    """The files of an embedded index: what its writes and deletes leave on disk."""

    def __init__(self, path: str) -> None:
        """Watch the embedded Chroma directory `path`."""
        self.path = path
        self.clean: set[str] = set()  # segment folders whose HNSW files hold no stale bytes

    def scrub(self) -> None:
        """Zero the stale bytes of HNSW files written since the last scrub (`scrub`).

        Call it while no write of this process is under way. A failure is logged: the next
        scrub or purge tries again.
        """
        try:
            self.clean = scrub(self.path, self.clean)
        except OSError as exc:
            log.warning("could not scrub the index files: %s", exc)

    def purge(self, *, vacuum: bool = True) -> None:
        """Remove what dropped collections, deleted rows and stale memory left (`purge`).

        Call it while no write of this process is under way (the scrub reads the element
        count of a live index).
        """
        purge(self.path, vacuum=vacuum)
        self.scrub()

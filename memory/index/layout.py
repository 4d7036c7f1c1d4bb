"""Where a user's vectors live in Chroma: a shared shard, or a collection of their own.

Most users have a few memories, and a Chroma collection costs about 220 KB of disk and a
cold open per process however little it holds (`benchmarks/scale.py`). So a user starts in
one of `SHARDS` shared collections (chosen by a hash of the user key), each entry's id led
by the user key and its metadata naming the key (`u`); a user with more than `PROMOTE_AT`
vectors is promoted to a collection of their own (`mem-<user key>`, the layout every user
had before), where a search is Chroma's unfiltered HNSW query.

This module holds the names, the copy of entries between collections (promotion, the
migration of earlier per-user collections into shards, compaction) and the rebuild that
makes deleted vectors leave Chroma's files: a row deleted from a collection stays in its
HNSW files until the collection is rewritten.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

COLLECTION_PREFIX = "mem-"
SHARD_PREFIX = "mem-shard-"
SHARDS = 16
"""Shared collections. Bounded: every one is opened (and kept warm) by a serving process."""
PROMOTE_AT = 256
"""A user with more vectors than this moves to a collection of their own. A search of a shard
user reads (or keeps, `memory.index.shard_cache`) and scores every vector of theirs, which
grows with the user; a collection of their own is searched by HNSW (`benchmarks/scale.py`)."""
STASH_SUFFIX = "-old"
"""A collection being compacted is renamed to `<name>-old` while its copy is written."""
COPY_PAGE = 2000
COSINE: dict[str, Any] = {"hnsw": {"space": "cosine"}}
_OWN_NAME = re.compile(r"^mem-[0-9a-f]{24}$")


def own_name(key: str) -> str:
    """Return the name of the collection of a user of their own (the user key's)."""
    return COLLECTION_PREFIX + key


def shard_name(key: str, shards: int = SHARDS) -> str:
    """Return the shared collection a user key is hashed to."""
    return f"{SHARD_PREFIX}{int(key[:8], 16) % shards:02d}"


def is_own_name(name: str) -> bool:
    """Tell whether a collection name is that of one user's collection."""
    return bool(_OWN_NAME.match(name))


def shard_entry_id(key: str, record_id: str) -> str:
    """Return the id of a record's entry in a shard: led by its owner's key.

    Two users may hold records with one id (an export imported into another user keeps
    its ids); in a shared collection their entries must not overwrite each other.
    """
    return f"{key}:{record_id}"


def record_id_of(entry_id: str) -> str:
    """Return the record id of a shard entry id (see `shard_entry_id`)."""
    return entry_id.split(":", 1)[1]


@dataclass(frozen=True)
class Rows:
    """Entries read from a collection: ids, vectors and metadata, in one order."""

    ids: list[str]
    vectors: np.ndarray
    metas: list[dict[str, Any]]


def read_rows(collection: Any, where: dict[str, Any] | None = None) -> Iterator[Rows]:
    """Yield a collection's entries (those matching `where`), `COPY_PAGE` at a time."""
    offset = 0
    while True:
        got = collection.get(
            where=where, include=["embeddings", "metadatas"], limit=COPY_PAGE, offset=offset
        )
        ids = list(got["ids"])
        if not ids:
            return
        metas = [dict(m or {}) for m in (got["metadatas"] or [{}] * len(ids))]
        yield Rows(ids, np.asarray(got["embeddings"], dtype=np.float32), metas)
        if len(ids) < COPY_PAGE:
            return
        offset += len(ids)


def write_rows(collection: Any, rows: Rows) -> None:
    """Upsert entries (ids, vectors, metadata) into a collection."""
    if rows.ids:
        collection.upsert(ids=rows.ids, embeddings=rows.vectors, metadatas=rows.metas)


def to_shard(rows: Rows, key: str) -> Rows:
    """Return the entries of one user's collection as entries of a shard."""
    metas = [{"u": key, "kind": m.get("kind", ""), "h": m.get("h", "")} for m in rows.metas]
    return Rows([shard_entry_id(key, i) for i in rows.ids], rows.vectors, metas)


def to_own(rows: Rows, user_id: str) -> Rows:
    """Return a user's shard entries as entries of their own collection."""
    metas = [
        {"kind": m.get("kind", ""), "user_id": user_id, "h": m.get("h", "")} for m in rows.metas
    ]
    return Rows([record_id_of(i) for i in rows.ids], rows.vectors, metas)


def top_cosine(matrix: np.ndarray, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Return the row numbers of the `k` rows most cosine-similar to `query`, best first.

    Also every row's similarity, by row number.
    """
    norms = np.linalg.norm(matrix, axis=1) * (float(np.linalg.norm(query)) or 1.0)
    sims = matrix @ query / np.where(norms == 0, 1.0, norms)
    return np.argsort(-sims, kind="stable")[:k], sims


def rank_rows(got: Any, query: np.ndarray, k: int) -> list[tuple[str, str, float]]:
    """Rank a user's shard entries by cosine similarity to `query`, best `k` first.

    `got` is a Chroma `get` result with embeddings and metadata; each hit is (record id,
    kind, similarity).
    """
    ids = list(got["ids"])
    if not ids:
        return []
    order, sims = top_cosine(np.asarray(got["embeddings"], dtype=np.float32), query, k)
    metas = got["metadatas"] or [{}] * len(ids)
    return [
        (record_id_of(ids[n]), str((metas[n] or {}).get("kind", "")), float(sims[n])) for n in order
    ]


def compact(client: Any, name: str) -> bool:
    """Rewrite a collection from its live entries, so deleted ones leave its files.

    Chroma marks a deleted vector in the HNSW index and keeps its bytes; only a new
    collection is free of them. The collection is renamed to a stash, a new one of the same
    name and metadata gets every entry of the stash, then the stash is dropped. A crash in
    between leaves the stash, which `recover_stashes` (run on open) folds back.

    Returns:
        True if the collection existed and was rewritten.
    """
    try:
        old = client.get_collection(name)
    except Exception as exc:
        if is_not_found(exc):
            return False
        raise
    stash = name + STASH_SUFFIX
    meta = dict(old.metadata or {})
    old.modify(name=stash)
    new = client.get_or_create_collection(name, metadata=meta, configuration=COSINE)
    for rows in read_rows(old):
        write_rows(new, rows)
    client.delete_collection(stash)
    return True


def recover_stashes(client: Any, names: list[str]) -> list[str]:
    """Fold the stash of a compaction that did not finish back into its collection.

    Returns:
        The collections recovered.
    """
    done = []
    for stash in (n for n in names if n.endswith(STASH_SUFFIX)):
        name = stash[: -len(STASH_SUFFIX)]
        old = client.get_collection(stash)
        new = client.get_or_create_collection(
            name, metadata=dict(old.metadata or {}), configuration=COSINE
        )
        for rows in read_rows(old):
            have = set(new.get(ids=rows.ids, include=[])["ids"])
            keep = [i for i, rid in enumerate(rows.ids) if rid not in have]
            if keep:
                write_rows(
                    new,
                    Rows(
                        [rows.ids[i] for i in keep],
                        rows.vectors[keep],
                        [rows.metas[i] for i in keep],
                    ),
                )
        client.delete_collection(stash)
        done.append(name)
        log.warning("finished an interrupted compaction of %s", name)
    return done


def collection_names(client: Any) -> list[str]:
    """Return the names of every collection of the index (paged: there may be many)."""
    names: list[str] = []
    offset = 0
    while True:
        page = client.list_collections(limit=1000, offset=offset)
        names += [c.name if hasattr(c, "name") else str(c) for c in page]
        if len(page) < 1000:
            return [n for n in names if n.startswith(COLLECTION_PREFIX)]
        offset += len(page)


def is_not_found(exc: Exception) -> bool:
    """Tell whether a Chroma error says a collection does not exist."""
    text = f"{exc.__class__.__name__} {exc}".lower()
    return "notfound" in text.replace(" ", "") or "does not exist" in text

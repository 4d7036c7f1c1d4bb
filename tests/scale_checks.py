"""Checks shared by the layout tests on embedded Chroma and on a `chroma run` server.

`leaks` reads every file under a directory as bytes and reports where a token, a record id
or a vector close to a given one (cosine over 0.99, at any 4-byte-aligned or unaligned
offset) can still be read: deleted means gone from disk.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

NEAR = 0.99


def files_under(root: Path) -> list[Path]:
    """Return every regular file under `root`."""
    return [Path(d) / f for d, _, names in os.walk(root) for f in names]


def vector_offsets(data: bytes, vector: np.ndarray) -> list[int]:
    """Return the byte offsets in `data` where a float32 vector close to `vector` starts.

    Chroma may store a vector as given or normalized (HNSW in cosine space): candidates
    are offsets whose first float has the ratio to the next three that the vector has;
    each is then checked by cosine over the whole vector.
    """
    v = np.asarray(vector, dtype=np.float32)
    dim = v.size
    lead = int(np.argmax(np.abs(v[:8])))
    ratio = v[:8] / v[lead]
    found: list[int] = []
    for shift in range(4):
        usable = (len(data) - shift) // 4
        if usable < dim:
            continue
        raw = np.frombuffer(data, dtype=np.float32, count=usable, offset=shift)
        with np.errstate(invalid="ignore", over="ignore"):
            arr = np.nan_to_num(raw.astype(np.float64), nan=0.0, posinf=0.0, neginf=0.0)
        starts = np.arange(usable - dim + 1)
        starts = starts[np.abs(arr[starts + lead]) > 1e-12]
        for j in range(8):
            starts = starts[np.abs(arr[starts + j] / arr[starts + lead] - ratio[j]) < 1e-3]
        for start in starts[:10_000]:
            window = arr[start : start + dim]
            norm = np.linalg.norm(window) * np.linalg.norm(v)
            if norm and float(window @ v) / norm > NEAR:
                found.append(int(start) * 4 + shift)
    return found


def leaks(root: Path, needles: list[str], vectors: list[Any]) -> list[str]:
    """Return where under `root` a needle (text) or a vector can still be read."""
    out = []
    for path in files_under(root):
        data = path.read_bytes()
        for needle in needles:
            if needle.encode() in data:
                out.append(f"{path.relative_to(root)}: {needle!r}")
        for n, vector in enumerate(vectors):
            if vector_offsets(data, vector):
                out.append(f"{path.relative_to(root)}: vector {n}")
    return out


def readable_vectors(client: Any, vector: np.ndarray) -> list[str]:
    """Return the ids of entries, in any collection of a Chroma client, close to `vector`."""
    v = np.asarray(vector, dtype=np.float32)
    close = []
    for collection in client.list_collections():
        got = collection.get(include=["embeddings"])
        if not got["ids"]:
            continue
        matrix = np.asarray(got["embeddings"], dtype=np.float32)
        sims = matrix @ v / (np.linalg.norm(matrix, axis=1) * np.linalg.norm(v))
        close += [
            f"{collection.name}/{i}" for i, s in zip(got["ids"], sims, strict=True) if s > NEAR
        ]
    return close


def same_shard_user(index: Any, user: str, prefix: str) -> str:
    """Return a user id that hashes to the same shard as `user` (its nearest neighbours)."""
    from memory.index.layout import shard_name
    from memory.store.records import user_key

    want = shard_name(user_key(user), index.shards)
    for n in range(10_000):
        other = f"{prefix}{n}"
        if shard_name(user_key(other), index.shards) == want:
            return other
    raise AssertionError("no user id hashes to that shard")

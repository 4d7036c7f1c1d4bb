"""Stale memory in embedded Chroma's HNSW files (`memory.index.files.scrub`).

A new HNSW index writes its whole capacity to `data_level0.bin` and `length.bin` from
memory it `malloc`ed and never cleared: past its elements they held whatever the process
had freed there, once a copy of a deleted user's words (`test_scale_layout`'s
delete-user test, under load). glibc's `perturb` tunable fills every fresh allocation with
one byte, so the stale bytes show every time instead of by chance.
"""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import chromadb
import numpy as np
import pytest
from chromadb.config import Settings

from memory.index import files as chroma_files

HEADER = struct.Struct("<iQQQQQQiIQQQdQ")
TOKEN = b"quokkazx7319"


def _tails(path: Path) -> dict[str, bytes]:
    """Return, per segment folder, the bytes of its HNSW files past its elements."""
    out = {}
    for folder in path.iterdir():
        if not (folder / "header.bin").exists():
            continue
        _, _, _, count, per_element, *_ = HEADER.unpack((folder / "header.bin").read_bytes()[:100])
        data = (folder / "data_level0.bin").read_bytes()[count * per_element :]
        out[folder.name] = data + (folder / "length.bin").read_bytes()[count * 4 :]
    return out


def test_scrub_zeroes_what_lies_past_the_elements_and_keeps_them(tmp_path: Path) -> None:
    client = chromadb.PersistentClient(
        path=str(tmp_path), settings=Settings(anonymized_telemetry=False)
    )
    config = {"hnsw": {"space": "cosine", "batch_size": 2, "sync_threshold": 2}}
    coll = client.create_collection("mem-shard-00", configuration=config)  # type: ignore[arg-type]
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(4, 16)).astype(np.float32)
    coll.add(ids=[f"r{n}" for n in range(4)], embeddings=vectors)
    (folder,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    head = HEADER.unpack((folder / "header.bin").read_bytes()[:100])
    count, per_element = head[3], head[4]
    assert count == 4  # persisted: the elements lie before the tail
    kept = (folder / "data_level0.bin").read_bytes()[: count * per_element]
    with open(folder / "data_level0.bin", "r+b") as f:  # what a reused allocation holds
        f.seek(count * per_element + 100)
        f.write(b"User's locker code word is " + TOKEN)
    with open(folder / "length.bin", "r+b") as f:
        f.seek(count * 4 + 8)
        f.write(TOKEN)

    assert chroma_files.scrub(str(tmp_path)) == {folder.name}
    assert all(tail.count(0) == len(tail) for tail in _tails(tmp_path).values())
    assert (folder / "data_level0.bin").read_bytes()[: count * per_element] == kept
    del coll, client
    reopened = chromadb.PersistentClient(
        path=str(tmp_path), settings=Settings(anonymized_telemetry=False)
    )
    got = reopened.get_collection("mem-shard-00").query(query_embeddings=vectors[2:3], n_results=1)
    assert got["ids"] == [["r2"]]


SCRIPT = textwrap.dedent(
    """
    import hashlib, sys
    import numpy as np
    from langgraph.store.memory import InMemoryStore
    from memory.index.chroma import ChromaIndex
    from memory.service import MemoryService

    class HashEmbedder:
        spec = "test-hash-64"
        def embed(self, texts):
            rows = [np.frombuffer(hashlib.sha512(t.encode()).digest(), np.uint8) for t in texts]
            m = np.asarray(rows, np.float32) - 127.5
            return m / np.linalg.norm(m, axis=1, keepdims=True)
        embed_query = embed

    index = ChromaIndex.open(HashEmbedder(), path=sys.argv[1], promote_at=1)
    service = MemoryService(InMemoryStore(), index)
    for user in ("amy", "zed"):
        for n, text in enumerate(["User keeps bees.", "User is allergic to walnuts."]):
            service.add(user, text, subject=f"test.s{n}")
    assert index.home_name("zed") == index.collection_name("zed")  # own collection
    service.delete_user("zed")  # compacts zed's shard: a new index
    """
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc tunables")
def test_new_indexes_hold_no_stale_memory(tmp_path: Path) -> None:
    """Every allocation filled with 0xAA (glibc `perturb`): a new index written as Chroma
    writes it carries 0xAA past its elements; the index's scrub leaves zeros."""
    env = {**os.environ, "GLIBC_TUNABLES": "glibc.malloc.perturb=85"}
    chroma = tmp_path / "chroma"
    subprocess.run(
        [sys.executable, "-c", SCRIPT, str(chroma)],
        env=env,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    tails = _tails(chroma)
    assert len(tails) >= 2  # the shards written, amy's own collection
    assert {name: tail.count(0) == len(tail) for name, tail in tails.items()} == dict.fromkeys(
        tails, True
    )

"""Many users on one index: disk per user, cold and warm search, first memory, a large user.

    python benchmarks/scale.py [--users 1000] [--backends embedded,server]
        [--baseline-users 1000] [--large 10000] [--sample 200] [--pool 4000]
        [--cache-dir DIR] [--pg-url URL] [--out FILE] [--chart FILE] [--json]

Two layouts, each filled with the same users and measured in the same run:

* ``shards``: the product's layout (`memory.index.layout`): small users in shared shard
  collections, a user over `PROMOTE_AT` vectors in a collection of their own.
* ``per_user``: the baseline, one collection per user: `memory/index.py` as of the commit
  before the shard layout (loaded from git, ``--baseline-rev``). Creating a collection per
  user costs about 60 ms and 220 KB here, so it is filled with at most ``--baseline-users``
  users drawn from the same mix (its figures are per user; the JSON says how many).

Backends: ``embedded`` (embedded Chroma + the SQLite store) and ``server`` (a `chroma run`
server started here + PostgreSQL in a throw-away schema of ``--pg-url``).

Users: a realistic mix (``SIZE_MIX``: most have 1–20 memories, one in a hundred up to 200)
plus one large user with ``--large`` memories. Embedding every sentence of 100k users would
take hours: each memory's vector is drawn from a pool of ``--pool`` real sentence vectors
(the bundled encoder over `_common.synthetic_memories`, zh and en; cached under
``--cache-dir``), with a little noise per memory so no two are equal. Queries and the
first memories of new users are embedded for real.

Measured per backend and layout, after the fill, in a fresh process (so every user is cold
there; the Chroma server is restarted first): the index's disk bytes per user; for
``--sample`` users, the first (cold) and second (warm) `ChromaIndex.query` (200 candidates,
as the service asks, but without the user's records named: a shard user's vectors are read
through the metadata filter, as searches did before `memory.index.shard_cache`) and
`MemoryService.search` (end to end, query embedding included);
``--sample`` new users' first memory through `MemoryService.add` and the disk it added;
the large user's warm query and search; the serving process's RSS (and the Chroma
server's). Then one large user per layout on one index and store, searched taking turns in
one process (``large_user_taking_turns``): the large user's figure least swayed by a busy
machine. Medians and p95 in ms; ratios shards / per_user. Progress on stderr, one JSON
object on stdout (and ``--out``), a chart beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402  (sets the offline environment before the imports below)
import numpy as np  # noqa: E402
from _servers import chroma_run  # noqa: E402
from langgraph.store.base import PutOp  # noqa: E402

from memory.index.embeddings import make_embedder  # noqa: E402
from memory.index.layout import PROMOTE_AT, SHARDS  # noqa: E402
from memory.service import MemoryService  # noqa: E402
from memory.store.records import MemoryRecord, Source, namespace, stable_id  # noqa: E402

SIZE_MIX = ((0.70, 1, 5), (0.25, 6, 20), (0.04, 21, 60), (0.01, 61, 200))
"""(share of users, fewest, most memories): most users have a few memories."""
LAYOUTS = ("shards", "per_user")
AT = datetime(2025, 1, 1, tzinfo=UTC)
HOST = "127.0.0.1"


def baseline_rev() -> str:
    """Return the commit before the one that added the shard layout ('' if not in git)."""
    out = subprocess.run(
        ["git", "-C", str(C.REPO), "log", "--diff-filter=A", "--format=%H", "--",
         "memory/chroma_layout.py"],
        check=False, capture_output=True, text=True,
    ).stdout.split()  # fmt: skip
    if not out:
        return ""
    rev = f"{out[-1]}^"
    ok = subprocess.run(["git", "-C", str(C.REPO), "cat-file", "-e", f"{rev}:memory/index.py"],
                        check=False, capture_output=True)  # fmt: skip
    return rev if ok.returncode == 0 else ""


def load_baseline(rev: str) -> Any:
    """Return the `ChromaIndex` of `memory/index.py` as of `rev` (one collection per user),
    taking today's calls: the service names a user's records to `query` and gives `upsert`
    a count of them, which one collection per user has no use for."""
    old = C.module_at(rev, "memory/index.py", "index_per_user").ChromaIndex

    class PerUser(old):  # type: ignore[misc,valid-type]
        promote_at = 0

        def query(self, user_id: str, vector: Any, k: int, known: Any = None) -> Any:
            return super().query(user_id, vector, k)

        def upsert(self, records: list[MemoryRecord], *, count: Any = None) -> None:
            super().upsert(records)

    return PerUser


# --- users and vectors -----------------------------------------------------------------------


def user_sizes(n: int, large: int, seed: int = 5) -> list[int]:
    """Return the memories of each of `n` users: `SIZE_MIX`, the last one `large`."""
    rng = random.Random(seed)
    sizes = []
    for _ in range(n - 1):
        roll, acc = rng.random(), 0.0
        for share, low, high in SIZE_MIX:
            acc += share
            if roll <= acc:
                sizes.append(rng.randint(low, high))
                break
        else:
            sizes.append(1)
    return [*sizes, large]


class PoolEmbedder:
    """The bundled encoder, except for memory texts ending in ``#<pool index>.<noise seed>``:
    those get the pool's vector of that sentence plus a little seeded noise (no real
    embedding), so the index holds real sentence vectors without embedding millions."""

    def __init__(self, base: Any, texts: list[str], vectors: np.ndarray) -> None:
        self.base = base
        self.spec = base.spec
        self.texts = texts
        self.vectors = vectors

    def text(self, pick: int, seed: int) -> str:
        return f"{self.texts[pick % len(self.texts)]} #{pick % len(self.texts)}.{seed}"

    def embed(self, texts: list[str]) -> np.ndarray:
        out = []
        for text in texts:
            head, sep, tail = text.rpartition(" #")
            if not sep or "." not in tail:
                out.append(np.asarray(self.base.embed([text])[0], dtype=np.float32))
                continue
            pick, seed = (int(x) for x in tail.split(".", 1))
            noise = np.random.default_rng(seed).standard_normal(self.vectors.shape[1])
            v = self.vectors[pick] + 0.03 * noise.astype(np.float32)
            out.append((v / np.linalg.norm(v)).astype(np.float32))
        return np.vstack(out) if out else np.zeros((0, self.vectors.shape[1]), np.float32)

    def embed_query(self, texts: list[str]) -> np.ndarray:
        from memory.index.embeddings import embed_queries

        return np.asarray(embed_queries(self.base, texts), dtype=np.float32)


def sentence_pool(
    size: int, cache_dir: str | None
) -> tuple[Any, list[str], np.ndarray, dict[str, Any]]:
    """Return the encoder, `size` real sentences and their vectors (cached if asked)."""
    base = make_embedder("local")
    cached = C.CachedEmbedder(base)
    texts = [content for _, _, content in C.synthetic_memories(size, seed=17)]
    info = cached.warm_from(texts, cache_dir, label="pool sentences")
    return base, texts, cached.embed(texts), info


def user_records(pool: PoolEmbedder, user: str, size: int, salt: int) -> list[MemoryRecord]:
    rng = random.Random(f"{user}-{salt}")
    return [
        MemoryRecord(
            id=stable_id("scale", user, str(i)),
            user_id=user,
            kind="fact",
            subject=f"scale.m{i}",
            content=pool.text(rng.randrange(len(pool.texts)), rng.randrange(1 << 30)),
            source=Source(via="import", said_at=AT),
            created_at=AT,
            updated_at=AT,
            valid_from=AT,
        )
        for i in range(size)
    ]


# --- backends --------------------------------------------------------------------------------


def du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


@contextmanager
def open_store(where: dict[str, Any]) -> Iterator[Any]:
    """The store alone (SQLite file or Postgres URL), without opening any index."""
    if where.get("pg_url"):
        from langgraph.store.postgres import PostgresStore

        with PostgresStore.from_conn_string(where["pg_url"]) as store:
            store.setup()
            yield store
        return
    from langgraph.store.sqlite import SqliteStore

    conn = sqlite3.connect(where["store"], check_same_thread=False, isolation_level=None)
    store = SqliteStore(conn)
    store.setup()
    try:
        yield store
    finally:
        conn.close()


def open_index(layout: str, where: dict[str, Any], embedder: Any) -> Any:
    """Open the index of a layout: the product's, or the per-user one from git.

    Without that git history (a shallow clone) the baseline is the product's index with
    every user promoted from their first vector (``promote_at=0``): the same layout, one
    collection per user, reached through one extra move.
    """
    from memory.index.chroma import ChromaIndex

    kwargs: dict[str, Any] = {}
    cls: Any = ChromaIndex
    if layout == "per_user":
        if where["baseline_rev"]:
            cls = load_baseline(where["baseline_rev"])
        else:
            kwargs["promote_at"] = 0
    if where.get("chroma_port"):
        return cls.open(embedder, host=HOST, port=where["chroma_port"], **kwargs)
    return cls.open(embedder, path=where["chroma"], **kwargs)


BULK = 5000
"""Shard entries sent to Chroma per call by the shards layout's fill (Chroma refuses more
than about 5,461)."""


class _Rows:
    """Stands in for a vector store: keeps the entries `upsert_op` writes, for one bulk call."""

    def __init__(self) -> None:
        self.ids: list[str] = []
        self.vectors: list[np.ndarray] = []
        self.metadatas: list[Any] = []
        self._collection = self

    def upsert(self, ids: list[str], embeddings: np.ndarray, metadatas: list[Any]) -> None:
        self.ids += ids
        self.vectors.append(np.asarray(embeddings, np.float32))
        self.metadatas += metadatas


def fill(
    layout: str, where: dict[str, Any], pool: PoolEmbedder, sizes: list[int]
) -> dict[str, Any]:
    """Write every user's records to the store and their vectors to the index.

    Users of the per-user layout go one `upsert` each, as the product wrote them. Users of
    the shards layout who stay in a shard are written in bulk: their entries are made by
    the product's own `upsert_op` (ids, metadata and vectors exactly as `ChromaIndex.upsert`
    makes them) and sent `BULK` per call to their shard; at 100k users one call per user
    would take hours. Users past `PROMOTE_AT` go through `upsert`, promotion included.
    """
    from memory.index.entries import index_text, upsert_op
    from memory.index.layout import shard_name
    from memory.store.records import user_key

    index = open_index(layout, where, pool)
    bulk = layout == "shards"
    rows: dict[str, _Rows] = {}

    def flush(shard: str, user: str) -> None:
        got = rows.pop(shard)
        collection = index._shard(user)._collection  # the shard `upsert` would write to
        collection.upsert(ids=got.ids, embeddings=np.vstack(got.vectors), metadatas=got.metadatas)

    last_of: dict[str, str] = {}
    puts: list[PutOp] = []
    t0 = time.perf_counter()
    with open_store(where) as store, C.progress(f"{layout}: users", len(sizes)) as advance:
        for n, size in enumerate(sizes):
            user = f"u{n}"
            records = user_records(pool, user, size, 0)
            puts += [PutOp(namespace(user, r.kind), r.id, r.to_store()) for r in records]
            if len(puts) >= 500:
                store.batch(puts)
                puts = []
            if not bulk or size > index.promote_at:
                index.upsert(records)
            else:
                shard = shard_name(user_key(user), index.shards)
                vectors = pool.embed([index_text(r) for r in records])
                upsert_op(user_key(user), user, records, vectors, set())(
                    rows.setdefault(shard, _Rows()),
                    True,  # type: ignore[arg-type]
                )
                last_of[shard] = user
                if len(rows[shard].ids) >= BULK:
                    flush(shard, user)
            advance(1)
            if n and n % max(1, len(sizes) // 10) == 0:
                C.log(f"{layout}: {n:,}/{len(sizes):,} users, {time.perf_counter() - t0:.0f} s")
        if puts:
            store.batch(puts)
        for shard in list(rows):
            flush(shard, last_of[shard])
    return {"seconds": round(time.perf_counter() - t0, 1), "vectors": sum(sizes)}


def serve(args: dict[str, Any]) -> dict[str, Any]:
    """The measurements of one layout in a fresh process (run with ``--serve``)."""
    base, texts, vectors, _ = sentence_pool(args["pool"], args["cache_dir"])
    pool = PoolEmbedder(base, texts, vectors)
    sizes: list[int] = args["sizes"]
    layout, where = args["layout"], args["where"]
    t0 = time.perf_counter()
    index = open_index(layout, where, pool)
    opened = time.perf_counter() - t0
    queries = C.synthetic_queries(64, seed=23)
    qvecs = pool.embed_query(queries)
    rng = random.Random(3)
    small = list(range(len(sizes) - 1))
    picks = rng.sample(small, min(2 * args["sample"], len(small)))
    by_index, by_service = picks[::2], picks[1::2]
    out: dict[str, Any] = {"open_s": round(opened, 3)}
    with open_store(where) as store:
        service = MemoryService(store, index)
        cold, warm = [], []
        for j, n in enumerate(by_index):
            for bucket, q in ((cold, qvecs[j % 64]), (warm, qvecs[(j + 1) % 64])):
                t = time.perf_counter()
                index.query(f"u{n}", q, 200)
                bucket.append(time.perf_counter() - t)
        out["index_query"] = {"cold": C.summarize_ms(cold), "warm": C.summarize_ms(warm)}
        cold, warm = [], []
        for j, n in enumerate(by_service):
            for bucket, q in ((cold, queries[j % 64]), (warm, queries[(j + 1) % 64])):
                t = time.perf_counter()
                service.search(f"u{n}", q, k=8)
                bucket.append(time.perf_counter() - t)
        out["service_search"] = {"cold": C.summarize_ms(cold), "warm": C.summarize_ms(warm)}
        big = f"u{len(sizes) - 1}"
        index.query(big, qvecs[0], 200)
        service.search(big, queries[0], k=8)
        lq, ls = [], []
        for j in range(1, 41):
            t = time.perf_counter()
            index.query(big, qvecs[j % 64], 200)
            lq.append(time.perf_counter() - t)
            t = time.perf_counter()
            service.search(big, queries[j % 64], k=8)
            ls.append(time.perf_counter() - t)
        out["large_user"] = {
            "memories": sizes[-1],
            "index_query_warm": C.summarize_ms(lq),
            "service_search_warm": C.summarize_ms(ls),
        }
        disk_before = du(Path(where["disk"]))
        first = []
        new = [content for _, _, content in C.synthetic_memories(args["sample"], seed=41)]
        for j, text in enumerate(new):
            t = time.perf_counter()
            service.add(f"new{j}", text, subject=f"scale.first{j}")
            first.append(time.perf_counter() - t)
        added = du(Path(where["disk"])) - disk_before
        out["first_memory"] = {
            **C.summarize_ms(first),
            "disk_bytes_per_new_user": round(added / max(1, len(new))),
        }
        # Last, so nothing above was warmed by it: the fill wrote each sampled user's
        # entries where the index reads them (the shards layout's fill is a bulk one).
        wrong = [n for n in picks if index.ids(f"u{n}") != {
            r.id for r in user_records(pool, f"u{n}", sizes[n], 0)}]  # fmt: skip
        out["fill_check"] = {"users": len(picks), "entries_not_as_written": len(wrong)}
    out["client_rss_mb"] = C.current_rss_mb()
    return out


def pair(args: dict[str, Any]) -> dict[str, Any]:
    """One large user in each layout, on one index and store, searched taking turns (run
    with ``--pair``): the fairest "as fast as today" on a shared, noisy machine."""
    base, texts, vectors, _ = sentence_pool(args["pool"], args["cache_dir"])
    pool = PoolEmbedder(base, texts, vectors)
    where = args["where"]
    queries = C.synthetic_queries(64, seed=29)
    qvecs = pool.embed_query(queries)
    times: dict[str, dict[str, list[float]]] = {}
    with open_store(where) as store:
        sides = {}
        for layout in LAYOUTS:
            index = open_index(layout, where, pool)
            sides[layout] = (index, MemoryService(store, index), f"large-{layout}")
            times[layout] = {"index_query": [], "service_search": []}
            sides[layout][1].search(f"large-{layout}", queries[0], k=8)  # warm
        for j in range(1, 61):
            for layout in LAYOUTS if j % 2 else LAYOUTS[::-1]:
                index, service, user = sides[layout]
                t = time.perf_counter()
                index.query(user, qvecs[j % 64], 200)
                times[layout]["index_query"].append(time.perf_counter() - t)
                t = time.perf_counter()
                service.search(user, queries[j % 64], k=8)
                times[layout]["service_search"].append(time.perf_counter() - t)
    out: dict[str, Any] = {
        layout: {k: C.summarize_ms(v) for k, v in got.items()} for layout, got in times.items()
    }
    out["ratio_shards_over_per_user"] = {
        k: C.ratio(out["shards"][k]["median_ms"], out["per_user"][k]["median_ms"])
        for k in ("index_query", "service_search")
    }
    return out


def large_pair(backend: str, a: argparse.Namespace, work: Path, pool: PoolEmbedder,
               rev: str) -> dict[str, Any]:  # fmt: skip
    """Fill one large user per layout into one index and store, then run `pair`."""
    folder = work / backend / "pair"
    folder.mkdir(parents=True)
    where: dict[str, Any] = {"work": str(folder), "baseline_rev": rev}
    with contextlib_exit() as stack:
        if backend == "server":
            where["pg_url"] = stack.enter_context(C.pg_schema(a.pg_url, "scale_pair"))
            server, where["chroma_port"] = chroma_run(folder / "data", log_path=folder / "c.log")
            stack.callback(server.stop)
        else:
            where |= {"store": str(folder / "store.sqlite"), "chroma": str(folder / "chroma")}
        for layout in LAYOUTS:
            index = open_index(layout, where, pool)
            user = f"large-{layout}"
            records = user_records(pool, user, a.large, 1)
            with open_store(where) as store:
                for part in C.chunks(records, 500):
                    store.batch([PutOp(namespace(user, r.kind), r.id, r.to_store()) for r in part])
            index.upsert(records)
        C.log(f"{backend}: one large user per layout, searched taking turns")
        job = {"where": where, "pool": a.pool, "cache_dir": a.cache_dir}
        done = subprocess.run(
            [sys.executable, __file__, "--pair"], input=json.dumps(job),
            check=True, capture_output=True, text=True,
        )  # fmt: skip
    return {"memories": a.large, **json.loads(done.stdout)}


def server_rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024.0, 1)
    except OSError:
        return None
    return None


def measure(layout: str, backend: str, sizes: list[int], pool: PoolEmbedder, a: argparse.Namespace,
            work: Path, rev: str) -> dict[str, Any]:  # fmt: skip
    """Fill one layout on one backend, then measure it in a fresh process."""
    folder = work / backend / layout
    folder.mkdir(parents=True)
    where: dict[str, Any] = {"work": str(folder), "baseline_rev": rev}
    server = None
    with contextlib_exit() as stack:
        if backend == "server":
            pg = stack.enter_context(C.pg_schema(a.pg_url, f"scale_{layout}"))
            data = folder / "chroma-server"
            server, port = chroma_run(data, log_path=folder / "chroma.log")
            stack.callback(lambda: server.stop() if server else None)
            where |= {"pg_url": pg, "chroma_port": port, "disk": str(data)}
        else:
            where |= {"store": str(folder / "store.sqlite"), "chroma": str(folder / "chroma"),
                      "disk": str(folder / "chroma")}  # fmt: skip
        filled = fill(layout, where, pool, sizes)
        disk = du(Path(where["disk"]))
        if server is not None:  # cold: the server starts again with nothing open
            server.stop()
            server, port = chroma_run(
                data, log_path=folder / "chroma-2.log", port=where["chroma_port"]
            )
        C.log(f"{backend}/{layout}: measuring in a fresh process")
        job = {"layout": layout, "where": where, "sizes": sizes, "sample": a.sample,
               "pool": a.pool, "cache_dir": a.cache_dir}  # fmt: skip
        done = subprocess.run(
            # On stdin: 100k users' sizes are more than a command line holds.
            [sys.executable, __file__, "--serve"], input=json.dumps(job),
            check=True, capture_output=True, text=True,
        )  # fmt: skip
        served = json.loads(done.stdout)
        if server is not None:
            served["server_rss_mb"] = server_rss_mb(server.proc.pid)
    return {
        "users": len(sizes),
        "vectors": filled["vectors"],
        "fill_s": filled["seconds"],
        "index_disk_bytes": disk,
        "disk_bytes_per_user": round(disk / len(sizes)),
        **served,
    }


@contextmanager
def contextlib_exit() -> Iterator[Any]:
    import contextlib

    with contextlib.ExitStack() as stack:
        yield stack


def compare(res: dict[str, Any]) -> dict[str, Any]:
    """Shards / per_user for each headline figure (below 1: the shard layout is cheaper)."""
    s, p = res["shards"], res["per_user"]
    pick = {
        "disk_bytes_per_user": lambda r: r["disk_bytes_per_user"],
        "first_memory_median": lambda r: r["first_memory"]["median_ms"],
        "cold_search_p95": lambda r: r["service_search"]["cold"]["p95_ms"],
        "warm_search_p95": lambda r: r["service_search"]["warm"]["p95_ms"],
        "cold_query_p95": lambda r: r["index_query"]["cold"]["p95_ms"],
        "large_user_query_median": lambda r: r["large_user"]["index_query_warm"]["median_ms"],
        "large_user_search_median": lambda r: r["large_user"]["service_search_warm"]["median_ms"],
    }
    ratios = {k: C.ratio(f(s), f(p)) for k, f in pick.items()}
    turns = res["large_user_taking_turns"]["ratio_shards_over_per_user"]
    ratios["large_user_search_taking_turns"] = turns["service_search"]
    ratios["large_user_query_taking_turns"] = turns["index_query"]
    return ratios


def targets(r: dict[str, Any], ratios: dict[str, Any]) -> dict[str, Any]:
    """The issue's "done when" figures for the shard layout."""
    return {
        "one_memory_user_disk_le_20kb": r["first_memory"]["disk_bytes_per_new_user"] <= 20_480,
        "cold_search_p95_le_30ms": r["service_search"]["cold"]["p95_ms"] <= 30,
        "warm_search_p95_le_15ms": r["service_search"]["warm"]["p95_ms"] <= 15,
        "first_memory_median_le_30ms": r["first_memory"]["median_ms"] <= 30,
        "large_user_search_within_10pct": (ratios["large_user_search_taking_turns"] or 9) <= 1.10,
    }


def draw(result: dict[str, Any], plt: Any) -> Any:
    panels = [
        ("disk per user (KB)", lambda r: r["disk_bytes_per_user"] / 1024),
        ("first memory median (ms)", lambda r: r["first_memory"]["median_ms"]),
        ("cold search p95 (ms)", lambda r: r["service_search"]["cold"]["p95_ms"]),
        ("warm search p95 (ms)", lambda r: r["service_search"]["warm"]["p95_ms"]),
        ("large user search median (ms)",
         lambda r: r["large_user"]["service_search_warm"]["median_ms"]),
    ]  # fmt: skip
    backends = list(result["backends"])
    fig, axes = plt.subplots(1, len(panels), figsize=(4 * len(panels), 3.6))
    for ax, (title, value) in zip(axes, panels, strict=True):
        for b, backend in enumerate(backends):
            for li, layout in enumerate(LAYOUTS):
                r = result["backends"][backend][layout]
                ax.bar(b * 3 + li, value(r), color=["#3b6fb6", "#aaaaaa"][li],
                       label=layout if b == 0 else None)  # fmt: skip
        ax.set_xticks([b * 3 + 0.5 for b in range(len(backends))], backends)
        ax.set_title(title, fontsize=9)
    axes[0].legend(fontsize=8)
    users = {b: result["backends"][b]["shards"]["users"] for b in backends}
    fig.suptitle(f"scale.py: users per backend {users} (per_user baseline: a sample)", fontsize=9)
    fig.tight_layout()
    return fig


def main() -> None:
    if len(sys.argv) == 2 and sys.argv[1] in ("--serve", "--pair"):
        phase = serve if sys.argv[1] == "--serve" else pair
        print(json.dumps(phase(json.loads(sys.stdin.read()))))
        return
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--users", type=int, default=1000)
    p.add_argument(
        "--server-users", type=int, default=None, help="users on the server (default --users)"
    )
    p.add_argument("--backends", default="embedded,server")
    p.add_argument("--baseline-users", type=int, default=1000)
    p.add_argument("--large", type=int, default=10_000, help="memories of the one large user")
    p.add_argument("--sample", type=int, default=200, help="users searched / new users added")
    p.add_argument("--pool", type=int, default=4000, help="real sentence vectors drawn from")
    p.add_argument("--cache-dir", default=None, help="keep the pool's vectors here")
    p.add_argument("--pg-url", default=os.environ.get("TEST_DATABASE_URL", C.DEFAULT_PG_URL))
    p.add_argument("--baseline-rev", default=None)
    p.add_argument("--large-only", action="store_true",
                   help="only the large user of each layout, searched taking turns")  # fmt: skip
    C.output_args(p)
    a = p.parse_args()
    C.start(a)
    rev = a.baseline_rev or baseline_rev()
    base, texts, vectors, pool_info = sentence_pool(a.pool, a.cache_dir)
    pool = PoolEmbedder(base, texts, vectors)
    result: dict[str, Any] = {
        "benchmark": "scale",
        "run": C.run_info(),
        "params": {
            **{k: v for k, v in vars(a).items() if k not in ("out", "chart", "json")},
            "baseline_rev": rev,
            "shards": SHARDS,
            "promote_at": PROMOTE_AT,
            "size_mix": SIZE_MIX,
        },  # fmt: skip
        "vectors": (
            f"each memory's vector is a pool vector of {len(texts)} real sentences "
            "(bundled encoder, zh and en) plus seeded noise (0.03, renormalized); "
            "queries and first memories are embedded for real"
        ),  # fmt: skip
        "pool": pool_info,
        "backends": {},
    }
    if "server" in a.backends and (why := C.pg_reachable(a.pg_url)):
        result["server_skipped"] = why
    with tempfile.TemporaryDirectory(prefix="scale-") as tmp:
        work = Path(tmp)
        for backend in a.backends.split(","):
            if backend == "server" and "server_skipped" in result:
                continue
            n = a.server_users if backend == "server" and a.server_users else a.users
            res: dict[str, Any] = {}
            if a.large_only:
                res["large_user_taking_turns"] = large_pair(backend, a, work, pool, rev)
                result["backends"][backend] = res
                continue
            for layout in LAYOUTS:
                count = n if layout == "shards" else min(n, a.baseline_users)
                sizes = user_sizes(count, a.large)
                C.log(f"{backend}/{layout}: {count:,} users, {sum(sizes):,} memories")
                res[layout] = measure(layout, backend, sizes, pool, a, work, rev)
                shutil.rmtree(work / backend / layout, ignore_errors=True)
            res["large_user_taking_turns"] = large_pair(backend, a, work, pool, rev)
            res["shards_vs_per_user"] = compare(res)
            res["targets"] = targets(res["shards"], res["shards_vs_per_user"])
            result["backends"][backend] = res
    result["load_avg"] = C.load_avg()
    C.finish(result, a, None if a.large_only else draw)


if __name__ == "__main__":
    main()

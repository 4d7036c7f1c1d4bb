"""Sustained load: turns per second through the graph on Postgres with the offline model.

Several workers (users) each run turns in their own threads for `--seconds`, through
`agent.runner.open_session` on Postgres + embedded Chroma. Prints one JSON object: turns
completed, turns/s, latency median and p95, errors, and memories stored per user.

    python benchmarks/load.py [--seconds 120] [--workers 4]
        [--database-url postgresql://postgres@127.0.0.1:5432/test] [--out FILE.json] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
import uuid
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402  (sets the offline environment before the imports below)

from agent.runner import open_session  # noqa: E402
from graphs.settings import Settings  # noqa: E402
from memory.backends import BackendConfig  # noqa: E402

LINES = [
    "I live in {city}.", "I love {thing}.", "Any idea for dinner tonight?",
    "I'm allergic to {thing}.", "What do you remember about me?", "I work at {company}.",
]  # fmt: skip
CITIES = ["Berlin", "Oslo", "Rome", "Lisbon"]
THINGS = ["jazz", "hiking", "peanuts", "tea", "chess", "sushi"]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=120)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--database-url", default=C.DEFAULT_PG_URL)
    C.output_args(parser, chart=False)
    args = parser.parse_args()
    C.start(args)
    run = uuid.uuid4().hex[:6]
    latencies: list[float] = []
    errors: list[str] = []
    with tempfile.TemporaryDirectory() as home:
        config = BackendConfig(home=home, database_url=args.database_url)
        settings = replace(Settings(), backend=config)
        async with open_session(settings, setup=True) as session:
            deadline = time.perf_counter() + args.seconds

            async def worker(w: int) -> None:
                user, i = f"load-{run}-{w}", 0
                while time.perf_counter() < deadline:
                    text = LINES[i % len(LINES)].format(
                        city=CITIES[i % 4], thing=THINGS[i % 6], company=f"Co{i % 5}"
                    )
                    started = time.perf_counter()
                    try:
                        await session.turn(user, f"{user}-t{i // 20}", text)
                        latencies.append((time.perf_counter() - started) * 1000)
                        advance(1)
                    except Exception as exc:  # counted and reported, the load goes on
                        errors.append(f"{type(exc).__name__}: {exc}"[:200])
                    i += 1
                    if len(latencies) % 50 == 0:
                        C.log(f"{len(latencies)} turns")

            started = time.perf_counter()
            # No total: the run ends on time, not after a number of turns.
            with C.progress(f"turns, {args.workers} workers, {args.seconds:g} s") as advance:
                await asyncio.gather(*(worker(w) for w in range(args.workers)))
            elapsed = time.perf_counter() - started
            stored = {
                f"worker{w}": len(await session.service.alist(f"load-{run}-{w}"))
                for w in range(args.workers)
            }
            for w in range(args.workers):
                await session.service.adelete_user(f"load-{run}-{w}")
    result = {
        "benchmark": "load", "backend": "postgres + embedded chroma", "model": "offline",
        "workers": args.workers, "seconds": round(elapsed, 1), "turns": len(latencies),
        "turns_per_second": round(len(latencies) / elapsed, 2),
        "latency_ms": C.describe(latencies, ("median", "p95")),
        "errors": len(errors), "first_errors": errors[:3], "memories_per_user": stored,
    }  # fmt: skip
    C.finish(result, args)


if __name__ == "__main__":
    asyncio.run(main())

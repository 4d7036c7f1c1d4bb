"""Which message a forget request's topic means, by meaning: choose the across settings, check them.

Usage:
    python benchmarks/forget_topics.py   (prints JSON; about a minute)

`benchmarks/data/forget_topics.json` holds 24 imaginary users: what each said, and topics a
request might name ("my work van" for "I drive a 2014 Ford Transit"), each with the message
it means, or none (a third of them: something the user never said, near what they did).
Each user's messages are played to the compiled graph on the embedded default with the
offline model, one thread each, so the records are what the offline path keeps (raw
statements included). Then `memory.understanding.topics.by_meaning` is asked for each topic,
as `memory.lifecycle.forget_targets` asks it when no word matches.

`ACROSS_FLOOR` and `ACROSS_MARGIN` (the fallback over all of a user's messages) are chosen on
the `calibration` pools, by taken right less twice what is taken wrongly (another message,
or anything for a topic never said); the `held_out` pools are scored, never tuned on.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import _common  # noqa: F401  (the repository on the path, nothing leaves the machine)

from memory.store.records import MemoryRecord
from memory.understanding import topics

DATA = Path(__file__).resolve().parent / "data" / "forget_topics.json"
FLOORS = tuple(round(0.18 + 0.02 * i, 2) for i in range(8))
MARGINS = (0.03, 0.04, 0.06, 0.08, 0.1)
NEVER = 9.0
"""A floor no similarity reaches: the fallback off, as before it."""


async def kept(pools: Sequence[dict[str, Any]]) -> list[list[MemoryRecord]]:
    """Return each pool's live records after its messages, one thread per message."""
    from agent.runner import open_session
    from graphs.settings import Settings
    from memory.backends import BackendConfig

    out = []
    with tempfile.TemporaryDirectory() as home:
        settings = Settings(backend=BackendConfig(home=home), model="offline")
        async with open_session(settings) as s:
            for n, pool in enumerate(pools):
                for i, line in enumerate(pool["said"]):
                    await s.turn(f"p{n}", f"p{n}-m{i}", line)
                records = await s.service.alist(f"p{n}", include_turns=True)
                out.append([r for r in records if r.status in ("active", "candidate")])
    return out


def _message(record: MemoryRecord) -> int | None:
    thread = record.source.thread_id or ""
    return int(thread.rsplit("-m", 1)[1]) if "-m" in thread else None


def scored(
    pools: Sequence[dict[str, Any]], records: Sequence[list[MemoryRecord]], floor: float,
    margin: float,
) -> dict[str, int]:  # fmt: skip
    """Return what `by_meaning` takes at a floor and margin of the fallback."""
    saved = topics.ACROSS_FLOOR, topics.ACROSS_MARGIN
    topics.ACROSS_FLOOR, topics.ACROSS_MARGIN = floor, margin
    counts = dict.fromkeys(("right", "wrong", "missed", "taken_for_nothing", "left"), 0)
    try:
        for pool, recs in zip(pools, records, strict=True):
            for ask in pool["asks"]:
                got = {_message(r) for r in topics.by_meaning(ask["topic"], recs)}
                if ask["means"] is None:
                    counts["taken_for_nothing" if got else "left"] += 1
                elif not got:
                    counts["missed"] += 1
                else:
                    counts["right" if got == {ask["means"]} else "wrong"] += 1
    finally:
        topics.ACROSS_FLOOR, topics.ACROSS_MARGIN = saved
    return counts


def _utility(c: dict[str, int]) -> int:
    return c["right"] - 2 * (c["wrong"] + c["taken_for_nothing"])


def main(argv: Sequence[str] | None = None) -> int:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args(argv)
    pools = json.loads(DATA.read_text(encoding="utf-8"))["pools"]
    records = asyncio.run(kept(pools))
    both = list(zip(pools, records, strict=True))
    parts = {
        name: ([p for p, _ in both if p["part"] == name], [r for p, r in both if p["part"] == name])
        for name in ("calibration", "held_out")
    }
    cal = parts["calibration"]
    grid = {(f, m): scored(*cal, f, m) for f in FLOORS for m in MARGINS}
    best = max(grid, key=lambda k: (_utility(grid[k]), k[0], k[1]))
    out: dict[str, Any] = {
        "chosen": {"floor": best[0], "margin": best[1]},
        "shipped": {"floor": topics.ACROSS_FLOOR, "margin": topics.ACROSS_MARGIN},
    }
    for name, (ps, rs) in parts.items():
        out[name] = {
            "topics": sum(len(p["asks"]) for p in ps),
            "never_said": sum(a["means"] is None for p in ps for a in p["asks"]),
            "without_fallback": scored(ps, rs, NEVER, NEVER),
            "shipped": scored(ps, rs, topics.ACROSS_FLOOR, topics.ACROSS_MARGIN),
        }
    sys.stdout.write(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Time to the reply versus time to the whole run, inline and background extraction.

Each turn runs through `agent.runner.Session.turn` on the embedded default. Reported per
configuration: median and p95 of time-to-first-token (the reply exists) and of
time-to-run-complete, and their ratio. Models: the offline model, and a scripted model that
takes 300 ms per call (chat, extraction and summary calls alike).

    python benchmarks/reply_latency.py [--turns 30] [--out FILE.json] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402  (sets the offline environment before the imports below)

sys.path.insert(0, str(C.REPO / "tests"))
from fakes import ThreadFakeModel  # noqa: E402

import agent.runner as runner  # noqa: E402
from graphs.memory_agent import build_graph  # noqa: E402
from graphs.settings import Settings  # noqa: E402
from memory.backends import BackendConfig  # noqa: E402


class SlowModel(ThreadFakeModel):
    """A scripted model that takes 300 ms for every call, like a fast hosted LLM."""

    delay: float = 0.3

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> Any:  # fmt: skip
        time.sleep(self.delay)
        return super()._generate(messages, stop, run_manager, **kwargs)


async def measure(name: str, settings: Settings, model: Any, turns: int) -> dict:
    firsts, totals = [], []
    async with runner.open_session(settings) as session:
        if model is not None:
            session.graph = build_graph(session.backends.checkpointer, session.backends.store,
                                        settings=settings, model=model,
                                        index=session.backends.index)  # fmt: skip
        for i in C.track(range(turns), name):
            result = await session.turn("bench", "t1", f"I love hobby number {i}.")
            firsts.append(result.first_token_s * 1000)
            totals.append(result.total_s * 1000)
        flush_started = time.perf_counter()
    flush_ms = (time.perf_counter() - flush_started) * 1000
    C.log(f"{name}: done")
    return {
        "first_token_ms": C.describe(firsts, ("median", "p95")),
        "run_complete_ms": C.describe(totals, ("median", "p95")),
        "first_token_over_complete": round(
            statistics.median(firsts) / statistics.median(totals), 3
        ),
        "close_flush_ms": round(flush_ms, 1),
    }  # fmt: skip


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=30)
    C.output_args(parser, chart=False)
    args = parser.parse_args()
    C.start(args)
    out: dict[str, Any] = {"benchmark": "reply_latency", "turns": args.turns}
    with tempfile.TemporaryDirectory() as home:
        for mode in ("inline", "background"):
            for model_name in ("offline", "scripted_300ms"):
                settings = replace(
                    Settings(backend=BackendConfig(home=f"{home}/{mode}-{model_name}")),
                    extract_mode=mode, extract_delay=3600,
                )  # fmt: skip
                model = SlowModel() if model_name == "scripted_300ms" else None
                out[f"{mode}/{model_name}"] = await measure(
                    f"{mode}/{model_name}", settings, model, args.turns
                )
    C.finish(out, args)


if __name__ == "__main__":
    asyncio.run(main())

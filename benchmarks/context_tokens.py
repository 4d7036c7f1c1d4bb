"""Tokens the chat model is sent per turn: summary + memory versus the full history.

Runs threads of 50, 200 and 1,000 turns through the real graph (embedded Chroma, in-memory
store and checkpointer) with a fake LLM whose replies are ~40 tokens, and prints one JSON
object: per thread length, the median and max tokens sent per turn, the same for a baseline
that sends the whole history, and their ratio. Tokens are the agent's own estimate
(`graphs.window.tokens`: `memory.tokens`, calibrated on OpenAI's o200k_base).

    python benchmarks/context_tokens.py [--turns 50,200,1000] [--budget 8000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fakes import ThreadFakeModel  # noqa: E402
from langchain_core.messages import HumanMessage  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402
from langgraph.store.memory import InMemoryStore  # noqa: E402

from graphs.settings import Settings  # noqa: E402
from graphs.context import Context  # noqa: E402
from graphs.memory_agent import build_graph  # noqa: E402
from graphs.window import tokens  # noqa: E402
from memory.embeddings import make_embedder  # noqa: E402
from memory.index import ChromaIndex  # noqa: E402

TOPICS = ["the trip", "the budget", "hotels", "the flight", "food", "the museum pass"]


def user_text(i: int) -> str:
    if i == 3:
        return "Don't book anything that starts before 9am."
    if i == 5:
        return "I live in Oslo."
    return f"Turn {i}: what do you think about {TOPICS[i % len(TOPICS)]}, option {i % 17}?"


async def run(turns: int, settings: Settings, home: str) -> dict:
    model = ThreadFakeModel(plan_every=11)
    index = ChromaIndex.open(make_embedder("local"), path=f"{home}/chroma-{turns}")
    graph = build_graph(InMemorySaver(), InMemoryStore(), settings=settings, model=model,
                        index=index)  # fmt: skip
    config = {"configurable": {"thread_id": f"t{turns}"}}
    full: list[int] = []
    for i in range(1, turns + 1):
        out = await graph.ainvoke({"messages": [HumanMessage(user_text(i))]}, config,
                                  context=Context(user_id="bench"))  # fmt: skip
        system = model.chat_inputs[-1][0]
        # Baseline: the same system prompt and memory, plus every message of the thread.
        full.append(tokens([system, *out["messages"][:-1]]))
        if i % 50 == 0:
            print(f"  {turns}-turn thread: {i} turns", file=sys.stderr)
    sent = [tokens(m) for m in model.chat_inputs]
    last_system = str(model.chat_inputs[-1][0].content)
    return {
        "turns": turns,
        "sent_tokens": {"median": statistics.median(sent), "max": max(sent)},
        "full_history_tokens": {"median": statistics.median(full), "max": max(full)},
        "ratio_median": round(statistics.median(sent) / statistics.median(full), 3),
        "ratio_last_turn": round(sent[-1] / full[-1], 3),
        "within_budget": max(sent) <= settings.context_tokens,
        "constraint_kept": "Don't book anything that starts before 9am." in last_system,
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", default="50,200,1000")
    parser.add_argument("--budget", type=int, default=8000)
    parser.add_argument("--summary-tokens", type=int, default=3000)
    args = parser.parse_args()
    settings = replace(Settings(), context_tokens=args.budget, summary_tokens=args.summary_tokens)
    results = []
    with tempfile.TemporaryDirectory() as home:
        for n in [int(x) for x in args.turns.split(",")]:
            print(f"running a {n}-turn thread", file=sys.stderr)
            results.append(await run(n, settings, home))
    print(
        json.dumps(
            {
                "benchmark": "context_tokens",
                "budget": args.budget,
                "summary_tokens": args.summary_tokens,
                "threads": results,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    asyncio.run(main())

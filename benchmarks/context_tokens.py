"""Tokens the chat model is sent per turn: summary + memory versus the full history.

Runs threads of 50, 200 and 1,000 turns through the real graph (embedded Chroma, in-memory
store and checkpointer) with a fake LLM whose replies are ~40 tokens, and prints one JSON
object: per thread length, the median and max tokens sent per turn, the same for a baseline
that sends the whole history, and their ratio. Tokens are the agent's own estimate
(`graphs.window.tokens`: `memory.text.tokens`, calibrated on OpenAI's o200k_base).

    python benchmarks/context_tokens.py [--turns 50,200,1000] [--budget 8000]
        [--summary-tokens 3000] [--out FILE.json] [--chart FILE.png] [--json]

The chart (``--chart``, or beside ``--out``) draws the tokens sent at every turn of the
longest thread next to the full history's.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402  (sets the offline environment before the imports below)

sys.path.insert(0, str(C.REPO / "tests"))
from fakes import ThreadFakeModel  # noqa: E402
from langchain_core.messages import HumanMessage  # noqa: E402
from langchain_core.runnables import RunnableConfig  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402
from langgraph.store.memory import InMemoryStore  # noqa: E402

from graphs.context import Context  # noqa: E402
from graphs.memory_agent import build_graph  # noqa: E402
from graphs.settings import Settings  # noqa: E402
from graphs.window import tokens  # noqa: E402
from memory.index.chroma import ChromaIndex  # noqa: E402
from memory.index.embeddings import make_embedder  # noqa: E402

TOPICS = ["the trip", "the budget", "hotels", "the flight", "food", "the museum pass"]


def user_text(i: int) -> str:
    if i == 3:
        return "Don't book anything that starts before 9am."
    if i == 5:
        return "I live in Oslo."
    return f"Turn {i}: what do you think about {TOPICS[i % len(TOPICS)]}, option {i % 17}?"


async def run(
    turns: int, settings: Settings, home: str
) -> tuple[dict[str, Any], dict[str, list[int]]]:
    """Run one thread; return its summary and the per-turn series (sent, full history)."""
    model = ThreadFakeModel(plan_every=11)
    index = ChromaIndex.open(make_embedder("local"), path=f"{home}/chroma-{turns}")
    graph = build_graph(InMemorySaver(), InMemoryStore(), settings=settings, model=model,
                        index=index)  # fmt: skip
    config: RunnableConfig = {"configurable": {"thread_id": f"t{turns}"}}
    full: list[int] = []
    per_turn: list[int] = []  # the largest prompt of each turn (a turn may call the model twice)
    for i in C.track(range(1, turns + 1), f"{turns}-turn thread"):
        calls = len(model.chat_inputs)
        out = await graph.ainvoke({"messages": [HumanMessage(user_text(i))]}, config,
                                  context=Context(user_id="bench"))  # fmt: skip
        system = model.chat_inputs[-1][0]
        # Baseline: the same system prompt and memory, plus every message of the thread.
        full.append(tokens([system, *out["messages"][:-1]]))
        per_turn.append(max(tokens(m) for m in model.chat_inputs[calls:]))
    sent = [tokens(m) for m in model.chat_inputs]
    last_system = str(model.chat_inputs[-1][0].content)
    summary = {
        "turns": turns,
        "sent_tokens": {"median": statistics.median(sent), "max": max(sent)},
        "full_history_tokens": {"median": statistics.median(full), "max": max(full)},
        "ratio_median": round(statistics.median(sent) / statistics.median(full), 3),
        "ratio_last_turn": round(sent[-1] / full[-1], 3),
        "within_budget": max(sent) <= settings.context_tokens,
        "constraint_kept": "Don't book anything that starts before 9am." in last_system,
    }
    return summary, {"sent": per_turn, "full_history": full}


def draw_chart(result: dict[str, Any], series: dict[str, list[int]], plt: Any) -> Any:
    """Tokens sent per turn vs the full history, over the longest thread."""
    fig, ax = plt.subplots(figsize=(9, 4.8))
    xs = range(1, len(series["sent"]) + 1)
    ax.plot(xs, series["full_history"], color="#e8a33d", label="full history (baseline)")
    ax.plot(xs, series["sent"], color=C.COLORS["sent"], linewidth=2,
            label="sent: summary + recalled memory + recent turns")  # fmt: skip
    ax.axhline(result["budget"], color="#888888", linestyle="--", linewidth=1)
    last = len(series["sent"])
    ax.annotate(f"budget {result['budget']:,} tokens", (last, result["budget"]), xytext=(-4, 4),
                textcoords="offset points", ha="right", fontsize=8, color="#555555")  # fmt: skip
    ax.set_xlabel("turn of the thread")
    ax.set_ylabel("tokens in the chat model's prompt")
    ax.set_title("Tokens per turn: what the agent sends vs the whole history")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, frameon=False, loc="upper left")
    ax.set_xlim(1, len(series["sent"]))
    top = max(result["budget"], *series["full_history"], *series["sent"])
    ax.set_ylim(0, top * 1.25)  # room for the legend above the lines
    fig.tight_layout()
    return fig


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", default="50,200,1000")
    parser.add_argument("--budget", type=int, default=8000)
    parser.add_argument("--summary-tokens", type=int, default=3000)
    C.output_args(parser)
    args = parser.parse_args()
    C.start(args)
    settings = replace(Settings(), context_tokens=args.budget, summary_tokens=args.summary_tokens)
    results = []
    longest: dict[str, list[int]] = {"sent": []}
    with tempfile.TemporaryDirectory() as home:
        for n in [int(x) for x in args.turns.split(",")]:
            C.log(f"running a {n}-turn thread")
            summary, series = await run(n, settings, home)
            results.append(summary)
            if len(series["sent"]) > len(longest["sent"]):
                longest = series
    result = {
        "benchmark": "context_tokens",
        "budget": args.budget,
        "summary_tokens": args.summary_tokens,
        "threads": results,
    }
    C.finish(result, args, lambda r, plt: draw_chart(r, longest, plt))


if __name__ == "__main__":
    asyncio.run(main())

"""Answer accuracy on LoCoMo, judged by an LLM: memory on vs memory off vs the full history.

    python benchmarks/locomo_qa.py --model openai:gpt-4o-mini --judge openai:gpt-4o-mini
        [--base-url URL] [--api-key KEY] [--judge-base-url URL] [--judge-api-key KEY]
        [--data PATH] [--limit-conversations N] [--limit-questions N] [--k 8]
        [--concurrency 4] [--retries 2] [--timeout 60] [--max-tokens 1024]
        [--out results.json] [--chart results.png]
        [--price-in USD] [--price-out USD] [--no-search-tool] [--dry-run-cost]

Any OpenAI-compatible chat model answers and any one judges (``openai:<name>`` specs, built
by `graphs.models.make_chat_model` exactly as the agent builds them; ``--base-url`` points
them at a local server). The key is ``--api-key`` or ``OPENAI_API_KEY``; the judge uses
``--judge-base-url`` / ``--judge-api-key`` when given, else the model's (``--judge-base-url
none``: OpenAI's own endpoint while the model runs elsewhere).

Every non-adversarial question (category 5 excluded, as in ``locomo.py``) is asked after the
whole conversation ("now" = one day after the last session), by three systems that send the
same system prompt (``prompts/system.en.md``) and the question as the user message:

* ``memory_on``: the product's memory. Per conversation, a `MemoryService` over a temp
  `SqliteStore` and an embedded Chroma (bundled local embedder) holds the conversation as
  one user's memories: each session's turns archived with `MemoryService.archive_turns`,
  as ``locomo.py``'s ``service`` system does. Per question, `MemoryService.search(user,
  question, k)` recalls and `memory.recall.block.format_block` formats the memory block, as the
  graph's ``load_memory`` node does; "(nothing yet)" when nothing is recalled, as its chat
  node shows. As in the graph's chat node, the model may also call ``SearchMemory``
  (`graphs.tools`) over the conversation's service, for up to ``MAX_TOOL_ROUNDS`` rounds
  before it answers without tools, and the system prompt carries the graph's hint on when
  to search; ``--no-search-tool`` answers from the memory block alone. Searches count in
  the recall time; every call's tokens count;
* ``memory_off``: no memory, the block says "(nothing yet)";
* ``full_history``: no memory block; the whole transcript (every session, dated) in the
  prompt's short-term slot.

The judge (``prompts/judge.en.md``; LLM-as-judge as in the mem0 paper) gets the question,
the gold answer and the generated answer and replies CORRECT or WRONG; anything else, and a
failed call, counts as wrong (and is counted). Reported per system: accuracy overall and per
category, prompt tokens per question (from the responses' ``usage``; estimated with
``memory.text.tokens`` where a response has none), latency per question (the answer
call, plus recall for ``memory_on``; with ``--concurrency`` calls in flight), and the same-run
ratios of memory on to the full history (tokens) and to memory off (accuracy).

Before any call the run logs a cost estimate (calls, tokens, USD at ``--price-in`` /
``--price-out`` per million tokens); ``--dry-run-cost`` prints it and makes no call. Prompt
tokens in the estimate are counted on the exact prompts (the memory blocks are recalled for
real, locally); answer lengths are an assumption (``--assume-answer-tokens``).

Prints one JSON object on stdout (progress goes to stderr); ``--out`` also writes it with
every question's answers and verdicts; ``--chart`` draws accuracy by category and tokens per
question (PNG, needs matplotlib: in the ``dev`` extra).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

# `_common` drops these from the environment (nothing may leave the machine by accident);
# this benchmark is the one that calls a model on purpose, so it reads them first.
_ENV = {name: os.environ.get(name) for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402  (sets the offline environment before the imports below)
from _locomo import (  # noqa: E402  (the one LoCoMo reader)
    CATEGORIES,
    DEFAULT_DATA,
    SERVICE_TURN_TTL,
    Conversation,
    Question,
    close_service,
    ingest_service,
    load,
    service_in,
)
from langchain_core.messages import (  # noqa: E402
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from pydantic import ValidationError  # noqa: E402

import prompts  # noqa: E402
from graphs.nodes import MAX_TOOL_ROUNDS  # noqa: E402
from graphs.tools import SEARCH_MEMORY, SearchMemory, render_results  # noqa: E402
from memory.recall.block import format_block  # noqa: E402
from memory.text.tokens import count_message_tokens, count_tokens  # noqa: E402

SYSTEMS = ("memory_on", "memory_off", "full_history")
NOTHING = "(nothing yet)"
"""What the graph's chat node puts in the memory block when nothing was recalled."""
HISTORY_HEADING = "The whole conversation so far, every session in order:"


# --- data ---------------------------------------------------------------------------------------


@dataclass
class Item:
    """One question, with what the three systems need to ask it."""

    qa: Question
    now: datetime
    block: str
    history: str
    recall_s: float
    recalled: int
    est_tokens: dict[str, int] = field(default_factory=dict)
    search: Callable[[str, int], str] | None = None
    """Runs a `SearchMemory` call for this question's user (None: no tool)."""


def load_questions(
    data: Path,
) -> tuple[list[Conversation], list[list[Question]], list[dict[str, int]]]:
    """Conversations (`_locomo.load`) and, per conversation, its questions with gold answers.

    Category 5 (adversarial) is left out; evidence is not needed to grade an answer, so
    questions without cited evidence are kept (unlike the recall benchmark).
    """
    convs, _ = load(data, None)
    per_conv: list[list[Question]] = []
    left_out: list[dict[str, int]] = []
    for conv in convs:
        qas = [q for q in conv.asked if q.category in CATEGORIES and q.answer is not None]
        per_conv.append(qas)
        left_out.append({"adversarial": conv.adversarial, "no_answer": len(conv.asked) - len(qas)})
    return convs, per_conv, left_out


# --- prompts ------------------------------------------------------------------------------------


def answer_messages(system: str, item: Item) -> list[BaseMessage]:
    """The messages `system` sends for `item`: system prompt with its context, the question.

    Memory on with the tool (`item.search`) gets the graph's hint on when to search.
    """
    block = item.block if system == "memory_on" and item.block else NOTHING
    short_term = f"{HISTORY_HEADING}\n\n{item.history}" if system == "full_history" else ""
    searches = system == "memory_on" and item.search is not None
    text = prompts.render(
        "system", "en", now=item.now.isoformat(), memory_block=block, short_term=short_term,
        search_hint=prompts.load("search_hint", "en").strip() if searches else "",
    )  # fmt: skip
    return [SystemMessage(text), HumanMessage(item.qa.question)]


def judge_messages(qa: Question, answer: str) -> list[BaseMessage]:
    return [HumanMessage(prompts.render("judge", "en", question=qa.question, gold=qa.answer or "",
                                        answer=answer))]  # fmt: skip


_WRONG = re.compile(r"\b(WRONG|INCORRECT)\b")
_CORRECT = re.compile(r"\bCORRECT\b")


def parse_verdict(text: str) -> bool | None:
    """CORRECT → True, WRONG → False, anything else → None (counted as wrong)."""
    upper = text.upper()
    if _WRONG.search(upper):
        return False
    if _CORRECT.search(upper):
        return True
    return None


def message_text(message: Any) -> str:
    content = getattr(message, "content", message)
    if isinstance(content, list):
        return "".join(
            p.get("text", "") if isinstance(p, dict) else str(p) for p in content
        ).strip()
    return str(content).strip()


# --- preparation (local, free) ------------------------------------------------------------------


def prepare(
    convs: list[Conversation],
    per_conv: list[list[Question]],
    *,
    k: int,
    tmp: str,
    search_tool: bool = False,
) -> tuple[list[Item], dict[str, Any], list[Any]]:
    """Ingest each conversation into its own memory service and recall for each question.

    With `search_tool`, each item can search its conversation's service (`Item.search`),
    and the services stay open: the caller closes the ones returned.
    """

    from memory.index.embeddings import make_embedder

    embedder = make_embedder("local")
    embedder.embed(["warm up"])
    items: list[Item] = []
    kept: list[Any] = []
    stats: dict[str, Any] = {"turns": 0, "turns_archived": 0, "ingest_seconds": 0.0,
                             "history_tokens": [], "block_tokens": []}  # fmt: skip
    for ci, conv in enumerate(convs):
        questions = per_conv[ci]
        if not questions:
            continue
        user = f"locomo-{ci}"
        service = service_in(Path(tmp) / f"service-{ci}", embedder)
        t0 = time.perf_counter()
        stats["turns_archived"] += ingest_service(service, user, conv)
        stats["ingest_seconds"] += time.perf_counter() - t0
        stats["turns"] += len(conv.turns)
        history = conv.transcript()
        stats["history_tokens"].append(tokens_of(history))
        now = conv.now
        search = searcher(service, user, now) if search_tool else None
        for qa in C.track(questions, f"recall, conversation {ci + 1}/{len(convs)}"):
            t0 = time.perf_counter()
            found = service.search(user, qa.question, k=k, now=now)
            recall_s = time.perf_counter() - t0
            block = format_block([r.record for r in found])
            stats["block_tokens"].append(tokens_of(block))
            items.append(Item(qa, now, block, history, recall_s, len(found)))
            items[-1].search = search
        C.log(f"conversation {ci}: {len(conv.turns)} turns, {len(questions)} questions, "
              f"history ≈{stats['history_tokens'][-1]} tokens")  # fmt: skip
        if search_tool:
            kept.append(service)
        else:
            close_service(service)
        del service
    for item in items:
        item.est_tokens = {s: count_message_tokens(answer_messages(s, item)) for s in SYSTEMS}
    return items, stats, kept


def searcher(service: Any, user: str, now: datetime) -> Callable[[str, int], str]:
    """A `SearchMemory` for one conversation: its user, at its "now", one call at a time."""
    lock = threading.Lock()

    def search(query: str, k: int) -> str:
        with lock:
            return render_results([r.record for r in service.search(user, query, k, now=now)])

    return search


def tokens_of(text: str) -> int:
    return count_tokens(text) if text else 0


# --- cost ---------------------------------------------------------------------------------------


def usd(tokens_in: int, tokens_out: int, price_in: float, price_out: float) -> float:
    return round(tokens_in * price_in / 1e6 + tokens_out * price_out / 1e6, 4)


def estimate(items: list[Item], args: argparse.Namespace) -> dict[str, Any]:
    """Calls, tokens and cost of a run, before making it (prompts counted, answers assumed)."""
    n = len(items)
    answer_out = args.assume_answer_tokens
    filler = "x" * (4 * answer_out)  # an answer of about that many tokens
    judge_in = sum(count_message_tokens(judge_messages(i.qa, filler)) for i in items)
    per_system = {
        s: {"calls": n, "prompt_tokens": sum(i.est_tokens[s] for i in items),
            "prompt_tokens_median": _median([i.est_tokens[s] for i in items])}
        for s in SYSTEMS
    }  # fmt: skip
    answer_in = sum(p["prompt_tokens"] for p in per_system.values())
    calls = n * len(SYSTEMS)
    a_out, j_out = calls * answer_out, calls * args.assume_judge_tokens
    j_in = judge_in * len(SYSTEMS)
    a_usd = usd(answer_in, a_out, args.price_in, args.price_out)
    j_usd = usd(j_in, j_out, args.judge_price_in, args.judge_price_out)
    return {
        "calls": {"answer": calls, "judge": calls, "total": 2 * calls},
        "tokens": {
            "answer_in": answer_in,
            "answer_out": a_out,
            "judge_in": j_in,
            "judge_out": j_out,
        },  # fmt: skip
        "per_system": per_system,
        "price_per_1m_tokens": {
            "model_in": args.price_in,
            "model_out": args.price_out,
            "judge_in": args.judge_price_in,
            "judge_out": args.judge_price_out,
        },  # fmt: skip
        "usd": {"answers": a_usd, "judge": j_usd, "total": round(a_usd + j_usd, 4)},
        "how": "prompt tokens counted on the exact prompts with memory.text.tokens "
        f"(~4 characters a token); each answer assumed {answer_out} tokens, each verdict "
        f"{args.assume_judge_tokens}",
    }


# --- the run ------------------------------------------------------------------------------------


def make_model(
    spec: str,
    key: str | None,
    base_url: str | None,
    retries: int,
    tools: list[Any] | None = None,
    timeout: float = 60.0,
    max_tokens: int | None = None,
) -> Any:
    """Build a model as the agent does; `retries`, `timeout`, `max_tokens` are its requests'.

    One layer of retries: the OpenAI client's own (timeouts, connection errors, 408, 409,
    429 and 5xx, with exponential backoff and `Retry-After`), as `MEMORY_AGENT_MODEL_RETRIES`
    sets them for the agent; a bad request fails at once.
    """
    from graphs.models import make_chat_model
    from graphs.settings import ModelRequests, Settings

    longest = max_tokens or ModelRequests.max_tokens
    requests = ModelRequests(retries=retries, timeout=timeout, max_tokens=longest)
    settings = Settings(openai_api_key=key, openai_base_url=base_url, requests=requests)
    model = make_chat_model(spec, settings)
    return model.bind_tools(tools) if tools else model


def call(model: Any, messages: list[BaseMessage]) -> dict[str, Any]:
    """One chat call: its text, tokens (from `usage` when the response has it) and time."""
    t0 = time.perf_counter()
    try:
        reply = model.invoke(messages)
    except Exception as exc:  # counted and reported, the run goes on
        return {"text": "", "seconds": time.perf_counter() - t0,
                "error": f"{type(exc).__name__}: {exc}"[:500],
                "prompt_tokens": count_message_tokens(messages),
                "completion_tokens": 0, "tokens_from": "estimate", "tool_calls": [],
                "message": None}  # fmt: skip
    seconds = time.perf_counter() - t0
    text = message_text(reply)
    usage = getattr(reply, "usage_metadata", None) or {}
    if usage.get("input_tokens"):
        tokens = (int(usage["input_tokens"]), int(usage.get("output_tokens") or 0), "usage")
    else:
        tokens = (count_message_tokens(messages), tokens_of(text), "estimate")
    return {"text": text, "seconds": seconds, "error": None, "prompt_tokens": tokens[0],
            "completion_tokens": tokens[1], "tokens_from": tokens[2],
            "tool_calls": list(getattr(reply, "tool_calls", None) or []),
            "message": reply}  # fmt: skip


def answer_with_search(
    item: Item, messages: list[BaseMessage], model: Any, searching: Any
) -> dict[str, Any]:
    """Answer as the graph's chat node does with `SearchMemory`.

    Up to `MAX_TOOL_ROUNDS` rounds of searches, then an answer without tools. Returns the
    last call's text and error with the tokens and seconds of all calls summed, plus
    `calls`, the tokens of the calls that succeeded (`billed_*`), `searches` and
    `search_seconds`.
    """
    assert item.search is not None
    total: dict[str, Any] = {"seconds": 0.0, "prompt_tokens": 0, "completion_tokens": 0}
    billed = {"billed_prompt_tokens": 0, "billed_completion_tokens": 0}
    calls = searches = 0
    search_s, from_usage = 0.0, True
    for rounds in range(MAX_TOOL_ROUNDS + 1):
        answer = call(model if rounds == MAX_TOOL_ROUNDS else searching, messages)
        calls += 1
        for key in total:
            total[key] += answer[key]
        if not answer["error"]:
            billed["billed_prompt_tokens"] += answer["prompt_tokens"]
            billed["billed_completion_tokens"] += answer["completion_tokens"]
        from_usage = from_usage and answer["tokens_from"] == "usage"
        if answer["error"] or not answer["tool_calls"] or rounds == MAX_TOOL_ROUNDS:
            break
        results = []
        for tool_call in answer["tool_calls"]:
            name = tool_call.get("name")
            if name != SEARCH_MEMORY:  # as ToolNode answers a tool it does not have
                text = f"Error: {name!r} is not a valid tool, try {SEARCH_MEMORY!r}."
            else:
                t0 = time.perf_counter()
                try:
                    args = SearchMemory.model_validate(tool_call.get("args") or {})
                    text = item.search(args.query, args.k)
                except ValidationError as exc:
                    text = f"invalid arguments: {exc}"
                except Exception as exc:  # a failed search is the model's to read, not fatal
                    text = f"search failed: {type(exc).__name__}: {exc}"[:500]
                search_s += time.perf_counter() - t0
                searches += 1
            results.append(ToolMessage(text, tool_call_id=tool_call["id"], name=str(name)))
        messages = [*messages, answer["message"], *results]
    return answer | total | billed | {
        "tokens_from": "usage" if from_usage else "estimate", "calls": calls,
        "searches": searches, "search_seconds": search_s,
    }  # fmt: skip


def ask(item: Item, system: str, model: Any, judge: Any, searching: Any = None) -> dict[str, Any]:
    """Answer one question with one system, then have the judge grade it.

    Memory on with the tool answers through `answer_with_search` (`searching`: the model
    with `SearchMemory` bound); its searches count in `recall_ms`.
    """
    if system == "memory_on" and item.search is not None and searching is not None:
        answer = answer_with_search(item, answer_messages(system, item), model, searching)
    else:
        answer = call(model, answer_messages(system, item))
        ok = not answer["error"]
        answer |= {"calls": 1, "searches": 0, "search_seconds": 0.0,
                   "billed_prompt_tokens": answer["prompt_tokens"] * ok,
                   "billed_completion_tokens": answer["completion_tokens"] * ok}  # fmt: skip
    search_s = answer["search_seconds"]
    row: dict[str, Any] = {
        "conv": item.qa.conv, "qa": item.qa.index, "category": CATEGORIES[item.qa.category],
        "system": system, "question": item.qa.question, "gold": item.qa.answer,
        "answer": answer["text"], "error": answer["error"],
        "prompt_tokens": answer["prompt_tokens"],
        "completion_tokens": answer["completion_tokens"], "tokens_from": answer["tokens_from"],
        "answer_ms": round(answer["seconds"] * 1000, 1),
        "recall_ms": round((item.recall_s + search_s) * 1000, 1) if system == "memory_on"
        else 0.0,
        "searches": answer["searches"], "answer_calls": answer["calls"],
        "billed_prompt_tokens": answer["billed_prompt_tokens"],
        "billed_completion_tokens": answer["billed_completion_tokens"],
        "verdict": False, "judge_reply": None, "judge_error": None,
        "judge_prompt_tokens": 0, "judge_completion_tokens": 0,
    }  # fmt: skip
    row["latency_ms"] = round(row["answer_ms"] + row["recall_ms"], 1)
    if answer["error"]:
        return row
    verdict = call(judge, judge_messages(item.qa, answer["text"] or "(no answer)"))
    row.update(
        judge_reply=verdict["text"][:200],
        judge_error=verdict["error"],
        judge_prompt_tokens=verdict["prompt_tokens"],
        judge_completion_tokens=verdict["completion_tokens"],
        verdict=False if verdict["error"] else parse_verdict(verdict["text"]),
    )
    return row


def run_calls(
    items: list[Item], model: Any, judge: Any, concurrency: int, searching: Any = None
) -> list[dict[str, Any]]:
    jobs = [(i, s) for i in items for s in SYSTEMS]  # interleaved: drift hits all alike
    rows: list[dict[str, Any]] = []
    done_every = max(1, len(jobs) // 20)
    with (
        ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool,
        C.progress("answers judged", len(jobs)) as advance,
    ):
        futures = [pool.submit(ask, i, s, model, judge, searching) for i, s in jobs]
        for n, future in enumerate(as_completed(futures), 1):
            rows.append(future.result())
            advance(1)
            if n % done_every == 0 or n == len(jobs):
                wrong = sum(1 for r in rows if r["error"] or r["judge_error"])
                C.log(f"  {n}/{len(jobs)} answers judged ({wrong} failed calls)")
    order = {s: k for k, s in enumerate(SYSTEMS)}
    rows.sort(key=lambda r: (r["conv"], r["qa"], order[r["system"]]))
    return rows


# --- summary ------------------------------------------------------------------------------------


def _median(values: list[Any]) -> Any:
    return statistics.median(values) if values else None


def _stats(values: list[float]) -> dict[str, Any]:
    return C.describe(values, ("median", "mean", "p95", "max", "total"))


def summarize(rows: list[dict[str, Any]], system: str) -> dict[str, Any]:
    mine = [r for r in rows if r["system"] == system]
    n = len(mine)

    def acc(rs: list[dict[str, Any]]) -> float | None:
        return round(sum(r["verdict"] is True for r in rs) / len(rs), 4) if rs else None

    out: dict[str, Any] = {
        "n": n,
        "accuracy": acc(mine),
        "correct": sum(r["verdict"] is True for r in mine),
        "answer_errors": sum(1 for r in mine if r["error"]),
        "judge_errors": sum(1 for r in mine if r["judge_error"]),
        "judge_unparsed": sum(
            1 for r in mine if not r["error"] and not r["judge_error"] and r["verdict"] is None
        ),
        "by_category": {
            name: {"n": len(rs), "accuracy": acc(rs)}
            for name in CATEGORIES.values()
            if (rs := [r for r in mine if r["category"] == name])
        },
        "prompt_tokens_per_question": _stats([r["prompt_tokens"] for r in mine])
        | {"from_usage": sum(r["tokens_from"] == "usage" for r in mine)},
        "completion_tokens_per_question": _stats([r["completion_tokens"] for r in mine]),
        "latency_ms": C.summarize_ms([r["latency_ms"] / 1000 for r in mine]),
    }
    if system == "memory_on":
        out["answer_call_ms"] = C.summarize_ms([r["answer_ms"] / 1000 for r in mine])
        out["recall_ms"] = C.summarize_ms([r["recall_ms"] / 1000 for r in mine])
        out["searches"] = sum(r.get("searches", 0) for r in mine)
        out["questions_searched"] = sum(1 for r in mine if r.get("searches"))
    errors = [r["error"] or r["judge_error"] for r in mine if r["error"] or r["judge_error"]]
    if errors:
        out["first_error"] = errors[0]
    return out


def ratios(systems: dict[str, dict[str, Any]]) -> dict[str, Any]:
    on, off, full = (systems[s] for s in SYSTEMS)

    def tok(s: dict[str, Any], key: str) -> float | None:
        value: float | None = s["prompt_tokens_per_question"].get(key)
        return value

    def lat(s: dict[str, Any]) -> float | None:
        value: float | None = s["latency_ms"].get("median_ms")
        return value

    return {
        "memory_on_vs_full_history": {
            "prompt_tokens_median": C.ratio(tok(on, "median"), tok(full, "median"), 4),
            "prompt_tokens_total": C.ratio(tok(on, "total"), tok(full, "total"), 4),
            "latency_median": C.ratio(lat(on), lat(full), 3),
            "accuracy": C.ratio(on["accuracy"], full["accuracy"], 3),
            "accuracy_difference": _diff(on["accuracy"], full["accuracy"]),
        },
        "memory_on_vs_memory_off": {
            "accuracy": C.ratio(on["accuracy"], off["accuracy"], 3),
            "accuracy_difference": _diff(on["accuracy"], off["accuracy"]),
            "prompt_tokens_median": C.ratio(tok(on, "median"), tok(off, "median"), 3),
        },
    }


def _diff(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else round(a - b, 4)


def actual_cost(rows: list[dict[str, Any]], args: argparse.Namespace) -> dict[str, Any]:
    sent = [r for r in rows if not r["error"]]  # a failed call is not billed (nor counted)
    t = {  # every answer call that succeeded, searching rounds included
        "answer_in": sum(r["billed_prompt_tokens"] for r in rows),
        "answer_out": sum(r["billed_completion_tokens"] for r in rows),
        "judge_in": sum(r["judge_prompt_tokens"] for r in sent if not r["judge_error"]),
        "judge_out": sum(r["judge_completion_tokens"] for r in sent),
    }
    a = usd(t["answer_in"], t["answer_out"], args.price_in, args.price_out)
    j = usd(t["judge_in"], t["judge_out"], args.judge_price_in, args.judge_price_out)
    return {"tokens": t, "usd": {"answers": a, "judge": j, "total": round(a + j, 4)},
            "calls": {"answer": sum(r["answer_calls"] for r in rows),
                      "judge": len(sent)}}  # fmt: skip


# --- chart --------------------------------------------------------------------------------------


def draw_chart(result: dict[str, Any], plt: Any) -> Any:
    """Accuracy by category for the three systems, and prompt tokens per question."""
    systems = result["systems"]
    groups = ["overall", *[c for c in CATEGORIES.values()
                           if any(c in systems[s]["by_category"] for s in SYSTEMS)]]  # fmt: skip
    colors = {"memory_on": "#2b7bba", "memory_off": "#b0b0b0", "full_history": "#e8a33d"}
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.8), width_ratios=[2.2, 1])
    width = 0.8 / len(SYSTEMS)
    for k, s in enumerate(SYSTEMS):
        values = [
            (systems[s]["accuracy"] if g == "overall"
             else systems[s]["by_category"].get(g, {}).get("accuracy")) or 0.0
            for g in groups
        ]  # fmt: skip
        xs = [g + (k - 1) * width for g in range(len(groups))]
        bars = ax1.bar(xs, values, width, label=s.replace("_", " "), color=colors[s])
        ax1.bar_label(bars, labels=[f"{v:.2f}" for v in values], fontsize=7, padding=1)
    counts = [
        result["questions"] if g == "overall" else result["questions_by_category"].get(g, 0)
        for g in groups
    ]
    ax1.set_xticks(range(len(groups)))
    ax1.set_xticklabels(
        [f"{g.replace('_', ' ')}\nn={n}" for g, n in zip(groups, counts, strict=True)]
    )
    ax1.set_ylim(0, 1.2)
    ax1.set_yticks([0, 0.2, 0.4, 0.6, 0.8, 1.0])
    ax1.set_ylabel("judge accuracy")
    ax1.set_title(f"LoCoMo answers: model {result['model']}, judge {result['judge']}")
    ax1.legend(loc="upper center", ncols=3, fontsize=8, frameon=False)
    tokens = [systems[s]["prompt_tokens_per_question"].get("median", 0) for s in SYSTEMS]
    bars = ax2.bar([s.replace("_", "\n") for s in SYSTEMS], tokens,
                   color=[colors[s] for s in SYSTEMS])  # fmt: skip
    ax2.bar_label(bars, labels=[f"{int(t):,}" for t in tokens], fontsize=8, padding=1)
    ax2.set_ylabel("prompt tokens per question (median)")
    ax2.set_title("tokens sent")
    ax2.margins(y=0.12)
    fig.tight_layout()
    return fig


# --- main ---------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default="openai:gpt-4o-mini", help="openai:<name>")
    p.add_argument(
        "--base-url",
        default=_ENV["OPENAI_BASE_URL"],
        help="OpenAI-compatible server (default: OPENAI_BASE_URL, else OpenAI)",
    )
    p.add_argument("--api-key", default=None, help="default: OPENAI_API_KEY")
    p.add_argument("--judge", default=None, help="openai:<name> (default: --model)")
    p.add_argument(
        "--judge-base-url", default=None, help="default: --base-url; 'none': OpenAI's own"
    )
    p.add_argument("--judge-api-key", default=None, help="default: --api-key")
    p.add_argument("--data", type=Path, default=DEFAULT_DATA)
    p.add_argument("--limit-conversations", type=int, default=None)
    p.add_argument(
        "--limit-questions",
        type=int,
        default=None,
        help="first N questions of each conversation (category 5 already left out)",
    )
    p.add_argument(
        "--k",
        type=int,
        default=None,
        help="memories recalled per question (default: Settings.recall_k, 8)",
    )
    p.add_argument("--concurrency", type=int, default=4, help="calls in flight at once")
    p.add_argument(
        "--retries",
        type=int,
        default=2,
        help="retries of a call after its first attempt, by the OpenAI client (timeouts, "
        "connection errors, 408, 409, 429, 5xx; backoff, Retry-After), as "
        "MEMORY_AGENT_MODEL_RETRIES for the agent",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        help="seconds one request may take before it is retried or fails (default 60, the "
        "agent's MEMORY_AGENT_MODEL_TIMEOUT)",
    )
    p.add_argument(
        "--max-tokens",
        type=int,
        default=None,
        help="longest answer asked for (default 1024, the agent's MEMORY_AGENT_MAX_TOKENS)",
    )
    p.add_argument(
        "--price-in",
        type=float,
        default=0.15,
        help="USD per 1M prompt tokens (default: gpt-4o-mini's 0.15)",
    )
    p.add_argument(
        "--price-out",
        type=float,
        default=0.60,
        help="USD per 1M completion tokens (default: gpt-4o-mini's 0.60)",
    )
    p.add_argument("--judge-price-in", type=float, default=None, help="default: --price-in")
    p.add_argument("--judge-price-out", type=float, default=None, help="default: --price-out")
    p.add_argument(
        "--assume-answer-tokens", type=int, default=60, help="answer length assumed by the estimate"
    )
    p.add_argument(
        "--assume-judge-tokens", type=int, default=2, help="verdict length assumed by the estimate"
    )
    p.add_argument(
        "--no-search-tool",
        action="store_true",
        help="memory on answers from the memory block alone (default: the model may also "
        "call SearchMemory, as the graph's chat node may)",
    )
    p.add_argument(
        "--dry-run-cost",
        action="store_true",
        help="print the estimate (calls, tokens, USD) and make no call",
    )
    C.output_args(p)  # --out also holds every answer; --chart: accuracy and tokens
    args = p.parse_args(argv)  # fmt: skip
    args.api_key = args.api_key or _ENV["OPENAI_API_KEY"]
    args.judge = args.judge or args.model
    if args.judge_base_url is None:
        args.judge_base_url = args.base_url
    elif args.judge_base_url.lower() in ("", "none"):  # OpenAI itself, whatever --base-url
        args.judge_base_url = None
    args.judge_api_key = args.judge_api_key or args.api_key
    if args.judge_price_in is None:
        args.judge_price_in = args.price_in
    if args.judge_price_out is None:
        args.judge_price_out = args.price_out
    if args.k is None:
        from graphs.settings import Settings

        args.k = Settings().recall_k
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    C.start(args)
    C.exit_cleanly_on_sigterm()
    started = time.perf_counter()
    result: dict[str, Any] = {
        "benchmark": "locomo answer accuracy judged by an LLM: memory on / memory off / full "
        "history (category 5 excluded)",
        "run": C.run_info(),
        "data": str(args.data.resolve()),
        "model": args.model,
        "base_url": args.base_url,
        "judge": args.judge,
        "judge_base_url": args.judge_base_url,
    }
    model = judge = searching = None
    if not args.dry_run_cost:  # fail on a bad spec or a missing key before the long part
        try:
            limits = {"timeout": args.timeout, "max_tokens": args.max_tokens}
            model = make_model(args.model, args.api_key, args.base_url, args.retries, **limits)
            if not args.no_search_tool:
                searching = make_model(args.model, args.api_key, args.base_url, args.retries,
                                       tools=[SearchMemory], **limits)  # fmt: skip
            judge = make_model(args.judge, args.judge_api_key, args.judge_base_url, args.retries,
                               **limits)  # fmt: skip
        except ValueError as exc:
            print(f"locomo_qa.py: {exc} (or pass --api-key / --base-url; --dry-run-cost needs "
                  "neither)", file=sys.stderr)  # fmt: skip
            return 2

    convs, per_conv, skipped = load_questions(args.data.resolve())
    if args.limit_conversations:
        convs, per_conv = convs[: args.limit_conversations], per_conv[: args.limit_conversations]
        skipped = skipped[: args.limit_conversations]
    if args.limit_questions:
        per_conv = [qs[: args.limit_questions] for qs in per_conv]
    tmp_dir = tempfile.TemporaryDirectory(prefix="locomo-qa-")
    searches = not args.no_search_tool  # also in a dry run: the hint is in the prompt
    items, prep, services = prepare(convs, per_conv, k=args.k, tmp=tmp_dir.name,
                                    search_tool=searches)  # fmt: skip
    try:
        return _run(args, result, model, judge, searching, items, prep, skipped, started)
    finally:
        for service in services:
            close_service(service)
        tmp_dir.cleanup()


def _run(
    args: argparse.Namespace,
    result: dict[str, Any],
    model: Any,
    judge: Any,
    searching: Any,
    items: list[Item],
    prep: dict[str, Any],
    skipped: list[dict[str, int]],
    started: float,
) -> int:
    """Report the setup and the estimate, answer and judge (unless a dry run), print."""
    searches = not args.no_search_tool
    rows: list[dict[str, Any]] = []
    result.update(
        conversations=len({i.qa.conv for i in items}),
        questions=len(items),
        questions_by_category={
            name: sum(1 for i in items if i.qa.category == cat) for cat, name in CATEGORIES.items()
        },
        left_out={key: sum(s[key] for s in skipped) for key in ("adversarial", "no_answer")},
        setup={
            "memory": "per conversation: MemoryService(SqliteStore in a temp file, embedded "
            "Chroma in a temp dir, local embedder, Policy(turn_ttl="
            f"{SERVICE_TURN_TTL.days} days)); turns archived with archive_turns per session "
            "(locomo.py's service system); one user per conversation",
            "recall": f"MemoryService.search(user, question, k={args.k}, now=last session + "
            "1 day), format_block",
            "search_tool": searches,
            "prompt": "prompts/system.en.md (memory_block, short_term) + the question as the "
            "user message; judge: prompts/judge.en.md",
            "turns": prep["turns"],
            "turns_archived": prep["turns_archived"],
            "ingest_seconds": round(prep["ingest_seconds"], 1),
            "recall_ms": C.summarize_ms([i.recall_s for i in items]),
            "memories_recalled_median": _median([i.recalled for i in items]),
            "memory_block_tokens_median": _median(prep["block_tokens"]),
            "history_tokens_median": _median(prep["history_tokens"]),
        },
        estimate=estimate(items, args),
    )
    est = result["estimate"]
    C.log(
        f"estimate: {est['calls']['total']} calls, {sum(est['tokens'].values()):,} tokens, "
        f"${est['usd']['total']} at ${args.price_in}/${args.price_out} per 1M in/out"
    )
    if args.dry_run_cost:
        result["dry_run"] = True
    else:
        assert model is not None and judge is not None
        rows = run_calls(items, model, judge, args.concurrency, searching)
        systems = {s: summarize(rows, s) for s in SYSTEMS}
        result["systems"] = systems
        result["ratios"] = ratios(systems)
        result["cost"] = actual_cost(rows, args)
    if args.out:
        result["out"] = str(args.out)
    result["run"]["load_avg_end"] = C.load_avg()
    result["elapsed_seconds"] = round(time.perf_counter() - started, 1)
    draw = None if args.dry_run_cost else draw_chart
    C.finish(result, args, draw, file_only={} if args.dry_run_cost else {"answers": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""What the chat model sees of a thread: the unsummarized messages, trimmed to a budget.

Trimming keeps protocol integrity: a tool call and its results are kept or dropped
together, the window starts at a user message, and the latest user message always stays.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

import prompts
from graphs.state import State
from graphs.tools import render_working_memory
from memory.summary import ThreadSummary
from memory.summary import render as render_summary
from memory.text import count_message_tokens

ANSWER_RESERVE_TOKENS = 1024
SYSTEM_PROMPT_RESERVE_TOKENS = 2048
"""Tokens kept for the system prompt when checking that a message fits the budget.

Enough for the prompt itself (~120 tokens) with a full memory block: `MEMORY_AGENT_RECALL_K`
(8) recalled plus 4 core memories of up to 500 characters each. A long rolling summary can
still push a turn over the budget; that turn then fails with a clear error.
"""


class ContextOverflow(ValueError):
    """The fixed part of the prompt alone does not fit the budget."""


def pair_tools(messages: Sequence[AnyMessage]) -> list[AnyMessage]:
    """Drop tool calls without all their results, and results without their call."""
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    out: list[AnyMessage] = []
    live_calls: set[str] = set()
    for m in messages:
        if isinstance(m, AIMessage) and m.tool_calls:
            ids = {str(c["id"]) for c in m.tool_calls if c.get("id")}
            if ids and ids <= answered:
                live_calls |= ids
                out.append(m)
            elif m.content:
                # Keep what the model said, without the dangling calls.
                out.append(AIMessage(m.content, id=m.id, name=m.name))
        elif isinstance(m, ToolMessage):
            if m.tool_call_id in live_calls:
                out.append(m)
        else:
            out.append(m)
    return out


def _turns(messages: Sequence[AnyMessage]) -> list[list[AnyMessage]]:
    """Split messages into turns, each starting at a user message."""
    turns: list[list[AnyMessage]] = []
    for m in messages:
        if isinstance(m, HumanMessage) or not turns:
            turns.append([m])
        else:
            turns[-1].append(m)
    return turns


def build_window(
    messages: Sequence[AnyMessage], skip_ids: set[str], budget: int
) -> list[AnyMessage]:
    """Return the newest whole turns that fit `budget` tokens, oldest first.

    Args:
        messages: The whole thread.
        skip_ids: Ids of messages the rolling summary already covers.
        budget: Tokens available for messages.

    Raises:
        ContextOverflow: If the latest user message alone does not fit.
    """
    view = pair_tools([m for m in messages if not (m.id and m.id in skip_ids)])
    turns = _turns(view)
    while turns and not isinstance(turns[0][0], HumanMessage):
        turns.pop(0)  # the window starts at a user message
    window: list[AnyMessage] = []
    used = 0
    for turn in reversed(turns):
        cost = tokens(turn)
        if used + cost > budget:
            if not window:
                # The newest turn alone is too big: keep just its user message, if it fits.
                head = turn[:1]
                if tokens(head) > budget:
                    raise ContextOverflow(
                        "the latest message alone exceeds the context budget "
                        "(MEMORY_AGENT_CONTEXT_TOKENS); shorten it or raise the budget"
                    )
                window = head
            break
        window = turn + window
        used += cost
    return window


def tokens(messages: Sequence[BaseMessage]) -> int:
    """Return the estimated token count of messages (no tokenizer download).

    `memory.text.tokens.count_message_tokens`: script-aware (Chinese is not undercounted),
    calibrated on OpenAI's o200k_base, 3 tokens of overhead a message. A list's count is
    the sum of its messages' counts, so the window's per-turn costs add up exactly.
    """
    return count_message_tokens(messages)


def message_room(context_tokens: int, prompt_reserve: int = 0) -> int:
    """Return the tokens a user message may have in a `context_tokens` budget.

    Args:
        context_tokens: The chat budget.
        prompt_reserve: Tokens kept for the system prompt too. The turn itself checks
            without it (the real prompt is measured then); settings check with
            `SYSTEM_PROMPT_RESERVE_TOKENS`, so the default limit fits a full memory block.
    """
    return context_tokens - ANSWER_RESERVE_TOKENS - prompt_reserve


def system_message(state: State, lang: str, now: str, *, search_hint: bool) -> SystemMessage:
    """Return the chat node's system prompt: memory block, summary and working memory.

    Args:
        state: The thread's state (memory block, summary, working memory).
        lang: `zh` or `en`: which prompt, and the labels of the short-term parts.
        now: The turn's time, ISO.
        search_hint: Tell the model when to call `SearchMemory` (it has the tool).
    """
    zh = lang == "zh"
    block = state.get("memory_block") or ("（无）" if zh else "(nothing yet)")
    parts = [render_working_memory(state.get("working"), zh)]
    if state.get("summary"):
        summary = ThreadSummary.model_validate(state["summary"])
        parts.insert(0, render_summary(summary, state.get("summary_count", 0), zh))
    return SystemMessage(
        prompts.render(
            "system",
            lang,
            now=now,
            memory_block=block,
            search_hint=prompts.load("search_hint", lang).strip() if search_hint else "",
            short_term="\n\n".join(p for p in parts if p),
        )
    )

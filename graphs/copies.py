"""The thread's copies of what the user said, rewritten from one turn's memory outcome.

A checkpointed thread holds the user's words in many channels: messages, the arguments of
tool calls, tool results, the memory block and what was recalled, the rolling summary and
working memory. After a turn, `rewrite` applies the outcome's `ThreadCuts` to every one of
them the same way: forgotten statements become a marker, and this turn's sensitive values are
redacted. Rewritten messages keep their ids, so the checkpointer overwrites them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeGuard

from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    ToolMessage,
)

from graphs.tools import SEARCH_MEMORY
from memory import ThreadCuts
from memory.summary import ThreadSummary

SEARCH_EXPIRED = (
    "[a memory search of an earlier turn: search again if needed]",
    "［之前一轮的记忆检索结果，需要时请重新检索］",
)

ADMITTED = "memory_user"
"""Key of `additional_kwargs` on a user message that load_memory admitted: the user whose
turn it was. A message the thread holds without it (written by a run that was refused) is
never extracted, archived or shown to the model."""


def admit(message: HumanMessage, user_id: str) -> HumanMessage:
    """Return the message marked as this user's (same id: it replaces the one in the thread)."""
    kwargs = {**message.additional_kwargs, ADMITTED: user_id}
    return message.model_copy(update={"additional_kwargs": kwargs})


def admitted(messages: list[AnyMessage], user_id: str) -> list[HumanMessage]:
    """Return the user messages of the thread that were this user's turns.

    A thread from before admission existed has no marks: all of its messages count.
    """
    humans = [m for m in messages if isinstance(m, HumanMessage)]
    if not any(ADMITTED in m.additional_kwargs for m in humans):
        return humans
    return [m for m in humans if m.additional_kwargs.get(ADMITTED) == user_id]


def strangers(
    messages: list[AnyMessage], latest: HumanMessage, user_id: str, new_thread: bool
) -> list[RemoveMessage]:
    """Return removals for user messages in the thread that are not this user's.

    On a thread this turn just claimed, nothing before the turn's message can be the
    user's (a refused racer wrote it); on an older thread, an unmarked message among marked
    ones is such a leftover.
    """
    humans = [m for m in messages if isinstance(m, HumanMessage) and m.id and m is not latest]
    if new_thread:
        gone = [m for m in messages if m.id and m.id != latest.id]
    else:
        marked = any(ADMITTED in m.additional_kwargs for m in humans)
        gone = [m for m in humans if marked and m.additional_kwargs.get(ADMITTED) != user_id]
    return [RemoveMessage(id=m.id) for m in gone if m.id]


def rewrite(state: dict[str, Any], cuts: ThreadCuts, turn_start: int, zh: bool) -> dict[str, Any]:
    """Return the state update that carries a turn's outcome into every thread channel.

    Args:
        state: The thread's state after the turn.
        cuts: What the outcome forgot and screens.
        turn_start: Index of the turn's first message: redaction reaches from there (the
            model saw the value for the one reply it was given for); forgetting reaches
            the whole thread.
        zh: The marker's language.
    """
    if not cuts.forgets and not cuts.redact:
        return {}
    out: dict[str, Any] = {}
    changed = []
    for i, m in enumerate(state.get("messages", [])):
        new = _message(m, cuts, zh, screen=i >= turn_start)
        if new is not None:
            changed.append(new)
    if changed:
        out["messages"] = changed
    if not cuts.forgets:
        working = state.get("working")
        if working:
            out["working"] = cuts.value(working, zh)
        return out
    block = state.get("memory_block") or ""
    out["memory_block"] = "\n".join(cuts.items(block.split("\n"), screen=False))
    out["recalled"] = [r for r in state.get("recalled", []) if cuts.items([r["content"]])]
    if state.get("summary"):
        out["summary"] = cuts.summary(ThreadSummary.model_validate(state["summary"])).model_dump()
    if state.get("working"):
        working = {k: v for k, v in cuts.value(state["working"], zh).items() if v not in ("", [])}
        out["working"] = working or None
    return out


def _message(m: AnyMessage, cuts: ThreadCuts, zh: bool, *, screen: bool) -> AnyMessage | None:
    """Return the message rewritten, or None if nothing in it changes."""
    if not m.id:
        return None
    update: dict[str, Any] = {}
    if isinstance(m.content, str):
        content = cuts.text(m.content, zh, screen=screen)
        if content != m.content:
            update["content"] = content
    if isinstance(m, AIMessage) and m.tool_calls:
        calls = [{**c, "args": cuts.value(c["args"], zh, screen=screen)} for c in m.tool_calls]
        if calls != m.tool_calls:
            update["tool_calls"] = calls
            # The provider's raw copy of the calls holds the same arguments.
            update["additional_kwargs"] = {
                k: v for k, v in m.additional_kwargs.items() if k != "tool_calls"
            }
            update["invalid_tool_calls"] = []
    if not update:
        return None
    if isinstance(m, ToolMessage | HumanMessage | AIMessage):
        return m.model_copy(update=update)
    return None


def expired_searches(messages: Sequence[BaseMessage], zh: bool) -> list[ToolMessage]:
    """Return the earlier turns' `SearchMemory` results replaced by a marker.

    Search results live for one turn, like the memory block: by the next one a forget, a
    supersede or another agent's private note may have made them wrong. They keep their
    ids, so the checkpointer overwrites them; the model can search again.
    """
    return [
        m.model_copy(update={"content": SEARCH_EXPIRED[zh]})
        for m in messages
        if is_search_result(m) and m.content not in SEARCH_EXPIRED
    ]


def is_search_result(m: BaseMessage) -> TypeGuard[ToolMessage]:
    """A `SearchMemory` result kept in the thread (with an id, so it can be rewritten)."""
    return isinstance(m, ToolMessage) and m.name == SEARCH_MEMORY and bool(m.id)

"""The thread's copies of what the user said, rewritten from one turn's memory outcome.

A checkpointed thread holds the user's words in many channels: messages, the arguments of
tool calls, tool results, the memory block and what was recalled, the rolling summary and
working memory. After a turn, the outcome's `ThreadCuts.channels` rewrites every one of them
the same way (`memory.turn`: forgotten statements become a marker, and this turn's sensitive
values are redacted); rewritten messages keep their ids, so the checkpointer overwrites
them. What is here marks whose the user messages are, and expires old search results.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeGuard

from langchain_core.messages import (
    AnyMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    ToolMessage,
)

from graphs.tools import SEARCH_MEMORY

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

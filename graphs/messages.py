"""What the nodes read off a thread's messages: text, the user's turns, what is pending."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage

from graphs.state import State
from graphs.window import message_room, tokens
from memory.store.records import utcnow


class InvalidMessage(ValueError):
    """The user message cannot be processed (empty or too long)."""


def check_message(text: str, max_chars: int, context_tokens: int | None = None) -> str:
    """Validate a user message.

    Args:
        text: The message.
        max_chars: Longest message accepted, in characters.
        context_tokens: The chat budget; the message must fit it with the answer reserve
            (Chinese costs about three times the tokens of English per character, so a
            character limit alone cannot promise this).

    Raises:
        InvalidMessage: If it is empty, longer than `max_chars`, or too many tokens.

    """
    if not text or not text.strip():
        raise InvalidMessage("the message is empty: say something to the agent")
    if len(text) > max_chars:
        raise InvalidMessage(
            f"the message is {len(text):,} characters; the limit is {max_chars:,} "
            "(MEMORY_AGENT_MAX_MESSAGE_CHARS). Split it or attach it as a file."
        )
    if context_tokens is not None:
        room, used = message_room(context_tokens), tokens([HumanMessage(text)])
        if used > room:
            raise InvalidMessage(
                f"the message is about {used:,} tokens; {room:,} fit the context budget "
                "(MEMORY_AGENT_CONTEXT_TOKENS). Split it or raise the budget."
            )
    return text


def text_of(message: BaseMessage) -> str:
    """Return the text of a message; the text parts of a multi-part one, joined."""
    if isinstance(message.content, str):
        return message.content
    parts = [p.get("text", "") if isinstance(p, dict) else str(p) for p in message.content]
    return " ".join(parts)


def one_line(message: BaseMessage) -> str:
    """Return the text of a message on one line."""
    return " ".join(text_of(message).split())


def user_messages(messages: list[AnyMessage]) -> list[HumanMessage]:
    """Return the user's messages, in order."""
    return [m for m in messages if isinstance(m, HumanMessage)]


def pending_messages(state: State | dict[str, Any]) -> list[HumanMessage]:
    """Return the user messages of a thread's state that no extraction has seen yet."""
    return pending_after(state.get("messages", []), state.get("extracted_through"))


def pending_after(
    messages: list[AnyMessage], through: str | None, max_chars: int | None = None
) -> list[HumanMessage]:
    """Return the user messages after `through` (all of them if it is unknown).

    Messages that were refused (empty, or longer than `max_chars`) stay in the thread, as
    everything does, but are never extracted from.
    """
    humans = user_messages(messages)
    ids = [m.id for m in humans]
    if through and through in ids:
        humans = humans[ids.index(through) + 1 :]
    limit = max_chars or 10**9
    return [m for m in humans if text_of(m).strip() and len(text_of(m)) <= limit]


def summarized_ids(messages: list[AnyMessage], through: str | None) -> set[str]:
    """Return the ids of messages up to and including `through`."""
    if not through:
        return set()
    ids: set[str] = set()
    for m in messages:
        if m.id:
            ids.add(m.id)
        if m.id == through:
            return ids
    return set()  # the covered message is gone (e.g. state edited): send everything


def tool_rounds(messages: list[AnyMessage]) -> int:
    """Return how many times the model called tools since the latest user message."""
    rounds = 0
    for m in reversed(messages):
        if isinstance(m, HumanMessage):
            break
        if isinstance(m, AIMessage) and m.tool_calls:
            rounds += 1
    return rounds


def turn_time(state: Mapping[str, Any]) -> datetime:
    """Return when the turn was said: the state's `turn_time`, else now."""
    raw = state.get("turn_time")
    return datetime.fromisoformat(raw) if raw else utcnow()

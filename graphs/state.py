"""Graph state of the memory agent."""

from __future__ import annotations

from typing import Annotated, Any

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict


class InputState(TypedDict, total=False):
    """What a caller sends in a turn."""

    messages: Annotated[list[AnyMessage], add_messages]
    """The thread's messages; send the new user message."""

    turn_time: str | None
    """ISO time the message was said; defaults to now. Lets imports and demos backdate turns."""

    flush: bool
    """A background flush: send `{"flush": True}` (no message) to extract and save the
    thread's pending user messages now; the run goes straight to extract."""


class State(InputState, total=False):
    """Full state: the thread, what this turn recalled and saved, and short-term memory."""

    memory_block: str
    """The labelled memories put in this turn's system prompt."""

    recalled: list[dict[str, Any]]
    """What load_memory recalled: id, kind, content, score."""

    lang: str
    """The turn's language (`zh` or `en`), decided once by load_memory from the message."""

    extraction: dict[str, Any]
    """What extract found in the latest exchange (the `Extraction` schema)."""

    saved: list[str]
    """What save did, one line per change."""

    summary: dict[str, Any] | None
    """Rolling summary of the older part of the thread (the `ThreadSummary` schema)."""

    summary_through: str | None
    """Id of the last message the summary covers; messages up to it are not sent again."""

    summary_count: int
    """How many messages the summary covers."""

    working: dict[str, Any] | None
    """Working memory of the current task: goal, steps, done, next, open_questions."""

    extracted_through: str | None
    """Id of the last user message already extracted; later ones are pending."""

    scrubbed: bool
    """Set by save when it redacted or marked messages of this thread: the thread's earlier
    checkpoints still hold the words (`agent.runner` prunes them)."""

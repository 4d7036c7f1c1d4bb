"""The run context: who the turn is for. It comes from the caller, never from the model."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

from memory.records import InvalidUserId, UserId, check_user_id


@dataclass(kw_only=True)
class Context:
    """Per-run context of the memory agent.

    Pass it as `context=Context(user_id="alice")` (or `context={"user_id": "alice"}`
    through the LangGraph server). Identity is never read from model output or tool args.
    """

    user_id: str = ""
    """Whose memories are read and written. Required; letters, digits, `_-@+:`.

    A valid id is checked once, here, and kept as a `UserId`: the nodes and the memory
    service then take it as it is.
    """

    agent_id: str | None = None
    """Which agent writes; defaults to the `MEMORY_AGENT_ID` setting."""

    model: str | None = None
    """Chat model spec for this run (`offline`, `openai:<model>`); defaults to settings."""

    recall_k: int | None = None
    """How many memories to recall into the prompt; defaults to settings."""

    def __post_init__(self) -> None:
        # An invalid id is left as given: the first node reports it through `user_of`,
        # where the error names the run, instead of failing when LangGraph builds the
        # context.
        with contextlib.suppress(InvalidUserId):
            self.user_id = check_user_id(self.user_id)


def user_of(context: Context | dict[str, Any] | None) -> UserId:
    """Return the validated user id of a run.

    Raises:
        InvalidUserId: If the run has no context or no valid `user_id` in it.

    """
    if context is None:
        raw = None
    elif isinstance(context, dict):
        raw = context.get("user_id")
    else:
        raw = context.user_id
    return check_user_id(raw)

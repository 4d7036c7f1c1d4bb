"""The run context: who the turn is for. It comes from the caller, never from the model."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from langgraph.runtime import get_runtime

from memory import InvalidUserId, UserId, check_user_id
from memory.store import threads


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


def authenticated_user() -> str | None:
    """Return whom the LangGraph server authenticated for the current run, if anyone.

    The server hands the identity its custom auth returned (see `agent.serve.auth`) to the
    run as `runtime.server_info.user`. Without auth it is absent, or empty and not
    authenticated; outside a run there is none.
    """
    try:
        info = get_runtime().server_info
    except (RuntimeError, AttributeError):
        return None
    user = info.user if info is not None else None
    if user is None or not getattr(user, "is_authenticated", False):
        return None
    return getattr(user, "identity", None) or None


def user_of(context: Context | dict[str, Any] | None) -> UserId:
    """Return the validated user id of a run.

    The authenticated identity wins when the server has one; otherwise the run context
    names the user (`langgraph dev` without auth, apps calling the graph).

    Raises:
        InvalidUserId: If the run has no context or no valid `user_id` in it.

    """
    authenticated = authenticated_user()
    if authenticated is not None:
        return check_user_id(authenticated)
    if context is None:
        raw = None
    elif isinstance(context, dict):
        raw = context.get("user_id")
    else:
        raw = context.user_id
    return check_user_id(raw)


class ThreadNotYours(threads.ThreadNotYours, RuntimeError):
    """`memory.ThreadNotYours` as the graph raises it: a RuntimeError too, on purpose.

    A LangGraph server sends a RuntimeError's message to the client and hides the message of
    most other exception types (a PermissionError among them) as "An internal error
    occurred"; so the SDK shows `ThreadNotYours: thread '...' belongs to another user: ...`.
    It is still a `memory.ThreadNotYours` for apps that catch that.
    """


@contextlib.contextmanager
def own_thread() -> Iterator[None]:
    """Run a claim of the run's thread; another user's thread raises the graph's `ThreadNotYours`.

    Raises:
        ThreadNotYours: If another user owns the thread (the memory layer's refusal, kept
            as its `__cause__`).

    """
    try:
        yield
    except threads.ThreadNotYours as exc:
        if isinstance(exc, ThreadNotYours):
            raise
        raise ThreadNotYours(*exc.args) from exc

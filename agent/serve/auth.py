"""Custom auth of the LangGraph server (`"auth": {"path": ...}` in `langgraph.json`).

Off by default: with no `MEMORY_AGENT_TOKENS`, every request passes as an anonymous,
unauthenticated caller, no handler filters anything, and the graph takes the user from the
run context, as `langgraph dev` always did. With a token file (the MCP server's format, see
`agent.serve.tokens`):

- a request needs `Authorization: Bearer <token>` (401 otherwise);
- threads (and crons) carry their creator in metadata `owner`; every read, update, search,
  delete and run is filtered by it, so another user's thread is 404 before anything is
  written to it, and a run whose context names another user is 403;
- the store is limited to the caller's own `("memories", <user>, ...)` namespaces: listing
  and searching from the root are narrowed to them, anything else is 403, so Studio's store
  view shows neither another user's memories nor the bookkeeping namespaces;
- a `read_only` token may read but not run the graph or write to the store;
- the graph's nodes take the user from the authenticated identity
  (`graphs.context.user_of`).

With auth off, one check still runs at the door: a run whose context names a user on a
thread another user opened is 403 (`ThreadNotYours: ...`) before its input is written.

A real identity provider plugs in at `authenticate`: return
`{"identity": <user id>, "permissions": [SCOPE_READ, SCOPE_WRITE]}` for its token.
"""

from __future__ import annotations

from typing import Any

from langgraph_sdk import Auth, get_client

from agent.mcp.auth import SCOPE_READ, SCOPE_WRITE
from agent.serve.tokens import Unauthorized, bearer_identity, server_tokens
from memory import ThreadNotYours
from memory.store.records import NAMESPACE_ROOT, namespace, thread_owners_namespace

OWNER = "owner"
"""The metadata key of a thread's (or cron's) owner."""
ANONYMOUS: Auth.types.MinimalUserDict = {
    "identity": "",
    "display_name": "anonymous",
    "is_authenticated": False,
    "permissions": [],
}
"""The caller when auth is off: not authenticated, so nothing takes it for a user."""
WRITES = frozenset({"create", "create_run", "update", "delete", "put"})

auth = Auth()
# Read the token file now: a missing or broken one stops the server at start with its error,
# rather than failing every request.
server_tokens()


@auth.authenticate
async def authenticate(authorization: str | None) -> Auth.types.MinimalUserDict:
    """Map a bearer token to its user (anonymous when auth is off).

    Raises:
        Auth.exceptions.HTTPException: 401 for a missing or unknown token.

    """
    tokens = server_tokens()
    if tokens is None:
        return ANONYMOUS
    try:
        who = bearer_identity(authorization, tokens)
    except Unauthorized as exc:
        raise Auth.exceptions.HTTPException(
            status_code=401,
            detail=exc.description,
            headers={"WWW-Authenticate": f'Bearer error="{exc.error}"'},
        ) from None
    scopes = [SCOPE_READ] if who.read_only else [SCOPE_READ, SCOPE_WRITE]
    return {"identity": who.user, "display_name": who.user, "permissions": scopes}


def caller(ctx: Auth.types.AuthContext) -> str | None:
    """Return the authenticated user of a request, or None when auth is off.

    Raises:
        Auth.exceptions.HTTPException: 403 when a read-only token tries to write.

    """
    user = ctx.user
    if not user.is_authenticated or not user.identity:
        return None
    if ctx.action in WRITES and SCOPE_WRITE not in ctx.permissions:
        raise Auth.exceptions.HTTPException(
            status_code=403, detail=f"this token is read-only: it may not {ctx.action}"
        )
    return user.identity


def _named_users(value: dict[str, Any]) -> list[str]:
    """Return the `user_id`s a run names, in its context first, then in its configurable."""
    kwargs = value.get("kwargs") or {}
    config = kwargs.get("config") or {}
    named = []
    for where in (kwargs.get("context"), config.get("configurable")):
        user = where.get("user_id") if isinstance(where, dict) else None
        if isinstance(user, str) and user:
            named.append(user)
    return named


def _refuse_other_user(value: dict[str, Any], who: str) -> None:
    """403 when a run's context or configurable names a user other than the caller."""
    for named in _named_users(value):
        if named != who:
            raise Auth.exceptions.HTTPException(
                status_code=403,
                detail=f"the run names user_id {named!r}, but the token is {who!r}'s",
            )


async def _refuse_claimed_thread(value: dict[str, Any]) -> None:
    """Auth off: 403 for a run on a thread another user opened, before anything is written.

    The graph would refuse it too (`load_memory`), but only after the server has written the
    run's input into the thread. The owner is the project's own record (`thread_owners` in
    the server's store), read through the in-process SDK client.

    Raises:
        Auth.exceptions.HTTPException: 403 `ThreadNotYours: ...` when the thread is another's.

    """
    thread_id = value.get("thread_id")
    named = _named_users(value)
    if thread_id is None or not named:
        return  # a new thread, or no user: the graph decides (and says what is missing)
    loopback = get_client(url=None)  # in process, past this auth: no request of its own
    try:
        item = await loopback.store.get_item(list(thread_owners_namespace()), str(thread_id))
    finally:
        await loopback.aclose()
    owner = item["value"].get("user_id") if item else None
    if owner is not None and owner != named[0]:
        refusal = ThreadNotYours.of(str(thread_id))
        raise Auth.exceptions.HTTPException(
            status_code=403, detail=f"{type(refusal).__name__}: {refusal}"
        )


def _own(ctx: Auth.types.AuthContext, value: dict[str, Any]) -> dict[str, str] | None:
    """Stamp the caller as owner of what it creates; filter everything else by owner."""
    who = caller(ctx)
    if who is None:
        return None
    if ctx.action == "create_run":
        _refuse_other_user(value, who)
    if ctx.action in {"create", "create_run", "update"}:
        # Overwritten: a caller may neither create a thread for someone else nor hand one
        # over by updating its metadata. In place: the server keeps its own reference.
        if value.get("metadata") is None:
            value["metadata"] = {}
        value["metadata"][OWNER] = who
    return {OWNER: who}


@auth.on.threads
async def on_threads(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str] | None:
    """Threads: create, read, update, delete, search and runs, by owner.

    With auth off nothing is filtered, but a run on a thread that another user opened is
    still refused here, before the server writes its input into the thread.
    """
    if ctx.action == "create_run" and caller(ctx) is None:
        await _refuse_claimed_thread(value)
    return _own(ctx, value)


@auth.on.crons
async def on_crons(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str] | None:
    """Crons run on threads: the same rule as threads."""
    return _own(ctx, value)


@auth.on.assistants
async def on_assistants(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str] | None:
    """Assistants: the graphs' own are readable by all; a caller's new ones are its own."""
    if ctx.action in {"read", "search"}:
        return None
    return _own(ctx, value)


@auth.on.store
async def on_store(ctx: Auth.types.AuthContext, value: Any) -> None:
    """The store: only the caller's own memories namespaces.

    Raises:
        Auth.exceptions.HTTPException: 403 for any other namespace.

    """
    who = caller(ctx)
    if who is None:
        return
    own = namespace(who)
    asked = tuple(value.get("namespace") or ())
    if ctx.action in {"search", "list_namespaces"} and asked in {(), (NAMESPACE_ROOT,)}:
        # Browsing from the root (Studio's store view) is narrowed to the caller's own.
        value["namespace"] = own
        return
    if asked[: len(own)] != own:
        raise Auth.exceptions.HTTPException(
            status_code=403,
            detail=f"namespace {'.'.join(asked) or '(root)'} is not yours: use {'.'.join(own)}",
        )

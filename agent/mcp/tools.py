"""The five MCP tools: `remember`, `search`, `list_memories`, `forget`, `export`.

Each tool returns a pydantic model, so the server publishes an output schema and answers
with structured content that follows it, and carries annotations (read-only, destructive,
idempotent) for clients that ask before a tool changes something.

The user is never a tool argument: `MemoryTools.caller` takes it from the server's
configuration (stdio) or the request's bearer token (HTTP), and refuses a call that passes
any argument the tool does not declare (`user_id="bob"`, ...), so a client can never believe
it chose whose memory it reads.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from datetime import date, datetime
from typing import Annotated, Any, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field

from agent.mcp.auth import ENV_USER, Identity, TokenTable, identity_of_request
from memory import AccessDenied, BackendUnavailable, MemoryNotFound, MemoryService
from memory.index.chroma import IndexMismatch, IndexUnavailable
from memory.lifecycle import Action
from memory.store.records import (
    STATED_KINDS,
    InvalidUserId,
    Kind,
    MemoryRecord,
    Source,
    StatedKind,
    Status,
    kinds_help,
)

T = TypeVar("T")

ServiceFor = Callable[[str], MemoryService]
"""Returns the memory service that writes as the given agent id."""

# Failures the caller can act on: reported to the client as tool errors with their message.
_TOOL_ERRORS = (
    AccessDenied,
    MemoryNotFound,
    InvalidUserId,
    IndexUnavailable,
    IndexMismatch,
    BackendUnavailable,
    ValueError,
)


# --- what the tools return (published as each tool's output schema) ------------------------


class MemoryBrief(BaseModel):
    """One memory as the tools show it."""

    id: str = Field(description="Pass it to `forget`.")
    kind: Kind
    subject: str = Field(description="Dotted key such as profile.city.")
    content: str
    status: Status = Field(description="Only `active` memories are recalled.")
    agent: str = Field(description="The agent that wrote it.")
    updated_at: datetime
    event_date: date | None = Field(default=None, description="For kind=event: its date.")

    @classmethod
    def of(cls, rec: MemoryRecord) -> MemoryBrief:
        """Return the brief of a record."""
        return cls(**_brief_fields(rec))


class MemoryChange(MemoryBrief):
    """A memory `remember` wrote, and what happened to it."""

    action: Action = Field(
        description="added, reinforced (said again), superseded (replaced by a newer "
        "statement of the same subject), ..."
    )


class ScoredMemory(MemoryBrief):
    """A memory `search` recalled."""

    score: float = Field(description="Relevance; higher is better (0 for core memories).")
    said_with: list[str] = Field(
        default_factory=list,
        description="What else the message a clause was said in said, as still kept.",
    )


class Remembered(BaseModel):
    """What `remember` changed in the user's memory."""

    user: str
    changes: list[MemoryChange]


class Found(BaseModel):
    """The user's memories most relevant to a query, best first."""

    user: str
    memories: list[ScoredMemory]


class Listed(BaseModel):
    """The user's memories, newest first."""

    user: str
    memories: list[MemoryBrief]


class Forgotten(BaseModel):
    """The memory `forget` forgot (soft) or deleted (hard); the other field is null."""

    user: str
    forgotten: MemoryBrief | None = None
    deleted: MemoryBrief | None = None


class Exported(BaseModel):
    """All of the user's memories with provenance and history (what `import` reads)."""

    user: str
    memories: list[MemoryRecord]


def _brief_fields(rec: MemoryRecord) -> dict[str, Any]:
    return {
        "id": rec.id,
        "kind": rec.kind,
        "subject": rec.subject,
        "content": rec.content,
        "status": rec.status,
        "agent": rec.agent_id,
        "updated_at": rec.updated_at,
        "event_date": (
            rec.valid_from.date() if rec.kind == "event" and rec.valid_from is not None else None
        ),
    }


# --- annotations ---------------------------------------------------------------------------


def _hints(title: str, *, read_only: bool, destructive: bool, idempotent: bool) -> ToolAnnotations:
    # Every hint is set explicitly: the protocol's defaults (destructive, open world) are
    # the cautious ones, and a client that ignores readOnlyHint still reads the others.
    # Memory is a closed world: no tool reaches anything beyond this user's memories.
    return ToolAnnotations(
        title=title,
        read_only_hint=read_only,
        destructive_hint=destructive,
        idempotent_hint=idempotent,
        open_world_hint=False,
    )


ANNOTATIONS: dict[str, ToolAnnotations] = {
    # Never destructive: a superseded memory stays in history and in `export`. Not
    # idempotent: saying the same statement again reinforces the memory.
    "remember": _hints("Remember", read_only=False, destructive=False, idempotent=False),
    "search": _hints("Search memories", read_only=True, destructive=False, idempotent=True),
    "list_memories": _hints("List memories", read_only=True, destructive=False, idempotent=True),
    # Not idempotent: forgetting a forgotten memory again adds a history entry and moves
    # its `valid_until`; hard=true deletes for good.
    "forget": _hints("Forget a memory", read_only=False, destructive=True, idempotent=False),
    "export": _hints("Export memories", read_only=True, destructive=False, idempotent=True),
}
"""Each tool's annotations (its `title` is the tool's display title too)."""


async def _guarded(call: Awaitable[T]) -> T:
    """Await a service call; failures the caller can act on become tool errors."""
    try:
        return await call
    except _TOOL_ERRORS as exc:
        raise ToolError(str(exc)) from exc


def _check_date(value: str) -> None:
    try:
        date.fromisoformat(value)
    except ValueError as exc:
        raise ToolError(f"event_date {value!r} is not a date: use YYYY-MM-DD") from exc


class MemoryTools:
    """The tools, bound to a way of getting services and to one way of knowing the caller.

    Exactly one of `identity` (stdio: the server's own configuration) and `tokens` (HTTP:
    the request's bearer token) is given.
    """

    def __init__(
        self,
        service_for: ServiceFor,
        *,
        max_text_chars: int,
        identity: Identity | None = None,
        tokens: TokenTable | None = None,
    ) -> None:
        """Bind the tools; see the class docstring for `identity` / `tokens`.

        Args:
            service_for: Returns the memory service that writes as a given agent id.
            max_text_chars: The longest statement `remember` takes.
            identity: The one identity a stdio server serves.
            tokens: The token table of an HTTP server.

        """
        if (identity is None) == (tokens is None):
            raise ValueError("give exactly one of identity (stdio) and tokens (HTTP)")
        self.service_for = service_for
        self.max_text_chars = max_text_chars
        self.identity = identity
        self.tokens = tokens
        self._services: dict[str, MemoryService] = {}

    def service(self, who: Identity) -> MemoryService:
        """Return the memory service that writes as `who.agent`."""
        svc = self._services.get(who.agent)
        if svc is None:
            svc = self._services[who.agent] = self.service_for(who.agent)
        return svc

    def caller(self, ctx: Context, tool: str, allowed: frozenset[str], *, write: bool) -> Identity:
        """Return who is calling `tool`, refusing undeclared arguments and read-only writes.

        Raises:
            ToolError: If the call passes arguments the tool does not take, carries no
                known credential, or writes with a read-only one.

        """
        where = (
            "your bearer token"
            if self.tokens is not None
            else f"this server's configuration (--user / {ENV_USER})"
        )
        params = ctx.request_context.params or {}
        passed = params.get("arguments") or {}
        extra = sorted(set(passed) - allowed) if isinstance(passed, Mapping) else []
        if extra:
            raise ToolError(
                f"{tool} does not take {', '.join(extra)}: the user and agent come from "
                f"{where}, never from tool arguments"
            )
        if self.identity is not None:
            who: Identity | None = self.identity
        else:
            assert self.tokens is not None
            who = identity_of_request(ctx.request_context.request, self.tokens)
        if who is None:
            raise ToolError("unknown credential: this request carries no known bearer token")
        if write and who.read_only:
            raise ToolError(f"{tool} refused: the credential for user {who.user!r} is read-only")
        return who

    def register(self, server: MCPServer[Any]) -> None:
        """Add the five tools to `server`, each with its annotations and output schema."""
        tools = self

        def names(fn: Callable[..., Any]) -> frozenset[str]:
            return frozenset(inspect.signature(fn).parameters) - {"ctx"}

        async def remember(
            ctx: Context,
            text: Annotated[str, Field(description="One self-contained statement about the user.")],
            kind: Annotated[StatedKind, Field(description=kinds_help(STATED_KINDS))] = "fact",
            subject: Annotated[
                str | None,
                Field(
                    description="Dotted key such as profile.city or diet.type; a new statement "
                    "with the same subject supersedes the old one."
                ),
            ] = None,
            event_date: Annotated[
                str | None, Field(description="For kind=event: the date, YYYY-MM-DD.")
            ] = None,
        ) -> Remembered:
            """Remember a statement about the user (same statement reinforces, same subject supersedes)."""  # noqa: E501
            who = tools.caller(ctx, "remember", names(remember), write=True)
            if not text.strip():
                raise ToolError("text is empty: give the statement to remember")
            limit = tools.max_text_chars
            if len(text) > limit:
                raise ToolError(f"text is {len(text):,} characters; the limit is {limit:,}")
            if event_date is not None:
                if kind != "event":
                    raise ToolError("event_date applies only to kind='event'")
                _check_date(event_date)
            changes = await _guarded(
                tools.service(who).aadd(
                    who.user,
                    text,
                    kind=kind,
                    subject=subject,
                    event_date=event_date,
                    source=Source(via="mcp"),
                )
            )
            return Remembered(
                user=who.user,
                changes=[MemoryChange(action=c.action, **_brief_fields(c.record)) for c in changes],
            )

        async def search(
            ctx: Context,
            query: Annotated[str, Field(description="What to recall, in any language.")],
            k: Annotated[int, Field(ge=1, le=100, description="Most memories to return.")] = 8,
        ) -> Found:
            """Return the user's active memories most relevant to the query, best first."""
            who = tools.caller(ctx, "search", names(search), write=False)
            hits = await _guarded(tools.service(who).asearch(who.user, query, k))
            return Found(
                user=who.user,
                memories=[
                    ScoredMemory(
                        score=round(h.score, 4),
                        said_with=[w.content for w in h.said_with],
                        **_brief_fields(h.record),
                    )
                    for h in hits
                ],
            )

        async def list_memories(
            ctx: Context,
            include_inactive: Annotated[
                bool, Field(description="Also list superseded, forgotten and expired memories.")
            ] = False,
        ) -> Listed:
            """List the user's memories, newest first (active ones unless include_inactive)."""
            who = tools.caller(ctx, "list_memories", names(list_memories), write=False)
            recs = await _guarded(
                tools.service(who).alist(who.user, include_inactive=include_inactive)
            )
            return Listed(user=who.user, memories=[MemoryBrief.of(r) for r in recs])

        async def forget(
            ctx: Context,
            memory_id: Annotated[str, Field(description="The id of one of the user's memories.")],
            hard: Annotated[
                bool,
                Field(description="Delete from store and index instead of keeping it in history."),
            ] = False,
        ) -> Forgotten:
            """Forget one memory: it is never recalled again (hard=true deletes it entirely)."""
            who = tools.caller(ctx, "forget", names(forget), write=True)
            rec = await _guarded(tools.service(who).aforget(who.user, memory_id, hard=hard))
            brief = MemoryBrief.of(rec)
            if hard:
                return Forgotten(user=who.user, deleted=brief)
            return Forgotten(user=who.user, forgotten=brief)

        async def export(ctx: Context) -> Exported:
            """Return all of the user's memories with provenance and history."""
            who = tools.caller(ctx, "export", names(export), write=False)
            rows = await _guarded(tools.service(who).aexport(who.user))
            # The rows were written by `to_store`: read back as such (no re-cleaning).
            return Exported(user=who.user, memories=[MemoryRecord.from_store(r) for r in rows])

        for fn in (remember, search, list_memories, forget, export):
            hints = ANNOTATIONS[fn.__name__]
            server.add_tool(fn, title=hints.title, annotations=hints, structured_output=True)

"""The inspector's JSON API: one user's memories, read and changed through `MemoryService`.

Every handler first asks `Identify` whose request it is; the user never comes from the URL
or the body, so one caller cannot reach another's memories.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from agent.mcp.auth import Identity
from memory import AccessDenied, MemoryNotFound, MemoryService, Recalled
from memory.store.records import MemoryRecord, is_raw_turn

MAX_SEARCH_K = 50
MAX_CONTENT_CHARS = 2000


class Refused(Exception):
    """A request the inspector answers with an HTTP error and a sentence saying why."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        """Carry the status, the message shown to the person and any response headers."""
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}


Identify = Callable[[Request], Identity]
"""Returns the identity of a request, or raises `Refused` (401) when there is none."""
ServiceOf = Callable[[Identity], Awaitable[MemoryService]]
"""Returns the memory service that reads and writes as the identity's agent."""

_WORD = re.compile(r"\w+")


def record_json(rec: MemoryRecord) -> dict[str, Any]:
    """Return a record as the page shows it (the stored form, provenance and history)."""
    return rec.to_store()


def reason(hit: Recalled, query: str) -> str:
    """Say in words why a search returned a memory."""
    if hit.why == "core":
        return "core memory: always recalled (name, home, diet, health, imminent events)"
    if hit.why == "conflict":
        return "the other side of a conflicting memory that was recalled"
    asked = {w.casefold() for w in _WORD.findall(query)}
    shared = sorted({w.casefold() for w in _WORD.findall(hit.record.content)} & asked)
    how = f"words in common: {', '.join(shared)}" if shared else "by meaning (no word in common)"
    return f"ranked for the query, score {hit.score:.2f}; {how}"


@dataclass(frozen=True)
class InspectorApi:
    """The API's routes, bound to how requests are identified and services found."""

    identify: Identify
    service_of: ServiceOf

    def routes(self) -> list[Route]:
        """Return the routes, relative to where the app is mounted."""
        return [
            Route("/api/me", self._wrap(self.me)),
            Route("/api/memories", self._wrap(self.memories)),
            Route("/api/memories/{memory_id}", self._wrap(self.memory)),
            Route("/api/memories/{memory_id}/edit", self._wrap(self.edit), methods=["POST"]),
            Route("/api/memories/{memory_id}/forget", self._wrap(self.forget), methods=["POST"]),
            Route("/api/search", self._wrap(self.search)),
            Route("/api/export", self._wrap(self.export)),
        ]

    def _wrap(
        self, handler: Callable[[Request, Identity, MemoryService], Awaitable[Response]]
    ) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            try:
                who = self.identify(request)
                if request.method == "POST" and who.read_only:
                    raise Refused(403, "this token is read-only: it may not change memories")
                return await handler(request, who, await self.service_of(who))
            except Refused as exc:
                body = {"error": exc.message}
                return JSONResponse(body, status_code=exc.status, headers=exc.headers)
            except MemoryNotFound as exc:
                return JSONResponse({"error": str(exc)}, status_code=404)
            except AccessDenied as exc:
                return JSONResponse({"error": str(exc)}, status_code=403)
            except ValueError as exc:
                return JSONResponse({"error": str(exc)}, status_code=400)

        return endpoint

    async def me(self, request: Request, who: Identity, service: MemoryService) -> Response:
        """Whose memories these are, and whether they may be changed."""
        del request, service
        return JSONResponse({"user": who.user, "agent": who.agent, "read_only": who.read_only})

    async def memories(self, request: Request, who: Identity, service: MemoryService) -> Response:
        """Every memory of the caller (all statuses, raw turns included), newest first."""
        del request
        rows = await service.alist(who.user, include_inactive=True, include_turns=True)
        return JSONResponse({"memories": [record_json(r) for r in rows]})

    async def memory(self, request: Request, who: Identity, service: MemoryService) -> Response:
        """One memory, with the records it superseded (oldest last)."""
        rec = await service.aget(who.user, request.path_params["memory_id"])
        earlier: list[dict[str, Any]] = []
        seen = {rec.id}
        link = rec.supersedes
        while link and link not in seen:
            seen.add(link)
            try:
                prev = await service.aget(who.user, link)
            except MemoryNotFound:
                break  # hard-deleted: the trail ends there
            earlier.append(record_json(prev))
            link = prev.supersedes
        return JSONResponse({"memory": record_json(rec), "supersedes": earlier})

    async def search(self, request: Request, who: Identity, service: MemoryService) -> Response:
        """Ranked search, each hit with its score and the reason it came back."""
        query = request.query_params.get("q", "").strip()
        if not query:
            raise Refused(400, "the search is empty: type what to look for")
        raw_k = request.query_params.get("k", "8")
        if not raw_k.isdigit() or not 1 <= int(raw_k) <= MAX_SEARCH_K:
            raise Refused(400, f"k must be a whole number from 1 to {MAX_SEARCH_K}")
        hits = await service.asearch(who.user, query, int(raw_k))
        out = [
            {"memory": record_json(h.record), "score": h.score, "why": h.why,
             "reason": reason(h, query), "said_with": [record_json(w) for w in h.said_with]}
            for h in hits
        ]  # fmt: skip
        return JSONResponse({"query": query, "results": out})

    async def edit(self, request: Request, who: Identity, service: MemoryService) -> Response:
        """Correct a memory's content: the correction supersedes it, keeping its history."""
        body = await _json_body(request)
        content = body.get("content")
        if not isinstance(content, str) or not content.strip():
            raise Refused(400, "the new content is empty")
        if len(content) > MAX_CONTENT_CHARS:
            raise Refused(400, f"the new content is longer than {MAX_CONTENT_CHARS} characters")
        old = await service.aget(who.user, request.path_params["memory_id"])
        if old.status != "active":
            raise Refused(409, f"this memory is {old.status}: only an active one can be corrected")
        if is_raw_turn(old):
            raise Refused(400, "a raw turn is kept word for word: forget or delete it instead")
        when = old.valid_from.date().isoformat() if old.kind == "event" and old.valid_from else None
        changes = await service.aadd(
            who.user, content.strip(), kind=old.kind, subject=old.subject, event_date=when
        )
        return JSONResponse(
            {"changes": [{"action": c.action, "memory": record_json(c.record)} for c in changes]}
        )

    async def forget(self, request: Request, who: Identity, service: MemoryService) -> Response:
        """Forget a memory: soft keeps it as history, `{"hard": true}` deletes it."""
        body = await _json_body(request)
        hard = body.get("hard", False)
        if not isinstance(hard, bool):
            raise Refused(400, "'hard' must be true or false")
        rec = await service.aforget(who.user, request.path_params["memory_id"], hard=hard)
        return JSONResponse({"memory": record_json(rec), "hard": hard})

    async def export(self, request: Request, who: Identity, service: MemoryService) -> Response:
        """Every memory with history as JSON lines, as `memory-agent memories export` writes."""
        del request
        rows = await service.aexport(who.user)
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
        name = f"memories-{who.user}.jsonl"
        return Response(
            text,
            media_type="application/x-ndjson",
            headers={"Content-Disposition": f'attachment; filename="{name}"'},
        )


async def _json_body(request: Request) -> dict[str, Any]:
    try:
        body = await request.json()
    except ValueError as exc:
        raise Refused(400, f"the request body is not JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise Refused(400, "the request body must be a JSON object")
    return body

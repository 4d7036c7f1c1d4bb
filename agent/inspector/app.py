"""The inspector's Starlette app: the page, its script and style, and the JSON API."""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from importlib import resources
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from agent.inspector.api import Identify, InspectorApi, Refused, ServiceOf
from agent.mcp.auth import Identity, TokenTable
from agent.serve.tokens import ENV_TOKENS, Unauthorized, bearer_identity

PREFIX = "/inspector"
"""Where the inspector lives, in the LangGraph server and standalone alike."""
STATIC = Path(str(resources.files("agent.inspector") / "static"))
# Only this origin's own files may load or be fetched: nothing from a CDN, ever.
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; base-uri 'none'; "
    "frame-ancestors 'none'; form-action 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def one_user(identity: Identity) -> Identify:
    """Identify every request as `identity` (the standalone inspector of one user)."""

    def identify(request: Request) -> Identity:
        del request
        return identity

    return identify


def bearer_tokens(tokens: Callable[[], TokenTable | None]) -> Identify:
    """Identify a request by its bearer token in the table `tokens()` returns.

    None from `tokens()` means the server runs without auth: then there is no way to tell
    whose memories to show, and the API refuses with a sentence saying how to turn it on.
    """

    def identify(request: Request) -> Identity:
        table = tokens()
        if table is None:
            raise Refused(
                403,
                f"auth is off on this server: set {ENV_TOKENS} to a token file to use the "
                "inspector here, or run `memory-agent inspect --user U` on this machine",
            )
        try:
            return bearer_identity(request.headers.get("authorization"), table)
        except Unauthorized as exc:
            challenge = f'Bearer realm="memory-inspector", error="{exc.error}"'
            raise Refused(401, exc.description, {"WWW-Authenticate": challenge}) from None

    return identify


class _SecurityHeaders:
    """ASGI middleware adding `SECURITY_HEADERS` to every response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                extra = [(k.lower().encode(), v.encode()) for k, v in SECURITY_HEADERS.items()]
                message["headers"] = [*message.get("headers", []), *extra]
            await send(message)

        await self.app(scope, receive, send_with_headers)


def routes(identify: Identify, service_of: ServiceOf) -> list[BaseRoute]:
    """Return the inspector's routes under `PREFIX` (for mounting into another app)."""

    async def page(request: Request) -> Response:
        del request
        return FileResponse(STATIC / "index.html", media_type="text/html")

    async def to_page(request: Request) -> Response:
        del request
        return RedirectResponse(f"{PREFIX}/")

    api = InspectorApi(identify, service_of)
    inner: list[BaseRoute] = [
        Route("/", page),
        Mount("/static", app=StaticFiles(directory=STATIC)),
        *api.routes(),
    ]
    # Route-level middleware: mounted into the LangGraph server, the headers stay on our pages.
    mount = Mount(PREFIX, routes=inner, middleware=[Middleware(_SecurityHeaders)])
    return [Route(PREFIX, to_page), mount]


def build_app(
    identify: Identify, service_of: ServiceOf, *, root_redirect: bool = False
) -> Starlette:
    """Return the inspector as an app; `root_redirect` sends `/` to the page (standalone)."""
    extra: list[BaseRoute] = []
    if root_redirect:

        async def to_page(request: Request) -> Response:
            del request
            return RedirectResponse(f"{PREFIX}/")

        extra.append(Route("/", to_page))
    return Starlette(routes=[*extra, *routes(identify, service_of)])

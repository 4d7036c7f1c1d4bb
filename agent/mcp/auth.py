"""Who an MCP caller is: the stdio identity, the HTTP token file and the bearer-token gate.

Over stdio the server serves one `Identity`, fixed when it starts. Over streamable HTTP
every request carries `Authorization: Bearer <token>`; `TokenTable` maps each token to an
identity and `BearerTokenGate` answers HTTP 401 to a missing or unknown one. The tools read
the identity with `identity_of_request`, never from their arguments.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from starlette.authentication import AuthCredentials
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from memory import InvalidUserId, check_user_id

ENV_USER = "MEMORY_AGENT_MCP_USER"
"""The user a stdio server serves when `--user` is not given."""
ENV_TOKENS = "MEMORY_AGENT_MCP_TOKENS"
"""The token file of an HTTP server when `--tokens` is not given."""
MIN_TOKEN_CHARS = 16
SCOPE_READ = "memory:read"
SCOPE_WRITE = "memory:write"


class ConfigError(ValueError):
    """The server was started with flags, environment or a token file it cannot use."""


@dataclass(frozen=True)
class Identity:
    """Whose memory a caller reaches, and whether it may change it."""

    user: str
    agent: str
    read_only: bool = False


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class TokenTable:
    """Bearer tokens and the identity each one stands for.

    Tokens are kept only as SHA-256 digests; the lookup is by digest, so the time it takes
    says nothing about how close a guess came to a real token.

    Example:
        ```python
        tokens = TokenTable({"3q2-7Xk1c9hJvLr0yWmP4tZs": Identity("alice", "support")})
        client_id, who = tokens.lookup("3q2-7Xk1c9hJvLr0yWmP4tZs")
        ```
    """

    def __init__(self, identities: Mapping[str, Identity]) -> None:
        """Create a table from `{token: identity}`."""
        self._by_digest = {_digest(tok): ident for tok, ident in identities.items()}
        self._by_client = {self.client_id(d): ident for d, ident in self._by_digest.items()}

    def __len__(self) -> int:
        return len(self._by_digest)

    @staticmethod
    def client_id(digest: str) -> str:
        """Return the principal name a token is known by (never the token itself)."""
        return f"token:{digest[:16]}"

    def lookup(self, token: str) -> tuple[str, Identity] | None:
        """Return `(client_id, identity)` for a token, or None if it is unknown."""
        digest = _digest(token)
        ident = self._by_digest.get(digest)
        return None if ident is None else (self.client_id(digest), ident)

    def identity_of(self, client_id: str) -> Identity | None:
        """Return the identity behind a principal name from `client_id`."""
        return self._by_client.get(client_id)

    @classmethod
    def load(cls, path: str, *, default_agent: str) -> TokenTable:
        """Read a token file mapping each token to its identity.

        The shape: `{"<token>": {"user": "alice", "agent": "support", "read_only": false}}`;
        `agent` defaults to `default_agent` and `read_only` to false.

        Raises:
            ConfigError: If the file is missing, not JSON, or any entry is invalid.

        """
        try:
            with open(path, encoding="utf-8") as fh:
                raw = json.load(fh)
        except FileNotFoundError as exc:
            raise ConfigError(f"token file {path!r} does not exist") from exc
        except (OSError, json.JSONDecodeError) as exc:
            raise ConfigError(f"token file {path!r} is not readable JSON: {exc}") from exc
        if not isinstance(raw, dict) or not raw:
            raise ConfigError(
                f'token file {path!r} must be a non-empty JSON object: {{"<token>": '
                '{"user": "alice", "agent": "support", "read_only": false}}'
            )
        table: dict[str, Identity] = {}
        for n, (token, entry) in enumerate(raw.items(), 1):
            where = f"token file {path!r}, entry {n}"
            if token != token.strip() or len(token) < MIN_TOKEN_CHARS:
                raise ConfigError(
                    f"{where}: a token must be at least {MIN_TOKEN_CHARS} characters without "
                    "surrounding spaces (e.g. `python -c 'import secrets; "
                    "print(secrets.token_urlsafe(32))'`)"
                )
            if not isinstance(entry, dict):
                raise ConfigError(f"{where}: the value must be an object with a 'user'")
            unknown = set(entry) - {"user", "agent", "read_only"}
            if unknown:
                # A typo ("readonly") must not silently turn a read-only token into a writer.
                raise ConfigError(
                    f"{where}: unknown key(s) {', '.join(sorted(unknown))}; "
                    "allowed: user, agent, read_only"
                )
            try:
                user = check_user_id(entry.get("user"))
            except InvalidUserId as exc:
                raise ConfigError(f"{where}: {exc}") from exc
            agent = entry.get("agent", default_agent)
            if not isinstance(agent, str) or not agent.strip() or len(agent) > 128:
                raise ConfigError(f"{where}: 'agent' must be a non-empty string")
            read_only = entry.get("read_only", False)
            if not isinstance(read_only, bool):
                raise ConfigError(f"{where}: 'read_only' must be true or false")
            table[token] = Identity(user=user, agent=agent.strip(), read_only=read_only)
        return cls(table)


def _deny(status: int, error: str, description: str) -> JSONResponse:
    """A 401 answer that both OAuth-style and MCP clients can read.

    The body is a JSON-RPC error, so the official MCP client raises it with this message;
    `WWW-Authenticate` carries the RFC 6750 error for plain HTTP clients.
    """
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": -32001, "message": description}}
    challenge = f'Bearer realm="memory-agent", error="{error}", error_description="{description}"'
    return JSONResponse(body, status_code=status, headers={"WWW-Authenticate": challenge})


class BearerTokenGate:
    """ASGI middleware: every HTTP request but the open paths needs a known bearer token.

    On success the request's scope carries the SDK's `AuthenticatedUser`, so the session
    manager binds each MCP session to the token that opened it (another token gets 404 for
    that session id) and the tools read the identity from the request.
    """

    def __init__(self, app: ASGIApp, tokens: TokenTable, *, open_paths: Sequence[str] = ()) -> None:
        """Wrap `app`; `open_paths` (the health check) are served without a token."""
        self.app = app
        self.tokens = tokens
        self.open_paths = frozenset(open_paths)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer 401 without a known bearer token; otherwise pass the request on."""
        if scope["type"] != "http" or scope.get("path") in self.open_paths:
            await self.app(scope, receive, send)
            return
        scheme, _, token = (Headers(scope=scope).get("authorization") or "").partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            response = _deny(
                401,
                "invalid_request",
                "missing bearer token: send 'Authorization: Bearer <token>' with a token "
                "from this server's token file",
            )
            await response(scope, receive, send)
            return
        found = self.tokens.lookup(token)
        if found is None:
            response = _deny(
                401,
                "invalid_token",
                "unknown bearer token: the credential is not in this server's token file",
            )
            await response(scope, receive, send)
            return
        client_id, ident = found
        scopes = [SCOPE_READ] if ident.read_only else [SCOPE_READ, SCOPE_WRITE]
        access = AccessToken(
            token=client_id, client_id=client_id, scopes=scopes, subject=ident.user
        )
        scope = dict(scope)
        scope["user"] = AuthenticatedUser(access)
        scope["auth"] = AuthCredentials(scopes)
        await self.app(scope, receive, send)


def identity_of_request(request: object, tokens: TokenTable) -> Identity | None:
    """Return the identity the gate attached to an HTTP request, or None if there is none."""
    user = request.scope.get("user") if isinstance(request, Request) else None
    if not isinstance(user, AuthenticatedUser):
        return None
    return tokens.identity_of(user.access_token.client_id)

"""The bearer tokens of the LangGraph server and the memory inspector.

Auth is off unless `MEMORY_AGENT_TOKENS` names a token file, so `langgraph dev` works as it
always did (the user comes from the run context). The file has the MCP server's format
(`agent.mcp.auth.TokenTable.load`): `{"<token>": {"user": "alice", "agent": "support",
"read_only": false}}`.
"""

from __future__ import annotations

import functools
import os

from agent.mcp.auth import ConfigError, Identity, TokenTable

ENV_TOKENS = "MEMORY_AGENT_TOKENS"
"""The token file of the LangGraph server's custom auth and of the served inspector."""
DEFAULT_AGENT = "memory-agent"


class Unauthorized(Exception):
    """A request without a known bearer token; `error` is the RFC 6750 error code."""

    def __init__(self, error: str, description: str) -> None:
        """Name the RFC 6750 error and say what the caller should send instead."""
        super().__init__(description)
        self.error = error
        self.description = description


def server_tokens() -> TokenTable | None:
    """Return the token table `MEMORY_AGENT_TOKENS` names, or None when auth is off.

    Raises:
        ConfigError: If the variable names a file that is missing or invalid: a server
            that was meant to check tokens must not start without them.

    """
    path = os.environ.get(ENV_TOKENS, "").strip()
    if not path:
        return None
    agent = os.environ.get("MEMORY_AGENT_ID") or DEFAULT_AGENT
    return _load(path, os.path.getmtime(path) if os.path.exists(path) else 0.0, agent)


@functools.lru_cache(maxsize=4)
def _load(path: str, mtime: float, agent: str) -> TokenTable:
    # Keyed by mtime too: an edited token file takes effect without a restart.
    del mtime
    try:
        return TokenTable.load(path, default_agent=agent)
    except ConfigError as exc:
        raise ConfigError(f"{ENV_TOKENS}: {exc}") from exc


def bearer_identity(authorization: str | None, tokens: TokenTable) -> Identity:
    """Return the identity of an `Authorization: Bearer <token>` header.

    Raises:
        Unauthorized: If the header is missing, not a bearer token, or the token is unknown.

    """
    scheme, _, token = (authorization or "").partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise Unauthorized(
            "invalid_request",
            "missing bearer token: send 'Authorization: Bearer <token>' with a token from "
            f"the file {ENV_TOKENS} names",
        )
    found = tokens.lookup(token)
    if found is None:
        raise Unauthorized("invalid_token", "unknown bearer token: it is not in the token file")
    return found[1]

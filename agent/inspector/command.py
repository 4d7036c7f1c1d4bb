"""`memory-agent inspect`: serve the inspector standalone, on loopback by default.

`--user U` serves one user's memories with no token (loopback only: anyone who can reach
the port sees them); `--tokens FILE` (the MCP server's format) serves each bearer token's
user and may listen beyond loopback.
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import socket
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memory import check_user_id

if TYPE_CHECKING:
    # Imported when run: `memory-agent --help` must not load the MCP and web stacks.
    from agent.mcp.auth import Identity, TokenTable
    from graphs.settings import Settings
    from memory import MemoryService

DEFAULT_PORT = 8770


def declare(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `inspect` subcommand and its flags to the CLI's subparsers."""
    from agent.cli import INSPECT_HELP

    p = sub.add_parser(
        "inspect", help=INSPECT_HELP, description=INSPECT_HELP[:1].upper() + INSPECT_HELP[1:] + "."
    )
    p.add_argument("--user", help="whose memories to serve, with no token (loopback only)")
    p.add_argument(
        "--tokens", metavar="FILE", help="serve each bearer token's user (the MCP token file)"
    )
    p.add_argument("--agent", help="agent id recorded on corrections (default: MEMORY_AGENT_ID)")
    p.add_argument("--read-only", action="store_true", help="with --user: refuse changes")
    p.add_argument("--host", default="127.0.0.1", help="host to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")


@dataclass(frozen=True)
class InspectConfig:
    """What to serve: exactly one of `identity` and `tokens`."""

    identity: Identity | None
    tokens: TokenTable | None
    host: str
    port: int


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def resolve(args: argparse.Namespace, settings: Settings) -> InspectConfig:
    """Turn the flags into what to serve.

    Raises:
        ConfigError: If the flags do not name one way to tell whose memories to show.

    """
    from agent.mcp.auth import ConfigError, Identity, TokenTable

    if not 0 < args.port < 65536:
        raise ConfigError(f"--port {args.port} is not a TCP port (1-65535)")
    if args.tokens:
        if args.user or args.agent or args.read_only:
            raise ConfigError(
                "--user, --agent and --read-only are for one user without tokens; with "
                "--tokens each token names its user, agent and read_only"
            )
        tokens = TokenTable.load(args.tokens, default_agent=settings.agent_id)
        return InspectConfig(identity=None, tokens=tokens, host=args.host, port=args.port)
    if not args.user:
        raise ConfigError("whose memories? pass --user U (loopback) or --tokens FILE")
    if not _is_loopback(args.host):
        raise ConfigError(
            f"--user serves without a token, so only on loopback; to listen on {args.host} "
            "pass --tokens FILE instead"
        )
    agent = (args.agent or settings.agent_id).strip()
    ident = Identity(user=check_user_id(args.user), agent=agent, read_only=args.read_only)
    return InspectConfig(identity=ident, tokens=None, host=args.host, port=args.port)


async def serve(config: InspectConfig, settings: Settings) -> None:
    """Open the configured backends and serve the inspector until interrupted."""
    import uvicorn

    from agent.inspector.app import PREFIX, bearer_tokens, build_app, one_user
    from agent.mcp.server import make_service
    from memory import aopen_backends

    async with aopen_backends(settings.backend) as backends:

        async def service_of(who: Identity) -> MemoryService:
            return make_service(backends, settings, who.agent)

        tokens = config.tokens
        identify = one_user(config.identity) if config.identity else bearer_tokens(lambda: tokens)
        app = build_app(identify, service_of, root_redirect=True)
        whose = (
            f"for {config.identity.user}" if config.identity else f"({len(tokens or ())} tokens)"
        )
        listener = listen(config.host, config.port)
        url = f"http://{config.host}:{config.port}{PREFIX}/"
        print(f"memory inspector {whose} on {url}; {settings.backend.describe()}", flush=True)
        uv = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
        await uv.serve(sockets=[listener])


def listen(host: str, port: int) -> socket.socket:
    """Bind the listening socket first, so a port in use is a clear error, not uvicorn's exit.

    Raises:
        ConfigError: If the address cannot be bound (in use, or not an address here).

    """
    from agent.mcp.auth import ConfigError

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    sock.listen(128)
    return sock


def run(args: argparse.Namespace, settings: Settings) -> int:
    """Run `memory-agent inspect` with what `agent/cli.py` parsed; returns the exit code.

    Raises:
        ConfigError: On unusable flags or token file, or an address it cannot listen on.

    """
    asyncio.run(serve(resolve(args, settings), settings))
    return 0

"""The inspector inside the LangGraph server: `"http": {"app": ...}` in `langgraph.json`.

It reads the server's own store (the one the graphs write) and the configured Chroma index,
and identifies callers by the bearer tokens of `MEMORY_AGENT_TOKENS`, the server's custom
auth (`agent.serve.auth`). Without that file it refuses, saying how to turn auth on.
"""

from __future__ import annotations

import asyncio
import threading

from agent.inspector.app import bearer_tokens, build_app
from agent.mcp.auth import Identity
from agent.serve.tokens import server_tokens
from graphs.settings import Settings
from memory import ChromaIndex, MemoryService, open_service
from memory.backends import open_index

settings = Settings.from_env()
_lock = threading.Lock()
_opened: list[ChromaIndex] = []


def _index() -> ChromaIndex:
    # One index for the server's life: `open_service` shares a service per index object.
    with _lock:
        if not _opened:
            _opened.append(open_index(settings.backend))
        return _opened[0]


async def service_of(who: Identity) -> MemoryService:
    """Return the service over the server's store that writes as the caller's agent."""
    from langgraph_api.store import get_store

    store = await get_store()
    index = await asyncio.to_thread(_index)
    return open_service(settings, store, index, agent_id=who.agent)


app = build_app(bearer_tokens(server_tokens), service_of)

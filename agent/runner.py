"""Run turns of the compiled graph from the shell: the one place the CLI and demo share."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import HumanMessage
from langgraph.graph.state import CompiledStateGraph

from agent.settings import Settings
from graphs.context import Context
from graphs.memory_agent import build_graph
from graphs.state import InputState, State
from memory.backends import Backends, aopen_backends
from memory.service import MemoryService


@dataclass
class TurnResult:
    """What one turn did."""

    reply: str
    recalled: list[dict[str, Any]] = field(default_factory=list)
    extraction: dict[str, Any] = field(default_factory=dict)
    saved: list[str] = field(default_factory=list)


@dataclass
class Session:
    """An open graph with its backends and memory service."""

    graph: CompiledStateGraph[State, Context, InputState, State]
    backends: Backends
    service: MemoryService
    settings: Settings

    async def turn(
        self, user_id: str, thread_id: str, text: str, *, turn_time: str | None = None
    ) -> TurnResult:
        """Run one user message through the graph and report what happened."""
        state_in: InputState = {"messages": [HumanMessage(text)]}
        if turn_time:
            state_in["turn_time"] = turn_time
        out = await self.graph.ainvoke(
            state_in,
            config={"configurable": {"thread_id": thread_id}},
            context=Context(user_id=user_id),
        )
        reply = out["messages"][-1]
        return TurnResult(
            reply=reply.content if isinstance(reply.content, str) else str(reply.content),
            recalled=out.get("recalled", []),
            extraction=out.get("extraction", {}),
            saved=out.get("saved", []),
        )


@asynccontextmanager
async def open_session(settings: Settings, *, setup: bool = False) -> AsyncIterator[Session]:
    """Open backends from settings and compile the graph on them."""
    async with aopen_backends(settings.backend, setup=setup) as backends:
        graph = build_graph(
            backends.checkpointer, backends.store, settings=settings, index=backends.index
        )
        service = MemoryService(
            backends.store,
            backends.index,
            agent_id=settings.agent_id,
            checkpointer=backends.checkpointer,
            policy=settings.policy,
            access=settings.access,
        )
        yield Session(graph, backends, service, settings)

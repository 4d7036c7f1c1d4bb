"""Run turns of the compiled graph: the one place the CLI, the demo and apps share.

The reply streams out of the chat node before extraction and saving finish. In background
mode (`MEMORY_AGENT_EXTRACT_MODE=background`) the graph ends after chat, and a flush that
runs after `extract_delay` quiet seconds extracts the whole burst of turns at once; pending
work is flushed on close and resumed from the checkpointer after a crash.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph.state import CompiledStateGraph

from graphs.context import Context
from graphs.memory_agent import build_graph
from graphs.messages import pending_messages
from graphs.settings import Settings
from graphs.state import InputState, State
from memory import Backends, MemoryService, aopen_backends, aprune_history, open_service

log = logging.getLogger(__name__)


@dataclass
class TurnResult:
    """What one turn did."""

    reply: str
    recalled: list[dict[str, Any]] = field(default_factory=list)
    extraction: dict[str, Any] = field(default_factory=dict)
    saved: list[str] = field(default_factory=list)
    first_token_s: float = 0.0
    """Seconds until the first piece of the reply existed."""
    total_s: float = 0.0
    """Seconds until the run was complete."""


@dataclass
class Session:
    """An open graph with its backends and memory service."""

    graph: CompiledStateGraph[State, Context, InputState, State]
    backends: Backends
    service: MemoryService
    settings: Settings
    _locks: dict[str, asyncio.Lock] = field(default_factory=dict)
    _timers: dict[str, asyncio.Task[Any]] = field(default_factory=dict)
    _owners: dict[str, str] = field(default_factory=dict)

    def _lock(self, thread_id: str) -> asyncio.Lock:
        # One run per thread at a time: a turn and a background flush never overlap.
        return self._locks.setdefault(thread_id, asyncio.Lock())

    async def turn(
        self,
        user_id: str,
        thread_id: str,
        text: str,
        *,
        turn_time: str | None = None,
        on_reply: Callable[[str], None] | None = None,
        agent_id: str | None = None,
    ) -> TurnResult:
        """Run one user message through the graph and report what happened.

        Args:
            user_id: Whose memory the turn reads and writes.
            thread_id: The conversation.
            text: The user's message.
            turn_time: ISO time it was said (default: now).
            on_reply: Called with each piece of the reply as soon as it exists.
            agent_id: The agent that answers, when several share the user's memory under
                an access policy (default: `settings.agent_id`).

        Raises:
            ThreadNotYours: If another user opened the thread (nothing is written to it).
        """
        # Before the message is written to the thread: it may be another user's thread.
        await self.service.aremember_thread(user_id, thread_id)
        state_in: InputState = {"messages": [HumanMessage(text)]}
        if turn_time:
            state_in["turn_time"] = turn_time
        config: Any = {"configurable": {"thread_id": thread_id}}
        started = time.perf_counter()
        first = 0.0
        out: dict[str, Any] = {}
        extraction: dict[str, Any] = {}
        async with self._lock(thread_id):
            stream: AsyncIterator[Any] = self.graph.astream(
                state_in,
                config,
                context=Context(user_id=user_id, agent_id=agent_id),
                stream_mode=["messages", "values"],
            )
            async for mode, chunk in stream:
                if mode == "values":
                    out = chunk
                    # save empties `extraction` when it is done: keep what extract found.
                    found = chunk.get("extraction") or {}
                    if found.get("memories") or found.get("forget"):
                        extraction = found
                    continue
                message, meta = chunk
                if (
                    meta.get("langgraph_node") == "chat"
                    and isinstance(message, AIMessage)  # not the tool results chat adds
                    and message.content
                    and not message.tool_calls
                ):
                    first = first or time.perf_counter() - started
                    if on_reply is not None:
                        on_reply(str(message.content))
            if out.get("scrubbed"):
                await aprune_history(self.backends.checkpointer, thread_id)
        reply = next(
            (m for m in reversed(out.get("messages", [])) if isinstance(m, AIMessage)), None
        )
        self._owners[thread_id] = user_id
        if self.settings.extract_mode == "background":
            self._schedule(thread_id)
        return TurnResult(
            reply=str(reply.content) if reply is not None else "",
            recalled=out.get("recalled", []),
            extraction=extraction or out.get("extraction", {}),
            saved=out.get("saved", []),
            first_token_s=first or time.perf_counter() - started,
            total_s=time.perf_counter() - started,
        )

    def _schedule(self, thread_id: str) -> None:
        """Debounce: each new turn of a thread restarts its countdown to extraction."""
        old = self._timers.pop(thread_id, None)
        if old is not None:
            old.cancel()

        async def later() -> None:
            await asyncio.sleep(self.settings.extract_delay)
            try:
                await self.flush(thread_id)
            except Exception as exc:  # it stays pending and is retried on the next flush
                log.warning("background extraction of thread %s failed: %s", thread_id, exc)

        self._timers[thread_id] = asyncio.create_task(later())

    async def flush(self, thread_id: str, user_id: str | None = None) -> list[str]:
        """Extract and save every pending user message of a thread now.

        Returns:
            What save did, one line per change (empty if nothing was pending).
        """
        user = user_id or self._owners.get(thread_id) or await self.service.athread_owner(thread_id)
        if not user:
            raise ValueError(f"no user is known for thread {thread_id!r}: pass user_id")
        # Pending messages are extracted into this user's memory: only the owner's.
        await self.service.aremember_thread(user, thread_id)
        config: Any = {"configurable": {"thread_id": thread_id}}
        async with self._lock(thread_id):
            snapshot = await self.graph.aget_state(config)
            if not pending_messages(snapshot.values):
                return []
            flush: InputState = {"flush": True}
            out = await self.graph.ainvoke(flush, config, context=Context(user_id=user))
            if out.get("scrubbed"):
                await aprune_history(self.backends.checkpointer, thread_id)
        return list(out.get("saved", []))

    async def flush_all(self) -> None:
        """Run every pending background extraction now (called on close)."""
        timers, self._timers = self._timers, {}
        for task in timers.values():
            task.cancel()
        for thread_id in timers:
            with contextlib.suppress(asyncio.CancelledError):
                await self.flush(thread_id)


@asynccontextmanager
async def open_session(
    settings: Settings, *, setup: bool = False, model: BaseChatModel | None = None
) -> AsyncIterator[Session]:
    """Open backends from settings and compile the graph on them.

    Pending background extractions are flushed when the session closes.

    Args:
        settings: Backends, model spec and memory policy.
        setup: Create the Postgres tables first.
        model: A chat model to use instead of `settings.model` (e.g. one with a short
            timeout, or a scripted fake).

    """
    async with aopen_backends(settings.backend, setup=setup) as backends:
        graph = build_graph(
            backends.checkpointer,
            backends.store,
            settings=settings,
            index=backends.index,
            model=model,
        )
        service = open_service(
            settings, backends.store, backends.index, checkpointer=backends.checkpointer
        )
        session = Session(graph, backends, service, settings)
        try:
            yield session
        finally:
            await session.flush_all()

"""The memory agent graph: `build_graph` compiles it for an app.

The graph `langgraph dev` serves is compiled in `agent/app.py`, the one module that reads
the environment when it is imported.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph
from langgraph.store.base import BaseStore

from graphs.builder import make_builder
from graphs.context import Context
from graphs.models import cached_chat_model
from graphs.nodes import AgentDeps
from graphs.settings import Settings
from graphs.state import InputState, State
from graphs.tools import TOOLS
from memory import ChromaIndex
from memory.backends import open_index


def make_deps(
    settings: Settings | None = None,
    *,
    model: BaseChatModel | None = None,
    index: ChromaIndex | None = None,
    tools: Sequence[BaseTool] | None = None,
) -> AgentDeps:
    """Resolve the nodes' dependencies from settings.

    Args:
        settings: Defaults to `Settings.from_env()`.
        model: A chat model to use instead of the configured spec (e.g. a scripted fake).
        index: A Chroma index to use instead of opening the configured one.
        tools: The tools the chat model may call (default: `graphs.tools.TOOLS`).

    """
    cfg = settings or Settings.from_env()
    lock = threading.Lock()
    opened: list[ChromaIndex] = [index] if index is not None else []

    def get_index() -> ChromaIndex:
        with lock:
            if not opened:
                opened.append(open_index(cfg.backend))
            return opened[0]

    def chat_model(spec: str | None) -> BaseChatModel:
        return model if model is not None else cached_chat_model(spec or cfg.model, cfg)

    return AgentDeps(
        settings=cfg,
        chat_model=chat_model,
        index=get_index,
        tools=tuple(TOOLS if tools is None else tools),
    )


def build_graph(
    checkpointer: BaseCheckpointSaver[Any] | None = None,
    store: BaseStore | None = None,
    *,
    settings: Settings | None = None,
    model: BaseChatModel | None = None,
    index: ChromaIndex | None = None,
    tools: Sequence[BaseTool] | None = None,
) -> CompiledStateGraph[State, Context, InputState, State]:
    """Compile the memory agent with persistence, for use from an app.

    Args:
        checkpointer: Keeps each thread's messages (e.g. from `memory.aopen_backends`); None
            under a LangGraph server, which brings its own.
        store: Long-term memory's source of truth (any LangGraph `BaseStore`); None under a
            LangGraph server, which brings its own.
        settings: Defaults to `Settings.from_env()`.
        model: A chat model to use instead of the configured spec.
        index: A Chroma index to use instead of opening the configured one.
        tools: The tools the chat model may call, e.g. `[*graphs.tools.TOOLS, my_tool]`.

    Example:
        ```python
        from graphs import Context, build_graph
        from memory import aopen_backends

        async with aopen_backends(settings.backend, setup=True) as b:
            graph = build_graph(b.checkpointer, b.store, index=b.index)
            await graph.ainvoke(
                {"messages": [("user", "I'm allergic to peanuts.")]},
                {"configurable": {"thread_id": "t1"}},
                context=Context(user_id="alice"),
            )
        ```

    """
    deps = make_deps(settings, model=model, index=index, tools=tools)
    return make_builder(deps).compile(checkpointer=checkpointer, store=store, name="memory_agent")

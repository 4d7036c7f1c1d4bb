"""The memory agent graph, as `langgraph dev` and apps load it.

`graph` carries no checkpointer or store: the LangGraph server injects its own. Apps use
`build_graph(checkpointer=..., store=...)`. This module is the composition root: it is the
one graphs module that reads the application's settings and model factory.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool
from langgraph.graph.state import CompiledStateGraph

from agent.models import cached_chat_model
from agent.settings import Settings
from graphs.builder import make_builder
from graphs.context import Context
from graphs.nodes import AgentDeps
from graphs.state import InputState, State
from graphs.tools import TOOLS
from memory.backends import open_index
from memory.index import ChromaIndex


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
        chat_model=chat_model,
        index=get_index,
        policy=cfg.policy,
        agent_id=cfg.agent_id,
        recall_k=cfg.recall_k,
        context_tokens=cfg.context_tokens,
        summary_tokens=cfg.summary_tokens,
        extract_mode=cfg.extract_mode,
        extract_delay=cfg.extract_delay,
        max_message_chars=cfg.max_message_chars,
        access=cfg.access,
        tools=tuple(TOOLS if tools is None else tools),
        database_url=cfg.backend.database_url,
    )


def build_graph(
    checkpointer: Any = None,
    store: Any = None,
    *,
    settings: Settings | None = None,
    model: BaseChatModel | None = None,
    index: ChromaIndex | None = None,
    tools: Sequence[BaseTool] | None = None,
) -> CompiledStateGraph[State, Context, InputState, State]:
    """Compile the memory agent with persistence, for use from an app.

    Args:
        checkpointer: Keeps each thread's messages (e.g. from `memory.backends.aopen_backends`).
        store: Long-term memory's source of truth (any LangGraph `BaseStore`).
        settings: Defaults to `Settings.from_env()`.
        model: A chat model to use instead of the configured spec.
        index: A Chroma index to use instead of opening the configured one.
        tools: The tools the chat model may call, e.g. `[*graphs.tools.TOOLS, my_tool]`.

    """
    deps = make_deps(settings, model=model, index=index, tools=tools)
    return make_builder(deps).compile(checkpointer=checkpointer, store=store, name="memory_agent")


builder = make_builder(make_deps())
graph = builder.compile(name="memory_agent")

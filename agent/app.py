"""The composition root `langgraph dev` loads (see `langgraph.json`).

The one module that reads the environment when it is imported: the LangGraph server gives
its graphs no other way to be configured. The graphs carry no checkpointer or store; the
server injects its own. Apps call `graphs.build_graph(...)` instead.
"""

from __future__ import annotations

from graphs import two_agents
from graphs.memory_agent import build_graph
from graphs.settings import Settings

settings = Settings.from_env()
memory_agent = build_graph(settings=settings)
two_agents_graph = two_agents.build_graph(settings=settings)

"""The memory agent's LangGraph code: what an app needs to compile and run the graph.

Example:
    ```python
    from graphs import Context, Settings, build_graph

    graph = build_graph(checkpointer, store, settings=Settings(recall_k=5))
    await graph.ainvoke(
        {"messages": [("user", "我对花生过敏。")]},
        {"configurable": {"thread_id": "t1"}},
        context=Context(user_id="alice"),
    )
    ```
"""

from graphs.builder import make_builder
from graphs.context import Context
from graphs.memory_agent import build_graph, make_deps
from graphs.settings import Settings
from memory import open_service

__all__ = ["Context", "Settings", "build_graph", "make_builder", "make_deps", "open_service"]

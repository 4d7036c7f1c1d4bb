"""Builds the memory agent's StateGraph from its dependencies."""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph
from langgraph.prebuilt import ToolNode

from graphs.context import Context
from graphs.nodes import AgentDeps, MemoryNodes
from graphs.state import InputState, State


def make_builder(deps: AgentDeps) -> StateGraph[State, Context, InputState, State]:
    """Return the uncompiled graph `load_memory → chat [⇄ tools] → extract → save [→ summarize]`.

    In background mode chat goes to `schedule` instead, and a later run started with
    `{"flush": True}` goes from START straight to extract.
    """
    nodes = MemoryNodes(deps)
    builder = StateGraph(State, context_schema=Context, input_schema=InputState)
    builder.add_node("load_memory", nodes.load_memory)
    builder.add_node("chat", nodes.chat)
    builder.add_node("extract", nodes.extract)
    builder.add_node("save", nodes.save)
    builder.add_node("schedule", nodes.schedule)
    builder.add_conditional_edges(START, nodes.entry, ["load_memory", "extract"])
    builder.add_edge("load_memory", "chat")
    builder.add_node("tools", ToolNode(nodes.tools))
    builder.add_conditional_edges("chat", nodes.after_chat, ["tools", "extract", "schedule"])
    builder.add_edge("schedule", END)
    builder.add_edge("tools", "chat")
    builder.add_node("summarize", nodes.summarize)
    builder.add_edge("extract", "save")
    builder.add_conditional_edges("save", nodes.needs_summary, ["summarize", END])
    builder.add_edge("summarize", END)
    return builder

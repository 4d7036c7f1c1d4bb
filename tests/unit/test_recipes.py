"""The README's recipes for forking the template, run block by block as written there."""

from __future__ import annotations

import json
import re
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from fakes import extraction_call, scripted
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

import graphs.builder
from graphs import Context, Settings, build_graph
from graphs.models import PROVIDERS, make_chat_model

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def recipe(title: str) -> list[str]:
    """Return the python blocks under a `#### <title>` heading of the README."""
    section = README.split(f"#### {title}\n", 1)[1].split("\n#### ", 1)[0].split("\n### ")[0]
    blocks = re.findall(r"```python\n(.+?)\n```", section, re.S)
    assert blocks, f"the recipe {title!r} has no code"
    return blocks


async def turn(graph: Any, text: str) -> dict[str, Any]:
    return await graph.ainvoke(
        {"messages": [HumanMessage(text)]},
        {"configurable": {"thread_id": "t"}},
        context=Context(user_id="alice"),
    )


async def test_add_a_tool(index, monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MEMORY_AGENT_MODEL", "offline")
    monkeypatch.setenv("CHROMA_PATH", str(tmp_path / "chroma"))
    code, app_edit = recipe("Add a tool")
    ns: dict[str, Any] = {}
    exec(code, ns)  # the snippet runs as written: every name it uses is defined
    tool_node = ns["graph"].nodes["tools"].bound
    assert "get_weather" in tool_node.tools_by_name

    # The served graph gets it through the one edit of agent/app.py the recipe shows.
    mine = types.ModuleType("my_tools")
    exec(code, mine.__dict__)
    monkeypatch.setitem(sys.modules, "my_tools", mine)
    app = (ROOT / "agent" / "app.py").read_text(encoding="utf-8")
    edit = [line for line in app_edit.splitlines() if not line.startswith("#")]
    if edit[-1] not in app:  # not followed yet: apply it as the recipe says
        old = re.search(r"instead of: (.+)$", app_edit, re.M).group(1)  # type: ignore[union-attr]
        assert app.count(old) == 1, "the line the recipe replaces is no longer in agent/app.py"
        app = app.replace(old, "\n".join(edit))
    served: dict[str, Any] = {"__name__": "forked_app"}
    exec(compile(app, "agent/app.py", "exec"), served)
    assert "get_weather" in served["memory_agent"].nodes["tools"].bound.tools_by_name
    # The same tool, driven by a model that calls it.
    call = {"name": "get_weather", "args": {"city": "Oslo"}, "id": "c1", "type": "tool_call"}
    model = scripted(AIMessage("", tool_calls=[call]), "Take sunglasses.", extraction_call())
    graph = build_graph(
        InMemorySaver(), InMemoryStore(), settings=Settings(), model=model, index=index,
        tools=[*ns["TOOLS"], ns["get_weather"]],
    )  # fmt: skip
    out = await turn(graph, "What should I wear in Oslo today?")
    results = [m.content for m in out["messages"] if isinstance(m, ToolMessage)]
    assert results == ["Sunny in Oslo."]


async def test_add_a_node(index, monkeypatch) -> None:
    node, wiring = recipe("Add a node")
    replaced = 'builder.add_edge("load_memory", "chat")'
    source = (ROOT / "graphs" / "builder.py").read_text(encoding="utf-8")
    lines = [line for line in wiring.splitlines() if not line.startswith("#")]
    # A fork that followed the recipe has it wired already: its own builder is tested.
    if not all(line in source for line in lines):
        assert source.count(replaced) == 1, "the recipe's edge is no longer in graphs/builder.py"
        indent = re.search(rf"^( *){re.escape(replaced)}", source, re.M).group(1)  # type: ignore[union-attr]
        patched = source.replace(replaced, f"\n{indent}".join(lines))
        module = types.ModuleType("forked_builder")
        module.__dict__["__file__"] = graphs.builder.__file__
        exec(compile(patched, "forked_builder.py", "exec"), module.__dict__)
        exec(node, module.__dict__)
        # The node lives in the forked module: the graph uses it through make_builder.
        monkeypatch.setattr(graphs.memory_agent, "make_builder", module.make_builder)
    model = scripted("Hi.", extraction_call(), "Again.", extraction_call())
    graph = build_graph(
        InMemorySaver(), InMemoryStore(), settings=Settings(), model=model, index=index
    )
    assert "guard" in graph.get_graph().nodes
    out = await turn(graph, "Hello there.")
    assert out["messages"][-1].content == "Hi."
    out = await turn(graph, "My password is hunter2.")
    assert "did not keep that message" in out["messages"][-1].content
    # The thread keeps no copy: the next turn's model sees the thread, and it is clean.
    out = await turn(graph, "Hello again.")
    assert out["messages"][-1].content == "Again."
    assert "hunter2" not in json.dumps(out, default=repr)


def test_add_a_model_provider(monkeypatch) -> None:
    monkeypatch.setattr("graphs.models.PROVIDERS", dict(PROVIDERS))
    (code,) = recipe("Add a model provider")
    exec(code, {})
    import graphs.models

    model = make_chat_model("vllm:Qwen2.5-7B-Instruct", Settings())
    assert "vllm" in graphs.models.PROVIDERS
    assert getattr(model, "model_name", None) == "Qwen2.5-7B-Instruct"
    assert str(getattr(model, "openai_api_base", "")).startswith("http://127.0.0.1:8000")
    with pytest.raises(ValueError, match="unknown model spec"):
        make_chat_model("nosuch:model", Settings())

"""Tools the chat model may call, run by the graph's `ToolNode`.

Identity is never a tool argument: a tool that needs the user reads it from the run
context (`langgraph.prebuilt.ToolRuntime` / `get_runtime`), never from the model.

To add a tool, write it with `@tool` and pass it to `build_graph(tools=[*TOOLS, my_tool])`.
"""

from __future__ import annotations

from typing import Annotated, Any

from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, InjectedToolCallId, tool
from langgraph.prebuilt import InjectedState
from langgraph.types import Command
from pydantic import BaseModel, Field

from memory.privacy import redact


class UpdateWorkingMemory(BaseModel):
    """Record the plan of the user's current task.

    Call it when the user states a goal or a plan, when a step is done, or when the task is
    finished. Only the fields you pass change.
    """

    goal: str | None = Field(default=None, description="The task's goal.")
    steps: list[str] | None = Field(default=None, description="The plan, in order.")
    done: list[str] | None = Field(default=None, description="Steps completed so far.")
    next: str | None = Field(default=None, description="The step to do next.")
    open_questions: list[str] | None = Field(default=None, description="What is still unclear.")
    finished: bool = Field(default=False, description="True when the whole task is done.")


@tool(
    "UpdateWorkingMemory",
    args_schema=UpdateWorkingMemory,
    description=" ".join((UpdateWorkingMemory.__doc__ or "").split()),
)
def update_working_memory(
    state: Annotated[dict[str, Any], InjectedState()],
    tool_call_id: Annotated[str, InjectedToolCallId],
    **args: Any,
) -> Command[Any]:
    """Record the plan of the user's current task (see `UpdateWorkingMemory`)."""
    try:
        working = _redacted(apply_working_memory(state.get("working"), args))
    except ValueError as exc:
        result = ToolMessage(f"invalid arguments: {exc}", tool_call_id=tool_call_id)
        return Command(update={"messages": [result]})
    done = "working memory updated" if working else "task finished"
    message = ToolMessage(done, tool_call_id=tool_call_id, name="UpdateWorkingMemory")
    return Command(update={"working": working, "messages": [message]})


def _redacted(working: dict[str, Any] | None) -> dict[str, Any] | None:
    """Return working memory with sensitive values redacted (it is a copy, like any other)."""
    if working is None:
        return None
    return {
        k: [redact(str(i)) for i in v] if isinstance(v, list) else redact(v)
        if isinstance(v, str) else v
        for k, v in working.items()
    }  # fmt: skip


TOOLS: list[BaseTool] = [update_working_memory]
"""The tools the chat model gets by default."""


def apply_working_memory(
    current: dict[str, Any] | None, args: dict[str, Any]
) -> dict[str, Any] | None:
    """Return working memory after an `UpdateWorkingMemory` call; None once finished."""
    update = UpdateWorkingMemory.model_validate(args)
    if update.finished:
        return None
    merged = dict(current or {})
    for key, value in update.model_dump(exclude={"finished"}).items():
        if value is not None:
            merged[key] = value
    return merged


def render_working_memory(working: dict[str, Any] | None, zh: bool = False) -> str:
    """Return working memory as prompt text ("" when there is none)."""
    if not working:
        return ""
    labels = {
        "goal": ("目标", "Goal"),
        "steps": ("计划", "Plan"),
        "done": ("已完成", "Done"),
        "next": ("下一步", "Next"),
        "open_questions": ("待确认", "Open questions"),
    }
    lines = ["当前任务（工作记忆）：" if zh else "Current task (working memory):"]
    for key, (zh_label, en_label) in labels.items():
        value = working.get(key)
        if value:
            text = "; ".join(value) if isinstance(value, list) else str(value)
            lines.append(f"- {zh_label if zh else en_label}: {text}")
    return "\n".join(lines)

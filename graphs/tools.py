"""Tools the chat model may call. Identity is never a tool argument."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


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


TOOLS = [UpdateWorkingMemory]
TOOL_NAMES = {t.__name__ for t in TOOLS}


def apply_working_memory(current: dict[str, Any] | None, args: dict[str, Any]) -> dict | None:
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

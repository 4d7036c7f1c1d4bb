"""Rolling thread summaries: the schema, how two summaries merge, and the text form.

A summary keeps what must survive trimming: the user's goals, hard constraints ("don't …",
"不要 …"), decisions and open items. It changes what the model sees; the thread itself stays
whole in the checkpointer.
"""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel, Field

MAX_ITEMS = 12
MAX_ITEM_CHARS = 300


class ThreadSummary(BaseModel):
    """What an older part of a thread established."""

    goals: list[str] = Field(default_factory=list, description="What the user wants to achieve.")
    constraints: list[str] = Field(
        default_factory=list,
        description="Hard rules the user set, word for word where possible ('don't use X').",
    )
    decisions: list[str] = Field(default_factory=list, description="What was decided.")
    open_items: list[str] = Field(default_factory=list, description="Questions or tasks left open.")
    facts: list[str] = Field(default_factory=list, description="Other details worth keeping.")


def add_item(items: list[str], sentence: str) -> None:
    """Append a sentence to a summary list unless it is there, keeping the newest `MAX_ITEMS`."""
    if sentence not in items:
        items.append(sentence)
        del items[:-MAX_ITEMS]  # keep the newest


def merge(previous: ThreadSummary | None, new: ThreadSummary) -> ThreadSummary:
    """Fold a new summary into the previous one, constraints first and never lost."""
    if previous is None:
        return new
    out = previous.model_copy(deep=True)
    for field in ("goals", "constraints", "decisions", "open_items", "facts"):
        target: list[str] = getattr(out, field)
        for item in getattr(new, field):
            add_item(target, " ".join(str(item).split())[:MAX_ITEM_CHARS])
    return out


def screen(summary: ThreadSummary, keep: Callable[[list[str]], list[str]]) -> ThreadSummary:
    """Return the summary with each list passed through `keep` (e.g. to drop forgotten items)."""
    out = summary.model_copy(deep=True)
    for field in ("goals", "constraints", "decisions", "open_items", "facts"):
        setattr(out, field, keep(list(getattr(out, field))))
    return out


def render(summary: ThreadSummary, covered: int, zh: bool = False) -> str:
    """Return the summary as prompt text."""
    titles = (
        ("goals", "目标" if zh else "Goals"),
        ("constraints", "必须遵守的约束" if zh else "Constraints (must hold)"),
        ("decisions", "已做的决定" if zh else "Decisions"),
        ("open_items", "未完成事项" if zh else "Open items"),
        ("facts", "其他细节" if zh else "Details"),
    )
    lines = [
        f"（以下是本对话较早的 {covered} 条消息的摘要）" if zh
        else f"(Summary of the {covered} earlier messages of this thread)"
    ]  # fmt: skip
    for field, title in titles:
        items = getattr(summary, field)
        if items:
            lines.append(f"{title}:")
            lines.extend(f"- {item}" for item in items)
    return "\n".join(lines)

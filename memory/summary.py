"""Rolling thread summaries: the schema, the offline extractive summarizer, and the text form.

A summary keeps what must survive trimming: the user's goals, hard constraints ("don't …",
"不要 …"), decisions and open items. It changes what the model sees; the thread itself stays
whole in the checkpointer.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

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


_CONSTRAINT = re.compile(
    r"\b(don't|do not|never|always|must|must not|only|avoid|no more than|at most|at least)\b"
    r"|不要|别|不能|不许|禁止|必须|一定要|只能|务必|千万",
    re.I,
)
_GOAL = re.compile(
    r"\b(i want|i need|my goal|i'm trying|i am trying|help me|i'd like|we need|we want)\b"
    r"|我想|我要|我需要|目标|帮我|我们需要|打算",
    re.I,
)
_DECISION = re.compile(
    r"\b(let's|we decided|i decided|decided|go with|we'll use|i'll use|settled on)\b"
    r"|决定|就用|定了|选择了|确定",
    re.I,
)
_OPEN = re.compile(
    r"\b(todo|to do|later|pending|not yet|still need|tbd)\b|待办|还没|稍后|回头|待定", re.I
)


def _sentences(text: str) -> list[str]:
    parts = re.split(r"(?<=[.!?。！？；;\n])\s*", text)
    return [" ".join(p.split())[:MAX_ITEM_CHARS] for p in parts if p.strip()]


def _add(items: list[str], sentence: str) -> None:
    if sentence not in items:
        items.append(sentence)
        del items[:-MAX_ITEMS]  # keep the newest


def extractive_summary(user_texts: Iterable[str], previous: ThreadSummary | None) -> ThreadSummary:
    """Summarize user messages by keeping the sentences that state goals, rules and decisions.

    Deterministic, so the offline model can summarize with no LLM. The previous summary
    is carried forward: older constraints are never dropped for newer small talk.
    """
    out = previous.model_copy(deep=True) if previous else ThreadSummary()
    for text in user_texts:
        for sentence in _sentences(text):
            if _CONSTRAINT.search(sentence):
                _add(out.constraints, sentence)
            elif _DECISION.search(sentence):
                _add(out.decisions, sentence)
            elif _GOAL.search(sentence):
                _add(out.goals, sentence)
            elif _OPEN.search(sentence):
                _add(out.open_items, sentence)
    return out


def merge(previous: ThreadSummary | None, new: ThreadSummary) -> ThreadSummary:
    """Fold a new summary into the previous one, constraints first and never lost."""
    if previous is None:
        return new
    out = previous.model_copy(deep=True)
    for field in ("goals", "constraints", "decisions", "open_items", "facts"):
        target: list[str] = getattr(out, field)
        for item in getattr(new, field):
            _add(target, " ".join(str(item).split())[:MAX_ITEM_CHARS])
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

"""Rolling thread summaries: the schema, how two summaries merge, and the text form.

A summary keeps what must survive trimming: the user's goals, hard constraints ("don't …",
"不要 …"), decisions and open items. It changes what the model sees; the thread itself stays
whole in the checkpointer. Each item knows the statements it came from (`sources`), so what
a user forgets leaves the summary item by item, however the summarizer worded it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pydantic import BaseModel, Field
from pydantic.json_schema import SkipJsonSchema

from memory.lexical.bm25 import tokenize

MAX_ITEMS = 12
MAX_ITEM_CHARS = 300
ITEM_FIELDS = ("goals", "constraints", "decisions", "open_items", "facts")
"""The lists of a summary, in the order they are shown."""
SOURCE_OVERLAP = 0.6
"""Share of a statement's words an item must hold to count as coming from it."""


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
    # Not asked of the model: filled in by `attribute` from the statements it summarized.
    sources: SkipJsonSchema[dict[str, list[str]]] = Field(default_factory=dict)
    """Each item's text → the ids of the statements it came from (`memory.text.statements`)."""

    def items(self) -> list[str]:
        """Return every item, list by list."""
        return [item for f in ITEM_FIELDS for item in getattr(self, f)]

    def rewritten(self, rewrite: Callable[[str, list[str]], str | None]) -> ThreadSummary:
        """Return the summary with each item rewritten (None: dropped), sources kept along.

        Args:
            rewrite: Takes an item and its sources; returns the item's new text or None.
        """
        out = self.model_copy(deep=True)
        out.sources = {}
        for f in ITEM_FIELDS:
            kept = []
            for item in getattr(self, f):
                said = self.sources.get(item, [])
                new = rewrite(item, said)
                if new:
                    kept.append(new)
                    if said:
                        out.sources[new] = list(dict.fromkeys(out.sources.get(new, []) + said))
            setattr(out, f, kept)
        return out


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
    for field in ITEM_FIELDS:
        target: list[str] = getattr(out, field)
        for item in getattr(new, field):
            text = " ".join(str(item).split())[:MAX_ITEM_CHARS]
            add_item(target, text)
            if new.sources.get(item):
                out.sources[text] = list(
                    dict.fromkeys(out.sources.get(text, []) + new.sources[item])
                )
    live = set(out.items())
    out.sources = {item: ids for item, ids in out.sources.items() if item in live}
    return out


def screen(summary: ThreadSummary, keep: Callable[[list[str]], list[str]]) -> ThreadSummary:
    """Return the summary with only the items `keep` keeps (e.g. to drop forgotten items).

    `keep` is called once with every item (a batch check, such as one store read); the
    items it returns stay, with their sources.
    """
    kept = set(keep(summary.items()))
    return summary.rewritten(lambda item, _: item if item in kept else None)


def attribute(summary: ThreadSummary, statements: Sequence[tuple[str, str]]) -> ThreadSummary:
    """Return the summary with each item's sources: the statements it came from.

    An item comes from a statement it quotes, or one most of whose words it holds (a
    summarizer rewords); items that already know their sources keep them.

    Args:
        summary: The summary to attribute.
        statements: `(id, text)` of each statement the summarized messages hold.
    """
    out = summary.model_copy(deep=True)
    for item in summary.items():
        if not out.sources.get(item):
            found = [sid for sid, text in statements if came_from(item, text)]
            if found:
                out.sources[item] = found
    return out


def came_from(item: str, statement: str) -> bool:
    """Return True if a summary item comes from a statement: quotes it, or holds most of it.

    A summarizer rewords ("I want to surprise Lena with a trip to Kyoto" → "Goal: a Kyoto
    trip as a surprise for Lena"); the statement's words are what stays.
    """
    if statement in item or item in statement:
        return True
    theirs = set(tokenize(statement))
    return bool(theirs) and len(set(tokenize(item)) & theirs) >= SOURCE_OVERLAP * len(theirs)


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

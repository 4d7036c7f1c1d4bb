"""The memory block: the one place that formats recalled memories for a prompt."""

from __future__ import annotations

import json

from memory.store.records import STYLE_SUBJECT, MemoryRecord

BLOCK_OPEN = "<memories>"
BLOCK_CLOSE = "</memories>"


def format_line(record: MemoryRecord) -> str:
    """Return one labelled line: kind, when it was said, where, and the quoted content.

    The content is JSON-quoted so that a memory is always data, never an instruction.
    """
    said = (record.source.said_at or record.created_at).date().isoformat()
    where = f"thread {record.source.thread_id}" if record.source.thread_id else record.source.via
    label: str = record.kind
    if record.kind == "event" and record.valid_from is not None:
        label = f"event on {record.valid_from.date().isoformat()}"
    if record.subject.startswith(STYLE_SUBJECT):
        label = "answer style"  # the system prompt says to follow these, and only these
    if record.conflict_group:
        label = f"{label} · CONFLICTS with another note on {record.subject}: ask the user"
    head = f"- [{label} · said {said} · {where} · confidence {record.confidence:.2f}]"
    return f"{head} {quote(record.content)}"


def quote(text: str) -> str:
    """Return text as one JSON string literal that cannot close the block or add a line."""
    return json.dumps(text, ensure_ascii=False).replace("<", "\\u003c").replace(">", "\\u003e")


def format_block(records: list[MemoryRecord]) -> str:
    """Return the memory block for the system prompt ("" when nothing was recalled)."""
    if not records:
        return ""
    # Conflicting notes sit next to each other so the model sees both sides at once.
    order = {r.conflict_group: i for i, r in reversed(list(enumerate(records)))}
    ranked = sorted(enumerate(records), key=lambda p: (order.get(p[1].conflict_group, p[0]), p[0]))
    lines = [BLOCK_OPEN, *(format_line(r) for _, r in ranked), BLOCK_CLOSE]
    return "\n".join(lines)

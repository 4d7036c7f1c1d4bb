"""What the extract node sends the model, and how its structured output is read."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

import prompts
from graphs.messages import text_of
from memory.block import quote
from memory.extraction import Extraction, coerce_extraction
from memory.recall import Recalled

log = logging.getLogger(__name__)
EXTRACTION_SCHEMA = Extraction.model_json_schema()
RELATED_MEMORIES = 10
"""How many remembered memories the extraction prompt is shown."""


def related(found: Sequence[Recalled]) -> list[dict[str, Any]]:
    """Return recalled memories as the state's `recalled` holds them (and the prompt lists)."""
    return [
        {"id": r.record.id, "kind": r.record.kind, "subject": r.record.subject,
         "content": r.record.content, "score": round(r.score, 4), "why": r.why}
        for r in found
    ]  # fmt: skip


def extraction_messages(
    pending: Sequence[HumanMessage],
    reply: AIMessage | None,
    known: Sequence[dict[str, Any]],
    lang: str,
    now: str,
) -> list[BaseMessage]:
    """Return the extraction call: the prompt with what is known, then the exchange.

    What is already remembered on these subjects is listed, so a real model reuses the
    subject (or names the id) of what a new statement changes.
    """
    existing = "\n".join(
        f"  - id {r['id']} · {r['subject']}: {quote(r['content'])}"
        for r in known[:RELATED_MEMORIES]
        if r["kind"] != "episode"
    )
    system = SystemMessage(
        prompts.render(
            "extract",
            lang,
            now=now,
            existing=existing or ("  （无）" if lang == "zh" else "  (nothing yet)"),
        )
    )
    exchange: list[BaseMessage] = list(pending)
    if reply is not None:
        exchange.append(AIMessage(text_of(reply)))
    return [system, *exchange]


def parsed(out: Any) -> Extraction:
    """Read structured output (with `include_raw=True`), salvaging what validates."""
    if not isinstance(out, dict) or "raw" not in out:
        return coerce_extraction(out)
    if out.get("parsed") is not None:
        return coerce_extraction(out["parsed"])
    log.warning("malformed extraction output: %s", out.get("parsing_error"))
    raw = out.get("raw")
    if isinstance(raw, AIMessage):
        if raw.tool_calls:
            return coerce_extraction(raw.tool_calls[0].get("args"))
        try:
            return coerce_extraction(json.loads(text_of(raw)))
        except (json.JSONDecodeError, TypeError):
            pass
    return Extraction()

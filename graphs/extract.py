"""What the extract node sends the model, and how its structured output is read."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

import prompts
from graphs.messages import text_of
from memory import Recalled
from memory.extraction import Extraction, coerce_extraction, salvage_json
from memory.recall.block import quote
from memory.requests import asks_to_forget
from memory.store.records import TURN_SUBJECT

log = logging.getLogger(__name__)
EXTRACTION_SCHEMA = Extraction.model_json_schema()
RELATED_MEMORIES = 10
"""How many remembered memories the extraction prompt is shown."""


def related(found: Sequence[Recalled]) -> list[dict[str, Any]]:
    """Return recalled memories as the state's `recalled` holds them (and the prompt lists)."""
    return [
        {"id": r.record.id, "kind": r.record.kind, "subject": r.record.subject,
         "content": r.record.content, "score": round(r.score, 4), "why": r.why,
         "said_with": [w.content for w in r.said_with]}
        for r in found
    ]  # fmt: skip


def extraction_messages(
    pending: Sequence[HumanMessage],
    reply: AIMessage | None,
    known: Sequence[dict[str, Any]],
    lang: str,
    now: str,
) -> list[BaseMessage]:
    """Return the extraction call: the prompt with what is known, then the user's messages.

    What is already remembered on these subjects is listed, so a real model reuses the
    subject (or names the id) of what a new statement changes. The assistant's reply goes
    in the system prompt, not after the user's words: a trailing assistant message is a
    prefix to continue for some servers (llama.cpp), whose JSON grammar then fails.
    """
    none = "  （无）" if lang == "zh" else "  (none)"
    said = text_of(reply) if reply is not None else ""
    # A raw statement is listed too: a recall shows it in place of the memory extracted from
    # it ("I bank with Barclays, have done since uni" for "User said: I bank with Barclays."),
    # and an update that names it changes that memory (`StoreReader.active_record`). A
    # summary is no statement of the user's.
    existing = "\n".join(
        f"  - id {r['id']} · {r['subject']}: {quote(r['content'])}"
        for r in known[:RELATED_MEMORIES]
        if r["kind"] != "episode" or str(r["subject"]).startswith(TURN_SUBJECT)
    )
    system = SystemMessage(
        prompts.render(
            "extract",
            lang,
            now=now,
            existing=existing or ("  （无）" if lang == "zh" else "  (nothing yet)"),
            reply=f"  {quote(said)}" if said else none,
        )
    )
    return [system, *pending]


def parsed(out: Any, said: Sequence[str]) -> Extraction:
    """Read extraction output (with `include_raw=True`), salvaging what validates.

    Args:
        out: What the structured-output call returned.
        said: The texts of the user messages it was extracted from (`gate_forget`).
    """
    found = structured(out)
    return gate_forget(Extraction() if found is None else coerce_extraction(found), said)


def gate_forget(extraction: Extraction, said: Sequence[str]) -> Extraction:
    """Keep a model's forget requests only if the user's words ask to forget.

    A small model may copy its reply, or the statement it just extracted, into `forget`
    (SmolLM2 did), and the agent would forget what the user had just said. The offline
    understanding model (`asks_to_forget`) has the last word: when none of the messages
    asks to forget, the requests are logged and dropped and the rest of the extraction
    is kept.

    Args:
        extraction: The model's extraction.
        said: The texts of the user messages it was extracted from.
    """
    if not extraction.forget or any(asks_to_forget(text) for text in said):
        return extraction
    log.warning(
        "ignored %d forget request(s) of the model: the user's message does not ask to forget",
        len(extraction.forget),
    )
    return extraction.model_copy(update={"forget": []})


def structured(out: Any) -> Any:
    """Return what structured output (with `include_raw=True`) holds, salvaged if need be.

    When the client could not parse the reply (prose around the JSON, or a reply the
    length limit cut), the object is read from the raw text: of a cut one, every item
    completed before the cut. None when nothing can be read.
    """
    if not isinstance(out, dict) or "raw" not in out:
        return out
    if out.get("parsed") is not None:
        return out["parsed"]
    log.warning("malformed structured output, salvaging: %s", out.get("parsing_error"))
    raw = out.get("raw")
    if isinstance(raw, AIMessage):
        if raw.tool_calls:
            return raw.tool_calls[0].get("args")
        return salvage_json(text_of(raw))
    return None

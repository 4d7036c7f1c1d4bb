"""The rolling summary: fold a thread's older turns into goals, constraints and open items.

Messages stay in the checkpointer; the summary only changes what the model sees. The summary
is a copy of what the user said like any other: it is screened for sensitive values and for
what the user asked to forget before it is kept, and archived as an `episode` memory (with the
messages it folded in as provenance) so other threads can recall it.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.constants import TAG_NOSTREAM

import prompts
from graphs.extract import structured
from graphs.messages import one_line, summarized_ids, text_of
from graphs.models import ainvoke_structured
from graphs.window import _turns as _split_turns
from memory import MemoryService
from memory.extraction import has_cjk
from memory.privacy import redact
from memory.requests import asks_to_forget
from memory.store.records import Source, check_user_id
from memory.summary import ThreadSummary
from memory.summary import attribute as attribute_summary
from memory.summary import merge as merge_summary
from memory.summary import render as render_summary
from memory.summary import screen as screen_summary
from memory.text.statements import split_message

log = logging.getLogger(__name__)
SUMMARY_SCHEMA = ThreadSummary.model_json_schema()
KEEP_RECENT_TURNS = 2


async def summarize_thread(
    state: dict[str, Any],
    model: BaseChatModel,
    service: MemoryService,
    user: str,
    thread_id: str,
    max_chars: int,
) -> dict[str, Any]:
    """Return the state update that folds the older part of the thread into the summary.

    If summarizing fails, the raw history is kept (an empty update) and the turn succeeds.
    """
    messages = state.get("messages", [])
    skip = summarized_ids(messages, state.get("summary_through"))
    turns = _split_turns([m for m in messages if m.id not in skip])
    older = [m for turn in turns[:-KEEP_RECENT_TURNS] for m in turn]
    if not older:
        return {}
    previous = ThreadSummary.model_validate(state["summary"]) if state.get("summary") else None
    transcript = "\n".join(
        f"{'user' if isinstance(m, HumanMessage) else 'assistant'}: {one_line(m)}"
        for m in older
        if isinstance(m, HumanMessage | AIMessage)
        and text_of(m).strip()
        and not (isinstance(m, HumanMessage) and asks_to_forget(text_of(m)))
        and len(text_of(m)) <= max_chars
    )
    lang = "zh" if has_cjk(transcript) else "en"
    try:
        runnable = model.with_structured_output(SUMMARY_SCHEMA, include_raw=True)
        runnable = runnable.with_config(tags=[TAG_NOSTREAM])  # not a chat reply
        out = await ainvoke_structured(
            runnable, [SystemMessage(prompts.render("summary", lang)), HumanMessage(transcript)]
        )
        # Where an item came from is found here, never taken from the model's word.
        new = ThreadSummary.model_validate(structured(out)).model_copy(update={"sources": {}})
        summary = merge_summary(previous, new)
        summary = summary.rewritten(lambda item, _: redact(item))
        summary = await asyncio.to_thread(
            screen_summary, summary, lambda items: service.unforgotten(user, items)
        )
        said_in = [
            (st.id, st.text)
            for m in older
            if isinstance(m, HumanMessage) and m.id
            for st in split_message(check_user_id(user), thread_id, m.id, text_of(m))
        ]
        summary = attribute_summary(summary, said_in)
    except Exception as exc:  # the raw history stays; the next turn tries again
        log.warning("summarizing failed, the raw history is kept: %s", exc)
        return {}
    count = state.get("summary_count", 0) + len(older)
    said = [m.id for m in older if isinstance(m, HumanMessage) and m.id]
    if thread_id:
        try:
            await service.aadd(
                user,
                render_summary(summary, count, lang == "zh"),
                kind="episode",
                subject=f"episode.thread.{thread_id}",
                confidence=0.8,
                source=Source(thread_id=thread_id, message_ids=said, via="summary"),
            )
        except Exception as exc:
            log.warning("could not archive the thread summary as an episode: %s", exc)
    return {
        "summary": summary.model_dump(),
        "summary_through": older[-1].id,
        "summary_count": count,
    }

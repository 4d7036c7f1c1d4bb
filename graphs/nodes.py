"""The four nodes of a turn: load_memory → chat → extract → save.

Nodes are async and never block the event loop: store and Chroma calls run through the
memory service's `a*` methods, which use worker threads.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
)
from langchain_core.messages.utils import count_tokens_approximately, trim_messages
from langgraph.config import get_config
from langgraph.runtime import Runtime

import prompts
from graphs.context import Context, user_of
from graphs.state import State
from memory.block import format_block
from memory.extraction import Extraction, coerce_extraction, has_cjk
from memory.index import ChromaIndex
from memory.lifecycle import Policy
from memory.privacy import describe as describe_withheld
from memory.records import Source, utcnow
from memory.service import MemoryService

log = logging.getLogger(__name__)
ANSWER_RESERVE_TOKENS = 1024
EXTRACTION_SCHEMA = Extraction.model_json_schema()
for _name in ("system", "extract"):  # read templates now, not from inside the event loop
    for _lang in prompts.LANGS:
        prompts.load(_name, _lang)
QUERY_CONTEXT_MESSAGES = 2


class InvalidMessage(ValueError):
    """The user message cannot be processed (empty or too long)."""


@dataclass(frozen=True)
class AgentDeps:
    """What the nodes need from the application, resolved lazily per run.

    Attributes:
        chat_model: Returns the chat model for a spec (None: the configured default).
        index: Returns the Chroma index (opened once, on first use).
        policy: Lifecycle rules.
        agent_id: Default writer of memories.
        recall_k: Default number of memories recalled per turn.
        context_tokens: Token budget of one chat call.
        max_message_chars: Longest user message accepted.

    """

    chat_model: Callable[[str | None], BaseChatModel]
    index: Callable[[], ChromaIndex | None]
    policy: Policy = field(default_factory=Policy)
    agent_id: str = "memory-agent"
    recall_k: int = 8
    context_tokens: int = 8000
    max_message_chars: int = 32_000


def check_message(text: str, max_chars: int) -> str:
    """Validate a user message.

    Raises:
        InvalidMessage: If it is empty or longer than `max_chars`.

    """
    if not text or not text.strip():
        raise InvalidMessage("the message is empty: say something to the agent")
    if len(text) > max_chars:
        raise InvalidMessage(
            f"the message is {len(text):,} characters; the limit is {max_chars:,} "
            "(MEMORY_AGENT_MAX_MESSAGE_CHARS). Split it or attach it as a file."
        )
    return text


def _text(message: BaseMessage) -> str:
    if isinstance(message.content, str):
        return message.content
    parts = [p.get("text", "") if isinstance(p, dict) else str(p) for p in message.content]
    return " ".join(parts)


def _humans(messages: list[AnyMessage]) -> list[HumanMessage]:
    return [m for m in messages if isinstance(m, HumanMessage)]


def _turn_time(state: State) -> datetime:
    raw = state.get("turn_time")
    if raw:
        return datetime.fromisoformat(raw)
    return utcnow()


class MemoryNodes:
    """The nodes, bound to their dependencies."""

    def __init__(self, deps: AgentDeps) -> None:
        """Bind nodes to dependencies."""
        self.deps = deps

    async def _service(self, runtime: Runtime[Context]) -> MemoryService:
        if runtime.store is None:
            raise RuntimeError(
                "the memory agent needs a store: use build_graph(store=...) or run it "
                "under `langgraph dev`, which provides one"
            )
        ctx = runtime.context
        agent_id = (ctx.agent_id if isinstance(ctx, Context) else None) or self.deps.agent_id
        # Opening Chroma touches disk or the network: keep it off the event loop.
        index = await asyncio.to_thread(self.deps.index)
        return MemoryService(runtime.store, index, agent_id=agent_id, policy=self.deps.policy)

    async def _model(self, runtime: Runtime[Context]) -> BaseChatModel:
        ctx = runtime.context
        spec = ctx.model if isinstance(ctx, Context) else None
        return await asyncio.to_thread(self.deps.chat_model, spec)

    async def load_memory(self, state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        """Recall the user's memories relevant to the latest message into the state."""
        user = user_of(runtime.context)
        humans = _humans(state.get("messages", []))
        if not humans:
            raise InvalidMessage("the turn has no user message")
        check_message(_text(humans[-1]), self.deps.max_message_chars)
        recent = [_text(m)[:500] for m in humans[-QUERY_CONTEXT_MESSAGES:-1]]
        query = "\n".join([*recent, _text(humans[-1])])
        ctx = runtime.context
        k = (ctx.recall_k if isinstance(ctx, Context) else None) or self.deps.recall_k
        now = _turn_time(state)
        recalled = await (await self._service(runtime)).asearch(user, query, k, now=now)
        return {
            "memory_block": format_block([r.record for r in recalled]),
            "recalled": [
                {
                    "id": r.record.id,
                    "kind": r.record.kind,
                    "content": r.record.content,
                    "score": round(r.score, 4),
                }
                for r in recalled
            ],
            "turn_time": now.isoformat(),
        }

    async def chat(self, state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        """Answer with the memory block in the system prompt and the trimmed thread."""
        messages = state.get("messages", [])
        humans = _humans(messages)
        lang = "zh" if humans and has_cjk(_text(humans[-1])) else "en"
        block = state.get("memory_block") or ("（无）" if lang == "zh" else "(nothing yet)")
        system = SystemMessage(
            prompts.render("system", lang, now=_turn_time(state).isoformat(), memory_block=block)
        )
        budget = self.deps.context_tokens - ANSWER_RESERVE_TOKENS
        budget -= count_tokens_approximately([system])
        if budget <= 0:
            raise RuntimeError(
                "the system prompt and memory block alone exceed MEMORY_AGENT_CONTEXT_TOKENS; "
                "raise the budget or lower MEMORY_AGENT_RECALL_K"
            )
        window = trim_messages(
            messages,
            max_tokens=budget,
            token_counter=count_tokens_approximately,
            strategy="last",
            start_on="human",
            allow_partial=False,
        )
        if not window:
            raise InvalidMessage(
                "the latest message alone exceeds the context budget "
                "(MEMORY_AGENT_CONTEXT_TOKENS); shorten it"
            )
        reply = await (await self._model(runtime)).ainvoke([system, *window])
        return {"messages": [reply]}

    async def extract(self, state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        """Extract memory candidates from the latest exchange; bad output is skipped."""
        messages = state.get("messages", [])
        humans = _humans(messages)
        if not humans:
            return {"extraction": Extraction().model_dump()}
        exchange: list[BaseMessage] = [humans[-1]]
        if messages and isinstance(messages[-1], AIMessage) and messages[-1] is not humans[-1]:
            exchange.append(AIMessage(_text(messages[-1])))
        lang = "zh" if has_cjk(_text(humans[-1])) else "en"
        system = SystemMessage(prompts.render("extract", lang, now=_turn_time(state).isoformat()))
        try:
            # A JSON schema, not the class: the client then returns a dict instead of
            # validating inside the call, so one bad item does not cost the good ones.
            runnable = (await self._model(runtime)).with_structured_output(
                EXTRACTION_SCHEMA, include_raw=True
            )
            out = await runnable.ainvoke([system, *exchange])
        except Exception as exc:  # the turn must succeed even when extraction cannot
            log.warning("extraction failed, nothing remembered this turn: %s", exc)
            return {"extraction": Extraction().model_dump()}
        return {"extraction": _parsed(out).model_dump()}

    async def save(self, state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        """Reconcile the candidates with what is remembered and write store, then index."""
        user = user_of(runtime.context)
        extraction = coerce_extraction(state.get("extraction") or {})
        thread_id = str(get_config().get("configurable", {}).get("thread_id") or "") or None
        humans = _humans(state.get("messages", []))
        source = Source(
            thread_id=thread_id,
            message_ids=[humans[-1].id] if humans and humans[-1].id else [],
            said_at=_turn_time(state),
            via="conversation",
        )
        service = await self._service(runtime)
        changes = []
        if extraction.memories or extraction.forget:
            earlier = [
                m
                for m in state.get("messages", [])[:-2]
                if isinstance(m, AIMessage) and m.name != "memory"
            ]
            context = _text(earlier[-1]) if earlier else ""
            changes = await service.asave(user, extraction, source, context=context)
        recalled = [r["id"] for r in state.get("recalled", [])]
        if recalled:
            await service.amark_recalled(user, recalled, _turn_time(state))
        if thread_id:
            await service.aremember_thread(user, thread_id)
        update: dict[str, Any] = {"saved": [c.describe() for c in changes], "turn_time": None}
        withheld = [c.note.removeprefix("sensitive: ") for c in changes if c.action == "withheld"]
        if withheld:
            # Tell the user, in the thread, what was deliberately not remembered.
            kinds = [k for note in withheld for k in note.split(",")]
            zh = bool(humans) and has_cjk(_text(humans[-1]))
            update["messages"] = [AIMessage(describe_withheld(kinds, zh), name="memory")]
        return update


def _parsed(out: Any) -> Extraction:
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
            return coerce_extraction(json.loads(_text(raw)))
        except (json.JSONDecodeError, TypeError):
            pass
    return Extraction()

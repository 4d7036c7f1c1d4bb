"""The nodes of a turn: load_memory → chat → extract → save, thin over the memory API.

Each translates between graph state and `MemoryService.recall_turn` / `save_turn`; async,
they never block the event loop (memory calls run in worker threads, the `a*` methods).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.tools import BaseTool
from langgraph.config import get_config
from langgraph.constants import TAG_NOSTREAM
from langgraph.graph import END
from langgraph.prebuilt import ToolRuntime
from langgraph.runtime import Runtime

import prompts
from graphs.background import schedule_flush
from graphs.context import Context, own_thread, user_of
from graphs.copies import SEARCH_EXPIRED, admit, admitted, expired_searches, strangers
from graphs.extract import EXTRACTION_SCHEMA, RELATED_MEMORIES, extraction_messages, parsed, related
from graphs.messages import (
    InvalidMessage,
    check_message,
    pending_after,
    summarized_ids,
    text_of,
    tool_rounds,
    turn_time,
    user_messages,
)
from graphs.model_errors import model_call, no_answer
from graphs.models import ainvoke_structured
from graphs.settings import Settings
from graphs.state import State
from graphs.summarize import summarize_thread
from graphs.tools import SEARCH_MEMORY, TOOLS, render_results, search_memory_tool, with_tools
from graphs.window import (
    ANSWER_RESERVE_TOKENS,
    ContextOverflow,
    build_window,
    system_message,
    tokens,
)
from memory import ChromaIndex, MemoryService, Said, open_service
from memory.backends import ensure_postgres_indexes
from memory.extraction import Extraction, coerce_extraction
from memory.recall.block import format_block
from memory.text import Lang, language_of

__all__ = ["SEARCH_EXPIRED", "AgentDeps", "MemoryNodes"]

log = logging.getLogger(__name__)
MAX_TOOL_ROUNDS = 2
# Read templates now, not from inside the event loop.
for _name in ("system", "search_hint", "extract", "summary"):
    for _code in prompts.LANGS:
        prompts.load(_name, _code)
QUERY_CONTEXT_MESSAGES = 2


@dataclass(frozen=True)
class AgentDeps:
    """What the nodes need from the application.

    Attributes:
        settings: Budgets, policies and defaults; a run's `Context` may override the
            agent id, the model and how many memories are recalled.
        chat_model: Returns the chat model for a spec (None: `settings.model`).
        index: Returns the Chroma index (opened once, on first use).
        tools: The tools the chat model may call (working memory by default); the graph
            adds `SearchMemory` unless `settings.search_tool` is off.

    """

    settings: Settings
    chat_model: Callable[[str | None], BaseChatModel]
    index: Callable[[], ChromaIndex | None]
    tools: Sequence[BaseTool] = tuple(TOOLS)


class MemoryNodes:
    """The nodes, bound to their dependencies."""

    def __init__(self, deps: AgentDeps) -> None:
        """Bind nodes to dependencies."""
        self.deps = deps
        self._indexes_ready = False
        self.tools: list[BaseTool] = list(deps.tools)
        """What the chat model may call: `deps.tools`, and `SearchMemory` unless turned off
        (`Settings.search_tool`) or already among them."""
        if deps.settings.search_tool and SEARCH_MEMORY not in {t.name for t in self.tools}:
            self.tools.append(search_memory_tool(self.search_memory))
        self._searches = any(t.name == SEARCH_MEMORY for t in self.tools)

    async def _service(self, runtime: Runtime[Context] | ToolRuntime) -> MemoryService:
        store = runtime.store
        if store is None:
            raise RuntimeError(
                "the memory agent needs a store: use build_graph(store=...) or run it "
                "under `langgraph dev`, which provides one"
            )
        cfg = self.deps.settings
        ctx = runtime.context
        agent_id = (ctx.agent_id if isinstance(ctx, Context) else None) or cfg.agent_id
        # Opening Chroma touches disk or the network: keep it off the event loop.
        index = await asyncio.to_thread(self.deps.index)
        if cfg.backend.database_url and not self._indexes_ready:
            url = cfg.backend.database_url
            self._indexes_ready = await asyncio.to_thread(ensure_postgres_indexes, url)
        return open_service(cfg, store, index, agent_id=agent_id)

    async def _model(self, runtime: Runtime[Context]) -> BaseChatModel:
        ctx = runtime.context
        spec = ctx.model if isinstance(ctx, Context) else None
        return await asyncio.to_thread(self.deps.chat_model, spec)

    async def load_memory(self, state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        """Claim the thread, then recall the user's memories for the latest message.

        The claim comes first and is atomic (`MemoryService.recall_turn`): the thread may be
        another user's, and then nothing of it is read. The turn's message is marked as this
        user's; user messages the thread holds from a refused run are removed.
        """
        user = user_of(runtime.context)
        messages = state.get("messages", [])
        humans = [m for m in messages if isinstance(m, HumanMessage)]
        if not humans:
            raise InvalidMessage("the turn has no user message")
        latest = humans[-1]
        check_message(
            text_of(latest), self.deps.settings.max_message_chars, self.deps.settings.context_tokens
        )
        mine = admitted(messages, user)
        recent = [text_of(m)[:500] for m in mine[-QUERY_CONTEXT_MESSAGES:] if m is not latest]
        query = "\n".join([*recent[-(QUERY_CONTEXT_MESSAGES - 1) :], text_of(latest)])
        ctx = runtime.context
        k = (ctx.recall_k if isinstance(ctx, Context) else None) or self.deps.settings.recall_k
        now = turn_time(state)
        service = await self._service(runtime)
        with own_thread():
            turn = await service.arecall_turn(user, _thread_id() or None, query, k, now=now)
        recalled = turn.recalled
        lang = language_of(text_of(latest))  # the turn's language, decided once
        return {
            "messages": [
                *strangers(messages, latest, user, turn.new_thread),
                *expired_searches(messages, lang == "zh"),
                admit(latest, user),
            ],
            "memory_block": format_block([rec for r in recalled for rec in r.shown]),
            "recalled": related(recalled),
            "turn_time": now.isoformat(),
            "lang": lang,
        }

    async def search_memory(self, runtime: ToolRuntime, query: str, k: int) -> str:
        """Run a `SearchMemory` call, rendered as the memory block is.

        The user comes from the run context, never from the call's arguments.
        """
        user = user_of(runtime.context)
        service = await self._service(runtime)
        recalled = await service.asearch(user, query, k, now=turn_time(runtime.state))
        return render_results([rec for r in recalled for rec in r.shown])

    async def chat(self, state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        """Answer from the memory block, the rolling summary, working memory and the thread.

        The model may call tools (`self.tools`, run by the `tools` node, which comes back
        here); after `MAX_TOOL_ROUNDS` rounds in one turn it is asked without tools.
        """
        messages = list(state.get("messages", []))
        humans = user_messages(messages)
        lang = _lang(state, humans)
        skip = summarized_ids(messages, state.get("summary_through"))
        system = system_message(
            state, lang, turn_time(state).isoformat(), search_hint=self._searches
        )
        budget = self.deps.settings.context_tokens - ANSWER_RESERVE_TOKENS - tokens([system])
        if budget <= 0:
            raise ContextOverflow(
                "the system prompt, memory block and summary alone exceed "
                "MEMORY_AGENT_CONTEXT_TOKENS; raise it or lower MEMORY_AGENT_RECALL_K"
            )
        window = build_window(messages, skip, budget)
        model = await self._model(runtime)
        rounds = tool_rounds(messages)
        runnable = model if rounds >= MAX_TOOL_ROUNDS else with_tools(model, self.tools)
        with model_call():  # a failure of the model or its server: one clear error
            reply = await runnable.ainvoke([system, *window])
        if (failed := no_answer(reply, tools_allowed=rounds < MAX_TOOL_ROUNDS)) is not None:
            raise failed
        if rounds >= MAX_TOOL_ROUNDS and isinstance(reply, AIMessage) and reply.tool_calls:
            # Asked without tools and calling one anyway: keep its words, drop the call.
            reply = AIMessage(reply.content, id=reply.id, name=reply.name)
        update: dict[str, Any] = {"messages": [reply]}
        calls_tools = isinstance(reply, AIMessage) and bool(reply.tool_calls)
        if self.deps.settings.extract_mode == "background" and not calls_tools:
            update["turn_time"] = None  # the run ends here; the next turn starts fresh
        return update

    def after_chat(self, state: State) -> str:
        """Route after chat: run the tools it called, extract now, or leave it to a flush."""
        messages = state.get("messages", [])
        if messages and isinstance(messages[-1], AIMessage) and messages[-1].tool_calls:
            return "tools"
        if self.deps.settings.extract_mode == "inline" or state.get("flush"):
            return "extract"
        return "schedule"

    def entry(self, state: State) -> str:
        """Route a run: a turn starts at load_memory, a background flush at extract."""
        return "extract" if state.get("flush") else "load_memory"

    async def schedule(self, state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        """Background mode: have a LangGraph server extract later (`graphs.background`)."""
        await schedule_flush(user_of(runtime.context), self.deps.settings.extract_delay)
        return {}

    async def summarize(self, state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        """Fold the older part of the thread into the rolling summary (`graphs.summarize`)."""
        return await summarize_thread(
            dict(state),
            await self._model(runtime),
            await self._service(runtime),
            user_of(runtime.context),
            _thread_id(),
            self.deps.settings.max_message_chars,
        )

    def needs_summary(self, state: State) -> str:
        """Route after save: summarize when the unsummarized thread passes the threshold."""
        messages = state.get("messages", [])
        skip = summarized_ids(messages, state.get("summary_through"))
        live = [m for m in messages if m.id not in skip]
        return "summarize" if tokens(live) > self.deps.settings.summary_tokens else END

    def _pending(self, state: State, user: str) -> list[HumanMessage]:
        """Return this user's messages not yet extracted (a refused run's never are)."""
        messages = state.get("messages", [])
        mine = {id(m) for m in admitted(messages, user)}
        pending = pending_after(
            messages, state.get("extracted_through"), self.deps.settings.max_message_chars
        )
        return [m for m in pending if id(m) in mine]

    async def extract(self, state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        """Extract memory candidates from the user messages not yet extracted.

        Normally that is the latest one; in background mode (or after a crash) it is every
        message since the last extraction, in one call. Bad output is skipped.
        """
        user = user_of(runtime.context)
        pending = self._pending(state, user)
        if not pending:
            return {"extraction": Extraction().model_dump()}
        messages = state.get("messages", [])
        last = messages[-1] if messages else None
        reply = last if isinstance(last, AIMessage) and last.name != "memory" else None
        lang = _lang(state, pending)
        # A turn reuses what load_memory recalled for this very message; a flush (several
        # messages, later) claims the thread and searches again.
        known: list[dict[str, Any]] = list(state.get("recalled") or [])
        if state.get("flush"):
            service = await self._service(runtime)
            said = "\n".join(text_of(m)[:500] for m in pending)
            turn = await service.arecall_turn(
                user, _thread_id() or None, said, RELATED_MEMORIES, now=turn_time(state)
            )
            known = related(turn.recalled)
        call = extraction_messages(pending, reply, known, lang, turn_time(state).isoformat())
        try:
            # A JSON schema, not the class: the client then returns a dict instead of
            # validating inside the call, so one bad item does not cost the good ones.
            runnable = (await self._model(runtime)).with_structured_output(
                EXTRACTION_SCHEMA, include_raw=True
            )
            runnable = runnable.with_config(tags=[TAG_NOSTREAM])  # not a chat reply
            out = await ainvoke_structured(runnable, call)
        except Exception as exc:  # the turn must succeed even when extraction cannot
            log.warning("extraction failed, nothing remembered this turn: %s", exc)
            return {"extraction": Extraction().model_dump()}
        # A forget is acted on only when the user's words ask for one (`gate_forget`).
        extraction = await asyncio.to_thread(parsed, out, [text_of(m) for m in pending])
        return {"extraction": extraction.model_dump()}

    async def save(self, state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        """Save the turn through the memory API, then carry its outcome into the thread."""
        user = user_of(runtime.context)
        messages = state.get("messages", [])
        pending = self._pending(state, user)
        mine = admitted(messages, user)
        start = messages.index(pending[0]) if pending else len(messages)
        earlier = [m for m in mine if m not in pending]
        # "Forget that" may point into what the assistant said before the user said it.
        before = [m for m in messages[:start] if isinstance(m, AIMessage) and m.name != "memory"]
        zh = _lang(state, mine) == "zh"
        service = await self._service(runtime)
        with own_thread():
            outcome = await service.asave_turn(
                user,
                _thread_id() or None,
                [Said(m.id or "", text_of(m)) for m in pending],
                coerce_extraction(state.get("extraction") or {}),
                earlier=[Said(m.id or "", text_of(m)) for m in earlier],
                context=text_of(before[-1]) if before else "",
                recalled=[(r["kind"], r["id"]) for r in state.get("recalled", [])],
                said_at=turn_time(state),
                zh=zh,
                claim=bool(state.get("flush")),
            )
        update: dict[str, Any] = {
            "saved": outcome.saved,
            "extraction": Extraction().model_dump(),
            "extracted_through": mine[-1].id if mine else None,
            "flush": False,
            "turn_time": None,  # a later turn without a time of its own means "now"
        }
        update.update(outcome.cuts.channels(state, start, zh))
        update["scrubbed"] = bool(update.get("messages"))
        notes = [AIMessage(n, name="memory") for n in outcome.notices]
        update["messages"] = [*update.get("messages", []), *notes]  # [] changes nothing
        return update


def _lang(state: State, said: Sequence[BaseMessage]) -> Lang:
    """Return the turn's language: load_memory's, else that of the latest message."""
    lang = state.get("lang")
    if lang in ("zh", "en"):
        return "zh" if lang == "zh" else "en"
    return language_of(text_of(said[-1])) if said else "en"


def _thread_id() -> str:
    return str(get_config().get("configurable", {}).get("thread_id") or "")

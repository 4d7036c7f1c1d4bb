"""The four nodes of a turn: load_memory → chat → extract → save.

Nodes are async and never block the event loop: store and Chroma calls run through the
memory service's `a*` methods, which use worker threads.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeGuard

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.tools import BaseTool
from langgraph.config import get_config
from langgraph.constants import TAG_NOSTREAM
from langgraph.graph import END
from langgraph.prebuilt import ToolRuntime
from langgraph.runtime import Runtime

import prompts
from graphs.context import Context, user_of
from graphs.messages import (
    InvalidMessage,
    check_message,
    one_line,
    pending_after,
    summarized_ids,
    text_of,
    tool_rounds,
    user_messages,
)
from graphs.models import ainvoke_structured
from graphs.settings import Settings, open_service
from graphs.state import State
from graphs.tools import (
    SEARCH_MEMORY,
    TOOLS,
    render_results,
    render_working_memory,
    search_memory_tool,
)
from graphs.window import (
    ANSWER_RESERVE_TOKENS,
    ContextOverflow,
    build_window,
    tokens,
)
from graphs.window import _turns as _split_turns
from memory.access import describe_refused
from memory.backends import ensure_postgres_indexes
from memory.block import format_block, quote
from memory.extraction import (
    Extraction,
    asks_to_forget,
    coerce_extraction,
    has_cjk,
    is_question,
    salvage_json,
)
from memory.index import ChromaIndex
from memory.lifecycle import (
    Change,
    describe_forget,
    forget_phrase,
    is_deictic,
)
from memory.phrases import Phrase, key_phrase, states
from memory.privacy import describe as describe_withheld
from memory.privacy import find_sensitive, redact
from memory.records import Source, is_raw_turn, utcnow
from memory.service import MemoryService
from memory.summary import ThreadSummary
from memory.summary import merge as merge_summary
from memory.summary import render as render_summary
from memory.summary import screen as screen_summary

log = logging.getLogger(__name__)
EXTRACTION_SCHEMA = Extraction.model_json_schema()
SUMMARY_SCHEMA = ThreadSummary.model_json_schema()
MAX_TOOL_ROUNDS = 2
KEEP_RECENT_TURNS = 2
# Read templates now, not from inside the event loop.
for _name in ("system", "search_hint", "extract", "summary"):
    for _lang in prompts.LANGS:
        prompts.load(_name, _lang)
QUERY_CONTEXT_MESSAGES = 2
RELATED_MEMORIES = 10
"""How many remembered memories the extraction prompt is shown."""
LATEST_STATEMENTS = 3
"""How many earlier user messages "forget that" may reach back to."""
FORGOTTEN_TEXT = ("[forgotten at the user's request]", "［已按用户要求忘记］")
SEARCH_EXPIRED = (
    "[a memory search of an earlier turn: search again if needed]",
    "［之前一轮的记忆检索结果，需要时请重新检索］",
)


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


def _turn_time(state: State | dict[str, Any]) -> datetime:
    raw = state.get("turn_time")
    if raw:
        return datetime.fromisoformat(raw)
    return utcnow()


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
        """Recall the user's memories relevant to the latest message into the state."""
        user = user_of(runtime.context)
        humans = user_messages(state.get("messages", []))
        if not humans:
            raise InvalidMessage("the turn has no user message")
        check_message(
            text_of(humans[-1]),
            self.deps.settings.max_message_chars,
            self.deps.settings.context_tokens,
        )
        recent = [text_of(m)[:500] for m in humans[-QUERY_CONTEXT_MESSAGES:-1]]
        query = "\n".join([*recent, text_of(humans[-1])])
        ctx = runtime.context
        k = (ctx.recall_k if isinstance(ctx, Context) else None) or self.deps.settings.recall_k
        now = _turn_time(state)
        service = await self._service(runtime)
        thread_id = _thread_id()
        if thread_id:
            # Before anything of the thread reaches the prompt: it may be another user's.
            await service.aremember_thread(user, thread_id)
        recalled = await service.asearch(user, query, k, now=now)
        return {
            # Search results live for one turn, like the memory block: by the next one a
            # forget, a supersede or another agent's private note may have made them wrong.
            "messages": _expired_searches(state.get("messages", []), has_cjk(text_of(humans[-1]))),
            "memory_block": format_block([r.record for r in recalled]),
            "recalled": [
                {
                    "id": r.record.id,
                    "kind": r.record.kind,
                    "subject": r.record.subject,
                    "content": r.record.content,
                    "score": round(r.score, 4),
                    "why": r.why,
                }
                for r in recalled
            ],
            "turn_time": now.isoformat(),
        }

    async def search_memory(self, runtime: ToolRuntime, query: str, k: int) -> str:
        """Run a `SearchMemory` call, rendered as the memory block is.

        The user comes from the run context, never from the call's arguments.
        """
        user = user_of(runtime.context)
        service = await self._service(runtime)
        recalled = await service.asearch(user, query, k, now=_turn_time(runtime.state))
        return render_results([r.record for r in recalled])

    def _system(self, state: State, lang: str, working: dict[str, Any] | None) -> SystemMessage:
        zh = lang == "zh"
        block = state.get("memory_block") or ("（无）" if zh else "(nothing yet)")
        parts = [render_working_memory(working, zh)]
        if state.get("summary"):
            summary = ThreadSummary.model_validate(state["summary"])
            parts.insert(0, render_summary(summary, state.get("summary_count", 0), zh))
        return SystemMessage(
            prompts.render(
                "system",
                lang,
                now=_turn_time(state).isoformat(),
                memory_block=block,
                search_hint=prompts.load("search_hint", lang).strip() if self._searches else "",
                short_term="\n\n".join(p for p in parts if p),
            )
        )

    async def chat(self, state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        """Answer from the memory block, the rolling summary, working memory and the thread.

        The model may call tools (`self.tools`, run by the `tools` node, which comes back
        here); after `MAX_TOOL_ROUNDS` rounds in one turn it is asked without tools.
        """
        messages = list(state.get("messages", []))
        humans = user_messages(messages)
        lang = "zh" if humans and has_cjk(text_of(humans[-1])) else "en"
        skip = summarized_ids(messages, state.get("summary_through"))
        system = self._system(state, lang, state.get("working"))
        budget = self.deps.settings.context_tokens - ANSWER_RESERVE_TOKENS - tokens([system])
        if budget <= 0:
            raise ContextOverflow(
                "the system prompt, memory block and summary alone exceed "
                "MEMORY_AGENT_CONTEXT_TOKENS; raise it or lower MEMORY_AGENT_RECALL_K"
            )
        window = build_window(messages, skip, budget)
        model = await self._model(runtime)
        rounds = tool_rounds(messages)
        runnable = model if rounds >= MAX_TOOL_ROUNDS else _with_tools(model, self.tools)
        reply = await runnable.ainvoke([system, *window])
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
        """Background mode under a LangGraph server: have the server extract later.

        One delayed run per turn (`after_seconds`, queued behind this one) starts the
        graph with `{"flush": True}`: it extracts every user message not yet extracted,
        so the runs of a burst after the first find nothing left and end at once. The
        server keeps the queued run, so a restart loses nothing; and whatever a run
        missed, the next flush picks up (`extracted_through`). In process there is no
        server: `agent.runner` debounces the flush itself, and this node does nothing.
        """
        config = get_config()
        graph_id = (config.get("metadata") or {}).get("graph_id")
        thread_id = _thread_id()
        if not graph_id or not thread_id:
            return {}
        from langgraph_sdk import get_client

        await get_client().runs.create(
            thread_id,
            graph_id,
            input={"flush": True},
            context={"user_id": user_of(runtime.context)},
            multitask_strategy="enqueue",
            after_seconds=max(1, round(self.deps.settings.extract_delay)),
        )
        return {}

    async def summarize(self, state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        """Fold the older part of the thread into the rolling summary.

        Messages stay in the checkpointer; the summary only changes what the model sees.
        If summarizing fails, the raw history is kept and the turn still succeeds.
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
            and len(text_of(m)) <= self.deps.settings.max_message_chars
        )
        lang = "zh" if has_cjk(transcript) else "en"
        try:
            model = await self._model(runtime)
            runnable = model.with_structured_output(SUMMARY_SCHEMA, include_raw=True)
            runnable = runnable.with_config(tags=[TAG_NOSTREAM])  # not a chat reply
            out = await ainvoke_structured(
                runnable,
                [SystemMessage(prompts.render("summary", lang)), HumanMessage(transcript)],
            )
            summary = merge_summary(previous, ThreadSummary.model_validate(_structured(out)))
            # A copy like any other: no sensitive values, nothing the user asked to forget.
            service = await self._service(runtime)
            user = user_of(runtime.context)
            summary = screen_summary(summary, lambda items: [redact(i) for i in items])
            summary = await asyncio.to_thread(
                screen_summary, summary, lambda items: service.unforgotten(user, items)
            )
        except Exception as exc:  # the raw history stays; the next turn tries again
            log.warning("summarizing failed, the raw history is kept: %s", exc)
            return {}
        count = state.get("summary_count", 0) + len(older)
        said = [m.id for m in older if isinstance(m, HumanMessage) and m.id]
        await self._archive_episode(runtime, summary, count, lang, said)
        return {
            "summary": summary.model_dump(),
            "summary_through": older[-1].id,
            "summary_count": count,
        }

    async def _archive_episode(
        self,
        runtime: Runtime[Context],
        summary: ThreadSummary,
        count: int,
        lang: str,
        message_ids: list[str],
    ) -> None:
        """Keep the summary as an `episode` memory, so other threads can recall it.

        It records the user messages it folded in (provenance, like any other copy).
        """
        thread_id = _thread_id()
        if not thread_id:
            return
        try:
            service = await self._service(runtime)
            await service.aadd(
                user_of(runtime.context),
                render_summary(summary, count, lang == "zh"),
                kind="episode",
                subject=f"episode.thread.{thread_id}",
                confidence=0.8,
                source=Source(thread_id=thread_id, message_ids=message_ids, via="summary"),
            )
        except Exception as exc:
            log.warning("could not archive the thread summary as an episode: %s", exc)

    def needs_summary(self, state: State) -> str:
        """Route after save: summarize when the unsummarized thread passes the threshold."""
        messages = state.get("messages", [])
        skip = summarized_ids(messages, state.get("summary_through"))
        live = [m for m in messages if m.id not in skip]
        return "summarize" if tokens(live) > self.deps.settings.summary_tokens else END

    async def extract(self, state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        """Extract memory candidates from the user messages not yet extracted.

        Normally that is the latest one; in background mode (or after a crash) it is every
        message since the last extraction, in one call. Bad output is skipped.
        """
        user = user_of(runtime.context)
        service = await self._service(runtime)
        thread_id = _thread_id()
        if thread_id:
            # A flush run starts here, not at load_memory: the thread must be this user's.
            await service.aremember_thread(user, thread_id)
        messages = state.get("messages", [])
        pending = pending_after(
            messages, state.get("extracted_through"), self.deps.settings.max_message_chars
        )
        if not pending:
            return {"extraction": Extraction().model_dump()}
        # The reply goes in the system prompt, not after the user's words: a trailing
        # assistant message is a prefix to continue for some servers (llama.cpp).
        last = messages[-1] if messages else None
        reply = text_of(last) if isinstance(last, AIMessage) and last.name != "memory" else ""
        lang = "zh" if has_cjk(text_of(pending[-1])) else "en"
        none = "  （无）" if lang == "zh" else "  (none)"
        # What is already remembered on these subjects: a real model then reuses the subject
        # (or names the id) of what a new statement changes, and reconcile can supersede it.
        # A turn reuses what load_memory recalled for this very message; a flush (several
        # messages, later) searches again.
        recalled = state.get("recalled")
        related: list[dict[str, Any]] = recalled or []
        if state.get("flush") or recalled is None or not all("subject" in r for r in related):
            said = "\n".join(text_of(m)[:500] for m in pending)
            found = await service.asearch(user, said, RELATED_MEMORIES)
            related = [
                {"id": r.record.id, "kind": r.record.kind, "subject": r.record.subject,
                 "content": r.record.content}
                for r in found
            ]  # fmt: skip
        existing = "\n".join(
            f"  - id {r['id']} · {r['subject']}: {quote(r['content'])}"
            for r in related[:RELATED_MEMORIES]
            if r["kind"] != "episode"
        )
        system = SystemMessage(
            prompts.render(
                "extract",
                lang,
                now=_turn_time(state).isoformat(),
                existing=existing or ("  （无）" if lang == "zh" else "  (nothing yet)"),
                reply=f"  {quote(reply)}" if reply else none,
            )
        )
        try:
            # A JSON schema, not the class: the client then returns a dict instead of
            # validating inside the call, so one bad item does not cost the good ones.
            runnable = (await self._model(runtime)).with_structured_output(
                EXTRACTION_SCHEMA, include_raw=True
            )
            runnable = runnable.with_config(tags=[TAG_NOSTREAM])  # not a chat reply
            out = await ainvoke_structured(runnable, [system, *pending])
        except Exception as exc:  # the turn must succeed even when extraction cannot
            log.warning("extraction failed, nothing remembered this turn: %s", exc)
            return {"extraction": Extraction().model_dump()}
        return {"extraction": _parsed(out).model_dump()}

    async def save(self, state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        """Reconcile the candidates with what is remembered and write store, then index."""
        user = user_of(runtime.context)
        extraction = coerce_extraction(state.get("extraction") or {})
        thread_id = _thread_id() or None
        messages = state.get("messages", [])
        humans = user_messages(messages)
        pending = pending_after(
            messages, state.get("extracted_through"), self.deps.settings.max_message_chars
        )
        source = Source(
            thread_id=thread_id,
            message_ids=[m.id for m in pending if m.id],
            said_at=_turn_time(state),
            via="conversation",
        )
        service = await self._service(runtime)
        if thread_id:
            await service.aremember_thread(user, thread_id)
        changes = []
        if extraction.memories or extraction.forget:
            # "Forget that" points into what the assistant said before the user said it.
            start = messages.index(pending[0]) if pending else len(messages)
            earlier = [
                m for m in messages[:start] if isinstance(m, AIMessage) and m.name != "memory"
            ]
            context = text_of(earlier[-1]) if earlier else ""
            before = [m for m in humans if m.id and m.id not in {p.id for p in pending[-1:]}]
            latest = [m.id for m in reversed(before) if m.id][:LATEST_STATEMENTS]
            changes = await service.asave(user, extraction, source, context=context, latest=latest)
        if self.deps.settings.policy.archive_turns and pending:
            await service.aarchive_turns(user, _turns_to_archive(pending), source)
        recalled = [(r["kind"], r["id"]) for r in state.get("recalled", [])]
        if recalled:
            await service.amark_recalled(user, recalled, _turn_time(state))
        update: dict[str, Any] = {
            "saved": [c.describe() for c in changes],
            "extraction": Extraction().model_dump(),
            "extracted_through": humans[-1].id if humans else None,
            "flush": False,
            "turn_time": None,  # a later turn without a time of its own means "now"
        }
        withheld = [c.note.removeprefix("sensitive: ") for c in changes if c.action == "withheld"]
        if withheld:
            # Tell the user, in the thread, what was deliberately not remembered.
            kinds = [k for note in withheld for k in note.split(",")]
            zh = bool(humans) and has_cjk(text_of(humans[-1]))
            update["messages"] = [AIMessage(describe_withheld(kinds, zh), name="memory")]
        refused = [c.note for c in changes if c.action == "refused"]
        if refused:
            # Tell the user, in the thread, what this agent may not remember, and why.
            zh = bool(humans) and has_cjk(text_of(humans[-1]))
            note = AIMessage(describe_refused(refused, zh), name="memory")
            update["messages"] = [*update.get("messages", []), note]
        asked = [forget_phrase(r)[0] for r in extraction.forget if not is_deictic(r.query)]
        cleaned = self._clean_thread(state, changes, pending, asked)
        update["scrubbed"] = bool(cleaned["messages"])
        update["messages"] = [*cleaned.pop("messages", []), *update.get("messages", [])]
        update.update(cleaned)
        if any(c.action in ("forgotten", "unmatched") for c in changes):
            zh = bool(humans) and has_cjk(text_of(humans[-1]))
            remembered = []
            if any(c.action == "unmatched" for c in changes):
                remembered = [r.content for r in (await service.alist(user))[:5]]
            note = AIMessage(describe_forget(changes, remembered, zh), name="memory")
            update["messages"] = [*update["messages"], note]
        if not update["messages"]:
            del update["messages"]
        return update

    def _clean_thread(
        self,
        state: State,
        changes: list[Change],
        pending: list[HumanMessage],
        asked: list[Phrase],
    ) -> dict[str, Any]:
        """Carry forgets and the sensitive-data screen over to this thread's own copies.

        The thread's messages, rolling summary and working memory hold what the user said
        too: messages that stated something now forgotten are replaced by a marker, and
        sensitive values in this turn's messages are redacted (both keep their ids, so
        the checkpointer overwrites them). Other threads' messages are not touched.
        """
        messages = state.get("messages", [])
        forgotten = [c.record for c in changes if c.action == "forgotten"]
        said_in = {mid for r in forgotten for mid in r.source.message_ids}
        # What the records are about, and what the user named (a raw turn alone may be hit).
        phrases = [key_phrase(r) for r in forgotten if not is_raw_turn(r)]
        phrases = [p for p in phrases + (asked if forgotten else []) if p]
        out: dict[str, Any] = {"messages": []}
        zh = bool(pending) and has_cjk(text_of(pending[-1]))
        start = messages.index(pending[0]) if pending and pending[0] in messages else len(messages)
        for i, m in enumerate(messages):
            if _is_search_result(m) and phrases:
                # A search result is recalled memory too: its forgotten lines go.
                lines = text_of(m).split("\n")
                kept = _unsaid(lines, phrases)
                if kept != lines:
                    out["messages"].append(m.model_copy(update={"content": "\n".join(kept)}))
                continue
            if not isinstance(m, HumanMessage | AIMessage) or not m.id:
                continue
            if isinstance(m, AIMessage) and m.tool_calls:
                continue
            text = text_of(m)
            if m.id in said_in or any(states(text, p) for p in phrases):
                out["messages"].append(m.model_copy(update={"content": FORGOTTEN_TEXT[zh]}))
            elif i >= start and self.deps.settings.policy.redact_thread and find_sensitive(text):
                out["messages"].append(m.model_copy(update={"content": redact(text)}))
        if phrases:
            # This turn's recall was made before the forget: it is in the checkpoint too.
            block = state.get("memory_block") or ""
            out["memory_block"] = "\n".join(_unsaid(block.split("\n"), phrases))
            out["recalled"] = [
                r for r in state.get("recalled", []) if _unsaid([r["content"]], phrases)
            ]
        if phrases and state.get("summary"):
            summary = ThreadSummary.model_validate(state["summary"])
            out["summary"] = screen_summary(summary, lambda items: _unsaid(items, phrases))
            out["summary"] = out["summary"].model_dump()
        working = state.get("working")
        if phrases and working:
            out["working"] = {
                k: (_unsaid(v, phrases) if isinstance(v, list) else v)
                for k, v in working.items()
                if isinstance(v, list) or not (isinstance(v, str) and _unsaid([v], phrases) == [])
            }
        return out


def _thread_id() -> str:
    return str(get_config().get("configurable", {}).get("thread_id") or "")


def _expired_searches(messages: Sequence[BaseMessage], zh: bool) -> list[ToolMessage]:
    """Return the earlier turns' `SearchMemory` results replaced by a marker.

    They keep their ids, so the checkpointer overwrites them; the model can search again.
    """
    marker = SEARCH_EXPIRED[zh]
    return [
        m.model_copy(update={"content": marker})
        for m in messages
        if _is_search_result(m) and m.content not in SEARCH_EXPIRED
    ]


def _is_search_result(m: BaseMessage) -> TypeGuard[ToolMessage]:
    """A `SearchMemory` result kept in the thread (with an id, so it can be rewritten)."""
    return isinstance(m, ToolMessage) and m.name == SEARCH_MEMORY and bool(m.id)


def _unsaid(items: list[str], phrases: list[Phrase]) -> list[str]:
    """Return the items that state none of the phrases."""
    return [i for i in items if not any(states(str(i), p) for p in phrases)]


def _turns_to_archive(turns: list[HumanMessage]) -> list[tuple[str, str, str]]:
    """Return `(id, text, context)` for the user turns worth keeping raw.

    Questions and requests to forget are left out: they state nothing, and recalled
    later they would only echo the query (or the very thing to forget). The assistant's
    words are not kept as context: in a chat they are mostly the agent's own paraphrase,
    and as search text they bring back unrelated turns.
    """
    keep = [t for t in turns if not is_question(text_of(t)) and not asks_to_forget(text_of(t))]
    return [(t.id or "", text_of(t), "") for t in keep]


def _with_tools(model: BaseChatModel, tools: Sequence[BaseTool]) -> Any:
    try:
        return model.bind_tools(list(tools))
    except NotImplementedError:
        return model  # a model without tool calling still answers


def _parsed(out: Any) -> Extraction:
    """Read extraction output (with `include_raw=True`), salvaging what validates."""
    structured = _structured(out)
    return Extraction() if structured is None else coerce_extraction(structured)


def _structured(out: Any) -> Any:
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

"""The built-in offline chat model: deterministic, rule based, no network.

It lets the whole pipeline run with no key: it answers from the memories it was given in
the system prompt, and its structured output runs the rule-based extractor
(`graphs.offline_rules`). Its answer streams like an LLM's: word by word (a few characters
at a time for Chinese) when the caller streams, e.g. a graph streamed with
`stream_mode="messages"` (Studio, the SDK).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForLLMRun,
    CallbackManagerForLLMRun,
)
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    SystemMessage,
)
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable, RunnableLambda

from graphs.messages import text_of
from graphs.offline_rules import extract_rules, extractive_summary
from memory.extraction import has_cjk
from memory.recall.block import BLOCK_CLOSE, BLOCK_OPEN

_REF_TIME = re.compile(r"(?:Reference time|参考时间)[:：]\s*(\S+)")
# A line of what the extraction prompt lists as remembered (`graphs.extract`).
_KNOWN = re.compile(r"^\s*- id (\S+) · ([\w.-]+): (.*)$", re.M)
_WORD = re.compile(r"\S+\s*|\s+")
CJK_PIECE_CHARS = 3
"""Characters per streamed piece of a Chinese reply (English streams word by word)."""


def _quoted(text: str) -> str:
    """Return the content a known memory's line quotes (`memory.recall.block.quote`)."""
    try:
        said = json.loads(text)
    except json.JSONDecodeError:
        return text
    return said if isinstance(said, str) else text


def pieces(text: str) -> list[str]:
    """Split a reply into the pieces it streams as; they join back to `text` exactly."""
    if has_cjk(text):
        return [text[i : i + CJK_PIECE_CHARS] for i in range(0, len(text), CJK_PIECE_CHARS)]
    return _WORD.findall(text) or [text]


def parse_block(text: str) -> list[str]:
    """Return the quoted contents of the memory block in a prompt (`format_block` wrote it)."""
    start, end = text.find(BLOCK_OPEN), text.find(BLOCK_CLOSE)
    if start < 0 or end < 0:
        return []
    out = []
    for line in text[start + len(BLOCK_OPEN) : end].splitlines():
        line = line.strip()
        if line.startswith("- [") and line.endswith('"') and '] "' in line:
            try:
                out.append(json.loads(line[line.index('] "') + 2 :]))
            except json.JSONDecodeError:
                continue
    return out


def _last_human(messages: Sequence[BaseMessage]) -> str:
    for m in reversed(messages):
        if isinstance(m, HumanMessage):
            return text_of(m)
    return ""


def _as_messages(value: Any) -> list[BaseMessage]:
    if hasattr(value, "to_messages"):
        return list(value.to_messages())
    if isinstance(value, str):
        return [HumanMessage(value)]
    return list(value)


_GOAL = re.compile(
    r"^(?:my goal is|the goal is|my task is|our goal is)\s+(.+?)(?=[.。!！?？]|$)"
    r"|^(?:我的目标是|目标是|任务是)(.+?)(?=[.。!！?？]|$)",
    re.I,
)
_PLAN = re.compile(r"(?:^|\b)(?:plan|steps)\s*[:：]\s*(.+)|计划[:：]\s*(.+)|步骤[:：]\s*(.+)", re.I)
_DONE = re.compile(
    r"^(?:i(?:'m| am| have)? )?(?:done with|finished|completed)\s+(.+)"
    r"|^(?:我)?(?:完成了|做完了)(.+)",
    re.I,
)
_FINISHED = re.compile(
    r"\b(?:task is (?:done|finished|complete)|all done)\b|任务完成|全部完成|都完成了", re.I
)
_DONE_LINE = re.compile(r"^- (?:Done|已完成): (.+)$", re.M)


def plan_update(text: str, system: str) -> dict[str, Any] | None:
    """Return `UpdateWorkingMemory` arguments if the user states a goal, plan or progress."""
    text = text.strip()
    if _FINISHED.search(text):
        return {"finished": True}
    args: dict[str, Any] = {}
    if m := _GOAL.search(text):
        args["goal"] = (m.group(1) or m.group(2)).strip(" 。.")
    if m := _PLAN.search(text):
        body = next(g for g in m.groups() if g)
        steps = [s.strip(" .。") for s in re.split(r"[,，;；、]|\s\d+[.)]\s*|\bthen\b", body)]
        args["steps"] = [s for s in steps if s]
        if args["steps"]:
            args["next"] = args["steps"][0]
    if m := _DONE.search(text):
        item = (m.group(1) or m.group(2)).strip(" 。.")
        before = _DONE_LINE.search(system)
        done = [d.strip() for d in before.group(1).split(";")] if before else []
        args["done"] = [*done, item]
    return args or None


def _summarize(messages: list[BaseMessage], include_raw: bool) -> Any:
    transcript = _last_human(messages)
    users = [line[len("user: ") :] for line in transcript.splitlines() if line.startswith("user: ")]
    parsed = extractive_summary(users, None)
    if include_raw:
        return {"raw": AIMessage(parsed.model_dump_json()), "parsed": parsed, "parsing_error": None}
    return parsed


class OfflineChatModel(BaseChatModel):
    """A deterministic stand-in for an LLM, so the template runs with no key and no network."""

    @property
    def _llm_type(self) -> str:
        return "memory-agent-offline"

    tools_bound: bool = False
    """Set by `bind_tools`: the model may then call `UpdateWorkingMemory`."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> OfflineChatModel:
        """Return a copy that states plans through `UpdateWorkingMemory` tool calls."""
        return self.model_copy(update={"tools_bound": True})

    def _answer(self, messages: list[BaseMessage]) -> AIMessage:
        """Return the whole answer: a plan tool call, or the reply text (deterministic)."""
        system = "\n".join(text_of(m) for m in messages if isinstance(m, SystemMessage))
        question = _last_human(messages)
        if self.tools_bound and messages and isinstance(messages[-1], HumanMessage):
            args = plan_update(question, system)
            if args is not None:
                call = {"name": "UpdateWorkingMemory", "args": args, "id": f"plan-{len(messages)}"}
                return AIMessage("", tool_calls=[call])
        return AIMessage(self.reply(question, parse_block(system)))

    def _chunks(self, messages: list[BaseMessage]) -> Iterator[ChatGenerationChunk]:
        """Yield the answer as an LLM streams it; the chunks add up to `_answer`."""
        answer = self._answer(messages)
        if answer.tool_calls:  # a tool call arrives whole, in one chunk
            calls = [
                tool_call_chunk(name=c["name"], args=json.dumps(c["args"]), id=c["id"], index=i)
                for i, c in enumerate(answer.tool_calls)
            ]
            yield ChatGenerationChunk(message=AIMessageChunk(content="", tool_call_chunks=calls))
            return
        for piece in pieces(text_of(answer)):
            yield ChatGenerationChunk(message=AIMessageChunk(content=piece))

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._answer(messages))])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        for chunk in self._chunks(messages):
            if run_manager is not None:
                run_manager.on_llm_new_token(chunk.text, chunk=chunk)
            yield chunk

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        # Rule-based and in memory: no worker thread needed (the base class would use one).
        for chunk in self._chunks(messages):
            if run_manager is not None:
                await run_manager.on_llm_new_token(chunk.text, chunk=chunk)
            yield chunk
            await asyncio.sleep(0)  # let the consumer take each piece as it comes

    @staticmethod
    def reply(question: str, memories: list[str]) -> str:
        """Compose an answer from the recalled memories (deterministic)."""
        zh = has_cjk(question)
        if not memories:
            return (
                "（离线模式）我还没有关于你的相关记忆。你可以告诉我你的偏好，我会记住。"
                if zh
                else "(offline model) I don't remember anything relevant about you yet. "
                "Tell me about yourself and I will remember it."
            )
        shown = memories[:5]
        if zh:
            # Each memory ends with its own full stop: cut it so "；" is the only mark between.
            items = "；".join(m.rstrip("。.；;！!") for m in shown) + "。"
            return f"（离线模式）根据我记得的：{items}我会据此回答你的问题：“{question[:200]}”。"
        items = " ".join(m if m.endswith((".", "。", "）", ")")) else m + "." for m in shown)
        return (
            f"(offline model) Based on what I remember: {items} "
            f'I\'ll keep that in mind for: "{question[:200]}".'
        )

    def with_structured_output(
        self, schema: Any, *, include_raw: bool = False, **kwargs: Any
    ) -> Runnable[Any, Any]:
        """Return a runnable filling `Extraction` (rules) or `ThreadSummary` (extractive)."""
        title = schema.get("title") if isinstance(schema, dict) else getattr(schema, "__name__", "")
        if title == "ThreadSummary":
            return RunnableLambda(
                lambda value: _summarize(_as_messages(value), include_raw), name="offline_summary"
            )
        if title != "Extraction":
            raise NotImplementedError("the offline model only produces extractions and summaries")

        def run(value: Any) -> Any:
            messages = _as_messages(value)
            system = "\n".join(text_of(m) for m in messages if isinstance(m, SystemMessage))
            found = _REF_TIME.search(system)
            now = datetime.fromisoformat(found.group(1)) if found else datetime.now(UTC)
            said = "\n".join(text_of(m) for m in messages if isinstance(m, HumanMessage))
            known = [(m[1], m[2], _quoted(m[3])) for m in _KNOWN.finditer(system)]
            parsed = extract_rules(said, now, known)
            if include_raw:
                return {
                    "raw": AIMessage(parsed.model_dump_json()),
                    "parsed": parsed,
                    "parsing_error": None,
                }
            return parsed

        return RunnableLambda(run, name="offline_extractor")

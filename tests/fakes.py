"""Scripted chat models for tests: the only fake component allowed here."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any
from uuid import uuid4

from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

from graphs.offline_rules import extract_rules, extractive_summary


class ScriptedChatModel(GenericFakeChatModel):
    """Replies with the scripted messages in order; tool binding returns itself.

    `with_structured_output` then comes from `BaseChatModel`: it binds the schema as a tool
    and parses the scripted tool call, which is the code path real tool-calling models take.
    """

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:  # type: ignore[override]
        return self


def scripted(*replies: AIMessage | str) -> ScriptedChatModel:
    msgs = [AIMessage(r) if isinstance(r, str) else r for r in replies]
    return ScriptedChatModel(messages=iter(msgs), disable_streaming=True)


def extraction_call(
    memories: Iterable[dict[str, Any]] = (), forget: Iterable[dict] = ()
) -> AIMessage:
    return AIMessage(
        "",
        tool_calls=[
            {
                "name": "Extraction",
                "args": {"memories": list(memories), "forget": list(forget)},
                "id": "call-1",
                "type": "tool_call",
            }
        ],
    )


class ThreadFakeModel(BaseChatModel):
    """A fake LLM that answers by what it is asked, for long scripted threads.

    Extraction and summary requests (recognised by their system prompt) get tool calls
    built by the offline rules; chat requests get text, or an `UpdateWorkingMemory` call
    every `plan_every` turns. Every chat input is recorded so tests can inspect what the
    model saw.
    """

    plan_every: int = 0
    fail_summary: bool = False
    reword: dict[str, str] = Field(default_factory=dict)
    """Summary items said otherwise, as a real summarizer words them (item -> its rewording)."""
    claim_sources: dict[str, list[str]] = Field(default_factory=dict)
    """`sources` the summarizer makes up: they must not be trusted."""
    chat_inputs: list[list[BaseMessage]] = Field(default_factory=list)
    turns: int = 0

    @property
    def _llm_type(self) -> str:
        return "thread-fake"

    def bind_tools(self, tools: Any, **kwargs: Any) -> ThreadFakeModel:  # type: ignore[override]
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:  # fmt: skip
        system = str(messages[0].content) if isinstance(messages[0], SystemMessage) else ""
        last = messages[-1]
        if "Reference time" in system or "参考时间" in system:
            said = next(m for m in reversed(messages) if isinstance(m, HumanMessage))
            found = extract_rules(str(said.content), datetime.now(UTC))
            return _result(_tool("Extraction", found.model_dump()))
        if "summarize the older part" in system or "压缩成摘要" in system:
            if self.fail_summary:
                raise RuntimeError("summary model is down")
            users = [ln[6:] for ln in str(last.content).splitlines() if ln.startswith("user: ")]
            summary = extractive_summary(users, None).model_dump()
            for key in ("goals", "constraints", "decisions", "open_items", "facts"):
                summary[key] = [self.reword.get(item, item) for item in summary[key]]
            summary["sources"] = self.claim_sources
            return _result(_tool("ThreadSummary", summary))
        self.chat_inputs.append(list(messages))
        if isinstance(last, HumanMessage):
            self.turns += 1
            if self.plan_every and self.turns % self.plan_every == 0:
                args = {"goal": f"goal {self.turns}", "next": f"step {self.turns}"}
                return _result(_tool("UpdateWorkingMemory", args))
        return _result(AIMessage(f"reply {self.turns}: " + "word " * 30))


def _tool(name: str, args: dict[str, Any]) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": f"call-{uuid4().hex[:8]}",
                                      "type": "tool_call"}])  # fmt: skip


def _result(message: AIMessage) -> ChatResult:
    return ChatResult(generations=[ChatGeneration(message=message)])


def save_facts(service: Any, said: Iterable[tuple[str, str]], said_at: datetime) -> None:
    """Save each `(subject, content)` as a fact of user "u", one extraction each."""
    from memory.extraction import CandidateMemory, Extraction
    from memory.store.records import Source

    for subject, content in said:
        cand = CandidateMemory(kind="fact", subject=subject, content=content, confidence=0.9)
        service.save("u", Extraction(memories=[cand]), Source(thread_id="t", said_at=said_at))


def save_said(service: Any, said: Iterable[str], said_at: datetime) -> None:
    """Save what the offline extractor reads in each line as user "u"'s, one save each."""
    from memory.extraction import Extraction
    from memory.store.records import Source

    for line in said:
        found = extract_rules(line, said_at).memories
        service.save("u", Extraction(memories=found), Source(thread_id="t", said_at=said_at))

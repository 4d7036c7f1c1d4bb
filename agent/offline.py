"""The built-in offline chat model: deterministic, rule based, no network.

It lets the whole pipeline run with no key: it answers from the memories it was given in
the system prompt, and its structured output runs the rule-based extractor.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable, RunnableLambda

from memory.block import parse_block
from memory.extraction import extract_rules, has_cjk

_REF_TIME = re.compile(r"(?:Reference time|参考时间)[:：]\s*(\S+)")


def _text(message: BaseMessage) -> str:
    return message.content if isinstance(message.content, str) else str(message.content)


def _last_human(messages: Sequence[BaseMessage]) -> str:
    for m in reversed(messages):
        if isinstance(m, HumanMessage):
            return _text(m)
    return ""


def _as_messages(value: Any) -> list[BaseMessage]:
    if hasattr(value, "to_messages"):
        return list(value.to_messages())
    if isinstance(value, str):
        return [HumanMessage(value)]
    return list(value)


class OfflineChatModel(BaseChatModel):
    """A deterministic stand-in for an LLM, so the template runs with no key and no network."""

    @property
    def _llm_type(self) -> str:
        return "memory-agent-offline"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        system = "\n".join(_text(m) for m in messages if isinstance(m, SystemMessage))
        question = _last_human(messages)
        reply = self.reply(question, parse_block(system))
        return ChatResult(generations=[ChatGeneration(message=AIMessage(reply))])

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
            items = "；".join(shown)
            return f"（离线模式）根据我记得的：{items} 我会据此回答你的问题：“{question[:200]}”。"
        items = " ".join(m if m.endswith((".", "。", "）", ")")) else m + "." for m in shown)
        return (
            f"(offline model) Based on what I remember: {items} "
            f'I\'ll keep that in mind for: "{question[:200]}".'
        )

    def with_structured_output(  # type: ignore[override]
        self, schema: Any, *, include_raw: bool = False, **kwargs: Any
    ) -> Runnable[Any, Any]:
        """Return a runnable that fills `Extraction` with the rule-based extractor."""
        title = schema.get("title") if isinstance(schema, dict) else getattr(schema, "__name__", "")
        if title != "Extraction":
            raise NotImplementedError("the offline model only produces memory extractions")

        def run(value: Any) -> Any:
            messages = _as_messages(value)
            system = "\n".join(_text(m) for m in messages if isinstance(m, SystemMessage))
            found = _REF_TIME.search(system)
            now = datetime.fromisoformat(found.group(1)) if found else datetime.now(UTC)
            parsed = extract_rules(_last_human(messages), now)
            if include_raw:
                return {
                    "raw": AIMessage(parsed.model_dump_json()),
                    "parsed": parsed,
                    "parsing_error": None,
                }
            return parsed

        return RunnableLambda(run, name="offline_extractor")

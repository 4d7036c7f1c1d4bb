"""Scripted chat models for tests: the only fake component allowed here."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage


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

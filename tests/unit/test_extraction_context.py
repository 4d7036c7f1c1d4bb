"""Extraction sees what is already remembered, so a real model can update it."""

from __future__ import annotations

from typing import Any

from fakes import ScriptedChatModel, extraction_call
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore
from pydantic import Field

from graphs.context import Context
from graphs.memory_agent import build_graph
from graphs.settings import Settings
from memory.service import MemoryService


class RecordingModel(ScriptedChatModel):
    """A scripted model that keeps every prompt it was sent."""

    prompts: list[list[BaseMessage]] = Field(default_factory=list)

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.prompts.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


def city(name: str, subject: str, **extra: Any) -> dict[str, Any]:
    return {"kind": "fact", "subject": subject, "content": f"User lives in {name}.",
            "value": name, "confidence": 0.95, **extra}  # fmt: skip


async def turn(graph: Any, user: str, thread: str, text: str) -> dict[str, Any]:
    config = {"configurable": {"thread_id": thread}}
    return await graph.ainvoke(
        {"messages": [HumanMessage(text)]}, config, context=Context(user_id=user)
    )


async def test_a_related_subject_name_supersedes_through_updates(index) -> None:
    script: list[AIMessage] = [
        AIMessage("Noted."),
        extraction_call([city("Berlin", "profile.city")]),
    ]
    model = RecordingModel(messages=iter(script), disable_streaming=True)
    store = InMemoryStore()
    graph = build_graph(InMemorySaver(), store, settings=Settings(), model=model, index=index)
    await turn(graph, "alice", "t1", "I live in Berlin.")
    svc = MemoryService(store, index)
    (berlin,) = svc.list("alice")
    # The model names the city under a subject of its own, and says what it updates.
    script += [
        AIMessage("Nice!"),
        extraction_call([city("Munich", "home.location", updates=berlin.id)]),
    ]
    out = await turn(graph, "alice", "t2", "I moved to Munich.")

    extract_prompt = str(model.prompts[-1][0].content)
    assert "User lives in Berlin." in extract_prompt and berlin.id in extract_prompt
    assert "superseded: [fact profile.city] User lives in Berlin." in out["saved"]
    assert [(r.subject, r.content) for r in svc.list("alice")] == [
        ("profile.city", "User lives in Munich.")
    ]


async def test_updates_cannot_reach_another_users_memory(index) -> None:
    store = InMemoryStore()
    svc = MemoryService(store, index)
    (bob_city,) = svc.add("bob", "User lives in Oslo.", subject="profile.city", value="Oslo")
    rome = city("Rome", "home.location", updates=bob_city.record.id)
    script = [AIMessage("Noted."), extraction_call([rome])]
    model = RecordingModel(messages=iter(script), disable_streaming=True)
    graph = build_graph(InMemorySaver(), store, settings=Settings(), model=model, index=index)
    out = await turn(graph, "alice", "t1", "I live in Rome.")
    assert out["saved"] == ["added: [fact home.location] User lives in Rome."]
    assert [r.content for r in svc.list("bob")] == ["User lives in Oslo."]
    assert "Oslo" not in str(model.prompts[-1][0].content)  # bob's memory is never shown

"""Background extraction under a LangGraph server: the server runs the flush later."""

from __future__ import annotations

from langgraph.config import get_config


async def schedule_flush(user_id: str, delay: float) -> None:
    """Queue one delayed run of this thread's graph with `{"flush": True}`.

    It extracts every user message not yet extracted, so the runs of a burst after the
    first find nothing left and end at once. The server keeps the queued run, so a restart
    loses nothing; whatever a run missed, the next flush picks up (`extracted_through`). In
    process there is no server (no graph id in the run's metadata): `agent.runner` debounces
    the flush itself, and nothing is queued here.
    """
    config = get_config()
    graph_id = (config.get("metadata") or {}).get("graph_id")
    thread_id = str(config.get("configurable", {}).get("thread_id") or "")
    if not graph_id or not thread_id:
        return
    from langgraph_sdk import get_client

    await get_client().runs.create(
        thread_id,
        graph_id,
        input={"flush": True},
        context={"user_id": user_id},
        multitask_strategy="enqueue",
        after_seconds=max(1, round(delay)),
    )

"""What a thread's checkpoints keep: the latest state only, rewritten when words must go.

A turn that redacted a sensitive value or forgot a statement leaves the thread's latest
state clean, but its earlier checkpoints (the history `get_state_history` replays) still
hold the words: `prune_history` keeps only the latest. A memory deleted outside a turn
(`MemoryService.forget(..., hard=True)`) may still be quoted in a thread the user owns (the
assistant's reply, the memory block, a summary): `rewrite_latest` writes the thread's latest
state anew through the same `ThreadCuts` a turn uses, then prunes the rest.

On SQLite the freed pages are overwritten (`secure_delete`) and the WAL is truncated, so the
words are gone from the files too; Postgres keeps its files on its own server.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Any

from langchain_core.messages import BaseMessage
from langgraph.checkpoint.base import copy_checkpoint
from langgraph.checkpoint.base.id import uuid6

log = logging.getLogger(__name__)

_PRUNE = (
    "PRAGMA secure_delete = ON",
    "DELETE FROM checkpoints WHERE thread_id = ? AND checkpoint_id NOT IN "
    "(SELECT MAX(checkpoint_id) FROM checkpoints WHERE thread_id = ? GROUP BY checkpoint_ns)",
    "DELETE FROM writes WHERE thread_id = ? AND checkpoint_id NOT IN "
    "(SELECT checkpoint_id FROM checkpoints WHERE thread_id = ?)",
)
_TRUNCATE_WAL = "PRAGMA wal_checkpoint(TRUNCATE)"


def _args(sql: str, thread_id: str) -> tuple[str, ...]:
    return (thread_id, thread_id) if "?" in sql else ()


async def aprune_history(checkpointer: Any, thread_id: str) -> bool:
    """Keep only the latest checkpoint of a thread; older ones are deleted.

    Postgres prunes with the saver's own `aprune`; the embedded SQLite saver has none, so
    its rows are deleted here, with `secure_delete` so the freed pages are overwritten, and
    the WAL is truncated so no older copy of a page stays in it.

    Returns:
        True if the history was pruned; False for a checkpointer that cannot prune.
    """
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    if isinstance(checkpointer, AsyncSqliteSaver):
        async with checkpointer.lock, checkpointer.conn.cursor() as cur:
            for sql in _PRUNE:
                await cur.execute(sql, _args(sql, thread_id))
            await checkpointer.conn.commit()
            await cur.execute(_TRUNCATE_WAL)
        return True
    try:
        await checkpointer.aprune([thread_id], strategy="keep_latest")
    except NotImplementedError:
        log.warning("this checkpointer cannot prune: thread %s keeps its history", thread_id)
        return False
    return True


def prune_history(checkpointer: Any, thread_id: str) -> bool:
    """`aprune_history` for synchronous callers (the memory service's worker threads)."""
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    if isinstance(checkpointer, AsyncSqliteSaver):
        done = asyncio.run_coroutine_threadsafe(
            aprune_history(checkpointer, thread_id), checkpointer.loop
        )
        return done.result()
    if isinstance(checkpointer, SqliteSaver):
        with checkpointer.lock:
            for sql in _PRUNE:
                checkpointer.conn.execute(sql, _args(sql, thread_id))
            checkpointer.conn.commit()
            checkpointer.conn.execute(_TRUNCATE_WAL)
        return True
    try:
        checkpointer.prune([thread_id], strategy="keep_latest")
    except NotImplementedError:
        log.warning("this checkpointer cannot prune: thread %s keeps its history", thread_id)
        return False
    return True


Rewrite = Callable[[Mapping[str, Any]], dict[str, Any]]
"""Channel values → the channels that change (`ThreadCuts.channels`)."""


def rewrite_latest(checkpointer: Any, thread_id: str, rewrite: Rewrite) -> bool:
    """Write a thread's latest state anew with some channels rewritten; prune the rest.

    The rewritten state is a new checkpoint (its channels get new versions, so every saver
    stores them), written before the older ones are deleted: a crash in between leaves the
    thread with its history, never without its state.

    Args:
        checkpointer: Any LangGraph checkpointer with the synchronous interface.
        thread_id: The thread.
        rewrite: Returns the changed channels; `messages` may hold only the rewritten
            messages (matched to the thread's by id, as the graph's reducer does).

    Returns:
        True if the thread held anything to rewrite.
    """
    config: Any = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    latest = checkpointer.get_tuple(config)
    if latest is None:
        return False
    values = latest.checkpoint["channel_values"]
    changed = rewrite(values)
    if "messages" in changed:
        by_id = {m.id: m for m in changed["messages"] if isinstance(m, BaseMessage)}
        changed["messages"] = [by_id.get(getattr(m, "id", None), m) for m in values["messages"]]
    changed = {k: v for k, v in changed.items() if v != values.get(k)}
    if not changed:
        return False
    checkpoint = copy_checkpoint(latest.checkpoint)
    step = int(latest.metadata.get("step", 0)) + 1
    checkpoint["id"] = str(uuid6(clock_seq=step))
    versions = checkpoint["channel_versions"]
    new_versions = {}
    for channel, value in changed.items():
        checkpoint["channel_values"][channel] = value
        versions[channel] = new_versions[channel] = checkpointer.get_next_version(
            versions.get(channel), None
        )
    metadata: Any = {**latest.metadata, "source": "update", "step": step, "parents": {}}
    checkpointer.put(latest.config, checkpoint, metadata, new_versions)
    prune_history(checkpointer, thread_id)
    return True

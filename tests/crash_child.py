"""Subprocess entry point for the crash-consistency tests (tests/integration/test_crash.py).

It writes memories on the embedded default (SQLite store + embedded Chroma in HOME) and
SIGKILLs itself at a precise point. The kill is a fault hook inside this child process:
the real method is wrapped so that the process dies the moment it is reached. Nothing is
mocked; the store, Chroma and the graph are the real ones.

Every step it completes is printed as one JSON line on stdout (flushed), so the parent
knows what the child did before it died.

Usage:
    python tests/crash_child.py service-upsert HOME USER
        seed two memories, then die between the store write and the index write of a
        statement that supersedes one of them.
    python tests/crash_child.py service-forget HOME USER
        seed two memories, then die between the store delete and the index delete of a
        hard forget of one of them.
    python tests/crash_child.py service-delete-user HOME USER
        seed two memories, then die between the store deletes and the collection drop of
        `delete_user`.
    python tests/crash_child.py graph-save-start HOME USER THREAD
        one full graph turn, then a second turn that dies as the `save` node starts.
    python tests/crash_child.py graph-save-index HOME USER THREAD
        one full graph turn, then a second turn that dies inside `save`, after the store
        write and before the index write.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

os.environ.update(
    {
        "ANONYMIZED_TELEMETRY": "False",
        "LANGSMITH_TRACING": "false",
        "LANGCHAIN_TRACING_V2": "false",
        "HF_HUB_OFFLINE": "1",
    }
)

FIRST_TURN = "I live in Berlin."
SECOND_TURN = "I'm allergic to peanuts."


def emit(**fields: Any) -> None:
    """Report a completed step to the parent."""
    sys.stdout.write(json.dumps(fields, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def die(where: str) -> None:
    """The fault: report where, then SIGKILL this process (no cleanup, no flush, no atexit)."""
    emit(step="killing", where=where)
    os.kill(os.getpid(), signal.SIGKILL)


def kill_on(cls: type, name: str) -> None:
    """Wrap `cls.name` so that calling it kills the process before the real call runs."""
    original = getattr(cls, name)

    def hook(*args: Any, **kwargs: Any) -> Any:
        die(f"{cls.__name__}.{name}")
        return original(*args, **kwargs)  # never reached

    setattr(cls, name, hook)


def service_upsert(home: str, user: str) -> None:
    from memory.backends import BackendConfig, open_backends
    from memory.index.chroma import ChromaIndex
    from memory.service import MemoryService

    with open_backends(BackendConfig(home=home)) as b:
        svc = MemoryService(b.store, b.index)
        for content, subject, kind in (
            ("User lives in Berlin.", "profile.city", "fact"),
            ("User likes jazz.", "likes.jazz", "preference"),
        ):
            (change,) = svc.add(user, content, subject=subject, kind=kind)  # type: ignore[arg-type]
            emit(step="added", id=change.record.id, content=content)
        emit(step="seeded", index_ids=sorted(b.index.ids(user)))
        kill_on(ChromaIndex, "upsert")
        # Supersedes Berlin: store gets Munich (added) and Berlin (superseded), then dies.
        svc.add(user, "User lives in Munich.", subject="profile.city")
        emit(step="survived")  # must never be printed


def service_forget(home: str, user: str) -> None:
    from memory.backends import BackendConfig, open_backends
    from memory.index.chroma import ChromaIndex
    from memory.service import MemoryService

    with open_backends(BackendConfig(home=home)) as b:
        svc = MemoryService(b.store, b.index)
        for content, subject in (
            ("User likes jazz.", "likes.jazz"),
            ("User likes tea.", "likes.tea"),
        ):
            (change,) = svc.add(user, content, subject=subject, kind="preference")
            emit(step="added", id=change.record.id, content=content)
        emit(step="seeded", index_ids=sorted(b.index.ids(user)))
        kill_on(ChromaIndex, "delete")
        jazz = next(r for r in svc.list(user) if r.subject == "likes.jazz")
        svc.forget(user, jazz.id, hard=True)
        emit(step="survived")


def service_delete_user(home: str, user: str) -> None:
    from memory.backends import BackendConfig, open_backends
    from memory.index.chroma import ChromaIndex
    from memory.service import MemoryService

    with open_backends(BackendConfig(home=home)) as b:
        svc = MemoryService(b.store, b.index, checkpointer=b.checkpointer)
        svc.add(user, "User works as a nurse.", subject="work.role")
        svc.add(user, "User likes sailing.", kind="preference", subject="likes.sailing")
        emit(step="seeded", index_ids=sorted(b.index.ids(user)))
        kill_on(ChromaIndex, "drop_user")
        svc.delete_user(user)
        emit(step="survived")


async def graph_run(home: str, user: str, thread: str, fault: str) -> None:
    from agent.runner import open_session
    from graphs.nodes import MemoryNodes
    from graphs.settings import Settings
    from memory.backends import BackendConfig
    from memory.index.chroma import ChromaIndex

    settings = Settings(backend=BackendConfig(home=home))
    if fault == "save-start":
        # Installed before the graph is compiled: the builder binds `nodes.save` then.
        original = MemoryNodes.save

        async def save_hook(self: Any, state: Any, runtime: Any) -> Any:
            if state["messages"][-2].content == SECOND_TURN:
                die("MemoryNodes.save")
            return await original(self, state, runtime)

        MemoryNodes.save = save_hook  # type: ignore[method-assign]
    async with open_session(settings) as session:
        first = await session.turn(user, thread, FIRST_TURN)
        emit(step="turn", saved=first.saved, reply=first.reply)
        if fault == "save-index":
            kill_on(ChromaIndex, "upsert")
        await session.turn(user, thread, SECOND_TURN)
        emit(step="survived")


def main(argv: list[str]) -> None:
    mode, home, user, *rest = argv
    if mode == "service-upsert":
        service_upsert(home, user)
    elif mode == "service-forget":
        service_forget(home, user)
    elif mode == "service-delete-user":
        service_delete_user(home, user)
    elif mode == "graph-save-start":
        asyncio.run(graph_run(home, user, rest[0], "save-start"))
    elif mode == "graph-save-index":
        asyncio.run(graph_run(home, user, rest[0], "save-index"))
    else:
        raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    main(sys.argv[1:])

"""A turn goes through the memory API twice, checks its thread once, locks its user once."""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent.runner import open_session
from graphs.settings import Settings
from memory.backends import BackendConfig
from memory.service import MemoryService
from memory.store.locks import UserLocks
from memory.store.threads import ThreadRegistry

API = [name for name in vars(MemoryService) if not name.startswith("_")]


def _count(counter: Counter[str], name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        counter[name] += 1
        return fn(*args, **kwargs)

    return wrapper


@pytest.mark.parametrize(
    "text",
    [
        "I live in Berlin and I'm vegetarian.",
        "我对花生过敏，现在在杭州当护士。",
        "Forget that I live in Berlin.",
        "My goal is to move to Munich. Plan: find a flat, sign, pack.",
    ],
)
async def test_a_turn_calls_memory_twice_checks_its_thread_once_and_locks_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str
) -> None:
    settings = Settings(backend=BackendConfig(home=str(tmp_path / "home")))
    async with open_session(settings, setup=True) as s:
        await s.turn("alice", "t1", "I like tea.")  # the thread exists: a later turn
        calls: Counter[str] = Counter()
        for name in API:
            attr = getattr(MemoryService, name)
            if callable(attr) and not isinstance(attr, property):
                monkeypatch.setattr(s.service, name, _count(calls, name, getattr(s.service, name)))
        owner_reads: Counter[str] = Counter()
        monkeypatch.setattr(
            ThreadRegistry, "owner", _count(owner_reads, "owner", ThreadRegistry.owner)
        )
        holds: list[str] = []
        real_hold = UserLocks.hold

        def hold(self: UserLocks, user_id: str) -> Any:
            holds.append(user_id)
            return real_hold(self, user_id)

        monkeypatch.setattr(UserLocks, "hold", hold)
        await s.turn("alice", "t1", text)
    # The runner claims the thread before the message is written; the graph's nodes then
    # call the turn API twice and nothing else of memory.
    assert calls.pop("aremember_thread") == 1
    assert calls == {"arecall_turn": 1, "asave_turn": 1}
    assert owner_reads["owner"] <= 1, owner_reads
    assert holds.count("alice") == 1, holds

"""Settings of the memory layer, and the one way a service is built from them.

Where memory lives and the rules it keeps. An app that uses the memory service without
the graph reads these alone (`MemorySettings.from_env()`); the agent's
`graphs.settings.Settings` extends them with the model and the graph's own settings. Nothing
here reads the environment at import time.

Example:
    ```python
    from memory import MemorySettings, open_backends, open_service

    settings = MemorySettings.from_env()
    with open_backends(settings.backend) as backends:
        service = open_service(settings, backends.store, backends.index)
        service.search("alice", "where do I work?")
    ```
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Literal, TypeVar, cast
from weakref import WeakKeyDictionary

from langgraph.store.base import BaseStore

from memory.access import AccessPolicy
from memory.backends import BackendConfig
from memory.index.chroma import ChromaIndex
from memory.lifecycle import Policy
from memory.service import MemoryService

__all__ = [
    "IN_MEMORY_DATABASE",
    "MAX_DAYS",
    "MemorySettings",
    "env_flag",
    "env_number",
    "open_service",
]

MAX_DAYS = 36_500.0
"""A hundred years. Far longer periods overflow date arithmetic (past the year 9999) and
none is useful."""
IN_MEMORY_DATABASE = ":memory:"
"""What `langgraph dev` sets `DATABASE_URI` to: its own in-memory persistence, no database."""

N = TypeVar("N", int, float)


def env_number(
    name: str,
    default: N,
    low: N,
    high: N,
    *,
    low_open: bool = False,
    env: Mapping[str, str] | None = None,
) -> N:
    """Read a number of the default's type from the environment, range-checked.

    Args:
        name: The environment variable.
        default: Used when the variable is unset or empty; its type is the type read.
        low: Smallest allowed value.
        high: Largest allowed value.
        low_open: `low` itself is not allowed (e.g. a period of 0 days).
        env: Where to read it; the process environment by default.

    Raises:
        ValueError: If the value is not a finite number of that type or is out of range;
            the message names the variable and the allowed range.

    """
    raw = (os.environ if env is None else env).get(name)
    if raw is None or raw == "":
        return default
    kind = "an integer" if isinstance(default, int) else "a number"
    try:
        value = type(default)(raw)
    except ValueError as exc:
        raise ValueError(f"{name}={raw!r} is not {kind}") from exc
    # NaN compares false with everything, so it must be caught before the range check.
    if not math.isfinite(value) or value < low or value > high or (low_open and value == low):
        span = (
            f"above {_show(low)} and at most {_show(high)}"
            if low_open
            else f"from {_show(low)} to {_show(high)}"
        )
        raise ValueError(f"{name}={raw!r} is out of range: use {kind} {span}")
    return value


def _show(value: float) -> str:
    return f"{int(value):,}" if float(value).is_integer() else f"{value:,}"


def env_flag(name: str, env: Mapping[str, str] | None = None) -> bool:
    """Read an on/off variable: on unless set to 0, false, no or off."""
    return ((os.environ if env is None else env).get(name) or "true").strip().lower() not in (
        "0",
        "false",
        "no",
        "off",
    )


IN_MEMORY_DATABASE = ":memory:"
"""What `langgraph dev` sets `DATABASE_URI` to: its own in-memory persistence, no database."""


def _database_url(env: Mapping[str, str]) -> str | None:
    """Return the Postgres URL of `DATABASE_URL`, `POSTGRES_URI` or `DATABASE_URI`, if any.

    `langgraph dev` sets `DATABASE_URI=":memory:"` for its in-memory server: that names no
    database, so it is not read as a connection string.
    """
    for name in ("DATABASE_URL", "POSTGRES_URI", "DATABASE_URI"):
        value = (env.get(name) or "").strip()
        if value and value != IN_MEMORY_DATABASE:
            return value
    return None


@dataclass(frozen=True)
class MemorySettings:
    """What the memory layer is configured with (see the README's configuration table).

    Attributes:
        agent_id: Recorded on every memory this agent writes.
        backend: Where memory lives.
        policy: Lifecycle rules: what to trust, when to archive, what is too sensitive.
        access: Which agent may read and write which memories; None: every agent everything.

    """

    agent_id: str = "memory-agent"
    backend: BackendConfig = field(default_factory=BackendConfig)
    policy: Policy = field(default_factory=Policy)
    access: AccessPolicy | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> MemorySettings:
        """Read the memory layer's settings from environment variables.

        Args:
            env: Where to read them; the process environment by default.

        Raises:
            ValueError: If a variable has a value that cannot work (not a number, out of
                its range, an unknown mode, an unreadable access policy). The message names
                the variable and what to set instead.

        """
        env = os.environ if env is None else env
        sensitive = env.get("MEMORY_AGENT_SENSITIVE") or "drop"
        if sensitive not in ("drop", "redact"):
            raise ValueError(f"MEMORY_AGENT_SENSITIVE={sensitive!r}: use 'drop' or 'redact'")

        def days(name: str, default: float) -> timedelta:
            return timedelta(days=env_number(name, default, 0.0, MAX_DAYS, low_open=True, env=env))

        policy = Policy(
            candidate_threshold=env_number(
                "MEMORY_AGENT_CANDIDATE_THRESHOLD", 0.6, 0.0, 1.0, env=env
            ),
            event_ttl=days("MEMORY_AGENT_EVENT_TTL_DAYS", 7.0),
            archive_after=days("MEMORY_AGENT_ARCHIVE_DAYS", 180.0),
            turn_ttl=days("MEMORY_AGENT_TURN_TTL_DAYS", 365.0),
            archive_turns=env_flag("MEMORY_AGENT_ARCHIVE_TURNS", env),
            sensitive=cast(Literal["drop", "redact"], sensitive),
            redact_thread=env_flag("MEMORY_AGENT_REDACT_THREAD", env),
        )
        access_file = env.get("MEMORY_AGENT_ACCESS_POLICY") or None
        try:
            access = AccessPolicy.load(access_file) if access_file else None
        except ValueError as exc:
            raise ValueError(f"MEMORY_AGENT_ACCESS_POLICY: {exc}") from exc
        key = env.get("OPENAI_API_KEY") or None
        base_url = env.get("OPENAI_BASE_URL") or None
        return cls(
            agent_id=env.get("MEMORY_AGENT_ID") or "memory-agent",
            policy=policy,
            access=access,
            backend=BackendConfig(
                home=env.get("MEMORY_AGENT_HOME") or ".memory-agent",
                database_url=_database_url(env),
                chroma_path=env.get("CHROMA_PATH") or None,
                chroma_host=env.get("CHROMA_HOST") or None,
                chroma_port=env_number("CHROMA_PORT", 8000, 1, 65535, env=env),
                embeddings=env.get("MEMORY_AGENT_EMBEDDINGS") or "local",
                embeddings_base_url=env.get("MEMORY_AGENT_EMBEDDINGS_BASE_URL") or base_url,
                embeddings_api_key=key,
            ),
        )


_SERVICES: WeakKeyDictionary[BaseStore, dict[str, tuple[MemorySettings, Any, MemoryService]]] = (
    WeakKeyDictionary()
)
_SERVICES_LOCK = threading.Lock()


def open_service(
    settings: MemorySettings,
    store: BaseStore,
    index: ChromaIndex | None,
    *,
    agent_id: str | None = None,
    checkpointer: Any | None = None,
) -> MemoryService:
    """Return the memory service of a store: the one place a service is configured.

    The graph's nodes, the CLI, the runner and the MCP server all get theirs here, so they
    apply the same lifecycle and access policy, and share one service (its lexical
    snapshots and locks) per store, agent, settings and index.

    Args:
        settings: Where the lifecycle policy, the access policy and the agent id come from.
        store: The source of truth.
        index: The Chroma index (None: recall by words from the store only).
        agent_id: Who writes; defaults to `settings.agent_id`.
        checkpointer: Lets `delete_user` delete the user's threads too.

    Example:
        ```python
        backends = open_backends(settings.backend)
        service = open_service(settings, backends.store, backends.index)
        service.search("alice", "where do I work?")
        ```

    """
    agent = agent_id or settings.agent_id
    with _SERVICES_LOCK:
        services = _SERVICES.setdefault(store, {})
        cached = services.get(agent)
        if cached is not None and cached[0] is settings and cached[1] is index:
            service = cached[2]
        else:
            service = MemoryService(
                store,
                index,
                agent_id=agent,
                policy=settings.policy,
                access=settings.access,
                lock_dir=None if settings.backend.database_url else settings.backend.home,
            )
            services[agent] = (settings, index, service)
        if checkpointer is not None:
            service.checkpointer = checkpointer
        return service

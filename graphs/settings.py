"""Settings: read from the environment once, by the caller, and passed down explicitly.

Nothing here reads the environment at import time; `Settings.from_env()` does when called.
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

from langchain_core.messages import HumanMessage
from langgraph.store.base import BaseStore

from graphs.window import (
    ANSWER_RESERVE_TOKENS,
    SYSTEM_PROMPT_RESERVE_TOKENS,
    message_room,
    tokens,
)
from memory.access import AccessPolicy
from memory.backends import BackendConfig
from memory.index.chroma import ChromaIndex
from memory.lifecycle import Policy
from memory.service import MemoryService

DEFAULT_OPENAI_MODEL = "openai:gpt-4o-mini"

DEFAULT_MAX_MESSAGE_CHARS = 16_000
"""About 4,000 tokens: with both reserves it fits the default 8,000-token budget."""
MIN_CONTEXT_TOKENS = 4_096
"""Both reserves plus room for a message of about 4,000 characters."""
MAX_CONTEXT_TOKENS = 2_000_000
MAX_DAYS = 36_500.0
"""A hundred years. Far longer periods overflow date arithmetic (past the year 9999) and
none is useful."""

N = TypeVar("N", int, float)


def _number(name: str, default: N, low: N, high: N, *, low_open: bool = False) -> N:
    """Read a number of the default's type from the environment, range-checked.

    Args:
        name: The environment variable.
        default: Used when the variable is unset or empty; its type is the type read.
        low: Smallest allowed value.
        high: Largest allowed value.
        low_open: `low` itself is not allowed (e.g. a period of 0 days).

    Raises:
        ValueError: If the value is not a finite number of that type or is out of range;
            the message names the variable and the allowed range.

    """
    raw = os.environ.get(name)
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


def message_tokens(chars: int) -> int:
    """Return the estimated tokens of a user message of `chars` characters.

    The same estimate (`graphs.window.tokens`) decides at run time what fits the budget.
    """
    return tokens([HumanMessage("x" * chars)])


def max_message_chars_for(context_tokens: int) -> int:
    """Return the longest message that fits `context_tokens` with the prompt and answer kept.

    Returns:
        A character count (0 if nothing fits).

    """
    room = message_room(context_tokens, SYSTEM_PROMPT_RESERVE_TOKENS)
    # ~4 characters a token; the estimator is the judge, so step down until it agrees.
    chars = max(0, room * 4)
    while chars > 0 and message_tokens(chars) > room:
        chars -= 1
    return chars


def _flag(name: str) -> bool:
    """Read an on/off variable: on unless set to 0, false, no or off."""
    return (os.environ.get(name) or "true").strip().lower() not in ("0", "false", "no", "off")


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
class ModelRequests:
    """How each request to a real (`openai:`) chat model is made.

    Attributes:
        max_tokens: Longest answer asked for; the window keeps this much room for it, and
            a server left to choose may answer without end.
        timeout: Seconds one request may take before it is retried or fails.
        retries: How many times a request that timed out, could not connect, or got a
            429 or 5xx is sent again, with exponential backoff (and `Retry-After`, when the
            server sends one).

    """

    max_tokens: int = ANSWER_RESERVE_TOKENS
    timeout: float = 60.0
    retries: int = 2

    @classmethod
    def from_env(cls) -> ModelRequests:
        """Read `MEMORY_AGENT_MAX_TOKENS`, `MEMORY_AGENT_MODEL_TIMEOUT`, `..._MODEL_RETRIES`.

        Raises:
            ValueError: If one is not a number in its range.

        """
        return cls(
            max_tokens=_number("MEMORY_AGENT_MAX_TOKENS", cls.max_tokens, 1, ANSWER_RESERVE_TOKENS),
            timeout=_number("MEMORY_AGENT_MODEL_TIMEOUT", cls.timeout, 0.0, 3600.0, low_open=True),
            retries=_number("MEMORY_AGENT_MODEL_RETRIES", cls.retries, 0, 10),
        )


@dataclass(frozen=True)
class Settings:
    """Everything the agent can be configured with (see the README's configuration table).

    Attributes:
        model: Chat model spec: `offline` or `openai:<model>`.
        openai_api_key: Key for `openai:` specs.
        openai_base_url: Any OpenAI-compatible server (Ollama, vLLM, DeepSeek, Qwen...).
        requests: Answer length, timeout and retries of each request to a real model.
        agent_id: Recorded on every memory this agent writes.
        recall_k: How many memories load_memory puts in the prompt.
        context_tokens: Token budget of what the chat node sends to the model.
        summary_tokens: Unsummarized thread size (tokens) that triggers a rolling summary.
        extract_mode: `inline` or `background` (extraction debounced after the reply).
        extract_delay: Seconds of quiet before a background extraction runs.
        max_message_chars: Longest user message accepted; `from_env` checks that a message
            this long fits `context_tokens` with the system prompt and the answer reserve.
        backend: Where memory lives.
        policy: Lifecycle rules: what to trust, when to archive, what is too sensitive.
        access: Which agent may read and write which memories; None: every agent everything.
        search_tool: Give the chat model the `SearchMemory` tool, so it can look up what
            the memory block did not bring (one query per part of a multi-part question).

    """

    model: str = "offline"
    openai_api_key: str | None = None
    openai_base_url: str | None = None
    requests: ModelRequests = field(default_factory=ModelRequests)
    agent_id: str = "memory-agent"
    recall_k: int = 8
    context_tokens: int = 8000
    summary_tokens: int = 3000
    extract_mode: str = "inline"
    extract_delay: float = 2.0
    max_message_chars: int = DEFAULT_MAX_MESSAGE_CHARS
    backend: BackendConfig = field(default_factory=BackendConfig)
    policy: Policy = field(default_factory=Policy)
    access: AccessPolicy | None = None
    search_tool: bool = True

    @classmethod
    def from_env(cls) -> Settings:
        """Build settings from environment variables.

        Raises:
            ValueError: If a variable has a value that cannot work: not a number, out of its
                range, or a message limit the context budget cannot hold. The message names
                the variable and what to set instead.

        """
        env = os.environ
        key = env.get("OPENAI_API_KEY") or None
        model = env.get("MEMORY_AGENT_MODEL") or (DEFAULT_OPENAI_MODEL if key else "offline")
        embeddings = env.get("MEMORY_AGENT_EMBEDDINGS") or "local"
        base_url = env.get("OPENAI_BASE_URL") or None
        extract_mode = env.get("MEMORY_AGENT_EXTRACT_MODE") or "inline"
        if extract_mode not in ("inline", "background"):
            raise ValueError(
                f"MEMORY_AGENT_EXTRACT_MODE={extract_mode!r}: use 'inline' or 'background'"
            )
        sensitive = env.get("MEMORY_AGENT_SENSITIVE") or "drop"
        if sensitive not in ("drop", "redact"):
            raise ValueError(f"MEMORY_AGENT_SENSITIVE={sensitive!r}: use 'drop' or 'redact'")

        def days(name: str, default: float) -> timedelta:
            return timedelta(days=_number(name, default, 0.0, MAX_DAYS, low_open=True))

        policy = Policy(
            candidate_threshold=_number("MEMORY_AGENT_CANDIDATE_THRESHOLD", 0.6, 0.0, 1.0),
            event_ttl=days("MEMORY_AGENT_EVENT_TTL_DAYS", 7.0),
            archive_after=days("MEMORY_AGENT_ARCHIVE_DAYS", 180.0),
            turn_ttl=days("MEMORY_AGENT_TURN_TTL_DAYS", 365.0),
            archive_turns=_flag("MEMORY_AGENT_ARCHIVE_TURNS"),
            sensitive=cast(Literal["drop", "redact"], sensitive),
            redact_thread=_flag("MEMORY_AGENT_REDACT_THREAD"),
        )
        access_file = env.get("MEMORY_AGENT_ACCESS_POLICY") or None
        try:
            access = AccessPolicy.load(access_file) if access_file else None
        except ValueError as exc:
            raise ValueError(f"MEMORY_AGENT_ACCESS_POLICY: {exc}") from exc
        context_tokens = _number(
            "MEMORY_AGENT_CONTEXT_TOKENS", 8000, MIN_CONTEXT_TOKENS, MAX_CONTEXT_TOKENS
        )
        fits = max_message_chars_for(context_tokens)
        # Unset, the limit follows a smaller budget down; set, it must fit or be refused.
        max_message_chars = _number(
            "MEMORY_AGENT_MAX_MESSAGE_CHARS",
            min(DEFAULT_MAX_MESSAGE_CHARS, fits),
            1,
            4 * MAX_CONTEXT_TOKENS,
        )
        if max_message_chars > fits:
            raise ValueError(
                f"MEMORY_AGENT_MAX_MESSAGE_CHARS={max_message_chars:,} cannot fit "
                f"MEMORY_AGENT_CONTEXT_TOKENS={context_tokens:,}: a message that long is "
                f"~{message_tokens(max_message_chars):,} tokens, and "
                f"{ANSWER_RESERVE_TOKENS + SYSTEM_PROMPT_RESERVE_TOKENS:,} are kept for the "
                f"system prompt and the answer. Set MEMORY_AGENT_MAX_MESSAGE_CHARS to at most "
                f"{fits:,} or raise MEMORY_AGENT_CONTEXT_TOKENS."
            )
        return cls(
            model=model,
            openai_api_key=key,
            openai_base_url=base_url,
            requests=ModelRequests.from_env(),
            agent_id=env.get("MEMORY_AGENT_ID") or "memory-agent",
            recall_k=_number("MEMORY_AGENT_RECALL_K", 8, 1, 100),
            context_tokens=context_tokens,
            summary_tokens=_number("MEMORY_AGENT_SUMMARY_TOKENS", 3000, 1, MAX_CONTEXT_TOKENS),
            extract_mode=extract_mode,
            extract_delay=_number("MEMORY_AGENT_EXTRACT_DELAY", 2.0, 0.0, 3600.0),
            max_message_chars=max_message_chars,
            policy=policy,
            access=access,
            search_tool=_flag("MEMORY_AGENT_SEARCH_TOOL"),
            backend=BackendConfig(
                home=env.get("MEMORY_AGENT_HOME") or ".memory-agent",
                database_url=_database_url(env),
                chroma_path=env.get("CHROMA_PATH") or None,
                chroma_host=env.get("CHROMA_HOST") or None,
                chroma_port=_number("CHROMA_PORT", 8000, 1, 65535),
                embeddings=embeddings,
                embeddings_base_url=env.get("MEMORY_AGENT_EMBEDDINGS_BASE_URL") or base_url,
                embeddings_api_key=key,
            ),
        )


_SERVICES: WeakKeyDictionary[BaseStore, dict[str, tuple[Settings, Any, MemoryService]]] = (
    WeakKeyDictionary()
)
_SERVICES_LOCK = threading.Lock()


def open_service(
    settings: Settings,
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

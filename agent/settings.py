"""Settings, read from the environment once and passed down explicitly."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Literal, TypeVar, cast

from memory.access import AccessPolicy
from memory.backends import BackendConfig
from memory.lifecycle import Policy

DEFAULT_OPENAI_MODEL = "openai:gpt-4o-mini"


N = TypeVar("N", int, float)


def _number(name: str, default: N) -> N:
    """Read a number of the default's type from the environment, with a clear error."""
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return type(default)(raw)
    except ValueError as exc:
        kind = "an integer" if isinstance(default, int) else "a number"
        raise ValueError(f"{name}={raw!r} is not {kind}") from exc


@dataclass(frozen=True)
class Settings:
    """Everything the agent can be configured with (see the README's configuration table).

    Attributes:
        model: Chat model spec: `offline` or `openai:<model>`.
        openai_api_key: Key for `openai:` specs.
        openai_base_url: Any OpenAI-compatible server (Ollama, vLLM, DeepSeek, Qwen...).
        agent_id: Recorded on every memory this agent writes.
        recall_k: How many memories load_memory puts in the prompt.
        context_tokens: Token budget of what the chat node sends to the model.
        summary_tokens: Unsummarized thread size (tokens) that triggers a rolling summary.
        extract_mode: `inline` or `background` (extraction debounced after the reply).
        extract_delay: Seconds of quiet before a background extraction runs.
        max_message_chars: Longest user message accepted.
        backend: Where memory lives.
        policy: Lifecycle rules: what to trust, when to archive, what is too sensitive.
        access: Which agent may read and write which memories; None: every agent everything.

    """

    model: str = "offline"
    openai_api_key: str | None = None
    openai_base_url: str | None = None
    agent_id: str = "memory-agent"
    recall_k: int = 8
    context_tokens: int = 8000
    summary_tokens: int = 3000
    extract_mode: str = "inline"
    extract_delay: float = 2.0
    max_message_chars: int = 32_000
    backend: BackendConfig = field(default_factory=BackendConfig)
    policy: Policy = field(default_factory=Policy)
    access: AccessPolicy | None = None

    @classmethod
    def from_env(cls) -> Settings:
        """Build settings from environment variables."""
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
        policy = Policy(
            candidate_threshold=_number("MEMORY_AGENT_CANDIDATE_THRESHOLD", 0.6),
            event_ttl=timedelta(days=_number("MEMORY_AGENT_EVENT_TTL_DAYS", 7.0)),
            archive_after=timedelta(days=_number("MEMORY_AGENT_ARCHIVE_DAYS", 180.0)),
            turn_ttl=timedelta(days=_number("MEMORY_AGENT_TURN_TTL_DAYS", 365.0)),
            archive_turns=(env.get("MEMORY_AGENT_ARCHIVE_TURNS") or "true").lower()
            not in ("0", "false", "no", "off"),
            sensitive=cast(Literal["drop", "redact"], sensitive),
        )
        access_file = env.get("MEMORY_AGENT_ACCESS_POLICY") or None
        try:
            access = AccessPolicy.load(access_file) if access_file else None
        except ValueError as exc:
            raise ValueError(f"MEMORY_AGENT_ACCESS_POLICY: {exc}") from exc
        return cls(
            model=model,
            openai_api_key=key,
            openai_base_url=base_url,
            agent_id=env.get("MEMORY_AGENT_ID") or "memory-agent",
            recall_k=_number("MEMORY_AGENT_RECALL_K", 8),
            context_tokens=_number("MEMORY_AGENT_CONTEXT_TOKENS", 8000),
            summary_tokens=_number("MEMORY_AGENT_SUMMARY_TOKENS", 3000),
            extract_mode=extract_mode,
            extract_delay=_number("MEMORY_AGENT_EXTRACT_DELAY", 2.0),
            max_message_chars=_number("MEMORY_AGENT_MAX_MESSAGE_CHARS", 32_000),
            policy=policy,
            access=access,
            backend=BackendConfig(
                home=env.get("MEMORY_AGENT_HOME") or ".memory-agent",
                database_url=env.get("DATABASE_URL") or env.get("POSTGRES_URI") or None,
                chroma_path=env.get("CHROMA_PATH") or None,
                chroma_host=env.get("CHROMA_HOST") or None,
                chroma_port=_number("CHROMA_PORT", 8000),
                embeddings=embeddings,
                embeddings_base_url=env.get("MEMORY_AGENT_EMBEDDINGS_BASE_URL") or base_url,
                embeddings_api_key=key,
            ),
        )

"""Settings of the agent: read from the environment once, by the caller, and passed down.

`Settings` extends the memory layer's `memory.settings.MemorySettings` (where memory lives,
its rules) with the model and the graph's own settings; services are built from either by
`memory.settings.open_service`. Nothing here reads the environment at import time;
`Settings.from_env()` does when called.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields

from langchain_core.messages import HumanMessage

from graphs.window import (
    ANSWER_RESERVE_TOKENS,
    SYSTEM_PROMPT_RESERVE_TOKENS,
    message_room,
    tokens,
)
from memory.settings import MemorySettings, env_flag, env_number

DEFAULT_OPENAI_MODEL = "openai:gpt-4o-mini"

DEFAULT_MAX_MESSAGE_CHARS = 16_000
"""About 4,000 tokens: with both reserves it fits the default 8,000-token budget."""
MIN_CONTEXT_TOKENS = 4_096
"""Both reserves plus room for a message of about 4,000 characters."""
MAX_CONTEXT_TOKENS = 2_000_000


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
    def from_env(cls, env: Mapping[str, str] | None = None) -> ModelRequests:
        """Read `MEMORY_AGENT_MAX_TOKENS`, `MEMORY_AGENT_MODEL_TIMEOUT`, `..._MODEL_RETRIES`.

        Args:
            env: Where to read them; the process environment by default.

        Raises:
            ValueError: If one is not a number in its range.

        """
        return cls(
            max_tokens=env_number(
                "MEMORY_AGENT_MAX_TOKENS", cls.max_tokens, 1, ANSWER_RESERVE_TOKENS, env=env
            ),
            timeout=env_number(
                "MEMORY_AGENT_MODEL_TIMEOUT", cls.timeout, 0.0, 3600.0, low_open=True, env=env
            ),
            retries=env_number("MEMORY_AGENT_MODEL_RETRIES", cls.retries, 0, 10, env=env),
        )


@dataclass(frozen=True)
class Settings(MemorySettings):
    """Everything the agent can be configured with (see the README's configuration table).

    The memory layer's own (`agent_id`, `backend`, `policy`, `access`) come from
    `MemorySettings`.

    Attributes:
        model: Chat model spec: `offline` or `openai:<model>`.
        openai_api_key: Key for `openai:` specs.
        openai_base_url: Any OpenAI-compatible server (Ollama, vLLM, DeepSeek, Qwen...).
        requests: Answer length, timeout and retries of each request to a real model.
        recall_k: How many memories load_memory puts in the prompt.
        context_tokens: Token budget of what the chat node sends to the model.
        summary_tokens: Unsummarized thread size (tokens) that triggers a rolling summary.
        extract_mode: `inline` or `background` (extraction debounced after the reply).
        extract_delay: Seconds of quiet before a background extraction runs.
        max_message_chars: Longest user message accepted; `from_env` checks that a message
            this long fits `context_tokens` with the system prompt and the answer reserve.
        search_tool: Give the chat model the `SearchMemory` tool, so it can look up what
            the memory block did not bring (one query per part of a multi-part question).

    """

    model: str = "offline"
    openai_api_key: str | None = None
    openai_base_url: str | None = None
    requests: ModelRequests = field(default_factory=ModelRequests)
    recall_k: int = 8
    context_tokens: int = 8000
    summary_tokens: int = 3000
    extract_mode: str = "inline"
    extract_delay: float = 2.0
    max_message_chars: int = DEFAULT_MAX_MESSAGE_CHARS
    search_tool: bool = True

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Build settings from environment variables.

        Args:
            env: Where to read them; the process environment by default.

        Raises:
            ValueError: If a variable has a value that cannot work: not a number, out of its
                range, or a message limit the context budget cannot hold. The message names
                the variable and what to set instead.

        """
        env = os.environ if env is None else env
        memory = MemorySettings.from_env(env)
        key = env.get("OPENAI_API_KEY") or None
        model = env.get("MEMORY_AGENT_MODEL") or (DEFAULT_OPENAI_MODEL if key else "offline")
        base_url = env.get("OPENAI_BASE_URL") or None
        extract_mode = env.get("MEMORY_AGENT_EXTRACT_MODE") or "inline"
        if extract_mode not in ("inline", "background"):
            raise ValueError(
                f"MEMORY_AGENT_EXTRACT_MODE={extract_mode!r}: use 'inline' or 'background'"
            )
        context_tokens = env_number(
            "MEMORY_AGENT_CONTEXT_TOKENS", 8000, MIN_CONTEXT_TOKENS, MAX_CONTEXT_TOKENS, env=env
        )
        fits = max_message_chars_for(context_tokens)
        # Unset, the limit follows a smaller budget down; set, it must fit or be refused.
        max_message_chars = env_number(
            "MEMORY_AGENT_MAX_MESSAGE_CHARS",
            min(DEFAULT_MAX_MESSAGE_CHARS, fits),
            1,
            4 * MAX_CONTEXT_TOKENS,
            env=env,
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
            **{f.name: getattr(memory, f.name) for f in fields(MemorySettings)},
            model=model,
            openai_api_key=key,
            openai_base_url=base_url,
            requests=ModelRequests.from_env(env),
            recall_k=env_number("MEMORY_AGENT_RECALL_K", 8, 1, 100, env=env),
            context_tokens=context_tokens,
            summary_tokens=env_number(
                "MEMORY_AGENT_SUMMARY_TOKENS", 3000, 1, MAX_CONTEXT_TOKENS, env=env
            ),
            extract_mode=extract_mode,
            extract_delay=env_number("MEMORY_AGENT_EXTRACT_DELAY", 2.0, 0.0, 3600.0, env=env),
            max_message_chars=max_message_chars,
            search_tool=env_flag("MEMORY_AGENT_SEARCH_TOOL", env),
        )

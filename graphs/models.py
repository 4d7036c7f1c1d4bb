"""Chat model factory: `offline` or `openai:<model>` (any OpenAI-compatible server)."""

from __future__ import annotations

from functools import cache

from langchain_core.language_models import BaseChatModel

from agent.offline import OfflineChatModel
from graphs.settings import Settings

OFFLINE_NOTICE = (
    "Using the built-in offline model (rule based, no LLM). Set OPENAI_API_KEY, or "
    "MEMORY_AGENT_MODEL=openai:<model> with OPENAI_BASE_URL, to use a real model."
)


def make_chat_model(spec: str, settings: Settings) -> BaseChatModel:
    """Build a chat model from a spec.

    Args:
        spec: `offline`, or `openai:<model>`; `OPENAI_BASE_URL` points `openai:` at any
            OpenAI-compatible server (Ollama, vLLM, DeepSeek, Qwen).
        settings: Where the key and base URL come from.

    Raises:
        ValueError: If the spec is unknown or an `openai:` spec has neither key nor base URL.

    """
    if spec == "offline":
        return OfflineChatModel()
    provider, _, name = spec.partition(":")
    if provider == "openai" and name:
        if not settings.openai_api_key and not settings.openai_base_url:
            raise ValueError(
                f"model {spec!r} needs OPENAI_API_KEY (or OPENAI_BASE_URL for a local "
                "OpenAI-compatible server); use MEMORY_AGENT_MODEL=offline to run without one"
            )
        from langchain_openai import ChatOpenAI

        return ChatOpenAI(
            model=name,
            api_key=settings.openai_api_key or "not-needed",  # type: ignore[arg-type]
            base_url=settings.openai_base_url,
            temperature=0,
            max_retries=1,
            timeout=60,
            # OpenAI-compatible servers speak chat completions, not the Responses API.
            use_responses_api=False if settings.openai_base_url else None,
        )
    raise ValueError(f"unknown model spec {spec!r}: use 'offline' or 'openai:<model>'")


def cached_chat_model(spec: str, settings: Settings) -> BaseChatModel:
    """Build a chat model once per process, spec and endpoint."""
    return _cached(spec, settings.openai_api_key, settings.openai_base_url)


@cache
def _cached(spec: str, api_key: str | None, base_url: str | None) -> BaseChatModel:
    return make_chat_model(spec, Settings(openai_api_key=api_key, openai_base_url=base_url))

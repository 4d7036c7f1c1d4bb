"""Chat model factory: a spec such as `offline` or `openai:<model>` names a provider."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

from langchain_core.language_models import BaseChatModel

from graphs.offline import OfflineChatModel
from graphs.settings import Settings

OFFLINE_NOTICE = (
    "Using the built-in offline model (rule based, no LLM). Set OPENAI_API_KEY, or "
    "MEMORY_AGENT_MODEL=openai:<model> with OPENAI_BASE_URL, to use a real model."
)


ModelProvider = Callable[[str, Settings], BaseChatModel]
"""Builds a chat model from the name after `provider:` in a spec, and the settings."""


def _offline(name: str, settings: Settings) -> BaseChatModel:
    return OfflineChatModel()


def _openai(name: str, settings: Settings) -> BaseChatModel:
    if not settings.openai_api_key and not settings.openai_base_url:
        raise ValueError(
            f"model 'openai:{name}' needs OPENAI_API_KEY (or OPENAI_BASE_URL for a local "
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


PROVIDERS: dict[str, ModelProvider] = {"offline": _offline, "openai": _openai}
"""Model providers by spec prefix. Add one entry to support another provider."""


def make_chat_model(spec: str, settings: Settings) -> BaseChatModel:
    """Build a chat model from a spec.

    Args:
        spec: `offline`, or `<provider>:<model>` for a provider in `PROVIDERS`;
            `OPENAI_BASE_URL` points `openai:` at any OpenAI-compatible server (Ollama,
            vLLM, DeepSeek, Qwen).
        settings: Where keys and base URLs come from.

    Raises:
        ValueError: If the provider is unknown or an `openai:` spec has neither key nor
            base URL.

    Example:
        ```python
        make_chat_model("openai:gpt-4o-mini", Settings(openai_api_key="sk-..."))
        ```

    """
    provider, _, name = spec.partition(":")
    build = PROVIDERS.get(provider)
    if build is None or (provider != "offline" and not name):
        known = ", ".join(f"'{p}:<model>'" if p != "offline" else "'offline'" for p in PROVIDERS)
        raise ValueError(f"unknown model spec {spec!r}: use {known}")
    return build(name, settings)


def cached_chat_model(spec: str, settings: Settings) -> BaseChatModel:
    """Build a chat model once per process, spec and endpoint."""
    return _cached(spec, settings.openai_api_key, settings.openai_base_url)


@cache
def _cached(spec: str, api_key: str | None, base_url: str | None) -> BaseChatModel:
    return make_chat_model(spec, Settings(openai_api_key=api_key, openai_base_url=base_url))

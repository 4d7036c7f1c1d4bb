"""Chat model factory: a spec such as `offline` or `openai:<model>` names a provider."""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Callable
from functools import cache
from typing import Any

import httpx
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import Runnable

from graphs.offline import OfflineChatModel
from graphs.settings import ModelRequests, Settings

OFFLINE_NOTICE = (
    "Using the built-in offline model (rule based, no LLM). Set OPENAI_API_KEY, or "
    "MEMORY_AGENT_MODEL=openai:<model> with OPENAI_BASE_URL, to use a real model."
)


ModelProvider = Callable[[str, Settings], BaseChatModel]
"""Builds a chat model from the name after `provider:` in a spec, and the settings."""


def _offline(name: str, settings: Settings) -> BaseChatModel:
    return OfflineChatModel()


class PerLoopTransport(httpx.AsyncBaseTransport):
    """An async HTTP transport with one connection pool per event loop.

    langchain-openai shares one async HTTP client per base URL across the whole process, and
    a pooled connection belongs to the event loop that opened it: after a first
    `asyncio.run(...)` ends, the next one (a script calling it twice, a test per loop) finds
    its connection's loop closed and fails with "Event loop is closed". Here each loop gets
    a pool of its own, dropped with the loop.
    """

    def __init__(self) -> None:
        """Start with no pools: each loop's opens on its first request."""
        self._pools: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, httpx.AsyncHTTPTransport
        ] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()  # loops may run in several threads

    def _pool(self) -> httpx.AsyncHTTPTransport:
        loop = asyncio.get_running_loop()
        with self._lock:
            pool = self._pools.get(loop)
            if pool is None:
                pool = self._pools[loop] = httpx.AsyncHTTPTransport()
            return pool

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send the request through the running loop's pool."""
        return await self._pool().handle_async_request(request)

    async def aclose(self) -> None:
        """Close the running loop's pool (the others close with their loops)."""
        with self._lock:
            pool = self._pools.pop(asyncio.get_running_loop(), None)
        if pool is not None:
            await pool.aclose()


def _openai(name: str, settings: Settings) -> BaseChatModel:
    if not settings.openai_api_key and not settings.openai_base_url:
        raise ValueError(
            f"model 'openai:{name}' needs OPENAI_API_KEY (or OPENAI_BASE_URL for a local "
            "OpenAI-compatible server); use MEMORY_AGENT_MODEL=offline to run without one"
        )
    from langchain_openai import ChatOpenAI

    requests = settings.requests
    return ChatOpenAI(
        model=name,
        api_key=settings.openai_api_key or "not-needed",  # type: ignore[arg-type]
        base_url=settings.openai_base_url,
        temperature=0,
        # Left unset, a server may answer without end (llama.cpp does, on a repeat loop).
        max_tokens=requests.max_tokens,  # type: ignore[call-arg]
        # The OpenAI client retries connection errors, timeouts, 408, 409, 429 and 5xx
        # with exponential backoff and jitter, honouring `Retry-After`.
        max_retries=requests.retries,
        timeout=requests.timeout,
        # OpenAI-compatible servers speak chat completions, not the Responses API.
        use_responses_api=False if settings.openai_base_url else None,
        # Its own async client, usable from any event loop (see PerLoopTransport).
        http_async_client=httpx.AsyncClient(transport=PerLoopTransport()),
    )


async def ainvoke_structured(runnable: Runnable[Any, Any], messages: list[BaseMessage]) -> Any:
    """Call a structured-output runnable (`include_raw=True`), keeping a cut reply.

    A reply cut by the length limit comes back unparsed, the way `include_raw` returns
    any reply it could not parse, so the caller can salvage it. Any other error propagates.
    """
    try:
        return await runnable.ainvoke(messages)
    except Exception as exc:
        cut = cut_reply(exc)
        if cut is None:
            raise
        return {"raw": cut, "parsed": None, "parsing_error": exc}


def cut_reply(exc: BaseException) -> AIMessage | None:
    """Return the reply of a structured-output call that the length limit cut, or None.

    The OpenAI client refuses to parse such a reply (`LengthFinishReasonError`) before the
    caller's `include_raw` salvage can see it; the error still carries the text.
    """
    from openai import LengthFinishReasonError

    if not isinstance(exc, LengthFinishReasonError) or not exc.completion.choices:
        return None
    text = exc.completion.choices[0].message.content
    return AIMessage(text or "", response_metadata={"finish_reason": "length"})


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
    """Build a chat model once per process, spec, endpoint and request settings."""
    return _cached(spec, settings.openai_api_key, settings.openai_base_url, settings.requests)


@cache
def _cached(
    spec: str, api_key: str | None, base_url: str | None, requests: ModelRequests
) -> BaseChatModel:
    endpoint = Settings(openai_api_key=api_key, openai_base_url=base_url, requests=requests)
    return make_chat_model(spec, endpoint)

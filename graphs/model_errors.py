"""A chat model's failures, told in one line a user can act on.

A model client fails in many ways (server down, timeout, a refused key, a rate limit, a
server error, an answer that is not a chat completion). The chat node turns each into one
`ModelUnavailable` whose message says what happened and what to check; the CLI prints it
as `error: ...` and goes on, and a LangGraph server reports it to the SDK as it is.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from langchain_core import exceptions as lc

CLIENT_MODULES = ("openai", "langchain_openai", "langchain_core.language_models", "httpx")
"""Where a model client reads answers: a ValueError or TypeError raised there means the
answer was not a chat completion (e.g. "No generations found in stream.", "Received
response with null value for 'choices'"), not a bug of ours."""


class ModelUnavailable(RuntimeError):
    """The chat model gave no answer this turn; the message says why and what to check.

    A RuntimeError on purpose: the LangGraph server sends a RuntimeError's message to the
    client, and hides the message of most other exception types ("An internal error
    occurred").
    """


def _endpoint(exc: BaseException) -> str:
    """Return `scheme://host:port` of the request that failed, or "the model server"."""
    request = getattr(exc, "request", None)
    url = getattr(request, "url", None)
    if url is None:
        return "the model server"
    return f"the model server at {url.scheme}://{url.host}" + (f":{url.port}" if url.port else "")


def _detail(exc: BaseException) -> str:
    """Return the server's own words: the error body's message, else the exception's."""
    body: Any = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        message = inner.get("message") if isinstance(inner, dict) else None
        if isinstance(message, str) and message:
            return message
    message = getattr(exc, "message", None) or str(exc)
    return str(message)


def _root(exc: BaseException) -> str:
    """Return the message of the innermost cause (e.g. "[Errno 111] Connection refused")."""
    seen = exc
    while seen.__cause__ is not None or seen.__context__ is not None:
        seen = seen.__cause__ or seen.__context__  # type: ignore[assignment]
    return str(seen) or type(seen).__name__


def explain(exc: BaseException) -> ModelUnavailable | None:
    """Translate a model client's exception into a `ModelUnavailable`.

    Provider-neutral: langchain-core's `ModelError` family (which langchain-openai raises)
    and any client error that carries an HTTP `status_code`.

    Args:
        exc: What the model call raised.

    Returns:
        The error to raise instead, or None if `exc` is not a model failure (a bug, an
        interrupt, the user's own bad input), which must then propagate as it is.

    """
    where = _endpoint(exc)
    status = getattr(exc, "status_code", None)
    said = _detail(exc)
    text: str | None
    if isinstance(exc, lc.ModelTimeoutError):
        text = f"{where} did not answer in time; try again, or check that it is not overloaded"
    elif isinstance(exc, lc.ModelConnectionError):
        text = (
            f"cannot reach {where} ({_root(exc)}); check that it is running and that "
            "OPENAI_BASE_URL points at it"
        )
    elif isinstance(exc, lc.ModelAuthenticationError):
        text = f"{where} refused the API key (401: {said}); check OPENAI_API_KEY"
    elif isinstance(exc, lc.ModelPermissionDeniedError):
        text = f"{where} does not let this key use the model (403: {said})"
    elif isinstance(exc, lc.ModelNotFoundError):
        text = (
            f"{where} has no such model or endpoint (404: {said}); check MEMORY_AGENT_MODEL "
            "and OPENAI_BASE_URL (it usually ends in /v1)"
        )
    elif isinstance(exc, lc.ModelRateLimitError):
        text = f"{where} is rate limiting this key (429: {said}); wait a little and try again"
    elif isinstance(exc, lc.ContextOverflowError):
        text = (
            f"the conversation is longer than the model's context ({said}); lower "
            "MEMORY_AGENT_CONTEXT_TOKENS to what the model holds"
        )
    elif isinstance(exc, lc.ModelRefusalError):
        text = f"the model refused to answer ({said})"
    elif isinstance(exc, lc.ModelError | lc.OutputParserException) or isinstance(status, int):
        code = f"{status}: " if isinstance(status, int) else ""
        text = f"{where} failed to answer ({code}{said}); try again"
    elif _not_json(exc) or _unreadable_answer(exc):
        text = (
            f"{where} sent an answer that is not a chat completion ({str(exc)[:120]}); check "
            "that OPENAI_BASE_URL points at an OpenAI-compatible API (it usually ends in /v1)"
        )
    else:
        text = None
    return ModelUnavailable(f"the model could not answer: {text}") if text else None


def _not_json(exc: BaseException) -> bool:
    """Return True if the client failed to read the answer as JSON (a non-JSON body)."""
    name = type(exc).__name__
    return name in ("JSONDecodeError", "APIResponseValidationError")


def raised_in(exc: BaseException, packages: tuple[str, ...]) -> bool:
    """Return True if `exc` was raised by code of one of `packages` (its innermost frame).

    A library's own bugs and checks (a ValueError, an AttributeError) carry no type of the
    library; where they were raised tells whose they are.
    """
    tb = exc.__traceback__
    module = ""
    while tb is not None:
        module = str(tb.tb_frame.f_globals.get("__name__", ""))
        tb = tb.tb_next
    return any(module == p or module.startswith(p + ".") for p in packages)


def _unreadable_answer(exc: BaseException) -> bool:
    """Return True for a ValueError or TypeError raised inside a model client's code."""
    return isinstance(exc, ValueError | TypeError) and raised_in(exc, CLIENT_MODULES)


@contextlib.contextmanager
def model_call() -> Iterator[None]:
    """Run a model call; a model failure leaves it as a `ModelUnavailable`.

    Raises:
        ModelUnavailable: If the call failed for a reason of the model or its server (the
            original exception is its `__cause__`). Anything else propagates unchanged.

    """
    try:
        yield
    except Exception as exc:
        told = explain(exc)
        if told is None:
            raise
        raise told from exc


def no_answer(reply: Any, *, tools_allowed: bool) -> ModelUnavailable | None:
    """Return the error for a reply that is only tool calls the turn cannot run.

    That is tool calls whose arguments are not JSON (and no words), or, once the turn's
    tool rounds are spent (`tools_allowed` False), tool calls again and no words: either
    way the model gave no answer, and the turn fails saying so instead of ending in an
    empty reply.
    """
    if str(getattr(reply, "content", "")).strip():
        return None
    calls = getattr(reply, "tool_calls", None) or []
    invalid = getattr(reply, "invalid_tool_calls", None) or []
    if invalid and not calls:
        first = invalid[0]
        return ModelUnavailable(
            f"the model could not answer: it called the tool {first.get('name') or '?'!r} "
            f"with arguments that are not valid JSON ({first.get('args')!s:.200})"
        )
    if calls and not tools_allowed:
        names = ", ".join(sorted({str(c.get("name")) for c in calls}))
        return ModelUnavailable(
            "the model could not answer: it kept calling tools (" + names + ") whose calls "
            "could not be run, and gave no text"
        )
    return None

"""A scripted OpenAI-compatible HTTP server on loopback, for tests that fake only the LLM.

It implements what the agent's OpenAI clients call:

- ``POST /v1/chat/completions``: non-streaming, and streaming (``"stream": true``: SSE
  chunks, then ``data: [DONE]``). Structured output (``response_format``) is answered like
  any other request: the reply's text is the message content, so a test answers it with a
  JSON string (see `json_reply`).
- ``POST /v1/embeddings``: deterministic hash-seeded vectors (float lists, or base64 when
  the client asks for ``encoding_format: base64``, as the ``openai`` client does by default).

Any other path answers 404 in OpenAI's error format (the Responses API, ``/v1/responses``,
is deliberately not implemented: the agent must use chat completions).

Scripting: the test passes a handler ``body -> reply`` (or queues replies with `script`).
A reply is a `str` (assistant text), a `Reply`, or a `dict` (sent as the JSON text of the
content). Every request is recorded in `OpenAIStub.requests` with its path and parsed body.

Example::

    with OpenAIStub(handler=route(chat="Hi!", extract=json_reply({"memories": []}))) as stub:
        ChatOpenAI(base_url=stub.base_url, api_key="test", model="gpt-4o-mini").invoke("hi")
        assert stub.chat_requests()[0]["messages"][-1]["content"] == "hi"
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

DEFAULT_EMBEDDING_DIMS = 64


@dataclass
class Reply:
    """One scripted answer to a chat completion request.

    Attributes:
        content: The assistant message text (a JSON string for structured output).
        status: HTTP status; anything but 200 sends `error` in OpenAI's error format.
        error: The error message for a non-200 status.
        finish_reason: Reported finish reason ("tool_calls" when there are tool calls).
        chunk_size: Characters per streamed content chunk.
        tool_calls: ``(name, arguments)`` of the functions the assistant calls, sent as
            OpenAI ``tool_calls`` (streamed as one delta per call); arguments given as a
            `str` are sent verbatim, so a test can send ones that are not JSON.
        delay: Seconds to wait before answering (a server slower than the client's timeout).
        raw: Sent verbatim as a 200 answer's body instead of a completion (a server whose
            answer is not JSON, or not a completion).
        hang_up: Close the connection without answering.
        headers: Extra response headers, e.g. ``{"retry-after-ms": "10"}`` on a 429.
    """

    content: str = ""
    status: int = 200
    error: str = "stub error"
    finish_reason: str = "stop"
    chunk_size: int = 4
    tool_calls: list[tuple[str, dict[str, Any] | str]] = field(default_factory=list)
    delay: float = 0.0
    raw: bytes | None = None
    hang_up: bool = False
    headers: dict[str, str] = field(default_factory=dict)

    def openai_tool_calls(self, cid: str) -> list[dict[str, Any]]:
        """Return the tool calls as OpenAI sends them in a message."""
        return [
            {"id": f"{cid}-{i}", "type": "function",
             "function": {"name": name,
                          "arguments": args if isinstance(args, str) else json.dumps(args)}}
            for i, (name, args) in enumerate(self.tool_calls)
        ]  # fmt: skip


Handler = Callable[[dict[str, Any]], "str | Reply | dict[str, Any]"]


def json_reply(obj: Any) -> Reply:
    """Return a reply whose content is `obj` as JSON text (what structured output expects)."""
    return Reply(content=json.dumps(obj, ensure_ascii=False))


def is_structured(body: dict[str, Any]) -> bool:
    """Return True if a chat request asks for structured output (JSON schema or JSON mode)."""
    return "response_format" in body


def schema_name(body: dict[str, Any]) -> str | None:
    """Return the JSON schema name of a structured-output request, if any."""
    fmt = body.get("response_format") or {}
    return (fmt.get("json_schema") or {}).get("name") if isinstance(fmt, dict) else None


def system_text(body: dict[str, Any]) -> str:
    """Return the text of the system (or developer) messages of a chat request."""
    out = []
    for m in body.get("messages", []):
        if m.get("role") in ("system", "developer"):
            content = m.get("content")
            if isinstance(content, list):
                content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
            out.append(str(content))
    return "\n".join(out)


def last_user_text(body: dict[str, Any]) -> str:
    """Return the text of the last user message of a chat request."""
    for m in reversed(body.get("messages", [])):
        if m.get("role") == "user":
            content = m.get("content")
            if isinstance(content, list):
                content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
            return str(content)
    return ""


def route(
    *, chat: str | Reply | Handler = "OK.", extract: str | Reply | dict | Handler | None = None
) -> Handler:
    """Return a handler answering structured-output requests with `extract`, others with `chat`.

    Either may be a fixed reply or a handler of its own. `extract` defaults to an empty
    extraction (``{"memories": [], "forget": []}``).
    """
    extract = extract if extract is not None else {"memories": [], "forget": []}

    def handler(body: dict[str, Any]) -> str | Reply | dict[str, Any]:
        target = extract if is_structured(body) else chat
        return target(body) if callable(target) else target  # type: ignore[return-value]

    return handler


def stub_vector(text: str, dims: int = DEFAULT_EMBEDDING_DIMS) -> np.ndarray:
    """Return the (not normalized) deterministic vector the stub embeds `text` as."""
    seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")
    return np.random.default_rng(seed).standard_normal(dims).astype(np.float32) * 3.0


@dataclass
class Recorded:
    """One request the stub received."""

    path: str
    body: dict[str, Any]
    at: float = field(default_factory=time.monotonic)


class _QuietServer(ThreadingHTTPServer):
    """A threading server that does not print a traceback when a client hangs up.

    A client that gives up (a timeout, a retry on a new connection) resets its socket; the
    base class prints that to stderr, where tests of the CLI read the agent's own output.
    """

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class OpenAIStub:
    """A scripted OpenAI-compatible server on 127.0.0.1 (a background thread).

    Use as a context manager, or call `start` and `stop`.
    """

    def __init__(
        self,
        handler: Handler | None = None,
        *,
        embedding_dims: int = DEFAULT_EMBEDDING_DIMS,
        model_name: str = "stub-model",
    ) -> None:
        """Create a stub (not yet listening).

        Args:
            handler: Maps a chat request body to a reply; defaults to `route()`.
            embedding_dims: Dimension of the vectors `/v1/embeddings` returns.
            model_name: Reported when a request names no model.
        """
        self.handler: Handler = handler or route()
        self.embedding_dims = embedding_dims
        self.model_name = model_name
        self.requests: list[Recorded] = []
        self.errors: list[BaseException] = []
        self._queue: deque[str | Reply | dict[str, Any]] = deque()
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._ids = 0

    # --- lifecycle -----------------------------------------------------------------------

    def start(self) -> OpenAIStub:
        """Listen on a free loopback port and serve in a daemon thread."""
        stub = self

        class _Handler(_RequestHandler):
            owner = stub

        self._server = _QuietServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="openai-stub", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None

    def __enter__(self) -> OpenAIStub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The port the stub listens on."""
        assert self._server is not None, "the stub is not started"
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """The base URL to give an OpenAI client (ends in ``/v1``)."""
        return f"http://127.0.0.1:{self.port}/v1"

    # --- scripting -----------------------------------------------------------------------

    def script(self, *replies: str | Reply | dict[str, Any]) -> None:
        """Queue replies: each chat request takes the next one before the handler is asked."""
        with self._lock:
            self._queue.extend(replies)

    def chat_requests(self) -> list[dict[str, Any]]:
        """Return the bodies of the chat completion requests, in order."""
        return [r.body for r in self.requests if r.path.endswith("/chat/completions")]

    def embedding_requests(self) -> list[dict[str, Any]]:
        """Return the bodies of the embedding requests, in order."""
        return [r.body for r in self.requests if r.path.endswith("/embeddings")]

    def paths(self) -> list[str]:
        """Return the path of every request, in order."""
        return [r.path for r in self.requests]

    def clear(self) -> None:
        """Forget recorded requests and errors."""
        with self._lock:
            self.requests.clear()
            self.errors.clear()

    # --- internals -----------------------------------------------------------------------

    def _record(self, path: str, body: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append(Recorded(path, body))

    def _next_id(self) -> str:
        with self._lock:
            self._ids += 1
            return f"chatcmpl-stub{self._ids}"

    def _reply_for(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            queued = self._queue.popleft() if self._queue else None
        out = queued if queued is not None else self.handler(body)
        if isinstance(out, Reply):
            return out
        if isinstance(out, str):
            return Reply(content=out)
        if isinstance(out, dict | list):
            return json_reply(out)
        raise TypeError(f"a stub handler returned {type(out).__name__}, not str/Reply/dict")

    def embed(self, texts: Iterable[str], dims: int | None = None) -> list[np.ndarray]:
        """Return the vectors the stub answers for texts (not normalized)."""
        return [stub_vector(t, dims or self.embedding_dims) for t in texts]


class _RequestHandler(BaseHTTPRequestHandler):
    owner: OpenAIStub
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass  # keep pytest output clean

    # --- plumbing ------------------------------------------------------------------------

    def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _error(
        self,
        status: int,
        message: str,
        kind: str = "invalid_request_error",
        headers: dict[str, str] | None = None,
    ) -> None:
        error = {"error": {"message": message, "type": kind, "code": None}}
        self._send_json(status, error, headers)

    def _body(self) -> dict[str, Any] | None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            return None
        return body if isinstance(body, dict) else None

    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        path = self.path.split("?", 1)[0]
        self.owner._record(path, {})
        if path.rstrip("/").endswith("/models"):
            self._send_json(200, {"object": "list", "data": [
                {"id": self.owner.model_name, "object": "model", "owned_by": "stub"}]})  # fmt: skip
            return
        self._error(404, f"no route GET {path}")

    def do_POST(self) -> None:  # noqa: N802 - stdlib naming
        path = self.path.split("?", 1)[0].rstrip("/")
        body = self._body()
        if body is None:
            self.owner._record(path, {})
            self._error(400, "the body is not a JSON object")
            return
        self.owner._record(path, body)
        try:
            if path.endswith("/chat/completions"):
                self._chat(body)
            elif path.endswith("/embeddings"):
                self._embeddings(body)
            else:
                self._error(404, f"the OpenAI stub does not implement POST {path}")
        except Exception as exc:  # a broken test handler must show up, not hang the client
            self.owner.errors.append(exc)
            with contextlib.suppress(OSError):
                self._error(500, f"stub handler failed: {exc!r}", "server_error")

    # --- endpoints -----------------------------------------------------------------------

    def _chat(self, body: dict[str, Any]) -> None:
        reply = self.owner._reply_for(body)
        if reply.delay:
            time.sleep(reply.delay)
        if reply.hang_up:
            self.close_connection = True
            return
        if reply.raw is not None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(reply.raw)))
            self.end_headers()
            self.wfile.write(reply.raw)
            return
        if reply.status != 200:
            self._error(reply.status, reply.error, "server_error" if reply.status >= 500 else
                        "invalid_request_error", reply.headers)  # fmt: skip
            return
        cid = self.owner._next_id()
        model = body.get("model") or self.owner.model_name
        created = int(time.time())
        messages = body.get("messages", [])
        prompt_tokens = sum(len(str(m.get("content", ""))) // 4 + 1 for m in messages)
        completion_tokens = len(reply.content) // 4 + 1
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
        calls = reply.openai_tool_calls(cid)
        finish = "tool_calls" if calls and reply.finish_reason == "stop" else reply.finish_reason
        if not body.get("stream"):
            message = {"role": "assistant", "content": reply.content or None, "refusal": None}
            self._send_json(200, {
                "id": cid, "object": "chat.completion", "created": created, "model": model,
                "choices": [{
                    "index": 0,
                    "message": message | ({"tool_calls": calls} if calls else {}),
                    "finish_reason": finish, "logprobs": None,
                }],
                "usage": usage,
            })  # fmt: skip
            return

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
            return {
                "id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
                "choices": [choice],
            }  # fmt: skip

        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        events = [chunk({"role": "assistant", "content": ""})]
        size = max(1, reply.chunk_size)
        events += [
            chunk({"content": reply.content[i : i + size]})
            for i in range(0, len(reply.content), size)
        ]
        events += [chunk({"tool_calls": [call | {"index": i}]}) for i, call in enumerate(calls)]
        events.append(chunk({}, finish))
        if (body.get("stream_options") or {}).get("include_usage"):
            events.append({**chunk({}), "choices": [], "usage": usage})
        for event in events:
            self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
            self.wfile.flush()
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()

    def _embeddings(self, body: dict[str, Any]) -> None:
        raw = body.get("input")
        texts = [raw] if isinstance(raw, str) else raw
        if not isinstance(texts, list) or not texts:
            self._error(400, "input must be a string or a non-empty list")
            return
        if not all(isinstance(t, str) for t in texts):
            # token arrays: embed their JSON so the answer stays deterministic
            texts = [t if isinstance(t, str) else json.dumps(t) for t in texts]
        dims = int(body.get("dimensions") or self.owner.embedding_dims)
        b64 = body.get("encoding_format") == "base64"
        data = []
        for i, vec in enumerate(self.owner.embed(texts, dims)):
            emb: Any = (
                base64.b64encode(vec.astype("<f4").tobytes()).decode("ascii")
                if b64
                else [float(x) for x in vec]
            )
            data.append({"object": "embedding", "index": i, "embedding": emb})
        tokens = sum(len(t) // 4 + 1 for t in texts)
        self._send_json(200, {
            "object": "list", "data": data, "model": body.get("model") or self.owner.model_name,
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        })  # fmt: skip

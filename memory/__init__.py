"""Long-term memory for LangGraph agents: a store of record plus a Chroma index.

What an app needs to use the memory service without the graph.

Example:
    ```python
    from memory import MemorySettings, open_backends, open_service

    settings = MemorySettings.from_env()  # MEMORY_AGENT_HOME, DATABASE_URL, ... or defaults
    with open_backends(settings.backend) as backends:
        service = open_service(settings, backends.store, backends.index)
        service.add("alice", "User is allergic to peanuts.", subject="health.allergy")
        for hit in service.search("alice", "what can't I eat?"):
            print(round(hit.score, 2), hit.why, hit.record.content)
    ```
"""

from memory.access import AccessDenied, AccessPolicy, PolicyError
from memory.backends import (
    BackendConfig,
    Backends,
    BackendUnavailable,
    aopen_backends,
    open_backends,
)
from memory.index.chroma import ChromaIndex, IndexUnavailable
from memory.recall.retriever import MemoryRetriever
from memory.recall.search import Recalled
from memory.service import MemoryService
from memory.settings import MemorySettings, open_service
from memory.store.checkpoints import aprune_history
from memory.store.locks import WriterLockTimeout
from memory.store.reads import MemoryNotFound
from memory.store.records import InvalidUserId, MemoryRecord, UserId, check_user_id
from memory.store.threads import ThreadNotYours
from memory.turn import Said, ThreadCuts, TurnOutcome, TurnRecall

__all__ = [
    "AccessDenied",
    "AccessPolicy",
    "BackendConfig",
    "BackendUnavailable",
    "Backends",
    "ChromaIndex",
    "IndexUnavailable",
    "InvalidUserId",
    "MemoryNotFound",
    "MemoryRecord",
    "MemoryRetriever",
    "MemoryService",
    "MemorySettings",
    "PolicyError",
    "Recalled",
    "Said",
    "ThreadCuts",
    "ThreadNotYours",
    "TurnOutcome",
    "TurnRecall",
    "UserId",
    "WriterLockTimeout",
    "aopen_backends",
    "aprune_history",
    "check_user_id",
    "open_backends",
    "open_service",
]

"""Connecting to Chroma: embedded in the process, or a `chroma run` server."""

from __future__ import annotations

from typing import Any

from memory.index.entries import IndexUnavailable


def connect(
    *, path: str | None = None, host: str | None = None, port: int = 8000
) -> tuple[Any, str]:
    """Return a Chroma client and where it points (for messages), telemetry off.

    A server is asked for its heartbeat, so an unreachable one fails here.

    Raises:
        IndexUnavailable: If the server cannot be reached.
        ValueError: If neither `path` nor `host` is given.
    """
    import chromadb
    from chromadb.config import Settings

    settings = Settings(anonymized_telemetry=False)
    if host:
        location = f"Chroma server {host}:{port}"
        try:
            client = chromadb.HttpClient(host=host, port=port, settings=settings)
            client.heartbeat()
        except Exception as exc:
            raise IndexUnavailable(
                f"cannot reach {location} ({exc.__class__.__name__}: {exc}); start it with "
                f"`chroma run --host {host} --port {port}` or unset CHROMA_HOST"
            ) from exc
        return client, location
    if not path:
        raise ValueError("ChromaIndex.open needs a path or a host")
    return chromadb.PersistentClient(path=path, settings=settings), f"embedded Chroma at {path}"

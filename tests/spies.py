"""Counters put on real objects in tests (nothing here replaces a component)."""

from __future__ import annotations

from typing import Any

from memory.service import MemoryService
from memory.store.records import MemoryRecord


def count_scans(service: MemoryService) -> list[str]:
    """Record the user of every full scan `service` makes from now on; return the list."""
    scans: list[str] = []
    real = service._reader.scan

    def scan(user_id: Any, **kw: Any) -> list[MemoryRecord]:
        scans.append(user_id)
        return real(user_id, **kw)

    service._reader.scan = scan  # type: ignore[method-assign]
    return scans

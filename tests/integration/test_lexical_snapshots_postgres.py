"""Persisted lexical snapshots on Postgres: a table of our own, purged with what was said."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from spies import count_scans

from memory.backends import BackendConfig, open_backends
from memory.lexical import changes
from memory.lexical.persisted import SNAPSHOT_TABLE
from memory.lexical.snapshot import LexicalIndexes
from memory.service import MemoryService
from memory.store.records import MemoryRecord, user_key


def _row(url: str, user: str) -> bytes | None:
    with psycopg.connect(url, autocommit=True) as conn:
        found = conn.execute(
            f"SELECT data FROM {SNAPSHOT_TABLE} WHERE user_key = %s", (user_key(user),)
        ).fetchone()
    return bytes(found[0]) if found else None


def _rows(user: str, n: int) -> list[dict[str, Any]]:
    return [
        MemoryRecord(id=f"m{i}", user_id=user, kind="fact", subject=f"garden.{i}",
                     content=f"User planted tree number {i} in the orchard.").to_store()
        for i in range(n)
    ]  # fmt: skip


def test_a_second_process_loads_the_row_and_forgets_purge_it(
    pg_url: str, new_user: Callable[..., str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(changes, "PERSIST_AT", 10)
    user = new_user("lex")
    with open_backends(BackendConfig(database_url=pg_url, home=str(tmp_path)), setup=True) as b:
        first = MemoryService(b.store, None)
        first.import_records(user, _rows(user, 30))
        (secret,) = first.add(user, "User's safe word is Capybara.", subject="profile.safeword")
        assert [h.record.content for h in first.search(user, "Capybara")][0].endswith("Capybara.")
        data = _row(pg_url, user)
        assert data is not None and b"Capybara" in data and b"capybara" in data

        second = MemoryService(b.store, None)  # its own snapshots, as another process has
        second.lexical = LexicalIndexes(pin=second.lexical._pin)
        scans = count_scans(second)
        hits = second.search(user, "Capybara safe word")
        assert hits[0].record.id == secret.record.id and scans == []

        second.forget(user, secret.record.id)  # current here: the row is rewritten
        after = _row(pg_url, user)
        assert after is not None and b"apybara" not in after and b"orchard" in after
        assert [h for h in first.search(user, "Capybara") if h.why == "relevant"] == []

        first.delete_user(user)
        assert _row(pg_url, user) is None

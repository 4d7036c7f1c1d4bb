"""Settings read from the environment as the servers that start the agent set it."""

from __future__ import annotations

import pytest

from graphs.settings import Settings


@pytest.mark.parametrize("name", ["DATABASE_URI", "DATABASE_URL", "POSTGRES_URI"])
def test_langgraph_devs_in_memory_marker_is_no_database(monkeypatch, name: str) -> None:
    # `langgraph dev` sets DATABASE_URI=":memory:" for its in-memory server.
    for var in ("DATABASE_URI", "DATABASE_URL", "POSTGRES_URI"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv(name, ":memory:")
    assert Settings.from_env().backend.database_url is None


def test_a_postgres_url_is_still_read_and_the_first_one_set_wins(monkeypatch) -> None:
    monkeypatch.setenv("DATABASE_URI", ":memory:")
    monkeypatch.setenv("POSTGRES_URI", "postgresql://u@127.0.0.1:5432/b")
    monkeypatch.delenv("DATABASE_URL", raising=False)
    assert Settings.from_env().backend.database_url == "postgresql://u@127.0.0.1:5432/b"
    monkeypatch.setenv("DATABASE_URL", "postgresql://u@127.0.0.1:5432/a")
    assert Settings.from_env().backend.database_url == "postgresql://u@127.0.0.1:5432/a"

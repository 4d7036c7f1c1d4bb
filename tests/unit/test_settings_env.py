"""Settings read from the environment as the servers that start the agent set it."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import fields

import pytest
from langgraph.store.memory import InMemoryStore

from graphs.settings import Settings
from memory import MemorySettings, open_service


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


def test_the_memory_layer_reads_its_settings_without_the_graph() -> None:
    # An app that uses the memory service alone must not pull in the graph's code.
    code = (
        "import sys, os\n"
        "os.environ['MEMORY_AGENT_SENSITIVE'] = 'redact'\n"
        "from memory import MemorySettings, open_service\n"
        "from langgraph.store.memory import InMemoryStore\n"
        "s = MemorySettings.from_env()\n"
        "svc = open_service(s, InMemoryStore(), None)\n"
        "print(svc.policy.sensitive, sorted(m for m in sys.modules if m.split('.')[0] in "
        "('graphs', 'agent')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "redact []"


def test_the_agent_settings_are_the_memory_settings_plus_the_graphs(monkeypatch) -> None:
    monkeypatch.setenv("MEMORY_AGENT_SENSITIVE", "redact")
    monkeypatch.setenv("MEMORY_AGENT_EVENT_TTL_DAYS", "3")
    monkeypatch.setenv("MEMORY_AGENT_ID", "desk")
    memory, agent = MemorySettings.from_env(), Settings.from_env()
    for f in fields(MemorySettings):
        assert getattr(agent, f.name) == getattr(memory, f.name), f.name
    assert agent.policy.sensitive == "redact" and agent.policy.event_ttl.days == 3


def test_one_constructor_applies_the_settings_policy(monkeypatch) -> None:
    # A service built from settings, by whichever caller, keeps what the settings say.
    monkeypatch.setenv("MEMORY_AGENT_SENSITIVE", "redact")
    settings = MemorySettings.from_env()
    store = InMemoryStore()
    service = open_service(settings, store, None)
    assert service.policy.sensitive == "redact"
    assert open_service(settings, store, None) is service  # one service per store and agent
    service.add("u1", "My card is 4111 1111 1111 1111 and I pay rent with it.")
    (kept,) = service.list("u1")
    assert "4111" not in kept.content and "[redacted" in kept.content


def test_a_bad_memory_setting_names_its_variable(monkeypatch) -> None:
    monkeypatch.setenv("MEMORY_AGENT_SENSITIVE", "shred")
    with pytest.raises(ValueError, match="MEMORY_AGENT_SENSITIVE='shred'"):
        MemorySettings.from_env()
    monkeypatch.setenv("MEMORY_AGENT_SENSITIVE", "drop")
    with pytest.raises(ValueError, match="MEMORY_AGENT_TURN_TTL_DAYS"):
        MemorySettings.from_env({"MEMORY_AGENT_TURN_TTL_DAYS": "0"})

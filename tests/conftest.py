"""Shared test setup: offline, no telemetry, every test in its own data directory."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

# Set before anything imports chromadb or langsmith: nothing may leave the machine.
os.environ.update(
    {
        "ANONYMIZED_TELEMETRY": "False",
        "LANGSMITH_TRACING": "false",
        "LANGCHAIN_TRACING_V2": "false",
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "LANGGRAPH_NO_VERSION_CHECK": "true",
        "HF_HUB_OFFLINE": "1",
        # A developer's .env (a real key, a database) must not reach the CLI under test.
        "MEMORY_AGENT_DOTENV": "off",
    }
)
for var in (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "DATABASE_URL",
    "POSTGRES_URI",
    "CHROMA_HOST",
    "MEMORY_AGENT_MODEL",
    "MEMORY_AGENT_EMBEDDINGS",
):
    os.environ.pop(var, None)


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("MEMORY_AGENT_HOME", str(home))
    return home


@pytest.fixture
def index(tmp_path: Path):
    from memory.index.chroma import ChromaIndex
    from memory.index.embeddings import make_embedder

    return ChromaIndex.open(make_embedder("local"), path=str(tmp_path / "chroma"))


@pytest.fixture
def service(index):
    from langgraph.store.memory import InMemoryStore

    from memory.service import MemoryService

    return MemoryService(InMemoryStore(), index)


@pytest.fixture
async def offline_session(tmp_path: Path):
    """A session on the embedded default (SQLite, embedded Chroma) with the offline model."""
    from agent.runner import open_session
    from graphs.settings import Settings
    from memory.backends import BackendConfig

    settings = Settings(backend=BackendConfig(home=str(tmp_path / "home")), model="offline")
    async with open_session(settings, setup=True) as s:
        yield s

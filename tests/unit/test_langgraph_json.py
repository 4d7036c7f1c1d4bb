"""`langgraph.json`'s server settings: the thread TTL and the store's search index.

Under `langgraph dev` they are accepted but neither is enforced by TTL sweeps (its in-memory
runtime does not sweep); a LangGraph server on PostgreSQL applies them. What `langgraph dev`
does with the index is tested in tests/integration/test_langgraph_auth.py.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from langchain_core.embeddings import Embeddings
from langgraph_cli.config import validate_config_file

from agent.serve.embeddings import DIMS
from graphs.settings import Settings
from memory.index.embeddings import make_embedder

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "langgraph.json"


@pytest.fixture
def config(monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    """The file as the CLI reads it (its own schema check), from the repo root."""
    monkeypatch.chdir(ROOT)
    checked: dict[str, object] = dict(validate_config_file(CONFIG))
    assert checked["checkpointer"] == json.loads(CONFIG.read_text())["checkpointer"]
    return checked


def test_a_thread_lives_as_long_as_its_raw_turns(
    config: dict[str, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MEMORY_AGENT_TURN_TTL_DAYS", raising=False)
    ttl = config["checkpointer"]["ttl"]  # type: ignore[index]
    turn_ttl = Settings.from_env().policy.turn_ttl
    assert ttl["strategy"] == "delete"
    assert ttl["default_ttl"] == turn_ttl.total_seconds() / 60  # minutes, as the server counts
    # The store gets no TTL: memories expire by their own rules, and a store item deleted
    # behind the index's back would leave its Chroma vector and history dangling.
    assert "ttl" not in (config.get("store") or {})  # type: ignore[operator]


def test_the_store_index_is_the_bundled_encoder(config: dict[str, object]) -> None:
    index = dict(config["store"]["index"])  # type: ignore[index]
    assert index["fields"] == ["content"]
    assert index["dims"] == DIMS == make_embedder("local").embed(["x"]).shape[1]
    # Loaded as the server loads a `path.py:name` (from the file, under a name of its own).
    path, _, name = str(index["embed"]).partition(":")
    spec = importlib.util.spec_from_file_location("store_embed", ROOT / path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    embeddings = getattr(module, name)
    assert isinstance(embeddings, Embeddings) and type(embeddings).__name__ == "StoreEmbeddings"
    near, far = embeddings.embed_documents(["I live in Berlin.", "I am vegetarian."])
    query = embeddings.embed_query("which city do I live in")
    assert len(query) == DIMS
    assert sum(a * b for a, b in zip(query, near, strict=True)) > sum(
        a * b for a, b in zip(query, far, strict=True)
    )

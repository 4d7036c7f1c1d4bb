"""What a forker packages and deploys agrees with the code: licence, version, Dockerfile."""

from __future__ import annotations

import json
import re
import tomllib
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_the_licence_file_is_the_licence_pyproject_declares() -> None:
    declared = _pyproject()["project"]["license"]["text"]
    assert (ROOT / "LICENSE").read_text(encoding="utf-8").startswith(f"{declared} License")


def test_the_changelog_tops_with_the_installed_version() -> None:
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    released = re.findall(r"^## \[(\d+\.\d+\.\d+)\] - \d{4}-\d{2}-\d{2}$", changelog, re.M)
    assert released, "no released version in CHANGELOG.md"
    assert released[0] == _pyproject()["project"]["version"] == version("langgraph-memory-agent")


def test_the_dockerfile_serves_the_graphs_of_langgraph_json() -> None:
    config = json.loads((ROOT / "langgraph.json").read_text(encoding="utf-8"))
    dockerfile = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    served = json.loads(re.search(r"ENV LANGSERVE_GRAPHS='(.+)'", dockerfile).group(1))  # type: ignore[union-attr]
    expected = {g: t.replace("./", "/deps/main/", 1) for g, t in config["graphs"].items()}
    assert served == expected
    for target in config["graphs"].values():
        assert (ROOT / target.split(":")[0]).is_file()
    # The server's store index and thread TTL reach the image as the CLI hands them over.
    for key, env in (("store", "LANGGRAPH_STORE"), ("checkpointer", "LANGGRAPH_CHECKPOINTER")):
        found = re.search(rf"ENV {env}='(.+)'", dockerfile)
        assert found, env
        text = json.dumps(config[key]).replace('"./', '"/deps/main/')
        assert json.loads(found.group(1)) == json.loads(text), env


def test_the_memory_engine_has_no_module_over_600_lines_and_thin_nodes() -> None:
    # The layout is part of the template: a fork reads memory/ by its sub-packages, and
    # the graph's nodes stay thin translators to the memory API (issue "one gate").
    root = Path(__file__).resolve().parents[2]
    long = {
        str(p.relative_to(root)): n
        for p in (root / "memory").rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > 600
    }
    assert not long, long
    nodes = len((root / "graphs" / "nodes.py").read_text(encoding="utf-8").splitlines())
    assert nodes <= 350, nodes
    flat = {p.name for p in (root / "memory").glob("*.py")}
    gone = {"index.py", "indexing.py", "recall.py", "retrieval.py", "retriever.py",
            "snapshots.py", "snapshot_store.py", "changelog.py"}  # fmt: skip
    assert not flat & gone, flat & gone

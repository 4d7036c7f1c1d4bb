"""A fork that follows the README's recipes stays green.

Every recipe that edits the template (add a tool to the served graph, add a node, add a kind)
is applied to a copy of the repository as a fork would apply it, from the README's own
blocks; then the template's tests of those recipes run in the copy. ("Add a model provider"
edits nothing of the template: its test runs in the copy as well.)
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
TESTS = ("tests/unit/test_recipes.py", "tests/unit/test_kinds.py")


def section(title: str) -> str:
    return README.split(f"#### {title}\n", 1)[1].split("\n#### ", 1)[0].split("\n### ")[0]


def blocks(title: str, lang: str = "python") -> list[str]:
    return re.findall(rf"```{lang}\n(.+?)\n```", section(title), re.S)


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"{old!r} is not once in {path}"
    path.write_text(text.replace(old, new), encoding="utf-8")


def add_a_tool(fork: Path) -> None:
    tool, app_edit = blocks("Add a tool")
    (fork / "my_tools.py").write_text(tool + "\n", encoding="utf-8")
    old = re.search(r"instead of: (.+)$", app_edit, re.M).group(1)  # type: ignore[union-attr]
    lines = [line for line in app_edit.splitlines() if not line.startswith("#")]
    edit(fork / "agent" / "app.py", old, "\n".join(lines))


def add_a_node(fork: Path) -> None:
    node, wiring = blocks("Add a node")
    builder = fork / "graphs" / "builder.py"
    edit(builder, "\n\ndef make_builder(", f"\n\n{node}\n\n\ndef make_builder(")
    lines = [line for line in wiring.splitlines() if not line.startswith("#")]
    edit(builder, 'builder.add_edge("load_memory", "chat")', "\n    ".join(lines))


def add_a_kind(fork: Path) -> None:
    (row,) = [b.split("\n", 1)[1] for b in blocks("Add a kind of memory")]
    table = "KINDS: Mapping[str, KindSpec] = MappingProxyType(\n    {\n"
    edit(fork / "memory" / "store" / "records.py", table, f"{table}        {row}\n")
    (text,) = blocks("Add a kind of memory", "text")
    en, zh = text.splitlines()[1:]
    for lang, new in (("en", en), ("zh", zh)):
        prompt = fork / "prompts" / f"extract.{lang}.md"
        (old,) = [ln for ln in prompt.read_text("utf-8").splitlines() if ln.startswith("- kind")]
        edit(prompt, old, new)


def test_the_templates_tests_pass_in_a_fork_that_followed_every_recipe(tmp_path: Path) -> None:
    fork = tmp_path / "fork"
    skip = shutil.ignore_patterns("__pycache__", ".venv", ".*_cache", ".memory-agent")
    for package in ("agent", "graphs", "memory", "prompts"):
        shutil.copytree(ROOT / package, fork / package, ignore=skip)
    (fork / "tests" / "unit").mkdir(parents=True)
    for name in ("conftest.py", "fakes.py", *(t.removeprefix("tests/") for t in TESTS)):
        shutil.copy(ROOT / "tests" / name, fork / "tests" / name)
    for name in ("README.md", "pyproject.toml", "langgraph.json"):
        shutil.copy(ROOT / name, fork / name)
    add_a_tool(fork)
    add_a_node(fork)
    add_a_kind(fork)

    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", *TESTS],
        cwd=fork,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    # The fork's own code was tested: its new kind is in the table the tests walk.
    assert "test_every_kind_decays_as_its_half_life_says[goal] PASSED" in done.stdout
    for name in ("test_add_a_tool", "test_add_a_node", "test_add_a_model_provider"):
        assert f"{name} PASSED" in done.stdout, name

"""The README's two commands are what CI runs, and its tables match the code."""

from __future__ import annotations

import re
from pathlib import Path

from agent.cli import _parser

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _commands() -> list[str]:
    section = README.split("## Two commands", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.+?)\n```", section)


def test_ci_runs_exactly_the_readme_commands() -> None:
    install, tests = _commands()
    assert "memory-agent demo" in install
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert install in ci and tests in ci


def test_every_setting_in_the_code_is_documented() -> None:
    code = (ROOT / "graphs" / "settings.py").read_text(encoding="utf-8")
    names = set(re.findall(r'"((?:MEMORY_AGENT|OPENAI|CHROMA|DATABASE|POSTGRES)_[A-Z_]+)"', code))
    assert names, "no settings found"
    missing = {n for n in names if f"`{n}`" not in README}
    assert not missing


def test_every_cli_command_is_documented() -> None:
    parser = _parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for name, cmd in sub.choices.items():  # type: ignore[union-attr]
        if name == "memories":
            actions = next(a for a in cmd._actions if a.dest == "action")
            for action in actions.choices:  # type: ignore[union-attr]
                assert f"memory-agent memories {action}" in README
        else:
            assert f"memory-agent {name}" in README

"""Memory kinds are one table (`memory.store.records.KINDS`): every place that knows kinds
follows it.

Each test walks the table, so a kind added to it fails here until every place that must
know it does: its recency decay, pinning, the extraction schema, both extract prompts, the
CLI and the MCP `remember` tool. The last test follows the README's recipe in a copy of the
code, and checks that leaving out its prompt lines fails.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from pydantic import ValidationError

import prompts
from agent.cli import _parser
from agent.mcp import Identity, build_server
from graphs.settings import Settings
from memory.extraction import CandidateMemory, Extraction
from memory.lifecycle import Policy
from memory.recall.ranking import RankConfig, recency_factor
from memory.recall.search import pin
from memory.store.records import HALF_LIFE_DAYS, KINDS, STATED_KINDS, MemoryRecord

ROOT = Path(__file__).resolve().parents[2]
NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
UNSTATED = [k for k in KINDS if k not in STATED_KINDS]


def _record(kind: str, age: timedelta) -> MemoryRecord:
    said = NOW - age
    return MemoryRecord(
        id="r", user_id="u", kind=kind, subject="s", content="c", created_at=said, updated_at=said
    )


def test_the_table_has_stated_and_unstated_kinds() -> None:
    # Both branches of every check below run: a user-stated kind and an agent-written one.
    assert STATED_KINDS and UNSTATED
    assert "fact" in STATED_KINDS and "episode" in UNSTATED


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_kind_decays_as_its_half_life_says(kind: str) -> None:
    half_life = KINDS[kind].half_life
    days = None if half_life is None else half_life / timedelta(days=1)
    assert Policy().half_life_days[kind] == days
    assert RankConfig().half_life_days[kind] == days
    assert HALF_LIFE_DAYS[kind] == days
    fresh = recency_factor(_record(kind, timedelta(0)), NOW)
    aged = recency_factor(_record(kind, half_life or timedelta(days=3650)), NOW)
    assert fresh == pytest.approx(1.0)
    if half_life is None:
        assert aged == 1.0  # no decay, by decision
    else:  # one half-life on, recency's share has halved
        w = RankConfig().decay_weight
        assert aged == pytest.approx(1.0 - w / 2)


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_dated_record_is_pinned_if_its_kind_pins(kind: str) -> None:
    record = _record(kind, timedelta(0))
    record.subject = "misc.note"  # not a core subject: only the kind can pin it
    assert pin(record) is None  # no date, nothing to pin it by
    record.valid_from = NOW + timedelta(days=2)
    pinned = pin(record)
    assert (pinned is not None) == KINDS[kind].pins
    if pinned is not None:
        assert pinned[1] == record.valid_from.timestamp()


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_kind_is_in_the_extraction_schema_and_the_record(kind: str) -> None:
    field = Extraction.model_json_schema()["$defs"]["CandidateMemory"]["properties"]["kind"]
    assert kind in field["enum"]
    assert f"{kind}: {KINDS[kind].description}" in field["description"]
    assert CandidateMemory(kind=kind, subject="s", content="c").kind == kind
    assert _record(kind, timedelta(0)).kind == kind


def test_an_unknown_kind_is_refused() -> None:
    with pytest.raises(ValidationError, match="unknown kind 'note'"):
        MemoryRecord(id="r", user_id="u", kind="note", subject="s", content="c")
    with pytest.raises(ValidationError, match="unknown kind"):
        CandidateMemory(kind="note", subject="s", content="c")


def _kind_line(lang: str) -> str:
    (line,) = [ln for ln in prompts.load("extract", lang).splitlines() if ln.startswith("- kind")]
    return line


@pytest.mark.parametrize("lang", prompts.LANGS)
def test_both_extract_prompts_offer_exactly_the_stated_kinds(lang: str) -> None:
    line = _kind_line(lang)
    # The line reads "kind: fact (…), preference (…), …": each kind is a word before a bracket.
    named = re.findall(r"([a-z_]+)\s*[(（]", line)
    assert sorted(named) == sorted(STATED_KINDS), f"prompts/extract.{lang}.md: {line}"


@pytest.mark.parametrize("kind", list(KINDS))
def test_the_cli_accepts_exactly_the_stated_kinds(
    kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["memories", "add", "--user", "alice", "--kind", kind, "I like tea."]
    if kind in STATED_KINDS:
        assert _parser().parse_args(argv).kind == kind
    else:
        with pytest.raises(SystemExit):
            _parser().parse_args(argv)
        assert "invalid choice" in capsys.readouterr().err


def test_the_mcp_remember_tool_offers_exactly_the_stated_kinds() -> None:
    # The tool's schema is built from its signature; no backend is touched to list it.
    server = build_server(None, Settings(), identity=Identity(user="alice", agent="a"))  # type: ignore[arg-type]
    (remember,) = [t for t in asyncio.run(server.list_tools()) if t.name == "remember"]
    kind = remember.input_schema["properties"]["kind"]
    assert kind["enum"] == list(STATED_KINDS)
    for k in STATED_KINDS:
        assert f"{k}: {KINDS[k].description}" in kind["description"]


# --- the README's recipe, followed in a copy of the code -----------------------------------


def _recipe() -> tuple[str, dict[str, str]]:
    """Return the README recipe's table row and its kind line for each extract prompt."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("#### Add a kind of memory\n", 1)[1].split("\n#### ", 1)[0]
    pattern = r"```python\n# memory/store/records.py, in KINDS:\n(.+?)\n```"
    (row,) = re.findall(pattern, section, re.S)
    (text,) = re.findall(r"```text\n#[^\n]*\n(.+?)\n```", section, re.S)
    lines = text.splitlines()
    return row, {"en": next(ln for ln in lines if "kind:" in ln), "zh": lines[-1]}


def _fork(tmp_path: Path, *, prompt_lines: bool) -> Path:
    """Copy the code and apply the recipe: the table row, and the prompt lines if asked.

    Code that has followed the recipe already (a fork of the template) is copied as it is,
    or, for `prompt_lines=False`, with the row taken out again: its prompts then name a
    kind the table lacks, which is the same missed place seen the other way round.
    """
    fork = tmp_path / "fork"
    skip = shutil.ignore_patterns("__pycache__")
    for package in ("agent", "graphs", "memory", "prompts"):
        shutil.copytree(ROOT / package, fork / package, ignore=skip)
    (fork / "tests" / "unit").mkdir(parents=True)
    for name in ("conftest.py", "unit/test_kinds.py"):
        shutil.copy(ROOT / "tests" / name, fork / "tests" / name)
    shutil.copy(ROOT / "pyproject.toml", fork / "pyproject.toml")
    row, kind_lines = _recipe()
    records = fork / "memory" / "store" / "records.py"
    table = "KINDS: Mapping[str, KindSpec] = MappingProxyType(\n    {\n"
    source = records.read_text(encoding="utf-8")
    if row in source:  # followed already
        if not prompt_lines:
            records.write_text(source.replace(row, ""), encoding="utf-8")
        return fork
    assert source.count(table) == 1, "the KINDS table is no longer where the recipe says"
    records.write_text(source.replace(table, f"{table}        {row}\n"), encoding="utf-8")
    if prompt_lines:
        for lang, new in kind_lines.items():
            prompt = fork / "prompts" / f"extract.{lang}.md"
            old = _kind_line(lang)
            prompt.write_text(prompt.read_text(encoding="utf-8").replace(old, new), "utf-8")
    return fork


def _run_kind_tests(fork: Path, *only: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-x"]
    argv += ["tests/unit/test_kinds.py", "-k", " or ".join(only) or "not recipe"]
    return subprocess.run(argv, cwd=fork, capture_output=True, text=True, timeout=300)


def test_the_readme_recipe_adds_a_kind_and_a_missed_place_fails(tmp_path: Path) -> None:
    row, _ = _recipe()
    kind = re.match(r'"(\w+)"', row).group(1)  # type: ignore[union-attr]
    done = _run_kind_tests(_fork(tmp_path / "done", prompt_lines=True))
    assert done.returncode == 0, done.stdout[-3000:]
    assert f"[{kind}] PASSED" in done.stdout  # the new kind was checked, not skipped
    missed = _run_kind_tests(_fork(tmp_path / "missed", prompt_lines=False), "prompts")
    assert missed.returncode != 0
    assert "test_both_extract_prompts_offer_exactly_the_stated_kinds[en] FAILED" in missed.stdout

"""Faults of the disk and the files under the memory home: one `error:` line, exit 2.

Each fault is real: a file overwritten with garbage by the test, a small tmpfs remounted
read-only, a tmpfs filled up while a turn runs. Tests run as root, where `chmod` does not
stop writes, so the read-only and full file systems are real mounts; where mounting is not
allowed those tests are skipped, saying so. The CLI runs as its own process, so the exit
code and the absence of a traceback are what a user sees (the seeded home is made by a
process of its own; the faults then run the CLI's `main` in the test process, where any
traceback fails the test).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from openai_stub import OpenAIStub, Reply, is_structured, json_reply

from agent.cli import main

pytestmark = pytest.mark.integration

USER = "alice"
THREAD = "t1"
OSLO = "User lives in Oslo."


@dataclass
class Ran:
    """What one CLI command did."""

    returncode: int
    stdout: str
    stderr: str


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch):
    """Run `memory-agent` (its `main`) on a home, stdin lines given; returns a `Ran`."""

    def run(home: Path, *args: str, stdin: str = "") -> Ran:
        monkeypatch.setenv("MEMORY_AGENT_HOME", str(home))
        lines = iter(stdin.splitlines())

        def read(prompt: str = "") -> str:
            try:
                return next(lines)
            except StopIteration:
                raise EOFError from None

        monkeypatch.setattr("builtins.input", read)
        code = main(list(args))
        out = capsys.readouterr()
        return Ran(code, out.out, out.err)

    return run


def run_cli(
    home: Path, *args: str, stdin: str = "", env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run `memory-agent` as its own process; a traceback anywhere fails the test."""
    done = subprocess.run(
        [sys.executable, "-m", "agent.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env={**os.environ, "MEMORY_AGENT_HOME": str(home), **(env or {})},
        timeout=180,
    )
    assert "Traceback" not in done.stdout + done.stderr, done.stdout + done.stderr
    return done


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A home with one memory of alice and her thread t1, made by the CLI itself."""
    home = tmp_path_factory.mktemp("seeded") / "home"
    done = run_cli(home, "chat", "--user", USER, "--thread", THREAD, stdin="I live in Oslo.\n")
    assert done.returncode == 0 and f"added: [fact profile.city] {OSLO}" in done.stdout
    return home


def damage(path: Path) -> None:
    """Overwrite a file with bytes that are no SQLite database."""
    path.write_bytes(b"this is not a database " * 200)


def copy_of(seeded: Path, where: Path) -> Path:
    home = where / "home"
    shutil.copytree(seeded, home)
    return home


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A real 8 MB tmpfs, unmounted afterwards (skipped where mounting is not allowed)."""
    mnt = tmp_path / "disk"
    mnt.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("needs root (and mount) to make a real full or read-only file system")
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=8m,mode=0700", "tmpfs", str(mnt)],
        capture_output=True,
        text=True,
    )
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({made.stderr.strip()}); run with CAP_SYS_ADMIN")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_a_damaged_store_is_one_error_line(cli, seeded: Path, tmp_path: Path) -> None:
    home = copy_of(seeded, tmp_path)
    damage(home / "store.sqlite")
    for argv, stdin in ((["memories", "list", "--user", USER], ""),
                        (["chat", "--user", USER, "--thread", THREAD], "Hello.\n")):  # fmt: skip
        done = cli(home, *argv, stdin=stdin)
        assert done.returncode == 2, done
        assert done.stderr.startswith(f"error: {home / 'store.sqlite'} is damaged"), done.stderr


@pytest.mark.parametrize(
    ("broken", "hint"),
    [("checkpoints.sqlite", "restore it from a backup"), ("chroma/chroma.sqlite3", "reindex")],
)
def test_an_intact_store_is_listed_and_exported_past_a_broken_file(
    cli, seeded: Path, tmp_path: Path, broken: str, hint: str
) -> None:
    home = copy_of(seeded, tmp_path)
    damage(home / broken)

    listed = cli(home, "memories", "list", "--user", USER)
    assert listed.returncode == 0, listed.stderr
    assert OSLO in listed.stdout
    assert listed.stderr.startswith(f"warning: {home / broken} is damaged"), listed.stderr
    assert hint in listed.stderr and "reading the store alone" in listed.stderr

    exported = cli(home, "memories", "export", "--user", USER, "--out", str(tmp_path / "x"))
    assert exported.returncode == 0, exported.stderr
    assert OSLO in (tmp_path / "x").read_text(encoding="utf-8")

    chat = cli(home, "chat", "--user", USER, "--thread", THREAD, stdin="Hello.\n")
    assert chat.returncode == 2
    assert chat.stderr.startswith(f"error: {home / broken} is damaged"), chat.stderr


def test_a_read_only_home_is_an_error_line_and_still_readable(
    cli, seeded: Path, small_disk: Path
) -> None:
    home = copy_of(seeded, small_disk)
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)

    added = cli(home, "memories", "add", "--user", USER, "User likes jazz.")
    assert added.returncode == 2 and "read-only" in added.stderr, added.stderr
    chat = cli(home, "chat", "--user", USER, "--thread", THREAD, stdin="I like jazz.\n")
    assert chat.returncode == 2 and "read-only" in chat.stderr, chat.stderr

    listed = cli(home, "memories", "list", "--user", USER)
    assert listed.returncode == 0 and OSLO in listed.stdout, listed.stderr
    assert "User likes jazz." not in listed.stdout


def test_a_disk_that_fills_mid_turn_keeps_the_message(
    cli, monkeypatch, seeded: Path, small_disk: Path
) -> None:
    home = copy_of(seeded, small_disk)
    filler = small_disk / "filler"
    moved = "I moved to Espoo."
    filled: list[bool] = []

    def fill_the_disk() -> None:
        with open(filler, "wb") as fh:
            try:
                while True:
                    fh.write(b"\0" * 65536)
                    fh.flush()
            except OSError:
                pass  # ENOSPC: the disk is full now

    def answer(body: dict[str, Any]) -> Reply:
        said = " ".join(str(m.get("content")) for m in body.get("messages", []))
        if is_structured(body):
            espoo = {"kind": "fact", "subject": "profile.city", "value": "Espoo",
                     "content": "User lives in Espoo.", "confidence": 0.95}  # fmt: skip
            return json_reply({"memories": [espoo] if moved in said else [], "forget": []})
        if not filled:
            filled.append(True)
            fill_the_disk()  # while the turn runs: its message is already checkpointed
        return Reply("Noted.")

    with OpenAIStub(handler=answer) as stub:
        monkeypatch.setenv("MEMORY_AGENT_MODEL", "openai:stub")
        monkeypatch.setenv("OPENAI_BASE_URL", stub.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        full = cli(home, "chat", "--user", USER, "--thread", THREAD, stdin=f"{moved}\n")
        assert full.returncode == 2, full
        assert "error: the disk is full" in full.stdout + full.stderr, full
        assert f"(your message is kept in thread {THREAD}" in full.stdout, full.stdout

        filler.unlink()  # space again: the kept message is taken by the next turn
        again = cli(home, "chat", "--user", USER, "--thread", THREAD, stdin="Hello.\n")
    assert again.returncode == 0, again
    assert "added: [fact profile.city] User lives in Espoo." in again.stdout, again.stdout

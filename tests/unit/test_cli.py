"""The `memory-agent` command line, on the embedded default in a temporary home."""

from __future__ import annotations

import argparse
import json
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from agent.cli import main


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_memories_lifecycle_from_the_shell(capsys, tmp_path: Path) -> None:
    code, out, _ = cli(
        capsys,
        "memories",
        "add",
        "--user",
        "alice",
        "User lives in Berlin.",
        "--subject",
        "profile.city",
        "--json",
    )
    assert code == 0
    rid = json.loads(out)[0]["record"]["id"]
    cli(
        capsys,
        "memories",
        "add",
        "--user",
        "alice",
        "Team launch",
        "--kind",
        "event",
        "--date",
        "2099-01-02",
    )

    code, out, _ = cli(
        capsys, "memories", "search", "--user", "alice", "where do I live", "--k", "1", "--json"
    )
    assert [h["content"] for h in json.loads(out)] == ["User lives in Berlin."]

    code, out, _ = cli(capsys, "memories", "show", "--user", "alice", rid)
    assert "via api" in out and "profile.city" in out

    export = tmp_path / "alice.jsonl"
    code, _, err = cli(capsys, "memories", "export", "--user", "alice", "--out", str(export))
    assert code == 0 and "exported 2" in err
    code, out, _ = cli(capsys, "memories", "import", "--user", "bob", str(export))
    assert code == 0 and "imported 2" in out

    code, out, _ = cli(capsys, "memories", "forget", "--user", "alice", rid)
    assert code == 0 and "forgot" in out
    code, out, _ = cli(capsys, "memories", "list", "--user", "alice", "--json")
    active = json.loads(out)
    assert [r["kind"] for r in active] == ["event"] and rid not in {r["id"] for r in active}
    code, out, _ = cli(capsys, "memories", "list", "--user", "alice", "--all", "--json")
    assert {r["status"] for r in json.loads(out)} == {"active", "forgotten"}

    code, out, _ = cli(capsys, "memories", "list", "--user", "bob")
    assert "User lives in Berlin." in out

    code, out, _ = cli(capsys, "memories", "delete-user", "--user", "bob", "--yes")
    assert code == 0 and "deleted 2" in out
    code, out, _ = cli(capsys, "memories", "search", "--user", "bob", "Berlin")
    assert "(no memories)" in out


@pytest.mark.parametrize("user", ["", "a.b", "a/b"])
def test_invalid_user_ids_exit_2_with_a_message(capsys, user: str) -> None:
    code, _, err = cli(capsys, "memories", "list", "--user", user)
    assert code == 2 and err.startswith("error: user_id")


def test_unknown_memory_id(capsys) -> None:
    code, _, err = cli(capsys, "memories", "show", "--user", "alice", "nope")
    assert code == 2 and "no memory 'nope'" in err


def test_import_of_a_broken_file_is_refused(capsys, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x", "kind": "fact"}\n', encoding="utf-8")
    code, _, err = cli(capsys, "memories", "import", "--user", "alice", str(bad))
    assert code == 2 and "record 1 is not a memory record" in err


def test_chat_reads_commands_and_remembers(capsys, monkeypatch) -> None:
    lines = iter(["I live in Lisbon.", "", "/new", "Any plans?", "/memories", "/quit"])
    monkeypatch.setattr("builtins.input", lambda prompt="": next(lines))
    code, out, _ = cli(capsys, "chat", "--user", "alice", "--thread", "t1")
    assert code == 0
    assert "offline model" in out
    assert "(memory) added: [fact profile.city] User lives in Lisbon." in out
    assert "error: the message is empty" in out
    assert "new thread alice-" in out
    assert out.count("User lives in Lisbon.") >= 3  # saved, recalled in the new thread, /memories


def test_demo_shows_cross_thread_and_cross_language_recall(capsys, tmp_path: Path) -> None:
    code, out, _ = cli(capsys, "demo", "--home", str(tmp_path / "demo"))
    assert code == 0
    step2 = out.split("── step 2")[1].split("── step 3")[0]
    assert "User is vegetarian." in step2 and "User lives in Berlin." in step2
    step4 = out.split("── step 4")[1].split("── step 5")[0]
    # The event was said in the diet rule's message: it is shown beside it, with its date.
    assert "用户不吃辣。" in step4 and re.search(r"下周三我们上线（\d{4}-\d\d-\d\d）", step4)
    step6 = out.split("── step 6")[1].split("── what")[0]
    assert "Munich" in step6 and "Berlin" not in step6 and "小王" not in step6.split("user:")[1]
    assert "[superseded] fact profile.city: User lives in Berlin." in out
    step1 = out.split("── step 1")[1].split("── step 2")[0]
    assert "extracted: 2 candidate(s)" in step1  # read before save empties it
    # A second run starts from a clean slate instead of piling up duplicates.
    code, again, _ = cli(capsys, "demo", "--home", str(tmp_path / "demo"))
    assert code == 0 and "reset: deleted" in again
    assert again.count("[active] fact profile.city") == 1


# --- the seen items of issue 23: each answered with a clear line ------------------------------


def test_every_option_of_every_subcommand_says_what_it_does() -> None:
    from agent.cli import _parser

    def walk(parser: argparse.ArgumentParser, path: str) -> list[str]:
        missing = []
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    assert child.description, f"{path} {name} has no description"
                    missing += walk(child, f"{path} {name}")
            elif not action.help:
                missing.append(f"{path} {'/'.join(action.option_strings) or action.dest}")
        return missing

    assert walk(_parser(), "memory-agent") == []


def test_the_overview_imports_nothing_of_the_engine() -> None:
    # `memory-agent --help` printed the overview only after importing the graph (1.2 s).
    probe = (
        "import sys\n"
        "from agent.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('graphs', 'memory', 'langgraph', 'langchain_core', 'chromadb'))\n"
        "print('HEAVY', heavy)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    assert "HEAVY []" in done.stdout, done.stdout[-2000:]
    for command in ("chat", "memories", "consolidate", "mcp"):
        assert command in done.stdout


def test_delete_user_with_no_input_to_confirm_is_refused(capsys, monkeypatch) -> None:
    cli(capsys, "memories", "add", "--user", "alice", "User lives in Berlin.")

    def closed(prompt: str = "") -> str:
        raise EOFError

    monkeypatch.setattr("builtins.input", closed)
    code, out, err = cli(capsys, "memories", "delete-user", "--user", "alice")
    assert code == 2 and "pass --yes" in err and "Traceback" not in err
    code, out, _ = cli(capsys, "memories", "list", "--user", "alice")
    assert "User lives in Berlin." in out  # nothing was deleted


def test_consolidate_json_prints_one_object_and_nothing_on_stderr(capsys) -> None:
    for user in ("alice", "bob"):
        cli(capsys, "memories", "add", "--user", user, "User likes tea.", "--subject", "drink")
    code, out, err = cli(capsys, "consolidate", "--json")
    assert code == 0 and err == ""
    assert json.loads(out)["users"] == 2


def test_nothing_to_show_says_so(capsys, monkeypatch) -> None:
    code, out, err = cli(capsys, "memories", "export", "--user", "nobody")
    assert code == 0 and out == ""  # stdout stays valid (empty) JSON lines
    assert "exported 0 memories: nobody has none" in err
    lines = iter(["/memories", "/quit"])
    monkeypatch.setattr("builtins.input", lambda prompt="": next(lines))
    code, out, _ = cli(capsys, "chat", "--user", "nobody")
    assert code == 0 and "(no memories of nobody yet)" in out


def test_a_malformed_import_names_the_file_and_the_line(capsys, tmp_path: Path) -> None:
    good = '{"id": "x", "kind": "fact", "subject": "s", "content": "c"}'
    bad = tmp_path / "broken.jsonl"
    bad.write_text(f"{good}\n\nnot json at all\n", encoding="utf-8")
    code, _, err = cli(capsys, "memories", "import", "--user", "alice", str(bad))
    assert code == 2
    assert err.startswith(f"error: {bad} line 3 is not JSON"), err
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    code, _, err = cli(capsys, "memories", "import", "--user", "alice", str(binary))
    assert code == 2 and f"{binary} is not UTF-8 text" in err
    code, out, _ = cli(capsys, "memories", "list", "--user", "alice")
    assert "(no memories)" in out  # nothing of either file was written


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["memories", "add", "--user", "a", "Launch", "--kind", "event", "--date", "2026-13-45"],
         "'2026-13-45' is not a date: use YYYY-MM-DD"),
        (["memories", "search", "--user", "a", "tea", "--k", "0"],
         "'0': use a whole number from 1 to 100"),
        (["memories", "search", "--user", "a", "tea", "--k", "many"],
         "'many': use a whole number from 1 to 100"),
    ],
)  # fmt: skip
def test_impossible_option_values_are_errors(capsys, argv: list[str], expected: str) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    assert expected in capsys.readouterr().err


def test_a_statement_without_subject_gets_a_neutral_one(capsys, monkeypatch) -> None:
    monkeypatch.setenv("MEMORY_AGENT_SENSITIVE", "redact")
    card = "6222021234567890128"
    said = f"我的银行卡号是{card}，每月还款。"
    code, out, _ = cli(capsys, "memories", "add", "--user", "u2", said, "--json")
    assert code == 0, out
    record = json.loads(out)[0]["record"]
    subject = record["subject"]
    assert re.fullmatch(r"note\.[0-9a-f]{10}", subject), subject
    assert card not in json.dumps(record, ensure_ascii=False)  # nor in id, subject, content
    # The same statement again gets the same subject: it reinforces, not duplicates.
    code, out, _ = cli(capsys, "memories", "add", "--user", "u2", said, "--json")
    assert json.loads(out)[0]["record"]["subject"] == subject
    code, out, _ = cli(capsys, "memories", "list", "--user", "u2", "--json")
    assert len(json.loads(out)) == 1


def test_an_export_file_is_readable_by_its_owner_only(capsys, tmp_path: Path) -> None:
    cli(capsys, "memories", "add", "--user", "alice", "User lives in Berlin.")
    out = tmp_path / "alice.jsonl"
    out.write_text("old\n", encoding="utf-8")
    out.chmod(0o644)  # an existing, readable file is made private too
    code, _, _ = cli(capsys, "memories", "export", "--user", "alice", "--out", str(out))
    assert code == 0
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert "User lives in Berlin." in out.read_text(encoding="utf-8")
    fresh = tmp_path / "fresh.jsonl"
    cli(capsys, "memories", "export", "--user", "alice", "--out", str(fresh))
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o600


def test_the_cli_reads_dot_env_without_overriding_the_environment(
    capsys, monkeypatch, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / ".env").write_text(
        "# as langgraph dev reads it\n"
        "export MEMORY_AGENT_ID='from-dotenv'\n"
        f"MEMORY_AGENT_HOME={tmp_path / 'not-this-home'}\n",
        encoding="utf-8",
    )
    monkeypatch.chdir(project)
    monkeypatch.delenv("MEMORY_AGENT_DOTENV")  # tests turn .env off; this one reads it
    monkeypatch.setenv("MEMORY_AGENT_ID", "placeholder")
    monkeypatch.delenv("MEMORY_AGENT_ID")  # unset now, restored as unset after the test
    code, out, _ = cli(capsys, "memories", "add", "--user", "alice", "User likes tea.", "--json")
    assert code == 0
    assert json.loads(out)[0]["record"]["agent_id"] == "from-dotenv"
    assert not (tmp_path / "not-this-home").exists()  # MEMORY_AGENT_HOME was set: it wins
    # Turned off, or pointed at another file, it is not read.
    monkeypatch.delenv("MEMORY_AGENT_ID")
    for off in ("off", str(tmp_path / "missing.env")):
        monkeypatch.setenv("MEMORY_AGENT_DOTENV", off)
        code, out, _ = cli(capsys, "memories", "add", "--user", "bob", "User likes tea.", "--json")
        assert json.loads(out)[0]["record"]["agent_id"] == "memory-agent"


def test_adding_a_new_home_without_a_subject_supersedes_the_old_one(capsys) -> None:
    # "I live in Berlin." then "I live in Munich.": one home, whatever key the user gave.
    code, _, _ = cli(capsys, "memories", "add", "--user", "mover", "I live in Berlin.")
    assert code == 0
    code, out, _ = cli(capsys, "memories", "add", "--user", "mover", "我现在住在慕尼黑。")
    assert code == 0 and "supersedes" in out
    code, out, _ = cli(capsys, "memories", "list", "--user", "mover")
    assert "慕尼黑" in out and "Berlin" not in out
    # A statement of no one-value family keeps a neutral key (no value enters a subject).
    code, out, _ = cli(capsys, "memories", "add", "--user", "mover", "I like chess.")
    assert "note." in out

"""The `memory-agent` command line, on the embedded default in a temporary home."""

from __future__ import annotations

import json
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
    assert "用户不吃辣。" in step4 and "event: 下周三我们上线" in step4
    step6 = out.split("── step 6")[1].split("── what")[0]
    assert "Munich" in step6 and "Berlin" not in step6 and "小王" not in step6.split("user:")[1]
    assert "[superseded] fact profile.city: User lives in Berlin." in out
    # A second run starts from a clean slate instead of piling up duplicates.
    code, again, _ = cli(capsys, "demo", "--home", str(tmp_path / "demo"))
    assert code == 0 and "reset: deleted" in again
    assert again.count("[active] fact profile.city") == 1

"""Bad input at the edges: oversized or undecodable chat lines, import rows, settings, user ids.

Each case here once ended a session in a traceback, lost data silently or wrote files others
could read; the tests pin the clear refusal that replaced it.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from agent.cli import main
from graphs.context import Context
from graphs.memory_agent import build_graph
from graphs.nodes import ANSWER_RESERVE_TOKENS
from graphs.offline import OfflineChatModel
from graphs.settings import SYSTEM_PROMPT_RESERVE_TOKENS, Settings, message_tokens
from memory.backends import BackendConfig, aopen_backends, open_backends
from memory.index.embeddings import LOCAL_MAX_CHARS, OPENAI_MAX_CHARS, LocalEmbedder, OpenAIEmbedder
from memory.service import MemoryService
from memory.store.records import InvalidUserId, check_user_id

CLI = Path(sys.executable).parent / "memory-agent"


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def row(content: str, rid: str = "r1", subject: str = "note.x") -> dict[str, object]:
    return {"id": rid, "user_id": "x", "kind": "fact", "subject": subject, "content": content}


# --- 1. a chat line the context budget cannot hold ----------------------------------------------


async def test_a_message_of_the_default_maximum_length_fits_the_default_budget(index) -> None:
    settings = Settings()
    graph = build_graph(
        InMemorySaver(), InMemoryStore(), settings=settings, model=OfflineChatModel(), index=index
    )
    text = ("Plain words about the weather and the garden. " * 400)[: settings.max_message_chars]
    assert len(text) == settings.max_message_chars
    out = await graph.ainvoke(
        {"messages": [HumanMessage(text)]},
        {"configurable": {"thread_id": "t"}},
        context=Context(user_id="alice"),
    )
    assert isinstance(out["messages"][-1], AIMessage) and out["messages"][-1].content


def test_the_default_limit_leaves_room_for_the_prompt_and_the_answer() -> None:
    s = Settings()
    reserve = ANSWER_RESERVE_TOKENS + SYSTEM_PROMPT_RESERVE_TOKENS
    assert message_tokens(s.max_message_chars) + reserve <= s.context_tokens
    assert Settings.from_env().max_message_chars == s.max_message_chars


def test_a_message_limit_the_budget_cannot_hold_is_refused(monkeypatch) -> None:
    monkeypatch.setenv("MEMORY_AGENT_MAX_MESSAGE_CHARS", "32000")
    with pytest.raises(ValueError) as err:
        Settings.from_env()
    assert "MEMORY_AGENT_MAX_MESSAGE_CHARS" in str(err.value)
    assert "MEMORY_AGENT_CONTEXT_TOKENS" in str(err.value)
    monkeypatch.setenv("MEMORY_AGENT_CONTEXT_TOKENS", "12000")
    assert Settings.from_env().max_message_chars == 32000


def test_a_smaller_budget_lowers_the_default_limit_to_what_fits(monkeypatch) -> None:
    monkeypatch.setenv("MEMORY_AGENT_CONTEXT_TOKENS", "5000")
    s = Settings.from_env()
    reserve = ANSWER_RESERVE_TOKENS + SYSTEM_PROMPT_RESERVE_TOKENS
    assert 0 < s.max_message_chars < Settings().max_message_chars
    assert message_tokens(s.max_message_chars) + reserve <= 5000
    assert message_tokens(s.max_message_chars + 8) + reserve > 5000


def test_chat_reports_a_line_that_overflows_the_budget_and_goes_on(capsys, monkeypatch) -> None:
    # A message within the limit, but sixteen long recalled memories leave it too little room.
    monkeypatch.setenv("MEMORY_AGENT_CONTEXT_TOKENS", "4096")
    monkeypatch.setenv("MEMORY_AGENT_MAX_MESSAGE_CHARS", "4000")
    monkeypatch.setenv("MEMORY_AGENT_RECALL_K", "16")
    for n in range(16):
        text = f"User likes story number {n}: " + " ".join(f"story{n}x{i}" for i in range(60))
        code, _, err = cli(
            capsys, "memories", "add", "--user", "alice", text[:400], "--subject", f"likes.s{n}"
        )
        assert code == 0, err
    lines = iter(
        [("tell me a story about story " * 200)[:4000], "I live in Berlin.", "/memories", "/quit"]
    )
    monkeypatch.setattr("builtins.input", lambda prompt="": next(lines))
    code, out, err = cli(capsys, "chat", "--user", "alice")
    assert code == 0, err
    assert "\nerror: the latest message alone exceeds the context budget" in out
    assert "(memory) added: [fact profile.city] User lives in Berlin." in out
    assert "fact  profile.city: User lives in Berlin." in out  # listed by /memories


# --- 2. a chat line that is not UTF-8 -----------------------------------------------------------


@pytest.mark.parametrize(
    "stdin_env",
    [{"PYTHONIOENCODING": "utf-8:strict"}, {"PYTHONIOENCODING": "utf-8:surrogateescape"}],
    ids=["strict", "surrogateescape"],
)
def test_chat_refuses_a_line_that_is_not_utf8_and_goes_on(tmp_path: Path, stdin_env) -> None:
    # Python reads stdin strictly (UnicodeDecodeError) or with surrogates, by locale: both.
    env = {**os.environ, **stdin_env, "MEMORY_AGENT_HOME": str(tmp_path / "home")}
    done = subprocess.run(
        [str(CLI), "chat", "--user", "alice"],
        input=b"hello\n\xff\xfe bad\nI live in Berlin.\n/memories\n/quit\n",
        capture_output=True,
        env=env,
        timeout=300,
    )
    out = done.stdout.decode("utf-8")
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")
    assert "error: that line is not valid UTF-8" in out
    memories = out.split("you> ")[-2]  # what /memories printed
    assert "User lives in Berlin." in memories


# --- 3. import rows and embedding input ----------------------------------------------------------


def test_an_oversized_import_row_is_refused_by_number(service: MemoryService) -> None:
    limit = MemoryService.MAX_IMPORT_CONTENT_CHARS
    rows = [row("fine", "a"), row("x" * (limit + 1), "b", "note.y")]
    with pytest.raises(ValueError, match=r"record 2 .*characters") as err:
        service.import_records("kim", rows)
    assert f"{limit:,}" in str(err.value)
    assert service.list("kim", include_inactive=True) == []
    assert service.import_records("kim", [row("y" * limit, "c")]) == 1


def test_duplicate_import_ids_are_refused_naming_both_rows(service: MemoryService) -> None:
    rows = [row("one", "same"), row("two", "other", "note.y"), row("three", "same", "note.z")]
    with pytest.raises(ValueError, match=r"'same'.*records 1 and 3"):
        service.import_records("kim", rows)
    assert service.list("kim", include_inactive=True) == []


def test_cli_import_of_a_5mb_row_is_refused(capsys, tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    path.write_text(json.dumps(row("word " * 1_000_000)) + "\n", encoding="utf-8")
    code, _, err = cli(capsys, "memories", "import", "--user", "alice", str(path))
    assert code == 2 and err.startswith(f"error: {path}: record 1")  # the file is named
    code, out, _ = cli(capsys, "memories", "list", "--user", "alice", "--all")
    assert "(no memories)" in out


def test_local_embedding_reads_only_the_encoders_window() -> None:
    embedder = LocalEmbedder()
    head = " ".join(f"word{i}" for i in range(LOCAL_MAX_CHARS))[:LOCAL_MAX_CHARS]
    long, short = embedder.embed([head + " and a long tail" * 1000, head])
    assert float(long @ short) > 0.9999


def test_openai_embedding_input_is_cut_to_the_documented_limit() -> None:
    sent: list[list[str]] = []

    class Client:
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            sent.append(texts)
            return [[1.0, 0.0] for _ in texts]

    embedder = OpenAIEmbedder("m", base_url="http://127.0.0.1:9/v1")
    embedder._client = Client()  # type: ignore[assignment]
    embedder.embed(["a" * (OPENAI_MAX_CHARS * 3), "short"])
    assert [len(t) for t in sent[0]] == [OPENAI_MAX_CHARS, 5]


# --- 4. numeric settings out of range -----------------------------------------------------------


@pytest.mark.parametrize(
    ("var", "value"),
    [
        ("MEMORY_AGENT_EVENT_TTL_DAYS", "1e400"),
        ("MEMORY_AGENT_EVENT_TTL_DAYS", "nan"),
        ("MEMORY_AGENT_EVENT_TTL_DAYS", "0"),
        ("MEMORY_AGENT_ARCHIVE_DAYS", "99999999999"),
        ("MEMORY_AGENT_ARCHIVE_DAYS", "-1"),
        ("MEMORY_AGENT_TURN_TTL_DAYS", "inf"),
        ("MEMORY_AGENT_RECALL_K", "0"),
        ("MEMORY_AGENT_RECALL_K", "101"),
        ("MEMORY_AGENT_CONTEXT_TOKENS", "100"),
        ("MEMORY_AGENT_CONTEXT_TOKENS", "9" * 30),
        ("MEMORY_AGENT_SUMMARY_TOKENS", "0"),
        ("MEMORY_AGENT_EXTRACT_DELAY", "-0.5"),
        ("MEMORY_AGENT_EXTRACT_DELAY", "3601"),
        ("MEMORY_AGENT_MAX_MESSAGE_CHARS", "0"),
        ("MEMORY_AGENT_CANDIDATE_THRESHOLD", "1.5"),
        ("MEMORY_AGENT_CANDIDATE_THRESHOLD", "-inf"),
        ("CHROMA_PORT", "0"),
        ("CHROMA_PORT", "65536"),
    ],
)
def test_numeric_settings_out_of_range_are_refused(monkeypatch, var: str, value: str) -> None:
    monkeypatch.setenv(var, value)
    with pytest.raises(ValueError, match=rf"^{var}={value!r} is out of range: use "):
        Settings.from_env()


@pytest.mark.parametrize(
    ("var", "value"),
    [("MEMORY_AGENT_EVENT_TTL_DAYS", "1e400"), ("MEMORY_AGENT_ARCHIVE_DAYS", "99999999999")],
)
def test_cli_reports_an_out_of_range_setting(capsys, monkeypatch, var: str, value: str) -> None:
    monkeypatch.setenv(var, value)
    code, out, err = cli(capsys, "memories", "list", "--user", "alice")
    assert code == 2 and out == ""
    assert err.startswith(f"error: {var}={value!r} is out of range: use a number above 0")


def test_the_edges_of_the_ranges_are_accepted(monkeypatch) -> None:
    for var, value in {
        "MEMORY_AGENT_ARCHIVE_DAYS": "36500",
        "MEMORY_AGENT_EVENT_TTL_DAYS": "0.5",
        "MEMORY_AGENT_RECALL_K": "100",
        "MEMORY_AGENT_EXTRACT_DELAY": "0",
        "MEMORY_AGENT_CANDIDATE_THRESHOLD": "1",
        "CHROMA_PORT": "65535",
    }.items():
        monkeypatch.setenv(var, value)
    s = Settings.from_env()
    assert s.policy.archive_after.days == 36500 and s.recall_k == 100
    assert s.backend.chroma_port == 65535 and s.extract_delay == 0


# --- 5. user ids with invisible or surrounding characters ---------------------------------------


@pytest.mark.parametrize(
    "user",
    [
        "alice ",
        " alice",
        "alice\t",
        "alice\n",
        "alice\u00a0",
        "\u200balice",
        "al\u200dice",
        "a\u3000",
    ],
)
def test_user_ids_with_spaces_or_invisible_characters_are_refused(user: str) -> None:
    with pytest.raises(InvalidUserId, match=r"U\+[0-9A-F]{4}"):
        check_user_id(user)


def test_composed_characters_are_still_normalized() -> None:
    assert check_user_id("jose\u0301") == "jos\u00e9"
    assert check_user_id("小王") == "小王"


def test_cli_refuses_a_user_id_with_a_trailing_space(capsys) -> None:
    code, _, err = cli(capsys, "memories", "add", "--user", "alice ", "User likes tea.")
    assert code == 2 and "U+0020 SPACE" in err
    code, out, _ = cli(capsys, "memories", "list", "--user", "alice")
    assert "(no memories)" in out


# --- 6. private files ---------------------------------------------------------------------------


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _assert_private(home: Path) -> None:
    assert _mode(home) == 0o700
    assert _mode(home / "chroma") == 0o700
    for name in ("checkpoints.sqlite", "store.sqlite"):
        for suffix in ("", "-wal", "-shm"):
            f = home / (name + suffix)
            if suffix == "":
                assert f.exists()
            if f.exists():
                assert _mode(f) == 0o600, f


def test_embedded_backends_are_private_to_the_user(tmp_path: Path) -> None:
    home = tmp_path / "new" / "home"
    with open_backends(BackendConfig(home=str(home))) as b:
        MemoryService(b.store, b.index).add("alice", "User likes tea.")
        _assert_private(home)
    _assert_private(home)


async def test_async_embedded_backends_are_private_to_the_user(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with aopen_backends(BackendConfig(home=str(home))) as b:
        await b.store.aput(("x",), "k", {"v": 1})
        _assert_private(home)


def test_existing_database_files_are_made_private(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with open_backends(BackendConfig(home=str(home))):
        pass
    for f in home.glob("*.sqlite*"):
        f.chmod(0o644)
    with open_backends(BackendConfig(home=str(home))):
        _assert_private(home)

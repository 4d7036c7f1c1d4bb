"""Progress of long work: the service's `progress` callback and the CLI's bar on a terminal."""

from __future__ import annotations

import fcntl
import json
import os
import re
import select
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore
from openai_stub import OpenAIStub

from agent.cli import main
from memory.index.chroma import ChromaIndex
from memory.service import MemoryService

REPO = Path(__file__).resolve().parents[2]
TOPICS = ["jazz", "tennis", "Berlin", "sushi", "Python", "chess", "hiking", "Kyoto", "violin"]


class Recorder:
    """A progress callback that keeps every call."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, int | None, str]] = []

    def __call__(self, done: int, total: int | None, label: str) -> None:
        self.calls.append((done, total, label))

    def stages(self) -> list[tuple[str, int | None, list[int]]]:
        """Return `(label, total, done counts)` per stage, checking each counts 0 → total."""
        out: list[tuple[str, int | None, list[int]]] = []
        for done, total, label in self.calls:
            if not out or out[-1][0] != label:
                out.append((label, total, [done]))
            else:
                assert out[-1][1] == total, f"{label}: the total changed mid-stage"
                out[-1][2].append(done)
        for label, total, dones in out:
            assert dones[0] == 0, f"{label} did not start at 0: {dones}"
            assert dones == sorted(dones), f"{label} went backwards: {dones}"
            if total is not None:
                assert dones[-1] == total, f"{label} stopped at {dones[-1]} of {total}"
        return out

    def totals(self) -> list[tuple[str, int | None]]:
        return [(label, total) for label, total, _ in self.stages()]


def rows(n: int, *, superseded: int = 0) -> list[dict[str, Any]]:
    """`n` exported rows, the last `superseded` of them history (not recallable)."""
    out = []
    for i in range(n):
        topic = TOPICS[i % len(TOPICS)]
        out.append(
            {
                "id": f"m{i}",
                "kind": "fact",
                "subject": f"note.n{i}",
                "content": f"Note {i}: the user once mentioned {topic} on day {i // 9}.",
                "status": "superseded" if i >= n - superseded else "active",
            }
        )
    return out


# --- the service -------------------------------------------------------------------------------


def test_import_reports_checking_writing_and_indexing_up_to_each_total(
    service: MemoryService, index: ChromaIndex
) -> None:
    progress = Recorder()
    n = service.import_records("u", rows(520, superseded=260), progress=progress)
    assert n == 520
    assert progress.stages() == [
        ("u: checking", 520, list(range(521))),
        ("u: writing", 520, [0, 500, 520]),  # one store batch per 500 rows
        ("u: indexing", 260, [0, 256, 260]),  # only recallable rows get a vector
    ]
    assert len(index.ids("u")) == 260


def test_import_of_a_stream_counts_rows_without_a_total_and_without_an_index() -> None:
    service = MemoryService(InMemoryStore(), None)
    progress = Recorder()
    assert service.import_records("u", iter(rows(3)), progress=progress) == 3
    assert progress.stages() == [("u: checking", None, [0, 1, 2, 3]), ("u: writing", 3, [0, 3])]


def test_a_refused_import_stops_while_checking(service: MemoryService) -> None:
    progress = Recorder()
    bad = [*rows(2), {"id": "x", "kind": "fact"}]
    try:
        service.import_records("u", bad, progress=progress)
    except ValueError as exc:
        assert "record 3" in str(exc)
    else:
        raise AssertionError("a broken row was imported")
    # Two rows checked, then the third refused: nothing was written, so no other stage.
    assert progress.calls == [(0, 3, "u: checking"), (1, 3, "u: checking"), (2, 3, "u: checking")]
    assert service.list("u") == []


def _unindexed(service: MemoryService, user: str, items: list[dict[str, Any]]) -> None:
    """Import into the service's store only, as if every index write had failed."""
    MemoryService(service.store, None).import_records(user, items)


def test_reindex_reports_each_users_vectors(service: MemoryService, index: ChromaIndex) -> None:
    _unindexed(service, "u", rows(260))
    _unindexed(service, "v", rows(4))
    progress = Recorder()
    assert service.reindex("v", progress=progress) == {"v": 4}
    assert progress.stages() == [("v: indexing", 4, [0, 4])]

    everyone = Recorder()
    assert service.reindex(progress=everyone) == {"u": 260, "v": 4}
    assert sorted(everyone.stages()) == [
        ("[1/2] u: indexing", 260, [0, 256, 260]),
        ("[2/2] v: indexing", 4, [0, 4]),
    ]
    assert len(index.ids("u")) == 260


def test_delete_user_reports_threads_then_memories(index: ChromaIndex) -> None:
    checkpointer = InMemorySaver()
    service = MemoryService(InMemoryStore(), index, checkpointer=checkpointer)
    service.import_records("u", rows(40))
    for t in ("t1", "t2", "t3"):
        service.remember_thread("u", t)
    progress = Recorder()
    assert service.delete_user("u", progress=progress) == 40
    assert progress.stages() == [
        ("u: deleting threads", 3, [0, 1, 2, 3]),
        ("u: deleting memories", 40, list(range(41))),
    ]
    assert service.list("u") == [] and service.threads("u") == [] and index.ids("u") == set()


def test_consolidate_reports_tidying_and_re_embedding(
    service: MemoryService, index: ChromaIndex
) -> None:
    # Vectors never written (the index was down): consolidate embeds them.
    _unindexed(service, "u", rows(260))

    dry = Recorder()
    service.consolidate("u", dry_run=True, progress=dry)
    assert dry.totals() == [("u: tidying", 1)]  # a dry run re-embeds nothing

    progress = Recorder()
    report = service.consolidate("u", progress=progress)
    assert report.reindexed == 260
    assert progress.stages() == [("u: tidying", 1, [0, 1]), ("u: re-embedding", 260, [0, 256, 260])]
    assert len(index.ids("u")) == 260

    _unindexed(service, "v", rows(2))
    everyone = Recorder()
    service.consolidate(progress=everyone)
    assert sorted(everyone.totals()) == [
        ("[1/2] u: re-embedding", 0),  # nothing left to embed: still reported, as done
        ("[1/2] u: tidying", 1),
        ("[2/2] v: re-embedding", 2),
        ("[2/2] v: tidying", 1),
    ]


async def test_async_forms_report_from_their_worker_thread(service: MemoryService) -> None:
    imported, reindexed, deleted = Recorder(), Recorder(), Recorder()
    assert await service.aimport_records("u", rows(5), progress=imported) == 5
    assert await service.areindex("u", progress=reindexed) == {"u": 5}
    assert await service.adelete_user("u", progress=deleted) == 5
    assert imported.totals() == [("u: checking", 5), ("u: writing", 5), ("u: indexing", 5)]
    assert reindexed.totals() == [("u: indexing", 5)]
    assert deleted.totals() == [("u: deleting threads", 0), ("u: deleting memories", 5)]


# --- the command line --------------------------------------------------------------------------


def _env(stub: OpenAIStub) -> dict[str, str]:
    # Embeddings from the loopback stub: the bundled encoder would spend most of the run
    # embedding 5,000 texts, which is not what these tests are about.
    return {
        **os.environ,
        "MEMORY_AGENT_MODEL": "offline",
        "MEMORY_AGENT_EMBEDDINGS": "openai:text-embedding-3-small",
        "OPENAI_BASE_URL": stub.base_url,
        "OPENAI_API_KEY": "test",
        "TERM": "xterm-256color",
    }


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "agent.cli", *args]


def _in_terminal(argv: list[str], env: dict[str, str]) -> tuple[int, str]:
    """Run a command with stdin, stdout and stderr on a pseudo-terminal; return its output."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=REPO)
    os.close(slave)
    out = bytearray()
    deadline = time.monotonic() + 120
    # poll, not select: after a long test session the descriptor may be above 1023.
    poller = select.poll()
    poller.register(master, select.POLLIN)
    try:
        while True:
            ready = poller.poll(max(deadline - time.monotonic(), 0) * 1000)
            if not ready:
                proc.kill()
                raise AssertionError(f"{argv} did not finish; it printed: {out.decode()!r}")
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            out += chunk
    finally:
        os.close(master)
    return proc.wait(timeout=30), out.decode("utf-8", "replace")


def _piped(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, env=env, cwd=REPO, timeout=120)


def _jsonl(path: Path, items: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in items), encoding="utf-8")
    return path


def _bar_shown(output: str, counted: str) -> bool:
    """True if a progress bar was drawn that reached 100% with `counted` ("done/total")."""
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", output)
    return re.search(rf"━+ +100% +{re.escape(counted)} ", plain) is not None


@pytest.fixture
def stub() -> Iterator[OpenAIStub]:
    with OpenAIStub() as server:
        yield server


def test_import_of_5000_rows_shows_a_bar_on_a_terminal_and_nothing_when_piped(
    stub: OpenAIStub, tmp_path: Path
) -> None:
    data = _jsonl(tmp_path / "export.jsonl", rows(5000))
    env = _env(stub)

    started = time.perf_counter()
    code, shown = _in_terminal(_cli("memories", "import", "--user", "bulk", str(data)), env)
    seconds = time.perf_counter() - started
    assert code == 0, shown
    assert "imported 5000 memories for bulk" in shown
    assert _bar_shown(shown, "5000/5000") and "bulk: indexing" in shown
    print(f"5,000-row import on a terminal: {seconds:.1f} s")

    piped = _piped(_cli("memories", "import", "--user", "again", str(data)), env)
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout == "imported 5000 memories for again\n"
    assert piped.stderr == ""


def test_json_output_draws_no_bar_even_on_a_terminal(stub: OpenAIStub, tmp_path: Path) -> None:
    data = _jsonl(tmp_path / "export.jsonl", rows(30))
    code, shown = _in_terminal(
        _cli("memories", "import", "--user", "u", str(data), "--json"), _env(stub)
    )
    assert code == 0, shown
    assert json.loads(shown.strip()) == {"imported": 30}
    assert "━" not in shown and "%" not in shown


@pytest.mark.parametrize(
    ("argv", "said", "counted"),
    [
        (["reindex"], "reindexed 30 memories of u", "30/30"),
        (["memories", "delete-user", "--user", "u", "--yes"], "deleted 30 memories of u", "30/30"),
        (["consolidate", "--user", "u"], "[1/1] u", "1/1"),
    ],
)
def test_long_commands_show_a_bar_on_a_terminal(
    stub: OpenAIStub,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    said: str,
    counted: str,
) -> None:
    env = _env(stub)
    for name in ("MEMORY_AGENT_MODEL", "MEMORY_AGENT_EMBEDDINGS", "OPENAI_BASE_URL"):
        monkeypatch.setenv(name, env[name])
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    data = _jsonl(tmp_path / "export.jsonl", rows(30))
    # Imported in this process, where stderr is not a terminal: the usual output only.
    assert main(["memories", "import", "--user", "u", str(data)]) == 0
    assert capsys.readouterr().err == ""

    code, shown = _in_terminal(_cli(*argv), env)
    assert code == 0, shown
    assert said in shown and _bar_shown(shown, counted), shown

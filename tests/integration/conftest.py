"""Generic helpers for integration tests that start real servers as subprocesses."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import psycopg
import pytest

REPO = Path(__file__).resolve().parents[2]

# The benchmarks start the same servers (`deploy_load.py`), so the one starter lives in
# benchmarks/ (free of import side effects). Appended: no benchmark script may shadow a
# module the tests import.
sys.path.append(str(REPO / "benchmarks"))
from _servers import (  # noqa: E402
    ServerProcess,
    chroma_run,
    free_port,
    offline_env,
    start_server,
    venv_bin,
    wait_http,
)

__all__ = ["REPO", "ServerProcess", "Servers", "free_port", "offline_env", "sdk_client"]


@contextlib.asynccontextmanager
async def sdk_client(url: str, server: ServerProcess) -> AsyncIterator[Any]:
    """An SDK client of a `langgraph dev`; the server's log meanwhile is printed at the end
    (pytest shows it when the test fails)."""
    from langgraph_sdk import get_client

    start = server.log_size()
    lg = get_client(url=url, timeout=60)
    try:
        yield lg
    finally:
        await lg.aclose()
        print(f"--- langgraph dev log during this test ---\n{server.log(start)}")


class Servers:
    """Starts servers for a test module and stops every one of them at teardown."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.started: list[ServerProcess] = []

    free_port = staticmethod(free_port)
    wait_http = staticmethod(wait_http)
    bin = staticmethod(venv_bin)
    env = staticmethod(offline_env)

    def start(
        self,
        argv: Sequence[str],
        *,
        ready_url: str,
        cwd: Path | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float = 120.0,
    ) -> ServerProcess:
        """Start a server and wait until `ready_url` answers 200."""
        server = start_server(
            argv,
            ready_url=ready_url,
            log_path=self.tmp / f"server-{len(self.started)}.log",
            cwd=cwd or self.tmp,
            env=env,
            timeout=timeout,
        )
        self.started.append(server)
        return server

    def chroma(self, path: Path, *, port: int | None = None) -> tuple[int, ServerProcess]:
        """Start `chroma run` (data under `path`) on `port` or a free one; return port, server."""
        log_path = self.tmp / f"server-{len(self.started)}.log"
        server, port = chroma_run(path, log_path=log_path, port=port)
        self.started.append(server)
        return port, server

    def langgraph_dev(
        self, name: str, graph: str, *, keys: Sequence[str] = (), **env: str
    ) -> tuple[str, ServerProcess]:
        """Start `langgraph dev` serving one graph of the repo's `langgraph.json`.

        It runs from a scratch directory with a copy of that entry, which keeps
        `.langgraph_api/` and memory files out of the repo. `keys` ("auth", "http") are
        copied from the repo's file too, their `./` paths made absolute.
        No `--allow-blocking`: blockbuster stays on, so a node that blocks the loop fails.
        """
        work = self.tmp / name
        work.mkdir()
        repo_config = json.loads((REPO / "langgraph.json").read_text())
        file, _, attr = repo_config["graphs"][graph].partition(":")
        config = {"dependencies": [str(REPO)], "graphs": {graph: f"{REPO / file}:{attr}"}}
        for key in keys:
            text = json.dumps(repo_config[key]).replace('"./', f'"{REPO}/')
            config[key] = json.loads(text)
        (work / "langgraph.json").write_text(json.dumps(config))
        port = self.free_port()
        settings = {
            "LANGGRAPH_CLI_NO_ANALYTICS": "1",
            "LANGGRAPH_NO_VERSION_CHECK": "true",
            "MEMORY_AGENT_MODEL": "offline",
            "MEMORY_AGENT_HOME": str(work / "home"),
            "CHROMA_PATH": str(work / "chroma"),
        }
        server_env = self.env(**{**settings, **env})
        server = self.start(
            [str(self.bin("langgraph")), "dev", "--no-reload", "--no-browser",
             "--host", "127.0.0.1", "--port", str(port)],
            ready_url=f"http://127.0.0.1:{port}/ok",
            cwd=work,
            env=server_env,
            timeout=120,
        )  # fmt: skip
        return f"http://127.0.0.1:{port}", server

    def stop_all(self) -> None:
        """Stop every server this object started."""
        for server in self.started:
            server.stop()


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    """A module's server starter; whatever it started is stopped when the module ends."""
    started = Servers(tmp_path_factory.mktemp("servers"))
    try:
        yield started
    finally:
        started.stop_all()


# --- PostgreSQL ---------------------------------------------------------------------------

CANDIDATE_URLS = (
    "postgresql://postgres@127.0.0.1:5432/test",
    "postgresql://root@127.0.0.1:5432/test",
)
CHECKPOINT_TABLES = ("checkpoint_writes", "checkpoint_blobs", "checkpoints")


def _reachable(url: str) -> bool:
    try:
        with psycopg.connect(url, connect_timeout=3) as conn:
            conn.execute("select 1")
        return True
    except psycopg.Error:
        return False


@pytest.fixture(scope="session")
def pg_url() -> str:
    """A reachable Postgres URL with the checkpointer and store tables created."""
    from langgraph.checkpoint.postgres import PostgresSaver
    from langgraph.store.postgres import PostgresStore

    explicit = os.environ.get("TEST_DATABASE_URL")
    urls = (explicit,) if explicit else CANDIDATE_URLS
    url = next((u for u in urls if u and _reachable(u)), None)
    if url is None:
        # CI machines run PostgreSQL: there a missing server is a failure, not a skip.
        message = f"no PostgreSQL answers at {', '.join(u or '' for u in urls)}"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    for attempt in range(3):  # another test process may be creating the tables right now
        try:
            with PostgresSaver.from_conn_string(url) as saver:
                saver.setup()
            with PostgresStore.from_conn_string(url) as store:
                store.setup()
            break
        except psycopg.errors.UniqueViolation:
            if attempt == 2:
                raise
    return url


def _delete_rows(url: str, user_ids: list[str]) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        for user in user_ids:
            for root in ("memories", "threads", "index_repair", "memory_changes"):
                conn.execute(
                    "delete from store where prefix = %s or prefix like %s",
                    (f"{root}.{user}", f"{root}.{user}.%"),
                )
            conn.execute(
                "delete from store where prefix = 'thread_owners' and key like %s", (f"{user}%",)
            )
            for table in CHECKPOINT_TABLES:
                conn.execute(f"delete from {table} where thread_id like %s", (f"{user}%",))


@pytest.fixture
def new_user(pg_url: str) -> Iterator[Callable[..., str]]:
    """Return a factory of unique user ids; their rows are deleted after the test."""
    made: list[str] = []
    run = uuid.uuid4().hex[:10]

    def make(label: str = "u") -> str:
        made.append(f"pg-{run}-{label}")
        return made[-1]

    yield make
    _delete_rows(pg_url, made)

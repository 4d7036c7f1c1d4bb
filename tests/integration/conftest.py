"""Generic helpers for integration tests that start real servers as subprocesses."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import psycopg
import pytest

# Variables that would point a server at real services or leak a key into it.
_LEAKY_ENV = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "DATABASE_URL",
    "POSTGRES_URI",
    "CHROMA_HOST",
    "CHROMA_PORT",
    "LANGSMITH_API_KEY",
    "LANGCHAIN_API_KEY",
)


REPO = Path(__file__).resolve().parents[2]


def venv_bin(name: str) -> Path:
    """Return a console script installed next to the running interpreter."""
    return Path(sys.executable).parent / name


def free_port() -> int:
    """Return a TCP port on loopback that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def offline_env(**extra: str) -> dict[str, str]:
    """Return this process's environment without keys or remote endpoints, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if k not in _LEAKY_ENV}
    env.update(
        ANONYMIZED_TELEMETRY="False",
        LANGSMITH_TRACING="false",
        LANGCHAIN_TRACING_V2="false",
        NO_PROXY="127.0.0.1,localhost",
        no_proxy="127.0.0.1,localhost",
    )
    env.update(extra)
    return env


class ServerProcess:
    """A server started in its own process group, logging to a file."""

    def __init__(
        self, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], log_path: Path
    ) -> None:
        self.log_path = log_path
        self._log = log_path.open("wb")
        # Own session: stopping the group also stops workers the server forks.
        self.proc = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def alive(self) -> bool:
        """Return True while the server process runs."""
        return self.proc.poll() is None

    def log(self, since: int = 0) -> str:
        """Return the server's output from byte offset `since`."""
        if not self._log.closed:
            self._log.flush()
        with self.log_path.open("rb") as f:
            f.seek(since)
            return f.read().decode(errors="replace")

    def log_size(self) -> int:
        """Return how many bytes the server has logged so far."""
        return self.log_path.stat().st_size

    def stop(self, grace: float = 10.0) -> None:
        """Terminate the process group, killing it if it outlives `grace` seconds."""
        if self.alive():
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=grace)
            except ProcessLookupError:
                pass
        # Workers may outlive a leader that exited on SIGTERM.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self._log.close()


def wait_http(url: str, timeout: float, *, server: ServerProcess | None = None) -> None:
    """Poll `url` until it answers 200.

    Raises:
        RuntimeError: If it does not within `timeout` seconds or `server` exits first;
            the message carries the server's log.
    """
    # No proxy, ever: the servers are on loopback.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    deadline = time.monotonic() + timeout
    last = "no attempt"
    while time.monotonic() < deadline:
        if server is not None and not server.alive():
            raise RuntimeError(
                f"server exited with {server.proc.returncode} before {url} answered:\n"
                + server.log()
            )
        try:
            with opener.open(url, timeout=2) as resp:
                if resp.status == 200:
                    return
                last = f"HTTP {resp.status}"
        except (urllib.error.URLError, OSError) as exc:
            last = f"{exc.__class__.__name__}: {exc}"
        time.sleep(0.25)
    logged = server.log() if server is not None else ""
    raise RuntimeError(f"{url} not ready after {timeout:.0f}s ({last}):\n{logged}")


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
        n = len(self.started)
        server = ServerProcess(
            argv,
            cwd=cwd or self.tmp,
            env=env if env is not None else offline_env(),
            log_path=self.tmp / f"server-{n}.log",
        )
        self.started.append(server)
        wait_http(ready_url, timeout, server=server)
        return server

    def langgraph_dev(self, name: str, graph: str, **env: str) -> tuple[str, ServerProcess]:
        """Start `langgraph dev` serving one graph of the repo's `langgraph.json`.

        It runs from a scratch directory with a copy of that entry, which keeps
        `.langgraph_api/` and memory files out of the repo.
        No `--allow-blocking`: blockbuster stays on, so a node that blocks the loop fails.
        """
        work = self.tmp / name
        work.mkdir()
        target = json.loads((REPO / "langgraph.json").read_text())["graphs"][graph]
        file, _, attr = target.partition(":")
        config = {"dependencies": [str(REPO)], "graphs": {graph: f"{REPO / file}:{attr}"}}
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
    url = next((u for u in urls if _reachable(u)), None)
    if url is None:
        # CI machines run PostgreSQL: there a missing server is a failure, not a skip.
        message = f"no PostgreSQL answers at {', '.join(urls)}"
        pytest.fail(message) if os.environ.get("CI") else pytest.skip(message)
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

"""Real servers as subprocesses on loopback: start, wait until ready, stop.

The one place that starts a `chroma run` server (`chroma_run`) and other servers
(`ServerProcess`, `wait_http`) for the benchmarks (`deploy_load.py`) and the integration
tests (`tests/integration/conftest.py`). Standard library only and free of import side
effects (unlike `_common`, which sets the benchmarks' environment), so tests can import it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path

HOST = "127.0.0.1"

# Variables that would point a server at real services or leak a key into it.
LEAKY_ENV = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "DATABASE_URL",
    "POSTGRES_URI",
    "CHROMA_HOST",
    "CHROMA_PORT",
    "LANGSMITH_API_KEY",
    "LANGCHAIN_API_KEY",
)


def venv_bin(name: str) -> Path:
    """Return a console script installed next to the running interpreter."""
    return Path(sys.executable).parent / name


def free_port(host: str = HOST) -> int:
    """Return a TCP port on `host` that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def offline_env(**extra: str) -> dict[str, str]:
    """Return this process's environment without keys or remote endpoints, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if k not in LEAKY_ENV}
    env.update(
        ANONYMIZED_TELEMETRY="False",
        LANGSMITH_TRACING="false",
        LANGCHAIN_TRACING_V2="false",
        NO_PROXY=f"{HOST},localhost",
        no_proxy=f"{HOST},localhost",
    )
    env.update(extra)
    return env


class ServerProcess:
    """A server started in its own process group, logging to a file."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        log_path: Path,
        name: str = "",
    ) -> None:
        """Start the server.

        Args:
            argv: The command line.
            cwd: Its working directory.
            env: Its whole environment.
            log_path: Where its stdout and stderr go.
            name: What error messages call it (default: the program's name).

        """
        self.name = name or Path(argv[0]).name
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

    def tail(self, chars: int = 3000) -> str:
        """Return the end of the server's log."""
        return self.log()[-chars:]

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
                f"{server.name} exited with {server.proc.returncode} before {url} answered:\n"
                + server.tail()
            )
        try:
            with opener.open(url, timeout=2) as resp:
                if resp.status == 200:
                    return
                last = f"HTTP {resp.status}"
        except (urllib.error.URLError, OSError) as exc:
            last = f"{exc.__class__.__name__}: {exc}"
        time.sleep(0.25)
    logged = server.tail() if server is not None else ""
    raise RuntimeError(f"{url} not ready after {timeout:.0f}s ({last}):\n{logged}")


def start_server(
    argv: Sequence[str],
    *,
    ready_url: str,
    log_path: Path,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 120.0,
    name: str = "",
) -> ServerProcess:
    """Start a server and wait until `ready_url` answers 200; stop it if it never does.

    Args:
        argv: The command line.
        ready_url: A URL that answers 200 once the server serves.
        log_path: Where its output goes.
        cwd: Its working directory (default: the log's directory).
        env: Its environment (default: `offline_env()`).
        timeout: Seconds to wait for `ready_url`.
        name: What error messages call it.

    Raises:
        RuntimeError: If it is not ready in time; the message carries its log.

    """
    server = ServerProcess(
        argv,
        cwd=cwd or log_path.parent,
        env=env if env is not None else offline_env(),
        log_path=log_path,
        name=name,
    )
    try:
        wait_http(ready_url, timeout, server=server)
    except BaseException:
        server.stop()
        raise
    return server


def chroma_run(
    path: Path,
    *,
    log_path: Path,
    env: Mapping[str, str] | None = None,
    host: str = HOST,
    port: int | None = None,
    timeout: float = 60.0,
) -> tuple[ServerProcess, int]:
    """Start a `chroma run` server on `host`, its data under `path`.

    Returns the server, once its heartbeat answers, and its port: `port`, or a free one.

    Raises:
        RuntimeError: If it does not answer within `timeout` seconds.

    """
    port = port or free_port(host)
    server = start_server(
        [str(venv_bin("chroma")), "run", "--host", host, "--port", str(port),
         "--path", str(path)],
        ready_url=f"http://{host}:{port}/api/v2/heartbeat",
        log_path=log_path,
        env=env,
        timeout=timeout,
        name="chroma run",
    )  # fmt: skip
    return server, port

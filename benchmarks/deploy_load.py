"""Two app processes on one PostgreSQL database and one `chroma run` server, under load.

    python benchmarks/deploy_load.py [--seconds 120] [--users 4] [--workers 2]
        [--pg postgresql://postgres@127.0.0.1:5432/test] [--json] [--out FILE]

The deployment the README describes for more than one process, on the engines it names:

* a real `chroma run` server on a free loopback port (its own temporary directory);
* a fresh schema in the PostgreSQL database (dropped afterwards), its tables created once
  by this script before the servers start;
* two `memory-agent mcp --http` processes on that database and that Chroma server, with one
  token file: one bearer token per user, so the user comes from the token, never from a tool
  argument (`agent/mcp/auth.py`).

The load: for each user, `--workers` workers, each holding an MCP session (the official
client, streamable HTTP) to BOTH processes, calling tools for `--seconds` seconds; each call
goes to one process or the other at random. A worker states new facts (`remember`, one
unique subject and text per fact), states one of its earlier facts again (it must be
reinforced, not duplicated), sends one new fact to both processes at once (two processes
saving the same statement of one user concurrently), searches for its facts, and forgets
them (soft or hard), after which it searches for the forgotten fact in the OTHER process,
whose in-memory lexical snapshot saw nothing of the forget. A worker's calls run one after
another; the workers (and the users) run concurrently.

Afterwards, from both processes: every fact stated and not forgotten is active exactly once
(`facts_lost`, `duplicates`), no forgotten fact is listed or recalled (`forgets_broken`),
and, per user, the active records in the store and the vectors in Chroma are the same set
(`store_index_mismatches`). Prints one JSON object (calls per second as ``turns_per_s``:
one MCP tool call is one turn of the load).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import secrets
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402  (sets the offline environment before the imports below)
import _servers as S  # noqa: E402  (the servers the integration tests start too)

HOST = S.HOST
CALL_TIMEOUT = 120.0  # bound on one MCP call (the first loads the encoder); never asserted
# Words of the facts: a fact is "User keeps a <colour> <thing> called <name>.", the name
# unique per fact (letters only: digits could read as numbers the privacy filter withholds).
COLOURS = [
    "red",
    "blue",
    "green",
    "amber",
    "violet",
    "silver",
    "golden",
    "teal",
    "ivory",
    "crimson",
]
THINGS = ["kite", "lamp", "mug", "scarf", "vase", "clock", "chair", "drum", "bike", "boat"]
SYLLABLES = [
    "ka",
    "lo",
    "mi",
    "nu",
    "pe",
    "ri",
    "so",
    "tu",
    "va",
    "ze",
    "bo",
    "da",
    "fi",
    "gu",
    "he",
]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--seconds", type=float, default=120.0, help="length of the load")
    p.add_argument("--users", type=int, default=4)
    p.add_argument("--workers", type=int, default=2, help="workers per user")
    p.add_argument("--pg", default=C.DEFAULT_PG_URL, help="PostgreSQL database (a schema is made)")
    p.add_argument("--seed", type=int, default=5)
    C.output_args(p, chart=False)
    return p.parse_args(argv)


# --- processes ------------------------------------------------------------------------------


def server_env(**extra: str) -> dict[str, str]:
    """This process's environment for a server: offline, loopback only, plus `extra`."""
    env = S.offline_env(**C.OFFLINE_ENV, MEMORY_AGENT_MODEL="offline", **extra)
    return {k: v for k, v in env.items() if not k.startswith("MEMORY_AGENT_MCP_")}


@contextlib.contextmanager
def deployment(home: Path, pg_url: str, users: list[str]) -> Iterator[dict[str, Any]]:
    """Start `chroma run` and two `memory-agent mcp --http` processes on `pg_url`.

    Yields the Chroma port, each process's MCP URL and each user's bearer token.
    """
    tokens = {u: secrets.token_urlsafe(24) for u in users}
    token_file = home / "tokens.json"
    token_file.write_text(json.dumps({t: {"user": u} for u, t in tokens.items()}))
    token_file.chmod(0o600)
    started: list[S.ServerProcess] = []
    try:
        chroma, chroma_port = S.chroma_run(
            home / "chroma-server", log_path=home / "chroma.log", env=server_env()
        )
        started.append(chroma)
        urls = []
        for n in (1, 2):
            port = S.free_port()
            app = S.ServerProcess(
                [str(S.venv_bin("memory-agent")), "mcp", "--http", "--host", HOST,
                 "--port", str(port), "--tokens", str(token_file)],
                cwd=C.REPO,
                env=server_env(
                    DATABASE_URL=pg_url,
                    CHROMA_HOST=HOST,
                    CHROMA_PORT=str(chroma_port),
                    MEMORY_AGENT_HOME=str(home / f"app-{n}"),
                ),
                log_path=home / f"app-{n}.log",
                name=f"app {n}",
            )  # fmt: skip
            started.append(app)
            urls.append((app, f"http://{HOST}:{port}"))
        for app, url in urls:  # both load their encoder at once
            S.wait_http(f"{url}/healthz", 180, server=app)
        C.log(f"chroma run on {chroma_port}; apps on {', '.join(u for _, u in urls)}")
        yield {
            "chroma_port": chroma_port,
            "mcp": [f"{u}/mcp" for _, u in urls],
            "tokens": tokens,
            "servers": started,
        }
    finally:
        for server in reversed(started):
            server.stop()


# --- the load -------------------------------------------------------------------------------


@dataclass
class Fact:
    text: str
    subject: str
    id: str | None = None
    forgotten: str | None = None  # "soft" or "hard"


@dataclass
class Tally:
    """What the load did and saw, over every worker."""

    ops: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    error_samples: list[str] = field(default_factory=list)
    seconds: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    facts: dict[str, list[Fact]] = field(default_factory=lambda: defaultdict(list))
    unexpected: Counter[str] = field(default_factory=Counter)
    unexpected_samples: list[str] = field(default_factory=list)
    live_forget_breaks: int = 0

    def error(self, op: str, exc: BaseException | str) -> None:
        self.errors[op] += 1
        if len(self.error_samples) < 10:
            self.error_samples.append(f"{op}: {exc}"[:300])

    def odd(self, what: str, detail: str) -> None:
        self.unexpected[what] += 1
        if len(self.unexpected_samples) < 10:
            self.unexpected_samples.append(f"{what}: {detail}"[:300])


class ToolFailed(RuntimeError):
    """A tool call came back as an MCP error."""


async def call(session: Any, tool: str, tally: Tally, **arguments: Any) -> dict[str, Any]:
    """Call a tool; count it and its time; raise `ToolFailed` on a tool error."""
    t0 = time.perf_counter()
    try:
        result = await session.call_tool(tool, arguments)
    finally:
        tally.ops[tool] += 1
        tally.seconds[tool].append(time.perf_counter() - t0)
    if result.is_error:
        raise ToolFailed(" ".join(getattr(b, "text", "") for b in result.content))
    return dict(result.structured_content or {})


@contextlib.asynccontextmanager
async def session_to(url: str, token: str) -> AsyncIterator[Any]:
    """An MCP session over streamable HTTP, sending `token` as its bearer token."""
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    client = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {token}"},
        trust_env=False,
        timeout=httpx2.Timeout(60.0, read=CALL_TIMEOUT),
    )
    async with (
        client,
        streamable_http_client(url, http_client=client) as (read, write),
        ClientSession(read, write, read_timeout_seconds=CALL_TIMEOUT) as session,
    ):
        await session.initialize()
        yield session


def name_of(n: int) -> str:
    """A unique word for fact number `n` (letters only)."""
    out = ""
    while True:
        n, r = divmod(n, len(SYLLABLES))
        out = SYLLABLES[r] + out
        if n == 0:
            return out.capitalize()


class Worker:
    """One user's worker: sequential tool calls, each to one of the two processes."""

    def __init__(self, user: str, wid: int, sessions: list[Any], tally: Tally, seed: int):
        self.user, self.wid, self.sessions, self.tally = user, wid, sessions, tally
        self.rand = random.Random(seed)
        self.facts: list[Fact] = []
        self.count = 0

    def new_fact(self) -> Fact:
        self.count += 1
        name = name_of(self.wid * 100_000 + self.count)
        colour, thing = self.rand.choice(COLOURS), self.rand.choice(THINGS)
        return Fact(
            text=f"User keeps a {colour} {thing} called {name}.",
            subject=f"load.w{self.wid}.n{self.count}",
        )

    def pick(self) -> tuple[int, Any]:
        n = self.rand.randrange(2)
        return n, self.sessions[n]

    def live(self) -> list[Fact]:
        return [f for f in self.facts if f.id and not f.forgotten]

    async def remember(self, fact: Fact, session: Any) -> str | None:
        out = await call(session, "remember", self.tally, text=fact.text, subject=fact.subject)
        ids = [c["id"] for c in out.get("changes", []) if c.get("content") == fact.text]
        return ids[0] if ids else None

    async def step(self) -> None:
        r = self.rand.random()
        live = self.live()
        if r < 0.40 or not live:
            fact = self.new_fact()
            _, session = self.pick()
            fact.id = await self.remember(fact, session)
            if fact.id is None:
                self.tally.odd("remember_wrote_nothing", fact.text)
            self.facts.append(fact)
            self.tally.facts[self.user].append(fact)
        elif r < 0.50:
            # The same new statement to both processes at once: one record must come of it.
            fact = self.new_fact()
            got = await asyncio.gather(
                *(self.remember(fact, s) for s in self.sessions), return_exceptions=True
            )
            ids = {g for g in got if isinstance(g, str)}
            for g in got:
                if isinstance(g, BaseException):
                    self.tally.error("remember", g)
            if len(ids) > 1:
                self.tally.odd("twin_remember_two_ids", f"{fact.text} -> {sorted(ids)}")
            fact.id = next(iter(ids), None)
            self.tally.ops["twin_remember"] += 1
            self.facts.append(fact)
            self.tally.facts[self.user].append(fact)
        elif r < 0.60:
            fact = self.rand.choice(live)
            _, session = self.pick()
            again = await self.remember(fact, session)
            self.tally.ops["restate"] += 1
            if again != fact.id:
                self.tally.odd("restated_fact_got_another_id", f"{fact.text}: {fact.id}/{again}")
        elif r < 0.85:
            fact = self.rand.choice(live)
            _, session = self.pick()
            found = await call(session, "search", self.tally, query=fact.text, k=5)
            hits = [m["id"] for m in found.get("memories", [])]
            if fact.id not in hits:
                self.tally.odd("search_missed_live_fact", fact.text)
            gone = {f.id for f in self.facts if f.forgotten}
            if gone & set(hits):
                self.tally.live_forget_breaks += 1
        else:
            fact = self.rand.choice(live)
            n, session = self.pick()
            hard = self.rand.random() < 0.5
            await call(session, "forget", self.tally, memory_id=fact.id, hard=hard)
            fact.forgotten = "hard" if hard else "soft"
            # The other process learnt nothing of this forget: its recall must still hold.
            other = self.sessions[1 - n]
            found = await call(other, "search", self.tally, query=fact.text, k=5)
            if fact.id in [m["id"] for m in found.get("memories", [])]:
                self.tally.live_forget_breaks += 1

    async def run(self, deadline: float) -> None:
        while time.monotonic() < deadline:
            try:
                await self.step()
            except ToolFailed as exc:
                self.tally.error("tool", exc)
            except Exception as exc:  # a transport error: count it and go on
                self.tally.error(exc.__class__.__name__, exc)
                await asyncio.sleep(0.2)


async def load(
    urls: list[str], tokens: dict[str, str], workers: int, seconds: float, seed: int
) -> tuple[Tally, float]:
    """Run the workers for `seconds`; return the tally and the load's wall time."""
    tally = Tally()
    async with contextlib.AsyncExitStack() as stack:
        crew = []
        for u, (user, token) in enumerate(sorted(tokens.items())):
            for w in range(workers):
                sessions = [await stack.enter_async_context(session_to(x, token)) for x in urls]
                wid = u * workers + w
                crew.append(Worker(user, wid, sessions, tally, seed * 1000 + wid))
        # One warm-up call per process: the first search loads each process's lexical index.
        for s in crew[0].sessions:
            await call(s, "list_memories", tally)
        t0 = time.monotonic()
        await asyncio.gather(*(w.run(t0 + seconds) for w in crew))
        wall = time.monotonic() - t0
    return tally, wall


# --- afterwards -----------------------------------------------------------------------------


async def verify(urls: list[str], tokens: dict[str, str], tally: Tally) -> dict[str, Any]:
    """Check every fact and every forget from both processes."""
    lost = duplicates = broken = checked_forgets = 0
    samples: list[str] = []
    for user, token in sorted(tokens.items()):
        facts = [f for f in tally.facts[user] if f.id]
        for url in urls:
            async with session_to(url, token) as s:
                listed = await call(s, "list_memories", Tally())
                active = Counter(m["content"] for m in listed.get("memories", []))
                active_ids = {m["id"] for m in listed.get("memories", [])}
                for f in facts:
                    n = active[f.text]
                    if f.forgotten:
                        if f.id in active_ids or n:
                            broken += 1
                            samples.append(f"{url} {user}: forgotten but listed: {f.text}")
                        continue
                    if n == 0:
                        lost += 1
                        samples.append(f"{url} {user}: lost: {f.text}")
                    duplicates += max(0, n - 1)
                for f in [f for f in facts if f.forgotten]:
                    checked_forgets += 1
                    found = await call(s, "search", Tally(), query=f.text, k=5)
                    if f.id in [m["id"] for m in found.get("memories", [])]:
                        broken += 1
                        samples.append(f"{url} {user}: forgotten but recalled: {f.text}")
    return {
        "facts_lost": lost,
        "duplicates": duplicates,
        "forgets_broken": broken,
        "forget_checks": checked_forgets,
        "samples": samples[:10],
    }


def store_vs_index(pg_url: str, chroma_port: int, users: list[str]) -> dict[str, Any]:
    """Per user: the active records in the store and the vectors in Chroma, compared by id."""
    from memory.backends import BackendConfig, open_backends
    from memory.service import MemoryService

    cfg = BackendConfig(
        home=tempfile.mkdtemp(prefix="deploy-load-check-"),
        database_url=pg_url,
        chroma_host=HOST,
        chroma_port=chroma_port,
    )
    per_user: dict[str, Any] = {}
    mismatches = 0
    with open_backends(cfg) as backends:
        service = MemoryService(backends.store, backends.index)
        for user in users:
            store_ids = {r.id for r in service.list(user)}
            index_ids = backends.index.ids(user)
            diff = len(store_ids ^ index_ids)
            mismatches += diff
            per_user[user] = {
                "store_active": len(store_ids),
                "index_vectors": len(index_ids),
                "mismatched_ids": diff,
                "pending_repairs": service.pending_repairs(user),
            }
    return {"store_index_mismatches": mismatches, "per_user": per_user}


# --- main -----------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    C.start(args)
    C.exit_cleanly_on_sigterm()
    attempts = C.guard_network()
    why = C.pg_reachable(args.pg)
    result: dict[str, Any] = {
        "benchmark": "deploy_load",
        "run": C.run_info(),
        "config": {
            "seconds": args.seconds,
            "users": args.users,
            "workers_per_user": args.workers,
            "processes": 2,
            "engines": "PostgreSQL (fresh schema), chroma run, 2 x memory-agent mcp --http",
        },
    }
    if why:
        result["error"] = f"PostgreSQL unreachable: {why}"
        C.finish(result, args)
        return result
    run_tag = secrets.token_hex(3)
    users = [f"load-{run_tag}-{n}" for n in range(args.users)]
    with (
        tempfile.TemporaryDirectory(prefix="memory-agent-deploy-") as tmp,
        C.pg_schema(args.pg, "deploy") as pg_url,
    ):
        from memory.backends import BackendConfig, open_backends

        # The tables, once, before two processes race to create them.
        setup_cfg = BackendConfig(home=os.path.join(tmp, "setup"), database_url=pg_url)
        with open_backends(setup_cfg, setup=True):
            pass
        with deployment(Path(tmp), pg_url, users) as dep:
            C.log(f"load: {args.users} users x {args.workers} workers for {args.seconds:.0f}s")
            tally, wall = asyncio.run(
                load(dep["mcp"], dep["tokens"], args.workers, args.seconds, args.seed)
            )
            C.log("verifying from both processes")
            checked = asyncio.run(verify(dep["mcp"], dep["tokens"], tally))
            agree = store_vs_index(pg_url, dep["chroma_port"], users)
            alive = {s.name: s.proc.poll() is None for s in dep["servers"]}
    calls = sum(n for op, n in tally.ops.items() if op not in ("twin_remember", "restate"))
    stated = sum(len(v) for v in tally.facts.values())
    result |= {
        "turns_per_s": round(calls / wall, 1),
        "load_seconds": round(wall, 1),
        "tool_calls": calls,
        "ops": dict(sorted(tally.ops.items())),
        "latency_ms": {op: C.summarize_ms(v) for op, v in sorted(tally.seconds.items())},
        "errors": sum(tally.errors.values()),
        "errors_by_kind": dict(tally.errors),
        "error_samples": tally.error_samples,
        "facts_stated": stated,
        "facts_forgotten": sum(1 for v in tally.facts.values() for f in v if f.forgotten),
        "facts_live": sum(1 for v in tally.facts.values() for f in v if f.id and not f.forgotten),
        "facts_lost": checked["facts_lost"],
        "duplicates": checked["duplicates"],
        "forgets_broken": checked["forgets_broken"] + tally.live_forget_breaks,
        "forgets_broken_during_load": tally.live_forget_breaks,
        "forget_checks_after": checked["forget_checks"],
        "store_index_mismatches": agree["store_index_mismatches"],
        "per_user": agree["per_user"],
        "unexpected": dict(tally.unexpected),
        "unexpected_samples": tally.unexpected_samples + checked["samples"],
        "servers_alive_at_end": alive,
        "network_attempts_refused": attempts,
    }
    result["run"]["load_avg_end"] = C.load_avg()
    C.finish(result, args)
    return result


if __name__ == "__main__":
    main()

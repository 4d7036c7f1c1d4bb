"""The two-process deployment under load, shortened: `benchmarks/deploy_load.py --seconds 45`.

Two `memory-agent mcp --http` processes on one PostgreSQL database (a schema of the run) and
one real `chroma run` server, driven concurrently with the official MCP client by several
users' workers (remember, the same statement to both processes at once, restatements,
searches, soft and hard forgets). Afterwards, from both processes, every fact is present
exactly once, no forget is undone, and the store and Chroma hold the same memories per user.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
LOAD_SECONDS = 45


def test_two_processes_on_postgres_and_chroma_server_lose_nothing(pg_url: str) -> None:
    run = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "deploy_load.py"), "--json",
         "--seconds", str(LOAD_SECONDS), "--users", "3", "--workers", "2", "--pg", pg_url],
        capture_output=True,
        text=True,
        timeout=170,
        cwd=REPO,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout)
    assert "error" not in out, out["error"]
    shown = json.dumps({k: v for k, v in out.items() if k not in ("run", "latency_ms")})

    # The load did what it is meant to: every kind of call, from both processes, for long.
    assert out["load_seconds"] >= LOAD_SECONDS, shown
    assert all(out["servers_alive_at_end"].values()), shown
    for op in ("remember", "search", "forget", "twin_remember", "restate"):
        assert out["ops"].get(op, 0) > 0, (op, shown)
    assert out["facts_stated"] > out["facts_forgotten"] > 0, shown
    assert out["forget_checks_after"] == 2 * out["facts_forgotten"], shown

    assert out["errors"] == 0, shown
    assert out["facts_lost"] == 0, shown
    assert out["duplicates"] == 0, shown
    assert out["forgets_broken"] == 0, shown
    assert out["store_index_mismatches"] == 0, shown
    stored = sum(u["store_active"] for u in out["per_user"].values())
    assert stored == out["facts_live"], shown

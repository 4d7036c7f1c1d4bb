"""`benchmarks/scale.py` at 1k users on the embedded default: it runs and reports its fields.

No timing is asserted (tests never time things); what is checked is what the run must hold
whatever the machine: both layouts measured, the user and vector counts of the mix, the
pool of real sentence vectors declared, the disk figures (bytes, not time: the shard
layout stores a user in less than a collection of their own), and the chart.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))

import scale  # noqa: E402

pytestmark = pytest.mark.integration


def test_scale_benchmark_runs_at_1k_users(tmp_path: Path) -> None:
    out = tmp_path / "scale.json"
    argv = [sys.executable, str(REPO / "benchmarks" / "scale.py"), "--users", "1000",
            "--baseline-users", "20", "--large", "300", "--sample", "8", "--pool", "200",
            "--backends", "embedded", "--json", "--out", str(out)]  # fmt: skip
    temp = tmp_path / "temp"
    temp.mkdir()
    env = {**os.environ, "TMPDIR": str(temp)}
    done = subprocess.run(argv, capture_output=True, text=True, timeout=900, check=False, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    # The per-user baseline is loaded from git through a file in the temp folder: gone after.
    assert not list(temp.glob("index_per_user-*"))
    result = json.loads(out.read_text())
    assert json.loads(done.stdout) == result

    assert "pool" in result["vectors"] and "real sentences" in result["vectors"]
    embedded = result["backends"]["embedded"]
    shards, per_user = embedded["shards"], embedded["per_user"]
    assert (shards["users"], per_user["users"]) == (1000, 20)
    assert shards["vectors"] == sum(scale.user_sizes(1000, 300))
    assert per_user["vectors"] == sum(scale.user_sizes(20, 300))
    for layout in (shards, per_user):
        for key in ("index_query", "service_search"):
            for temp in ("cold", "warm"):
                assert layout[key][temp]["n"] == 8
                assert {"median_ms", "p95_ms"} <= set(layout[key][temp])
        assert layout["first_memory"]["n"] == 8 and "median_ms" in layout["first_memory"]
        assert layout["large_user"]["memories"] == 300
        assert layout["large_user"]["index_query_warm"]["n"] == 40
        assert layout["client_rss_mb"] > 0 and layout["index_disk_bytes"] > 0
        assert layout["fill_check"] == {"users": 16, "entries_not_as_written": 0}
    turns = embedded["large_user_taking_turns"]
    assert turns["memories"] == 300
    for layout in ("shards", "per_user"):
        assert turns[layout]["service_search"]["n"] == turns[layout]["index_query"]["n"] == 60
    assert set(turns["ratio_shards_over_per_user"]) == {"index_query", "service_search"}
    assert shards["disk_bytes_per_user"] < per_user["disk_bytes_per_user"]
    assert per_user["first_memory"]["disk_bytes_per_new_user"] > 100_000  # a collection each
    assert set(embedded["shards_vs_per_user"]) >= {"disk_bytes_per_user", "cold_search_p95"}
    assert set(embedded["targets"]) == {
        "one_memory_user_disk_le_20kb",
        "cold_search_p95_le_30ms",
        "warm_search_p95_le_15ms",
        "first_memory_median_le_30ms",
        "large_user_search_within_10pct",
    }
    assert Path(result["chart"]["path"]).stat().st_size > 0

"""Regenerate the README's charts: run the benchmarks at a small size and draw them.

    python benchmarks/charts.py [--dir docs/charts] [--sizes 1000,3000,10000] [--turns 200]
        [--data PATH] [--queries 60] [--conversations 2] [--keep-json DIR]

Runs, one after the other, each benchmark as its own process (the same interpreter) and
writes into ``--dir``:

* ``locomo_recall.png``: `locomo.py` on the whole LoCoMo dev split: recall@5 / @10 by
  category, the product's search next to dense, BM25 and the rank-only system;
* ``context_tokens.png``: `context_tokens.py` with one ``--turns`` thread: tokens sent per
  turn vs the full history;
* ``peers.png``: `peers.py` at the largest size with ``--conversations`` LoCoMo
  conversations: latency of every system and LoCoMo recall;
* ``latency_vs_memories.png``: `peers.py` at every ``--sizes`` (LoCoMo left out below the
  largest): median search latency vs memories of the user, one line per system.

The JSON of each run goes to a temporary directory (``--keep-json DIR`` keeps it): it holds
machine details and absolute paths that do not belong in the repository. Nothing leaves the
machine; the numbers depend on its load (the JSON has the load average), so compare systems
within one chart, not charts across machines.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402
import _locomo  # noqa: E402
from peers import draw_latency_by_size  # noqa: E402

HERE = Path(__file__).resolve().parent


def run(script: str, args: list[str], json_path: Path) -> dict[str, Any]:
    """Run one benchmark (stdout dropped: it writes its JSON to `json_path`); return it."""
    C.log(f"{script} {' '.join(args)}")
    t0 = time.perf_counter()
    cmd = [sys.executable, str(HERE / script), *args, "--out", str(json_path)]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, cwd=C.REPO)
    C.log(f"{script} done in {time.perf_counter() - t0:.0f} s")
    result: dict[str, Any] = json.loads(json_path.read_text(encoding="utf-8"))
    return result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dir", type=Path, default=C.REPO / "docs" / "charts", help="PNGs go here")
    p.add_argument("--data", type=Path, default=_locomo.DEFAULT_DATA, help="LoCoMo dev split")
    p.add_argument("--sizes", default="1000,3000,10000", help="memories for the latency lines")
    p.add_argument("--queries", type=int, default=60, help="latency queries per size")
    p.add_argument("--conversations", type=int, default=2, help="LoCoMo ones in peers.png")
    p.add_argument("--turns", type=int, default=200, help="the context_tokens thread")
    p.add_argument("--keep-json", type=Path, default=None, metavar="DIR")
    args = p.parse_args(argv)
    sizes = sorted(int(s) for s in args.sizes.split(",") if s.strip())
    data = str(args.data.resolve())
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="memory-agent-charts-") as tmp:
        out = args.keep_json or Path(tmp)
        out.mkdir(parents=True, exist_ok=True)
        args.dir.mkdir(parents=True, exist_ok=True)
        run("locomo.py", ["--data", data, "--chart", str(args.dir / "locomo_recall.png")],
            out / "locomo.json")  # fmt: skip
        run("context_tokens.py",
            ["--turns", str(args.turns), "--chart", str(args.dir / "context_tokens.png")],
            out / "context_tokens.json")  # fmt: skip
        results = []
        for size in sizes:
            largest = size == sizes[-1]
            common = ["--size", str(size), "--queries", str(args.queries),
                      "--latency-seconds", "120", "--mem0-add", "50"]  # fmt: skip
            if largest:
                extra = ["--data", data, "--limit-conversations", str(args.conversations),
                         "--chart", str(args.dir / "peers.png")]  # fmt: skip
            else:  # latency only: a data path that does not exist leaves LoCoMo out
                extra = ["--data", str(Path(tmp) / "no-locomo.json"), "--chart",
                         str(Path(tmp) / f"peers-{size}.png")]  # fmt: skip
            results.append(run("peers.py", common + extra, out / f"peers-{size}.json"))
        chart = C.save_chart(
            lambda _r, plt: draw_latency_by_size(results, plt),
            {},
            args.dir / "latency_vs_memories.png",
        )
        C.log(f"latency_vs_memories: {chart}")
    C.log(f"charts in {args.dir} after {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

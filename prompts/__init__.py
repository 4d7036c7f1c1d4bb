"""Prompt templates, stored as text files: `<name>.<lang>.md`, with `{placeholders}`."""

from __future__ import annotations

from functools import cache
from importlib import resources

LANGS = ("en", "zh")


@cache
def load(name: str, lang: str = "en") -> str:
    """Return the template `name` in `lang` (falling back to English).

    Raises:
        FileNotFoundError: If no such template exists.

    """
    root = resources.files(__name__)
    for candidate in (f"{name}.{lang}.md", f"{name}.en.md"):
        path = root.joinpath(candidate)
        if path.is_file():
            return path.read_text(encoding="utf-8")
    raise FileNotFoundError(f"no prompt template named {name!r} in prompts/")


def render(name: str, lang: str = "en", **values: str) -> str:
    """Return template `name` in `lang` with its placeholders filled."""
    return load(name, lang).format(**values)

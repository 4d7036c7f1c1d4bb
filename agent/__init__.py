"""The application edge: CLI, MCP server, chat runner, demo, and the server's graphs."""

from importlib.metadata import version

__version__ = version("langgraph-memory-agent")
"""The installed package's version (set in `pyproject.toml`; see CHANGELOG.md)."""

__all__ = ["__version__"]

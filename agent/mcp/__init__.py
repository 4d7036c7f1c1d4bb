"""The memory service as an MCP server (`memory-agent mcp`), over stdio or streamable HTTP.

- `auth`: who the caller is (the stdio identity, the HTTP token file, the bearer-token gate);
- `tools`: the five tools, their annotations and typed outputs;
- `server`: assembly (`build_server`, `http_app`) and `run`, which serves what the CLI parsed.

Example:
    ```python
    with open_backends(settings.backend) as backends:
        server = build_server(backends, settings, identity=Identity("alice", "desktop"))
        server.run("stdio")
    ```
"""

import os

# Nothing may phone home: Chroma telemetry stays off (set before chromadb is imported).
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from agent.mcp.auth import ConfigError, Identity, TokenTable  # noqa: E402
from agent.mcp.server import build_server, http_app, run  # noqa: E402

__all__ = ["ConfigError", "Identity", "TokenTable", "build_server", "http_app", "run"]

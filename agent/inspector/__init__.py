"""The memory inspector: a small web page where a person browses and corrects their memories.

One Starlette app (`agent.inspector.app.build_app`), served two ways: mounted into the
LangGraph server through `http.app` in `langgraph.json` (`agent.inspector.server`, behind the
server's token file) and standalone by `memory-agent inspect` (`agent.inspector.command`).
The page and its script are files of this package: no CDN, it works offline.
"""

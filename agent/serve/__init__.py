"""What the template adds to a LangGraph server.

Custom auth (`agent.serve.auth`) and the bearer tokens it and the inspector accept
(`agent.serve.tokens`).
"""

"""Recall and ranking: one user's memories relevant to a query, best first, and the memory block."""

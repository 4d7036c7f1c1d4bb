"""Lexical recall: a CJK-aware BM25 index per user, and the snapshots that keep it warm."""

"""Sensitive data that memory must not keep: detection and redaction.

`find_sensitive` finds it, `redact` replaces it with a marker, `describe` says what was
kept back, in the user's language. Exact formats only: patterns and checksums
(`memory.privacy.checksums`), vendor key prefixes (`memory.privacy.secrets`).
"""

from memory.privacy.screen import LABELS, Finding, describe, find_sensitive, redact

__all__ = ["LABELS", "Finding", "describe", "find_sensitive", "redact"]

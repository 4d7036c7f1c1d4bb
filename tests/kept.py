"""What a user has kept, read through the real service (nothing here replaces a component)."""

from __future__ import annotations

from agent.runner import Session


async def kept_for(session: Session, user: str, *, include_turns: bool = True) -> str:
    """Return all that is kept for a user as one text, raw statements included unless not."""
    found = await session.service.alist(user, include_turns=include_turns)
    return " | ".join(r.content for r in found)

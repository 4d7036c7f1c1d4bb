"""What a user has kept, read through the real service (nothing here replaces a component)."""

from __future__ import annotations

from agent.runner import Session


async def kept_for(session: Session, user: str) -> str:
    """Return all that is kept for a user, raw statements included, as one text."""
    return " | ".join(r.content for r in await session.service.alist(user, include_turns=True))

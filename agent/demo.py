"""`memory-agent demo`: a scripted conversation that shows memory across threads and users."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from agent.runner import Session, open_session
from graphs.models import OFFLINE_NOTICE
from graphs.settings import Settings

# (user, thread, message, what to point out)
SCRIPT: list[tuple[str, str, str, str]] = [
    (
        "alice",
        "alice-1",
        "Hi! I'm vegetarian and I live in Berlin.",
        "alice states two facts in thread alice-1",
    ),
    (
        "alice",
        "alice-2",
        "Can you suggest a dinner idea for tonight?",
        "a NEW thread: both facts are recalled",
    ),
    (
        "小王",
        "wang-1",
        "我叫小王，我不吃辣，下周三我们上线。",
        "小王 speaks Chinese: a name, a diet rule and a dated plan (an event)",
    ),
    (
        "小王",
        "wang-2",
        "帮我推荐一个午饭吧，顺便提醒我最近有什么安排？",
        "a NEW thread: the diet rule and the event (with its date) are recalled",
    ),
    (
        "alice",
        "alice-3",
        "I moved to Munich.",
        "alice updates her city: Berlin is superseded, kept in history",
    ),
    (
        "alice",
        "alice-4",
        "Any restaurant tips near me?",
        "a NEW thread: only Munich is recalled; nothing of 小王 leaks",
    ),
]


def _print_turn(n: int, user: str, thread: str, text: str, note: str) -> None:
    print(f"\n── step {n}: {note}")
    print(f"   [{user} · thread {thread}] user: {text}")


async def run_demo(settings: Settings, *, home: str | None = None) -> None:
    """Play the script on the configured backends and print each step."""
    if home:
        settings = replace(settings, backend=replace(settings.backend, home=home))
    started = time.perf_counter()
    print("memory-agent demo")
    print(f"   storage: {settings.backend.describe()}")
    print(f"   model:   {settings.model}")
    if settings.model == "offline":
        print(f"   {OFFLINE_NOTICE}")
    async with open_session(settings, setup=True) as session:
        users = sorted({u for u, *_ in SCRIPT})
        for user in users:
            removed = await session.service.adelete_user(user)
            if removed:
                print(f"   reset: deleted {removed} memories of {user} from an earlier demo run")
        for n, (user, thread, text, note) in enumerate(SCRIPT, 1):
            _print_turn(n, user, thread, text, note)
            result = await session.turn(user, thread, text)
            _print_recalled(result.recalled)
            print(f"   assistant: {result.reply}")
            found = result.extraction.get("memories", [])
            print(f"   extracted: {len(found)} candidate(s)")
            for c in found:
                when = f" on {c['event_date']}" if c.get("event_date") else ""
                print(f"     · {c['kind']}{when} [{c['subject']}] {c['content']}")
            for line in result.saved:
                print(f"   saved:     {line}")
        await _print_summary(session, users)
    print(f"\ndemo finished in {time.perf_counter() - started:.1f}s")


def _print_recalled(recalled: list[dict[str, Any]]) -> None:
    if not recalled:
        print("   recalled:  (nothing yet)")
        return
    print(f"   recalled:  {len(recalled)} memory(ies) into the prompt")
    for r in recalled:
        why = f"score {r['score']:.2f}" if r.get("why") == "relevant" else r.get("why")
        print(f"     · {r['kind']}: {r['content']}  ({why})")
        for said in r.get("said_with") or []:
            print(f"         said with it: {said}")


async def _print_summary(session: Session, users: list[str]) -> None:
    print("\n── what each user's memory holds now (memory-agent memories list --all --user U)")
    for user in users:
        for rec in await session.service.alist(user, include_inactive=True):
            extra = ""
            if rec.kind == "event" and rec.valid_from:
                extra = f", on {rec.valid_from.date()}, expires {rec.expires_at:%Y-%m-%d}"
            print(f"   {user}: [{rec.status}] {rec.kind} {rec.subject}: {rec.content}{extra}")
    hits = await session.service.asearch("小王", "alice vegetarian Berlin Munich")
    owners = sorted({h.record.user_id for h in hits})
    print(
        f"\n── isolation: a search of 小王's memory for alice's facts returns {len(hits)} hit(s), "
        f"owned by {owners or 'nobody'}; none mention Berlin or Munich: "
        f"{not any('Berlin' in h.record.content or 'Munich' in h.record.content for h in hits)}"
    )

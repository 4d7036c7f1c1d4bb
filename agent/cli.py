"""The `memory-agent` command line."""

from __future__ import annotations

import argparse
import asyncio
import codecs
import contextlib
import io
import json
import logging
import os
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from agent import __version__
from agent.inspector import command as inspect_command
from graphs.messages import InvalidMessage, check_message
from graphs.settings import Settings, open_service
from memory.access import AccessDenied
from memory.backends import Backends, BackendUnavailable, open_backends
from memory.index import IndexMismatch, IndexUnavailable
from memory.locks import WriterLockTimeout
from memory.progress import Progress, prefixed
from memory.records import (
    STATED_KINDS,
    InvalidUserId,
    MemoryRecord,
    check_user_id,
    kinds_help,
)
from memory.service import ConsolidationReport, MemoryNotFound, MemoryService

# The CLI must never phone home: Chroma telemetry and LangSmith tracing stay off.
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

USER_ERRORS = (
    AccessDenied,
    InvalidUserId,
    InvalidMessage,
    BackendUnavailable,
    IndexUnavailable,
    IndexMismatch,
    MemoryNotFound,
    ValueError,
    FileNotFoundError,
)
TURN_ERRORS = (*USER_ERRORS, WriterLockTimeout)
"""What a chat turn may fail with that the user can act on; the chat goes on after it
(ContextOverflow and InvalidMessage are ValueErrors)."""


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="memory-agent",
        description="A LangGraph agent with long-term memory (offline by default).",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="log warnings and details")
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="play a scripted conversation that shows memory at work")
    demo.add_argument("--home", help="data directory (default: $MEMORY_AGENT_HOME/demo)")

    chat = sub.add_parser("chat", help="chat with the agent; /memories, /new, /quit")
    chat.add_argument("--user", required=True)
    chat.add_argument("--thread", help="thread id to continue (default: a new one)")

    sub.add_parser("setup", help="create the Postgres tables (the embedded default needs none)")

    # The only declaration of the `mcp` flags: `agent.mcp.server.run` takes what they parse.
    mcp = sub.add_parser(
        "mcp", help="serve memory to MCP clients (stdio, or --http with bearer tokens)"
    )
    mcp.add_argument(
        "--user", help="stdio: whose memory to serve (default: $MEMORY_AGENT_MCP_USER)"
    )
    mcp.add_argument(
        "--agent", help="stdio: agent id recorded on writes (default: MEMORY_AGENT_ID)"
    )
    mcp.add_argument("--read-only", action="store_true", help="stdio: refuse remember and forget")
    mcp.add_argument("--http", action="store_true", help="serve streamable HTTP instead of stdio")
    mcp.add_argument("--host", default="127.0.0.1", help="HTTP host (default 127.0.0.1)")
    mcp.add_argument("--port", type=int, default=8765, help="HTTP port (default 8765)")
    mcp.add_argument(
        "--tokens",
        metavar="FILE",
        help="HTTP: JSON file mapping bearer tokens to users (default: $MEMORY_AGENT_MCP_TOKENS)",
    )

    reindex = sub.add_parser("reindex", help="rebuild the Chroma index from the store")
    reindex.add_argument("--user", help="only this user (default: all)")

    cons = sub.add_parser(
        "consolidate",
        help="merge duplicates, resolve conflicts, archive cold and sweep expired memories, "
        "repair the index",
    )
    cons.add_argument("--user", help="only this user (default: all)")
    cons.add_argument("--dry-run", action="store_true", help="report, change nothing")
    cons.add_argument("--json", action="store_true", help="print JSON")

    mem = sub.add_parser("memories", help="inspect and manage a user's memories")
    msub = mem.add_subparsers(dest="action", required=True)

    def action(name: str, help_text: str) -> argparse.ArgumentParser:
        a = msub.add_parser(name, help=help_text)
        a.add_argument("--user", required=True)
        a.add_argument("--json", action="store_true", help="print JSON")
        return a

    add = action("add", "remember a statement")
    add.add_argument("text")
    add.add_argument("--kind", choices=STATED_KINDS, default="fact", help=kinds_help(STATED_KINDS))
    add.add_argument("--subject", help="dotted key, e.g. profile.city (same subject supersedes)")
    add.add_argument("--date", help="event date, YYYY-MM-DD")
    imp = action("import", "import a JSON-lines file written by export")
    imp.add_argument("path")
    lst = action("list", "list active memories")
    lst.add_argument("--all", action="store_true", help="include superseded, forgotten, expired")
    show = action("show", "show one memory with provenance and history")
    show.add_argument("id")
    search = action("search", "semantic search")
    search.add_argument("query")
    search.add_argument("--k", type=int, default=8)
    forget = action("forget", "forget a memory (soft by default)")
    forget.add_argument("id")
    forget.add_argument("--hard", action="store_true", help="delete from store and index")
    export = action("export", "write all memories with history as JSON lines")
    export.add_argument("--out", help="file to write (default: stdout)")
    delete = action("delete-user", "delete every memory and thread of the user")
    delete.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    inspect_command.declare(sub)
    return p


def _line(rec: MemoryRecord) -> str:
    when = f" on {rec.valid_from.date()}" if rec.kind == "event" and rec.valid_from else ""
    status = "" if rec.status == "active" else f" ({rec.status})"
    return f"{rec.id}  {rec.kind}{when}  {rec.subject}: {rec.content}{status}"


def _print_records(records: list[MemoryRecord], as_json: bool) -> None:
    if as_json:
        print(json.dumps([r.to_store() for r in records], ensure_ascii=False, indent=2))
        return
    if not records:
        print("(no memories)")
    for rec in records:
        print(_line(rec))


def _service(b: Backends, settings: Settings) -> MemoryService:
    return open_service(settings, b.store, b.index, checkpointer=b.checkpointer)


@contextlib.contextmanager
def _progress_bar(args: argparse.Namespace) -> Iterator[Progress | None]:
    """Draw the service's progress as a bar on stderr while the block runs.

    Only on a terminal: with `--json`, or when stderr (where the bar goes) is not a terminal,
    this yields None and nothing is drawn, so scripts and logs see only the usual output. The
    bar disappears when the work is done.
    """
    if getattr(args, "json", False) or not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        TaskProgressColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )
    from rich.progress import Progress as Bar

    bar = Bar(
        TextColumn("{task.description}"),
        BarColumn(),
        TaskProgressColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=True,
        # stdout stays the command's own: a print while the bar is live must not reach stderr.
        redirect_stdout=False,
    )
    # Hidden until the first stage that has work in it: an empty bar says nothing.
    task = bar.add_task("", total=None, visible=False)
    shown = [""]  # the label of the stage on the bar

    def report(done: int, total: int | None, label: str) -> None:
        if total == 0:
            return
        if label != shown[0]:
            # A new stage: its clock and time estimate start again.
            shown[0] = label
            bar.reset(task, total=total, completed=done, description=label, visible=True)
        else:
            bar.update(task, total=total, completed=done)

    with bar:
        yield report


def _consolidate(args: argparse.Namespace, settings: Settings) -> int:
    started = time.perf_counter()
    with open_backends(settings.backend) as b, _progress_bar(args) as progress:
        svc = _service(b, settings)
        users = [args.user] if args.user else svc.users()
        total = ConsolidationReport()
        for n, user in enumerate(users, 1):
            print(f"[{n}/{len(users)}] {user}", file=sys.stderr)
            told = prefixed(progress, f"[{n}/{len(users)}] ")
            part = svc.consolidate(user, dry_run=args.dry_run, progress=told)
            for key, value in part.counts().items():
                setattr(total, key, getattr(total, key) + value)
            total.changes += part.changes
    seconds = round(time.perf_counter() - started, 2)
    if args.json:
        print(json.dumps({**total.counts(), "dry_run": args.dry_run, "seconds": seconds}))
        return 0
    for line in total.changes:
        print(("would " if args.dry_run else "") + line)
    counts = ", ".join(f"{k} {v}" for k, v in total.counts().items())
    print(f"{'dry run: ' if args.dry_run else ''}{counts} ({seconds}s)")
    return 0


def _memories(args: argparse.Namespace, settings: Settings) -> int:
    user = check_user_id(args.user)
    with open_backends(settings.backend) as b:
        svc = _service(b, settings)
        if args.action == "add":
            changes = svc.add(
                user, args.text, kind=args.kind, subject=args.subject, event_date=args.date
            )
            if args.json:
                out = [{"action": c.action, "record": c.record.to_store()} for c in changes]
                print(json.dumps(out, ensure_ascii=False, indent=2))
            for c in [] if args.json else changes:
                print(c.describe(), f"(id {c.record.id})")
        elif args.action == "import":
            with open(args.path, encoding="utf-8") as fh:
                rows = [json.loads(line) for line in fh if line.strip()]
            with _progress_bar(args) as progress:
                n = svc.import_records(user, rows, progress=progress)
            print(json.dumps({"imported": n}) if args.json else f"imported {n} memories for {user}")
        elif args.action == "list":
            rows = svc.list(user, include_inactive=args.all, include_turns=args.all)
            _print_records(rows, args.json)
        elif args.action == "show":
            rec = svc.get(user, args.id)
            if args.json:
                print(json.dumps(rec.to_store(), ensure_ascii=False, indent=2))
            else:
                _show(rec)
        elif args.action == "search":
            hits = svc.search(user, args.query, args.k)
            if args.json:
                rows = [{"score": h.score, **h.record.to_store()} for h in hits]
                print(json.dumps(rows, ensure_ascii=False, indent=2))
            elif not hits:
                print("(no memories)")
            for h in [] if args.json else hits:
                print(f"{h.score:.3f}  {_line(h.record)}")
        elif args.action == "forget":
            rec = svc.forget(user, args.id, hard=args.hard)
            verb = "deleted" if args.hard else "forgot"
            print(json.dumps({verb: rec.id}) if args.json else f"{verb}: {_line(rec)}")
        elif args.action == "export":
            rows = svc.export(user)
            text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
            if args.out:
                with open(args.out, "w", encoding="utf-8") as fh:
                    fh.write(text)
                print(f"exported {len(rows)} memories of {user} to {args.out}", file=sys.stderr)
            else:
                sys.stdout.write(text)
        elif args.action == "delete-user":
            if not args.yes and input(f"delete ALL memories and threads of {user}? [y/N] ") != "y":
                print("nothing deleted")
                return 1
            with _progress_bar(args) as progress:
                n = svc.delete_user(user, progress=progress)
            print(json.dumps({"deleted": n}) if args.json else f"deleted {n} memories of {user}")
    return 0


def _show(rec: MemoryRecord) -> None:
    print(_line(rec))
    src = rec.source
    print(f"  said:       {src.said_at or rec.created_at} via {src.via}")
    print(f"  thread:     {src.thread_id or '-'}  messages: {', '.join(src.message_ids) or '-'}")
    print(f"  confidence: {rec.confidence:.2f}  status: {rec.status}  agent: {rec.agent_id}")
    if rec.expires_at:
        print(f"  expires:    {rec.expires_at}")
    if rec.supersedes or rec.superseded_by:
        print(f"  supersedes: {rec.supersedes or '-'}  superseded by: {rec.superseded_by or '-'}")
    for h in rec.history:
        print(f"  history:    {h.at:%Y-%m-%d %H:%M} {h.action}: {h.content} ({h.status})")


def _lenient_stdin() -> Callable[[], None]:
    """Let `input()` return a line that does not decode instead of raising.

    Undecodable bytes come back as lone surrogates (`surrogateescape`), which the chat loop
    refuses line by line; a strict stdin would raise UnicodeDecodeError and end the chat.

    Returns:
        A function that restores stdin's previous error handler, where it still can.

    """
    stdin = sys.stdin
    if not isinstance(stdin, io.TextIOWrapper) or stdin.errors == "surrogateescape":
        return lambda: None
    errors = stdin.errors
    stdin.reconfigure(errors="surrogateescape")

    def restore() -> None:
        # Refused while read-ahead text is buffered; the process is about to end then anyway.
        with contextlib.suppress(ValueError):
            stdin.reconfigure(errors=errors)

    return restore


def _undecodable(text: str) -> str | None:
    """Return the encoding a line read from stdin is not valid in, or None if it is valid."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        encoding = getattr(sys.stdin, "encoding", None) or "utf-8"
        try:
            return codecs.lookup(encoding).name.upper()
        except LookupError:
            return encoding
    return None


async def _chat(args: argparse.Namespace, settings: Settings) -> int:
    restore_stdin = _lenient_stdin()
    try:
        return await _chat_loop(args, settings)
    finally:
        restore_stdin()


async def _chat_loop(args: argparse.Namespace, settings: Settings) -> int:
    from agent.runner import open_session
    from graphs.models import OFFLINE_NOTICE

    user = check_user_id(args.user)
    thread = args.thread or f"{user}-{uuid.uuid4().hex[:8]}"
    if settings.model == "offline":
        print(OFFLINE_NOTICE)
    async with open_session(settings) as session:
        if args.thread:
            # Work left pending by a crash in background mode is resumed from the checkpoint.
            for line in await session.flush(thread, user):
                print(f"  (memory, resumed) {line}")
        print(f"chatting as {user} in thread {thread}; /memories, /new, /quit")
        while True:
            try:
                text = await asyncio.to_thread(input, "you> ")
            except EOFError:
                break
            encoding = _undecodable(text)
            if encoding:
                print(
                    f"error: that line is not valid {encoding}, so it was skipped; check "
                    "the terminal's encoding and type it again"
                )
                continue
            cmd = text.strip()
            if cmd in ("/quit", "/exit"):
                break
            if cmd == "/new":
                thread = f"{user}-{uuid.uuid4().hex[:8]}"
                print(f"new thread {thread}")
                continue
            if cmd == "/memories":
                for rec in await session.service.alist(user):
                    print(f"  {_line(rec)}")
                continue
            try:
                check_message(text, settings.max_message_chars, settings.context_tokens)
            except InvalidMessage as exc:
                print(f"error: {exc}")
                continue
            replied = False

            def show(piece: str) -> None:
                nonlocal replied
                print(piece if replied else f"agent> {piece}", end="", flush=True)
                replied = True

            try:
                result = await session.turn(user, thread, text, on_reply=show)
            except TURN_ERRORS as exc:
                # The message stays in the thread's checkpoint; the next line starts a new
                # turn, so one line that cannot be taken never ends the session.
                print(f"\nerror: {exc}" if replied else f"error: {exc}")
                continue
            print("" if replied else "agent> ")
            for line in result.saved:
                print(f"  (memory) {line}")
    return 0


async def _setup(settings: Settings) -> int:
    from memory.backends import aopen_backends

    async with aopen_backends(settings.backend, setup=True):
        pass
    print(f"ready: {settings.backend.describe()}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the process exit code."""
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.ERROR,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        settings = Settings.from_env()
        if args.command == "demo":
            from agent.demo import run_demo

            home = args.home or os.path.join(settings.backend.home, "demo")
            asyncio.run(run_demo(settings, home=home))
            return 0
        if args.command == "chat":
            return asyncio.run(_chat(args, settings))
        if args.command == "setup":
            return asyncio.run(_setup(settings))
        if args.command == "mcp":
            from agent.mcp import run as run_mcp

            return run_mcp(args, settings)
        if args.command == "inspect":
            return inspect_command.run(args, settings)
        if args.command == "consolidate":
            return _consolidate(args, settings)
        if args.command == "reindex":
            with open_backends(settings.backend) as b, _progress_bar(args) as progress:
                done: dict[str, Any] = _service(b, settings).reindex(args.user, progress=progress)
            for user, n in done.items():
                print(f"reindexed {n} memories of {user}")
            return 0
        return _memories(args, settings)
    except USER_ERRORS as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())

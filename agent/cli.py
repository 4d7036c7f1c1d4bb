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
from datetime import date
from typing import TYPE_CHECKING, Any

from agent import __version__

if TYPE_CHECKING:
    from graphs.settings import Settings
    from memory import Backends, MemoryRecord, MemoryService
    from memory.progress import Progress

# Everything else is imported where a command needs it: `memory-agent --help` must not pay
# for the graph, the store and Chroma.

# The CLI must never phone home: Chroma telemetry and LangSmith tracing stay off.
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

COMMANDS = ("demo", "chat", "setup", "mcp", "reindex", "consolidate", "memories", "inspect")
ENV_FILE = ".env"
"""Read from the current directory at start, as `langgraph dev` reads it (`langgraph.json`
`"env"`); variables already set win. `MEMORY_AGENT_DOTENV` names another file, or `off`."""


def user_errors() -> tuple[type[BaseException], ...]:
    """Return what a command may fail with that the user can act on (exit 2, one line)."""
    from graphs.messages import InvalidMessage
    from graphs.model_errors import ModelUnavailable
    from memory import AccessDenied, BackendUnavailable, InvalidUserId, MemoryNotFound
    from memory.index.chroma import IndexMismatch, IndexUnavailable

    return (
        AccessDenied,
        InvalidUserId,
        InvalidMessage,
        BackendUnavailable,
        IndexUnavailable,
        IndexMismatch,
        MemoryNotFound,
        ModelUnavailable,  # e.g. the demo on a model server that is down
        ValueError,
        FileNotFoundError,
    )


def turn_errors() -> tuple[type[BaseException], ...]:
    """Return what a chat turn may fail with that the user can act on.

    The chat goes on after it (ContextOverflow and InvalidMessage are ValueErrors).
    """
    from memory import WriterLockTimeout

    return (*user_errors(), WriterLockTimeout)


def load_env_file(path: str | None = None) -> list[str]:
    """Set the variables of a `.env` file that are not set yet (as `langgraph dev` does).

    Read with python-dotenv, the parser `langgraph dev` uses, so one file configures both.

    Args:
        path: The file; default `$MEMORY_AGENT_DOTENV`, else `.env` (`off`: none).

    Returns:
        The names it set.

    """
    path = path or os.environ.get("MEMORY_AGENT_DOTENV") or ENV_FILE
    if path.strip().lower() in ("off", "0", "false", "no") or not os.path.isfile(path):
        return []
    from dotenv import dotenv_values

    set_now = []
    for name, value in dotenv_values(path).items():
        if value is not None and name not in os.environ:
            os.environ[name] = value
            set_now.append(name)
    return set_now


def _date(text: str) -> str:
    """An argparse type: a real calendar date, YYYY-MM-DD (2026-13-45 is refused)."""
    try:
        return date.fromisoformat(text).isoformat()
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a date: use YYYY-MM-DD, e.g. 2026-03-14"
        ) from None


def _count(text: str) -> int:
    """An argparse type: how many results, 1 to 100."""
    try:
        n = int(text)
    except ValueError:
        n = 0
    if not 1 <= n <= 100:
        raise argparse.ArgumentTypeError(f"{text!r}: use a whole number from 1 to 100")
    return n


INSPECT_HELP = "browse, search, correct and delete memories in a web page (loopback)"


def _parser(full: bool = True) -> argparse.ArgumentParser:
    """Build the command line parser.

    Args:
        full: Declare every subcommand's options. False gives the overview only (the
            subcommands and what they do): `memory-agent --help` then imports nothing of
            the memory engine, whose kinds table the `--kind` option lists.

    """
    p = argparse.ArgumentParser(
        prog="memory-agent",
        description="A LangGraph agent with long-term memory (offline by default). "
        f"Reads {ENV_FILE} in the current directory, as `langgraph dev` does.",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="log warnings and details")
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(parent: Any, name: str, help_text: str) -> argparse.ArgumentParser:
        # The help line also describes the subcommand on its own --help page.
        made: argparse.ArgumentParser = parent.add_parser(
            name, help=help_text, description=help_text[:1].upper() + help_text[1:] + "."
        )
        return made

    demo = command(sub, "demo", "play a scripted conversation that shows memory at work")
    chat = command(sub, "chat", "chat with the agent; /memories, /new, /quit")
    command(sub, "setup", "create the Postgres tables (the embedded default needs none)")
    mcp = command(sub, "mcp", "serve memory to MCP clients (stdio, or --http with bearer tokens)")
    reindex = command(sub, "reindex", "rebuild the Chroma index from the store")
    cons = command(
        sub,
        "consolidate",
        "merge duplicates, resolve conflicts, archive cold and sweep expired memories, "
        "repair the index",
    )
    mem = command(sub, "memories", "inspect and manage a user's memories")
    msub = mem.add_subparsers(dest="action", required=True, metavar="ACTION")
    actions = {
        name: command(msub, name, text)
        for name, text in (
            ("add", "remember a statement"),
            ("import", "import a JSON-lines file written by export"),
            ("list", "list active memories"),
            ("show", "show one memory with provenance and history"),
            ("search", "semantic search, store-checked"),
            ("forget", "forget a memory (soft by default)"),
            ("export", "write all memories with history as JSON lines"),
            ("delete-user", "delete every memory and thread of the user"),
        )
    }
    if not full:
        command(sub, "inspect", INSPECT_HELP)
        return p
    from agent.inspector import command as inspect_command
    from memory.store.records import STATED_KINDS, kinds_help

    inspect_command.declare(sub)

    demo.add_argument("--home", help="data directory (default: $MEMORY_AGENT_HOME/demo)")
    chat.add_argument("--user", required=True, help="whose memory the chat reads and writes")
    chat.add_argument("--thread", help="thread id to continue (default: a new one)")

    # The only declaration of the `mcp` flags: `agent.mcp.server.run` takes what they parse.
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

    reindex.add_argument("--user", help="only this user (default: all)")
    cons.add_argument("--user", help="only this user (default: all)")
    cons.add_argument("--dry-run", action="store_true", help="report, change nothing")
    cons.add_argument(
        "--json", action="store_true", help="print one JSON object of counts (and nothing else)"
    )

    for a in actions.values():
        a.add_argument("--user", required=True, help="whose memories")
        a.add_argument("--json", action="store_true", help="print JSON")
    add = actions["add"]
    add.add_argument("text", help="the statement, e.g. 'User lives in Berlin.'")
    add.add_argument(
        "--kind",
        choices=STATED_KINDS,
        default="fact",
        metavar="{" + ",".join(STATED_KINDS) + "}",
        help=kinds_help(STATED_KINDS),
    )
    add.add_argument(
        "--subject",
        help="dotted key, e.g. profile.city (same subject supersedes; default: the family's "
        "key for a home, employer, age or name, else a neutral note.<id>, never words of the "
        "statement)",
    )
    add.add_argument("--date", type=_date, help="event date, YYYY-MM-DD")
    actions["import"].add_argument("path", help="the JSON-lines file (one memory a line)")
    actions["list"].add_argument(
        "--all", action="store_true", help="include superseded, forgotten, expired"
    )
    actions["show"].add_argument("id", help="the memory's id (see list)")
    actions["search"].add_argument("query", help="what to look for, in words")
    actions["search"].add_argument(
        "--k", type=_count, default=8, help="how many results, 1 to 100 (default 8)"
    )
    actions["forget"].add_argument("id", help="the memory's id (see list)")
    actions["forget"].add_argument(
        "--hard", action="store_true", help="delete from store and index"
    )
    actions["export"].add_argument(
        "--out", help="file to write, readable by its owner only (default: stdout)"
    )
    actions["delete-user"].add_argument(
        "--yes", action="store_true", help="do not ask for confirmation"
    )
    return p


def _overview_only(argv: Sequence[str]) -> bool:
    """Return True if no subcommand is named: only the overview (or --version) is asked."""
    return not any(a in COMMANDS for a in argv)


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
    from memory import open_service

    return open_service(settings, b.store, b.index, checkpointer=b.checkpointer)


READ_ACTIONS = ("list", "show", "export", "search")
"""What needs the store only: it still works when Chroma or the checkpoint file is broken."""


@contextlib.contextmanager
def _reading_service(settings: Settings) -> Iterator[MemoryService]:
    """Open the service for a read; on a broken index or checkpoint file, the store alone.

    The store is the source of truth, so listing and exporting an intact store must not
    depend on Chroma or the checkpoints: when opening everything fails on a storage fault,
    a warning says what is broken and the read goes on (search by words only).
    """
    from agent.faults import storage_fault
    from memory import open_service
    from memory.backends import open_backends, open_store

    stack = contextlib.ExitStack()
    with stack:
        try:
            b = stack.enter_context(open_backends(settings.backend))
            service = _service(b, settings)
        except Exception as exc:
            told = storage_fault(exc, settings.backend)
            if told is None:
                raise
            try:
                store = stack.enter_context(open_store(settings.backend))
            except Exception:
                raise exc from None  # the store itself is broken: that is the error to tell
            print(f"warning: {told}; reading the store alone", file=sys.stderr)
            service = open_service(settings, store, None)
        yield service


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
    from memory import open_backends
    from memory.progress import prefixed
    from memory.service import ConsolidationReport

    started = time.perf_counter()
    with open_backends(settings.backend) as b, _progress_bar(args) as progress:
        svc = _service(b, settings)
        users = [args.user] if args.user else svc.users()
        total = ConsolidationReport()
        for n, user in enumerate(users, 1):
            if not args.json:  # --json prints one object and nothing else, stderr included
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
    from memory import check_user_id, open_backends

    user = check_user_id(args.user)
    if args.action in READ_ACTIONS:
        with _reading_service(settings) as svc:
            return _read(args, svc, user)
    if args.action == "delete-user" and not args.yes and not _confirmed(user):
        print("nothing deleted")
        return 1
    rows = _import_rows(args.path) if args.action == "import" else []
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
            with _progress_bar(args) as progress:
                try:
                    n = svc.import_records(user, rows, progress=progress)
                except ValueError as exc:
                    raise ValueError(f"{args.path}: {exc}") from exc
            print(json.dumps({"imported": n}) if args.json else f"imported {n} memories for {user}")
        elif args.action == "forget":
            rec = svc.forget(user, args.id, hard=args.hard)
            verb = "deleted" if args.hard else "forgot"
            print(json.dumps({verb: rec.id}) if args.json else f"{verb}: {_line(rec)}")
        elif args.action == "delete-user":
            with _progress_bar(args) as progress:
                n = svc.delete_user(user, progress=progress)
            print(json.dumps({"deleted": n}) if args.json else f"deleted {n} memories of {user}")
    return 0


def _read(args: argparse.Namespace, svc: MemoryService, user: str) -> int:
    """Run a read-only `memories` action."""
    if args.action == "list":
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
            found = [
                {"score": h.score, **h.record.to_store(), "said_with": [w.id for w in h.said_with]}
                for h in hits
            ]
            print(json.dumps(found, ensure_ascii=False, indent=2))
        elif not hits:
            print("(no memories)")
        for h in [] if args.json else hits:
            print(f"{h.score:.3f}  {_line(h.record)}")
            for w in h.said_with:
                print(f"         said with it: {_line(w)}")
    elif args.action == "export":
        exported = svc.export(user)
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in exported)
        if args.out:
            _write_private(args.out, text)
            print(f"exported {len(exported)} memories of {user} to {args.out}", file=sys.stderr)
        else:
            sys.stdout.write(text)
            if not exported:  # stdout stays valid (empty) JSON lines; the note goes aside
                print(f"exported 0 memories: {user} has none", file=sys.stderr)
    return 0


def _write_private(path: str, text: str) -> None:
    """Write an export readable by its owner only (0600), like the memory home's files.

    An existing file is truncated and made private too: an export holds personal data.
    """
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        os.fchmod(fh.fileno(), 0o600)
        fh.write(text)


def _import_rows(path: str) -> list[Any]:
    """Read an export's JSON lines; a line that is not JSON is named by file and line.

    Raises:
        ValueError: If the file cannot be decoded or a line is not JSON.

    """
    rows = []
    try:
        with open(path, encoding="utf-8") as fh:
            for number, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise ValueError(
                        f"{path} line {number} is not JSON ({exc.msg} at column {exc.colno}); "
                        "import takes the JSON lines `memories export` writes"
                    ) from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except IsADirectoryError:
        raise ValueError(f"{path} is a directory, not an export file") from None
    return rows


def _confirmed(user: str) -> bool:
    """Ask before deleting a user; with no answer to read (stdin closed), refuse clearly.

    Raises:
        ValueError: If stdin has no line to read.

    """
    try:
        answer = input(f"delete ALL memories and threads of {user}? [y/N] ")
    except EOFError:
        raise ValueError(
            "delete-user asks for confirmation and there is no input to read it from; "
            "pass --yes to delete without asking"
        ) from None
    return answer.strip().lower() in ("y", "yes")


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
    from agent.faults import storage_fault
    from agent.runner import open_session
    from graphs.messages import InvalidMessage, check_message
    from graphs.model_errors import ModelUnavailable
    from graphs.models import OFFLINE_NOTICE
    from memory import check_user_id

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
        unanswered = 0
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
                known = await session.service.alist(user)
                if not known:
                    print(f"  (no memories of {user} yet)")
                for rec in known:
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
            except ModelUnavailable as exc:
                # The message is in the thread's checkpoint: the next turn's model call
                # sees it, and extraction takes it then. The script's exit code tells.
                print(f"\nerror: {exc}" if replied else f"error: {exc}")
                print("  (your message is kept in the thread: the model gets it with your next)")
                unanswered += 1
                continue
            except turn_errors() as exc:
                # The message stays in the thread's checkpoint; the next line starts a new
                # turn, so one line that cannot be taken never ends the session.
                print(f"\nerror: {exc}" if replied else f"error: {exc}")
                continue
            except Exception as exc:
                told = storage_fault(exc, settings.backend)
                if told is None:
                    raise
                # The disk or a database failed: later turns would fail the same way, so
                # the chat ends, saying whether this message reached the thread.
                print(f"\nerror: {told}" if replied else f"error: {told}")
                print(await _kept_note(session, thread, text))
                return 2
            print("" if replied else "agent> ")
            for line in result.saved:
                print(f"  (memory) {line}")
    if unanswered:
        print(f"error: the model could not answer {unanswered} message(s)", file=sys.stderr)
        return 2
    return 0


async def _kept_note(session: Any, thread: str, text: str) -> str:
    """Say whether a message whose turn failed on a storage fault is in the thread."""
    config: Any = {"configurable": {"thread_id": thread}}
    try:
        snapshot = await session.graph.aget_state(config)
        kept = any(
            getattr(m, "type", "") == "human" and m.content == text
            for m in snapshot.values.get("messages", [])[-8:]
        )
    except Exception:  # the checkpoint cannot even be read: say so, do not guess
        kept = None
    if kept:
        return f"  (your message is kept in thread {thread}; continue it with --thread {thread})"
    if kept is None:
        return "  (it could not be checked whether your message was kept; it was:)\n  " + text
    return "  (your message was NOT kept; it was:)\n  " + text


async def _setup(settings: Settings) -> int:
    from memory import aopen_backends

    async with aopen_backends(settings.backend, setup=True):
        pass
    print(f"ready: {settings.backend.describe()}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the process exit code."""
    given = list(sys.argv[1:] if argv is None else argv)
    args = _parser(full=not _overview_only(given)).parse_args(given)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.ERROR,
        format="%(levelname)s %(name)s: %(message)s",
    )
    settings: Settings | None = None
    try:
        load_env_file()
        from graphs.settings import Settings

        settings = Settings.from_env()
        return _run(args, settings)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        told = _told(exc, settings)
        if told is None:
            raise
        print(f"error: {told}", file=sys.stderr)
        return 2


def _told(exc: BaseException, settings: Settings | None) -> str | None:
    """Return the one line to print for an error the user can act on, or None for a bug."""
    if isinstance(exc, user_errors()):
        return str(exc)
    if settings is None:
        return None
    from agent.faults import storage_fault

    return storage_fault(exc, settings.backend)


def _run(args: argparse.Namespace, settings: Settings) -> int:
    """Dispatch a parsed command."""
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
    if args.command == "consolidate":
        return _consolidate(args, settings)
    if args.command == "inspect":
        from agent.inspector import command as inspect_command

        return inspect_command.run(args, settings)
    if args.command == "reindex":
        from memory import open_backends

        with open_backends(settings.backend) as b, _progress_bar(args) as progress:
            done: dict[str, Any] = _service(b, settings).reindex(args.user, progress=progress)
        for user, n in done.items():
            print(f"reindexed {n} memories of {user}")
        return 0
    return _memories(args, settings)


if __name__ == "__main__":
    raise SystemExit(main())

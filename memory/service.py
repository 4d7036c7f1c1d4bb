"""The memory service: every read and write of long-term memory goes through here.

`MemoryService` checks the user id once, takes the user's write lock for read-modify-writes
and hands the work to what it holds: `recall`, `changelog`, `writes`, `indexing`,
`maintenance`, `threads`, `locks`. Make one per store and share it. Each `a*` method runs
its sync twin in a worker thread; any `BaseStore` works. Long work reports its stages to an
optional `progress` callback (`memory.progress.Progress`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from langgraph.store.base import BaseStore

from memory.access import AccessDenied, AccessPolicy
from memory.extraction import Extraction
from memory.index.chroma import ChromaIndex
from memory.index.write_through import WriteThrough
from memory.lexical.changes import LexicalSnapshots
from memory.lexical.snapshot import LexicalIndexes
from memory.lifecycle import Change, Policy
from memory.progress import Progress
from memory.recall.retriever import MemoryRetriever
from memory.recall.search import Recall, Recalled, pin
from memory.store.disk_purge import purge_sqlite
from memory.store.locks import UserLocks, in_worker_thread
from memory.store.maintenance import ConsolidationReport, Maintenance
from memory.store.reads import MemoryNotFound, StoreReader
from memory.store.records import Kind, MemoryRecord, Source, as_of, check_user_id, utcnow
from memory.store.threads import ThreadNotYours, ThreadRegistry
from memory.store.writes import MAX_IMPORT_CONTENT_CHARS, MemoryWriter
from memory.turn import (
    Said,
    TurnOutcome,
    TurnRecall,
    archivable,
    cuts_of,
    deletion_cuts,
    describe,
    expiries,
    latest_statements,
    link,
    notices,
    scopes,
    statements_of,
    turn_source,
)

__all__ = ["ConsolidationReport", "MemoryNotFound", "MemoryService", "Recalled", "ThreadNotYours"]


class MemoryService:
    """Long-term memory of many users: store first, index second, store-checked reads."""

    MAX_IMPORT_CONTENT_CHARS = MAX_IMPORT_CONTENT_CHARS
    """Longest `content` an imported row may have (see `memory.store.writes`)."""

    def __init__(
        self,
        store: BaseStore,
        index: ChromaIndex | None,
        *,
        agent_id: str = "memory-agent",
        checkpointer: Any | None = None,
        policy: Policy | None = None,
        access: AccessPolicy | None = None,
        lock_dir: str | None = None,
    ) -> None:
        """Create a service.

        Args:
            store: The source of truth (any LangGraph `BaseStore`).
            index: The Chroma index for semantic recall; None recalls by words from the store.
            agent_id: Recorded on every memory this service writes.
            checkpointer: If given, `delete_user` also deletes the user's threads from it.
            policy: Lifecycle rules (confidence threshold, decay, archiving, privacy).
            access: Which memories `agent_id` may read and write (`memory.access`); None
                lets it read and write everything, with scope `user`.
            lock_dir: The folder of an embedded (SQLite) store: thread claims lock a file
                there, so processes sharing the store cannot both claim a new thread.

        Example:
            `service = MemoryService(InMemoryStore(), None)` (no index: recall by words)
        """
        self.store = store
        self.index = index
        self.agent_id = agent_id
        self.checkpointer = checkpointer
        self.policy = policy or Policy()
        self.access = access
        # Shared with every service on this store; the lexical snapshots are this one's.
        self._locks = UserLocks.of(store)
        if index is not None and self._locks.shared is not None:
            index.lock_across_processes(self._locks.shared)
        self._reader = StoreReader(store, agent_id, access)
        self._snapshots = LexicalSnapshots(
            store, self._reader, self._locks, LexicalIndexes(pin=pin)
        )
        self._indexing = WriteThrough(store, index, self._reader, self._snapshots)
        self._recall = Recall(store, index, self._reader, self._snapshots, self._locks, self.policy)
        self._writer = MemoryWriter(store, self._reader, self._indexing, self.policy)
        self._maintenance = Maintenance(self._reader, self._indexing, self._locks, self.policy)
        self._threads = ThreadRegistry(store, self._reader, lock_dir)

    @property
    def lexical(self) -> LexicalIndexes:
        """This service's per-user BM25 snapshots (kept current through the change log)."""
        return self._snapshots.lexical

    @lexical.setter
    def lexical(self, value: LexicalIndexes) -> None:
        self._snapshots.lexical = value

    # --- reads -----------------------------------------------------------------------------

    def get(self, user_id: str, memory_id: str) -> MemoryRecord:
        """Return one memory of a user, whatever its status.

        Raises:
            MemoryNotFound: If the user has no memory with that id.

        Example:
            `service.get("alice", hit.record.id).history`
        """
        return self._reader.get(check_user_id(user_id), memory_id)

    def search(
        self, user_id: str, query: str, k: int = 8, *, now: datetime | None = None
    ) -> list[Recalled]:
        """Return the active memories of a user relevant to `query`, best first.

        Hybrid recall (`memory.recall.search`, `memory.recall.ranking`); every result is
        re-read from the store. Up to `k` ranked memories, plus up to `PINNED` "core" ones
        (name, home, diet, health, imminent events) the query did not bring.
        Chroma down: lexical alone.

        Example:
            `[(r.record.content, r.why) for r in service.search("alice", "what do I eat?")]`
        """
        uid = check_user_id(user_id)
        when = now or utcnow()
        with as_of(when):  # what the search reads is judged at the same time
            return self._recall.search(uid, query, k, when)

    def as_retriever(self, user_id: str, k: int = 8) -> MemoryRetriever:
        """Return a LangChain retriever over one user's memories, ranked as `search` ranks.

        The user is checked here and fixed for the retriever's life. Each `Document` is a
        live memory re-read from the store (`Document.id` is the record id).

        Example:
            `service.as_retriever("alice", k=5).invoke("Where do I live?")`
        """
        return MemoryRetriever(service=self, user_id=check_user_id(user_id), k=k)

    def export(self, user_id: str) -> list[dict[str, Any]]:
        """Return all of a user's memories, with history, as JSON-safe dicts.

        Example:
            `json.dump(service.export("alice"), f)`, then `service.import_records(...)`
        """
        rows = self.list(user_id, include_inactive=True, include_turns=True)
        return [r.to_store() for r in rows]

    def unforgotten(self, user_id: str, texts: Iterable[str]) -> list[str]:
        """Return the texts that state nothing this user asked to forget.

        For copies written after a forget (a later thread summary, say): what was forgotten
        must not come back through them.
        """
        return self._reader.unforgotten(check_user_id(user_id), texts)

    # --- writes (and threads) ---------------------------------------------------------------

    def add(
        self,
        user_id: str,
        content: str,
        *,
        kind: Kind = "fact",
        subject: str | None = None,
        value: Any = None,
        confidence: float = 0.9,
        event_date: str | None = None,
        source: Source | None = None,
    ) -> list[Change]:
        """Remember one statement, reconciled with what is known (dedupe, supersede).

        Raises:
            AccessDenied: If the access policy does not let this agent write it.

        Example:
            `service.add("alice", "User is vegetarian.", kind="preference", subject="diet")`
        """
        said = self._writer.statement(content, kind, subject, value, confidence, event_date)
        changes = self.save(user_id, said, source or Source(via="api"))
        for c in changes:
            if c.action == "refused":
                raise AccessDenied(c.note)
        return changes

    def save(
        self,
        user_id: str,
        extraction: Extraction,
        source: Source,
        *,
        context: str = "",
        latest: Sequence[str] = (),
    ) -> list[Change]:
        """Apply one turn's extraction: reconcile each candidate, then honour forget requests.

        Sensitive data is withheld (or redacted, per policy) before anything is written.
        What the access policy does not let this agent write is `refused` (the reason is
        its note); the rest is saved. Store first, index second: a failed index write is
        recorded for `reindex` and does not fail the save.

        Args:
            user_id: Whose memories.
            extraction: The candidates and forget requests of one turn.
            source: Provenance of the turn.
            context: What the assistant said last: what "forget that" means when none of
                `latest` stated anything.
            latest: Ids of the user's latest messages in the thread, newest first: "forget
                that" / "别再提这个了" / "scratch that" mean the newest that stated something.
        """
        uid = check_user_id(user_id)
        with self._locks.hold(uid):
            return self._writer.save(uid, extraction, source, context=context, latest=latest)

    def recall_turn(
        self, user_id: str, thread_id: str | None, query: str, k: int, *, now: datetime
    ) -> TurnRecall:
        """Begin a turn: claim (or check) the thread, then recall for the user's message.

        The claim is atomic: of two first turns racing on a new thread exactly one wins;
        the other gets `ThreadNotYours` before anything of the thread is read.

        Raises:
            ThreadNotYours: If another user owns the thread.
        """
        uid = check_user_id(user_id)
        new_thread = self._threads.claim(uid, thread_id) if thread_id else False
        with as_of(now):
            return TurnRecall(self._recall.search(uid, query, k, now), new_thread)

    def save_turn(
        self,
        user_id: str,
        thread_id: str | None,
        said: Sequence[Said],
        extraction: Extraction,
        *,
        earlier: Sequence[Said] = (),
        context: str = "",
        recalled: Iterable[tuple[str, str]] = (),
        said_at: datetime | None = None,
        zh: bool = False,
        claim: bool = False,
    ) -> TurnOutcome:
        """End a turn: save what the user said, under one hold of the user's lock.

        The messages are split into statements; each extracted memory is linked to its
        statement, reconciled, screened and scoped; each statement worth keeping is archived
        as its own raw item, with the scope of the memories taken from it (none if one was
        refused or withheld); forget requests act on statements ("that" is the user's newest
        one). Every copy of the turn the caller keeps takes its text from the outcome.

        Args:
            user_id: Whose memory.
            thread_id: The thread (None: not kept in one).
            said: The user messages of the turn, oldest first.
            extraction: What was extracted from them.
            earlier: The user's earlier messages of the thread, oldest first (what "that"
                may point at).
            context: What the assistant said before the turn (what "that" means when no
                statement of the user's is remembered).
            recalled: `(kind, id)` of what the turn recalled (counted as recalled).
            said_at: When it was said (default: now).
            zh: The turn's language, for notices.
            claim: Claim or check the thread first (a run that did not `recall_turn`).

        Raises:
            ThreadNotYours: If `claim` and another user owns the thread.
        """
        uid = check_user_id(user_id)
        if claim and thread_id:
            self._threads.claim(uid, thread_id)
        when = said_at or utcnow()
        source = turn_source(thread_id, said, when, "conversation")
        statements = statements_of(uid, thread_id or "", said)
        latest = latest_statements(uid, thread_id or "", earlier)
        # Written as of when it was said: its dates were read against that time.
        with as_of(when), self._locks.hold(uid):
            changes: list[Change] = []
            if extraction.memories or extraction.forget:
                changes = self._writer.save(
                    uid,
                    extraction,
                    source,
                    context=context,
                    latest=latest,
                    statement_of=link(extraction, statements),
                )
            if self.policy.archive_turns:
                kept = archivable(statements, changes, extraction, said)
                self._writer.archive_turns(
                    uid,
                    [(st.message_id, st.text, "") for st in kept],
                    source,
                    ids=[st.id for st in kept],
                    scopes=scopes(changes),
                    expires=expiries(changes),
                )
            seen = list(recalled)
            if seen:
                self._recall.mark_recalled(uid, seen, when)
            remembered: list[str] = []
            if any(c.action == "unmatched" for c in changes):
                remembered = [r.content for r in self._reader.visible(uid)[:5]]
        return TurnOutcome(
            changes=changes,
            saved=[describe(c) for c in changes],
            notices=notices(changes, remembered, zh, statements),
            cuts=cuts_of(changes, extraction, self.policy.redact_thread),
            statements=statements,
        )

    def archive_turns(
        self,
        user_id: str,
        turns: Iterable[tuple[str, str, str | list[str]]],
        source: Source,
    ) -> int:
        """Keep raw user turns as `episode` memories (seed 000 §5.2: extraction loses detail).

        Each turn is stored under a stable id (a replay writes nothing twice), expiring after
        the policy's `turn_ttl`, with optional context (e.g. the neighbouring turns of an
        imported dialogue) searchable at half weight. Sensitive data is screened as usual.

        Args:
            user_id: Whose turns.
            turns: `(message_id, text, context)` per user message; context is what was said
                around it (the assistant's previous and next messages).
            source: Thread and time they were said.

        Returns:
            How many turns were written.
        """
        uid = check_user_id(user_id)
        with self._locks.hold(uid):
            return self._writer.archive_turns(uid, turns, source)

    def mark_recalled(
        self, user_id: str, recalled: Iterable[tuple[str, str]], now: datetime | None = None
    ) -> None:
        """Count a recall of each memory (`(kind, id)` pairs) at `now`.

        Recent recall lifts ranking and delays archiving.
        """
        uid = check_user_id(user_id)
        with self._locks.hold(uid):
            self._recall.mark_recalled(uid, recalled, now or utcnow())

    def forget(self, user_id: str, memory_id: str, *, hard: bool = False) -> MemoryRecord:
        """Forget one memory: soft keeps it in history, hard deletes it everywhere.

        A hard forget deletes the record, the statements it was said in and its vector, and
        rewrites the latest state of the user's threads without it (what states it is
        replaced by a marker) and prunes their history.

        Raises:
            MemoryNotFound: If the user has no memory with that id (that this agent may read).
            AccessDenied: If the access policy does not let this agent change it.

        Example:
            `service.forget("alice", hit.record.id, hard=True)`
        """
        uid = check_user_id(user_id)
        with self._locks.hold(uid):
            if not hard:
                return self._writer.forget(uid, memory_id)
            rec = self._reader.get(uid, memory_id)
            said = self._reader.get_many(uid, [("episode", s) for s in rec.source.statement_ids])
            cuts = deletion_cuts(rec, said.values())
            self._writer.forget(uid, memory_id, hard=True)
            if self.checkpointer is not None:
                # The user's threads may quote it (a reply, the memory block, a summary).
                self._threads.rewrite_owned(uid, self.checkpointer, cuts.rewrite_thread)
                purge_sqlite(self.checkpointer)
            return rec

    def import_records(
        self, user_id: str, rows: Iterable[dict[str, Any]], *, progress: Progress | None = None
    ) -> int:
        """Write exported records for a user (their `user_id` is replaced by this one).

        Rows without an `agent_id` are recorded as written by this service's agent. Every
        row is checked before anything is written, so a refused file leaves no trace.

        Raises:
            ValueError: If a row is not a valid memory record, its `content` is longer than
                `MAX_IMPORT_CONTENT_CHARS`, or two rows share an `id` (the message names it
                and both rows). Nothing is written then.
            AccessDenied: If the access policy refuses a row (nothing is written then).

        Example:
            `service.import_records("bob", json.load(f), progress=print)`
        """
        uid = check_user_id(user_id)
        with self._locks.hold(uid):
            return self._writer.import_records(uid, rows, self.MAX_IMPORT_CONTENT_CHARS, progress)

    def delete_user(self, user_id: str, *, progress: Progress | None = None) -> int:
        """Delete every memory, vector, repair marker and thread of a user, from disk too.

        Embedded Chroma's files, the lexical snapshot and the SQLite store and checkpoint
        files are rewritten without them (`memory.store.disk_purge`, `ChromaIndex.drop_user`).

        Returns:
            How many memories were deleted.

        Example:
            `MemoryService(store, index, checkpointer=saver).delete_user("alice")`
        """
        uid = check_user_id(user_id)
        with self._locks.hold(uid):
            # Threads first: they hold the words themselves.
            self._threads.delete_owned(uid, self.checkpointer, progress)
            deleted = self._indexing.erase_user(uid, progress)
            # Gone from disk: deleted rows stay in SQLite's free pages and WAL otherwise.
            purge_sqlite(self.store, self.checkpointer)
            return deleted

    def remember_thread(self, user_id: str, thread_id: str) -> None:
        """Record that a thread belongs to a user: the first user of a thread owns it.

        `delete_user` deletes the threads a user owns, and no other user may use them.

        Raises:
            ThreadNotYours: If another user opened the thread.
        """
        self._threads.remember(check_user_id(user_id), thread_id)

    def thread_owner(self, thread_id: str) -> str | None:
        """Return the user who opened a thread (None if no turn of it was seen)."""
        return self._threads.owner(thread_id)

    def threads(self, user_id: str) -> list[str]:
        """Return the ids of the threads recorded for a user."""
        return self._threads.of_user(check_user_id(user_id))

    # --- maintenance -----------------------------------------------------------------------

    def consolidate(
        self,
        user_id: str | None = None,
        *,
        dry_run: bool = False,
        now: datetime | None = None,
        progress: Progress | None = None,
    ) -> ConsolidationReport:
        """Tidy memories and make the index agree with the store. Idempotent.

        Merges near-duplicates, resolves conflicts, archives cold memories, sweeps expired
        ones, re-embeds records whose vector is missing or stale, and removes vectors that
        have no active record.

        Args:
            user_id: One user, or None for every user.
            dry_run: Report what would change without writing anything.
            now: The time to judge expiry and coldness against.
            progress: Told each user's stages (``tidying``, ``re-embedding``).

        Example:
            `service.consolidate("alice", dry_run=True).merged`
        """
        uid = check_user_id(user_id) if user_id else None
        when = now or utcnow()
        return self._maintenance.consolidate(uid, dry_run=dry_run, now=when, progress=progress)

    def pending_repairs(self, user_id: str) -> int:
        """Return how many index writes failed for a user and wait for `reindex`."""
        return self._indexing.pending(check_user_id(user_id))

    def reindex(
        self, user_id: str | None = None, *, progress: Progress | None = None
    ) -> dict[str, int]:
        """Rebuild the index from the store for one or all users; return vectors per user.

        Example:
            `service.reindex()` (after changing `MEMORY_AGENT_EMBEDDINGS`)
        """
        if self.index is None:
            raise RuntimeError("no index is configured")
        uid = check_user_id(user_id) if user_id else None
        return self._maintenance.reindex(uid, progress)

    def users(self, *, with_repairs: bool = False) -> list[str]:
        """Return every user that has memories in the store.

        Args:
            with_repairs: Also users with failed index writes waiting (e.g. a deleted user
                whose collection could not be dropped yet).
        """
        return self._reader.users(with_repairs=with_repairs)

    # Last of the methods: below `def list`, in this class, `list` names it, not the builtin.

    def list(
        self,
        user_id: str,
        *,
        include_inactive: bool = False,
        kind: Kind | None = None,
        include_turns: bool = False,
    ) -> list[MemoryRecord]:
        """Return a user's memories that this agent may read, newest first.

        Args:
            user_id: Whose memories.
            include_inactive: Also return superseded, forgotten and expired ones.
            kind: Only this kind.
            include_turns: Also return the raw-turn archive (see `archive_turns`).

        Example:
            `[r.content for r in service.list("alice", kind="preference")]`
        """
        uid = check_user_id(user_id)
        return self._reader.visible(uid, include_inactive, kind, include_turns)

    # --- async forms -----------------------------------------------------------------------

    aget = in_worker_thread(get)
    alist = in_worker_thread(list)
    asearch = in_worker_thread(search)
    aexport = in_worker_thread(export)
    aadd = in_worker_thread(add)
    asave = in_worker_thread(save)
    aforget = in_worker_thread(forget)
    aimport_records = in_worker_thread(import_records)
    adelete_user = in_worker_thread(delete_user)
    aremember_thread = in_worker_thread(remember_thread)
    athread_owner = in_worker_thread(thread_owner)
    aunforgotten = in_worker_thread(unforgotten)
    amark_recalled = in_worker_thread(mark_recalled)
    aarchive_turns = in_worker_thread(archive_turns)
    arecall_turn = in_worker_thread(recall_turn)
    asave_turn = in_worker_thread(save_turn)
    athreads = in_worker_thread(threads)
    apending_repairs = in_worker_thread(pending_repairs)
    ausers = in_worker_thread(users)
    aconsolidate = in_worker_thread(consolidate)
    areindex = in_worker_thread(reindex)

"""Reading memory records from the store: by key, by user, and as one agent may see them."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from langgraph.store.base import BaseStore, GetOp, Item, SearchOp

from memory.access import AccessPolicy, can_read
from memory.store.records import (
    KINDS,
    NAMESPACE_ROOT,
    REPAIR_ROOT,
    STATED_KINDS,
    TURN_SUBJECT,
    Kind,
    MemoryRecord,
    UserId,
    is_raw_turn,
    namespace,
    subject_under,
    utcnow,
)
from memory.text.phrases import key_phrase, states

if TYPE_CHECKING:
    from memory.extraction import CandidateMemory

PAGE = 500
SCAN_PAGE = 50_000


def _ranges_strings(store: BaseStore) -> bool:
    """Return True for the stores whose `$gte`/`$lt` filters compare strings (SQL ones)."""
    return type(store).__module__.startswith(("langgraph.store.sqlite", "langgraph.store.postgres"))


class MemoryNotFound(KeyError):
    """No memory with that id exists for that user."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "memory not found"


class StoreReader:
    """Reads one store's memory records, and filters them by what one agent may read."""

    def __init__(self, store: BaseStore, agent_id: str, access: AccessPolicy | None) -> None:
        """Create a reader.

        Args:
            store: The source of truth.
            agent_id: The agent whose reads `may_read` judges.
            access: Which memories that agent may read; None lets it read everything.
        """
        self.store = store
        self.agent_id = agent_id
        self.access = access

    def may_read(self, rec: MemoryRecord) -> bool:
        """Return True if this reader's agent may read a memory (see `memory.access`)."""
        return can_read(self.access, self.agent_id, rec)

    def get(self, user_id: UserId, memory_id: str) -> MemoryRecord:
        """Return one memory of a user that the agent may read, whatever its status.

        Raises:
            MemoryNotFound: If the user has no such memory.
        """
        found = self.get_many(user_id, [(kind, memory_id) for kind in KINDS])
        for rec in found.values():
            if self.may_read(rec):
                return rec
        raise MemoryNotFound(f"user {user_id!r} has no memory {memory_id!r}")

    def get_many(self, user_id: UserId, keys: Iterable[tuple[str, str]]) -> dict[str, MemoryRecord]:
        """Read records by (kind, id) in one store round trip; absent ones are left out."""
        wanted = [(kind, key) for kind, key in keys if kind in KINDS]
        items = self.store.batch([GetOp(namespace(user_id, kind), key) for kind, key in wanted])
        out: dict[str, MemoryRecord] = {}
        for item in items:
            if isinstance(item, Item):
                rec = MemoryRecord.from_store(item.value)
                if rec.user_id == user_id:
                    out[rec.id] = rec
        return out

    def active_record(self, user_id: UserId, rid: str) -> MemoryRecord | None:
        """Return this user's active record `rid` of any stated kind, if it may be read.

        What an update names (`CandidateMemory.updates`): "the book club moved to
        Thursdays", read as an event, is filed as the weekly habit it ends. A raw statement
        (`is_raw_turn`) stands for the newest memory extracted from it, or, with none, is
        returned itself.
        """
        found = self.get_many(user_id, [(kind, rid) for kind in STATED_KINDS]).get(rid)
        raw = None if found else self.get_many(user_id, [("episode", rid)]).get(rid)
        if raw is not None and is_raw_turn(raw):
            # A raw statement stands for the newest memory extracted from it: a recall shows
            # "I bank with Barclays, have done since uni" and hides "User said: I bank with
            # Barclays.", which an update of it changes. With none, it is the memory.
            extracted = (r for r in self.scan(user_id) if rid in r.source.statement_ids)
            found = next(extracted, raw)
        if found is None or found.status != "active" or not self.may_read(found):
            return None
        return found

    def filed_over(
        self, user_id: UserId, cand: CandidateMemory
    ) -> tuple[CandidateMemory, MemoryRecord | None]:
        """Return an update filed as the memory it names, and a raw statement it ends.

        The update takes the kind and subject of the memory it names (`active_record`). A
        raw statement nothing was extracted from has none to give: the update keeps its own,
        and the statement is returned, for the update to end it.
        """
        found = self.active_record(user_id, cand.updates or "")
        if found is None:
            return cand, None  # a made-up id, another user's, ended: the candidate as it is
        if is_raw_turn(found):
            return cand, found
        date = cand.event_date if found.kind == "event" else None
        update = {"kind": found.kind, "subject": found.subject, "event_date": date}
        return cand.model_copy(update=update), None

    def scan(
        self, user_id: UserId, *, include_inactive: bool = False, kind: Kind | None = None
    ) -> list[MemoryRecord]:
        """Return a user's memories, newest first, whatever the access policy says."""
        now = utcnow()
        # Large pages: each page re-sorts the whole namespace in the store; reading
        # 100k memories 5,000 at a time took 7.9 s, in one query 1 s.
        found = self._items(namespace(user_id, kind), SCAN_PAGE)
        records = (MemoryRecord.from_store(i.value) for i in found)
        out = [r for r in records if include_inactive or r.is_recallable(now)]
        out.sort(key=lambda r: r.updated_at, reverse=True)
        return out

    def count(self, user_id: UserId, at_most: int) -> int:
        """Return how many records a user has, whatever their status, counting to `at_most`."""
        return len(self.store.search(namespace(user_id), limit=at_most))

    def with_subject(self, user_id: UserId, kind: Kind, subject: str) -> list[MemoryRecord]:
        """Return every memory of one kind with one subject (e.g. a thread's raw turns).

        A filter on the subject, which the store answers from its subject index.
        """
        found = self._items(namespace(user_id, kind), PAGE, {"subject": subject})
        return [MemoryRecord.from_store(i.value) for i in found]

    def filed_under(
        self, user_id: UserId, kind: Kind, subjects: Iterable[str], prefixes: Iterable[str]
    ) -> list[MemoryRecord]:
        """Return recallable memories of a kind filed under `subjects` or below `prefixes`.

        `work` holds `work.team`; only what this agent may read is returned. A save that
        replaces a slot's records must not read all of a user's memories, so the store is
        asked by subject and by a range of subjects: the SQLite and Postgres stores compare
        strings there. The range is of letters only (`work` up to `worl`), so a collation
        that weighs punctuation last, as Postgres' usual ones do, still orders every
        `work.*` inside it; what else falls inside (`workshop`) is dropped here. Other
        stores compare only numbers in a range: they are scanned.
        """
        ns = namespace(user_id, kind)
        active: dict[str, Any] = {"status": "active"}
        subjects, wanted = tuple(subjects), tuple(prefixes)
        pages = [self._items(ns, PAGE, {**active, "subject": s}) for s in subjects]
        for prefix in wanted:
            if prefix.isascii() and prefix.isalpha() and _ranges_strings(self.store):
                upper = prefix[:-1] + chr(ord(prefix[-1]) + 1)
                pages.append(
                    self._items(ns, PAGE, {**active, "subject": {"$gte": prefix, "$lt": upper}})
                )
            else:
                pages.append(self._items(ns, SCAN_PAGE, active))
        now = utcnow()
        out: dict[str, MemoryRecord] = {}
        for item in (i for page in pages for i in page):
            subject = str(item.value.get("subject", ""))
            if item.key in out or not (
                subject in subjects or any(subject_under(subject, p) for p in wanted)
            ):
                continue
            rec = MemoryRecord.from_store(item.value)
            if rec.is_recallable(now) and self.may_read(rec):
                out[item.key] = rec
        return list(out.values())

    def _items(
        self, ns: tuple[str, ...], page: int, where: dict[str, Any] | None = None
    ) -> Iterator[Item]:
        """Yield every item under `ns` (matching `where`), one store search per page."""
        offset = 0
        while True:
            items = self.store.search(ns, filter=where, limit=page, offset=offset)
            yield from items
            if len(items) < page:
                return
            offset += page

    def visible(
        self,
        user_id: UserId,
        include_inactive: bool = False,
        kind: Kind | None = None,
        include_turns: bool = False,
    ) -> list[MemoryRecord]:
        """Return a user's memories that the agent may read, newest first (`MemoryService.list`)."""
        records = self.scan(user_id, include_inactive=include_inactive, kind=kind)
        return [
            r
            for r in records
            if self.may_read(r) and (include_turns or not r.subject.startswith(TURN_SUBJECT))
        ]

    def unforgotten(self, user_id: UserId, texts: Iterable[str]) -> list[str]:
        """Return the texts that state nothing this user asked to forget."""
        found = self.store.batch(
            [SearchOp(namespace(user_id, k), {"status": "forgotten"}, limit=PAGE) for k in KINDS]
        )
        items = [i for page in found if isinstance(page, list) for i in page if isinstance(i, Item)]
        phrases = [key_phrase(MemoryRecord.from_store(item.value)) for item in items]
        phrases = [p for p in phrases if p]
        return [t for t in texts if not any(states(t, p) for p in phrases)]

    def items(self, ns: tuple[str, ...]) -> list[Item]:
        """Return every item directly in a namespace (not in the ones below it)."""
        return [i for i in self._items(ns, PAGE) if tuple(i.namespace) == ns]

    def users(self, *, with_repairs: bool = False) -> list[str]:
        """Return every user that has memories in the store (and, if asked, repairs owed)."""
        roots = (NAMESPACE_ROOT, REPAIR_ROOT) if with_repairs else (NAMESPACE_ROOT,)
        found: set[str] = set()
        for root in roots:
            spaces = self.store.list_namespaces(prefix=(root,), max_depth=2, limit=100_000)
            found |= {ns[1] for ns in spaces if len(ns) >= 2}
        return sorted(found)

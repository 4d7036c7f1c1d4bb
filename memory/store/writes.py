"""What a turn, a forget, an import or a turn archive writes: reconciled record changes.

`MemoryWriter` decides the changes (screened for sensitive data, reconciled with what is
known, refused where the access policy says so, carried over to the copies of a record) and
hands them to `memory.index.write_through.WriteThrough`, which writes them. Its callers hold
the user's write lock (`memory.store.locks`): each method here reads, decides, then writes.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence, Sized
from datetime import UTC, datetime
from typing import Any

from langgraph.store.base import BaseStore, GetOp, Item, SearchOp

from memory.access import AccessDenied, AccessPolicy, check_write, same_partition
from memory.access import scope_for as access_scope
from memory.extraction import CandidateMemory, Extraction, event_expiry
from memory.index.write_through import WriteThrough
from memory.lifecycle import (
    Change,
    Policy,
    cut_summary,
    forget,
    forget_phrase,
    forget_targets,
    is_clause,
    is_deictic,
    is_summary,
    negation_targets,
    reconcile,
    supersede,
)
from memory.privacy.screen import find_sensitive, redact
from memory.progress import Progress, stage
from memory.store.reads import PAGE, StoreReader
from memory.store.records import (
    TURN_SUBJECT,
    Kind,
    MemoryRecord,
    Source,
    UserId,
    clean_text,
    is_raw_turn,
    namespace,
    neutral_subject,
    normalize_text,
    stable_id,
    turn_ids,
    utcnow,
)
from memory.text.phrases import Phrase, key_phrase, said_phrase, states
from memory.understanding import UPDATE_SUBJECT, read_utterance, replaces_subject, slot_reach

log = logging.getLogger(__name__)
TURN_CHARS = 2000
"""Longest raw turn (and context of one) that `archive_turns` keeps."""
MAX_TIME = datetime.max.replace(tzinfo=UTC)
MAX_IMPORT_CONTENT_CHARS = 20_000
"""Longest `content` an imported row may have. What the agent writes is far shorter (raw
turns: `TURN_CHARS`, others 500); a multi-megabyte row would stall cleaning and indexing."""


def _text(value: Any) -> str:
    """Return a record's `value` as the text the privacy screen reads and redacts."""
    return "" if value is None else str(value)


def _probe(user_id: UserId, words: str) -> MemoryRecord:
    """Return a stand-in record for a change about no stored memory (a forget that missed)."""
    return MemoryRecord(
        id="request", user_id=user_id, kind="fact", subject="request", content=words or "-"
    )


class MemoryWriter:
    """Turns what one agent is told into reconciled changes of one store's records."""

    def __init__(
        self,
        store: BaseStore,
        reader: StoreReader,
        write_through: WriteThrough,
        policy: Policy,
    ) -> None:
        """Create the writer.

        Args:
            store: The source of truth (read for related records).
            reader: Reads records, and carries the agent id and access policy writes obey.
            write_through: Writes the changes to the store, the snapshots and Chroma.
            policy: Lifecycle rules (confidence threshold, privacy, time to live).
        """
        self.store = store
        self.reader = reader
        self.write_through = write_through
        self.policy = policy

    @property
    def agent_id(self) -> str:
        """The agent recorded on every memory written."""
        return self.reader.agent_id

    @property
    def access(self) -> AccessPolicy | None:
        """What the agent may write (None: everything)."""
        return self.reader.access

    def screen(self, texts: Sequence[str]) -> tuple[str, list[str] | None]:
        """Apply the privacy policy to texts that are stored together.

        Returns:
            The kinds of sensitive data found (comma-separated, "" if none), and the texts
            to keep: as they were, redacted, or None when the policy drops them.
        """
        findings = find_sensitive("\n".join(texts))
        if not findings:
            return "", list(texts)
        kinds = ",".join(dict.fromkeys(f.kind for f in findings))
        if self.policy.sensitive == "drop":
            return kinds, None
        return kinds, [redact(t) for t in texts]

    @staticmethod
    def statement(
        content: str,
        kind: Kind,
        subject: str | None,
        value: Any,
        confidence: float,
        event_date: str | None,
    ) -> Extraction:
        """Return the extraction `MemoryService.add` saves: one stated memory.

        With no subject, a one-value family's statement (home, work, age, name) takes the
        family's subject ("I live in Munich." replaces Berlin), anything else a neutral key.
        """
        slot = UPDATE_SUBJECT.get(read_utterance(content).family) if subject is None else None
        cand = CandidateMemory(
            kind=kind,
            subject=subject or slot or f"note.{stable_id('note', normalize_text(content))[:10]}",
            content=content,
            value=value,
            confidence=confidence,
            event_date=event_date,
        )
        return Extraction(memories=[cand])

    def save(
        self,
        user_id: UserId,
        extraction: Extraction,
        source: Source,
        *,
        context: str = "",
        latest: Sequence[str] = (),
        statement_of: Sequence[Sequence[str]] = (),
    ) -> list[Change]:
        """Apply one turn's extraction (see `MemoryService.save`).

        `statement_of` names, per candidate, the statements it was extracted from
        (`memory.turn.link`); `latest` may hold statement ids as well as message ids.
        """
        now = utcnow()
        said_at = source.said_at or now
        changes: list[Change] = []
        for i, cand in enumerate(extraction.memories):
            sids = list(statement_of[i]) if i < len(statement_of) else []
            origin = source.model_copy(update={"statement_ids": sids}) if sids else source
            cand, alone = self.reader.filed_over(user_id, cand) if cand.updates else (cand, None)
            new = self._record(user_id, cand, origin, said_at, now, i)
            found, kept = self.screen([new.content, _text(new.value), new.subject])
            if found and find_sensitive(new.subject.replace(".", " ").replace("_", " ")):
                new.subject = neutral_subject(new.subject, new.content)
            if kept is None:
                # The change is shown (saved lines, `--json`, MCP replies): never the value.
                new.content, new.value = redact(new.content), None
                changes.append(Change("withheld", new, note=f"sensitive: {found}"))
                continue
            if found:
                new.content = kept[0]
                new.value = kept[1] if new.value is not None else None
            new.scope = access_scope(self.access, self.agent_id, new.subject)
            replaced = None
            if cand.replaces:
                mine = [r for r in self.reader.visible(user_id) if same_partition(r, new)]
                replaced = negation_targets(cand.replaces, mine) or None
            step = reconcile(
                new, self.related(user_id, new), now, self.policy, replaced, cand.replaces
            )
            if alone is not None and step[0].action == "added" and step[0].record is new:
                # A raw statement nothing was extracted from is the memory itself: the update
                # ends it ("月嫂一个月一万二", kept only in the user's words, then "月嫂涨到一万三
                # 了"), or both prices would be recalled.
                step.append(supersede(alone, new, now))
            refused = self._refusal(new, step)
            if refused is not None:
                changes.append(refused)
                continue
            step += self.cascade(user_id, step, now)
            self.write_through.write(user_id, step)
            changes.extend(step)
        named = [not is_deictic(r.query.strip(" .。!！")) for r in extraction.forget]
        for n, req in enumerate(extraction.forget):
            # "That" is one thing however often a message says it: "… my pet? I'd rather you
            # didn't keep that" is the request again, and so is "Act like I never said it"
            # after "scratch that" (read twice, it took the statement before the last too).
            if not named[n] and n > 0:
                continue
            records = self.reader.scan(user_id, include_inactive=True)
            targets = forget_targets(req, records, latest, context)
            # A topic ("forget about Kyoto") reaches every statement that names what the
            # targets are about; a statement ("forget that I live in Beijing") reaches the
            # statements that say it, not every one that names Beijing.
            topic = not is_clause(req.query)
            phrases = [said_phrase(r, topic) for r in targets if not is_raw_turn(r)]
            if named[n]:
                phrases.append(forget_phrase(req)[0])
            # Raw turns that say it in so many words, though no extracted record links them.
            targets += [
                r
                for r in records
                if is_raw_turn(r)
                and r.is_recallable(now)
                and any(states(r.content, p) for p in phrases if p)
            ]
            step = []
            for r in dict((t.id, t) for t in targets).values():
                refused = self._refusal(r, [])
                if refused is not None:
                    changes.append(refused)
                else:
                    step.append(forget(r, now))
            step += self.cascade(user_id, step, now, phrases=phrases, records=records)
            if not targets:
                changes.append(Change("unmatched", _probe(user_id, req.query), note=req.query))
            self.write_through.write(user_id, step)
            changes.extend(step)
        return changes

    def cascade(
        self,
        user_id: UserId,
        step: list[Change],
        now: datetime,
        *,
        phrases: list[Phrase] | None = None,
        records: list[MemoryRecord] | None = None,
        hard: bool = False,
    ) -> list[Change]:
        """Carry superseded and forgotten records over to their other copies.

        This is the one place that decides which copies a change reaches:

        * the raw turns a record was said in (found by its message ids) share its fate:
          superseded with it (so "where do I live?" finds only the new city), or
          forgotten (deleted, if `hard`);
        * a forgotten record's words are cut from every thread summary that states them
          (`phrases`, matched as whole words); a summary left empty is forgotten.

        The rolling summary and working memory in a thread's state, and the thread's own
        messages, are cleaned by the graph's save node from the changes returned by `save`.
        """
        ended = [
            c
            for c in step
            if c.action in ("superseded", "forgotten") and c.record.kind != "episode"
        ]
        out: list[Change] = []
        done = {c.record.id for c in step}
        linked = [("episode", tid) for c in ended for tid in turn_ids(c.record)]
        turns = self.reader.get_many(user_id, linked) if linked else {}
        live = _reached(hard)
        for c in ended:
            for tid in turn_ids(c.record):
                turn = turns.get(tid)
                if turn is None or tid in done or turn.status not in live:
                    continue
                done.add(tid)
                if c.action == "forgotten":
                    out.append(forget(turn, now, "forgotten with what it said"))
                else:
                    turn.history.append(turn.snapshot("superseded", now))
                    turn.status = "superseded"
                    turn.valid_until = now
                    turn.superseded_by = c.record.superseded_by
                    turn.updated_at = now
                    out.append(Change("superseded", turn, note="raw turn"))
        phrases = [p for p in (phrases or []) if p]
        gone = [
            c.record.content
            for c in [*step, *out]
            if c.action == "forgotten" and is_raw_turn(c.record)
        ]
        if phrases or gone:
            if records is None:
                records = self.reader.scan(user_id, include_inactive=True, kind="episode")
            statuses = ("active",) if not hard else ("active", "forgotten", "superseded")
            summaries = [r for r in records if is_summary(r) and r.status in statuses]
            for summary in (r for r in summaries if r.id not in done):
                change = cut_summary(summary, phrases, gone, now)
                if change is not None:
                    done.add(summary.id)
                    out.append(change)
        out += self._cut_from_contexts(user_id, [*step, *out], phrases, records, done, hard, now)
        return out

    def _cut_from_contexts(
        self,
        user_id: UserId,
        changes: list[Change],
        phrases: list[Phrase],
        records: list[MemoryRecord] | None,
        done: set[str],
        hard: bool,
        now: datetime,
    ) -> list[Change]:
        """Drop what ended from the context other raw turns were imported with.

        An imported turn keeps the turns around it as context (searched, and part of its
        vector). A neighbour that was forgotten or superseded, or that states a forgotten
        phrase, leaves that context; the turn itself stays.
        """
        ended = [
            c.record
            for c in changes
            if c.action in ("superseded", "forgotten") and is_raw_turn(c.record)
        ]
        gone = {normalize_text(t.content) for t in ended}
        if not gone and not phrases:
            return []
        if phrases and records is not None:
            turns = [r for r in records if is_raw_turn(r)]
        else:  # neighbours share the thread, and so the subject, of the turn that ended
            subjects = {t.subject for t in ended}
            turns = [r for s in subjects for r in self.reader.with_subject(user_id, "episode", s)]
        statuses = _reached(hard)
        out: list[Change] = []
        for turn in turns:
            around = turn.context
            if not around or turn.id in done or turn.status not in statuses:
                continue
            kept = [
                c
                for c in around
                if normalize_text(c) not in gone and not any(states(c, p) for p in phrases)
            ]
            if len(kept) == len(around):
                continue
            done.add(turn.id)
            turn.value = {**turn.value, "context": kept}  # other keys stay as they were
            turn.updated_at = now
            out.append(Change("edited", turn, note="context without what was forgotten"))
        return out

    def forget(self, user_id: UserId, memory_id: str, *, hard: bool = False) -> MemoryRecord:
        """Forget one memory, soft or hard (see `MemoryService.forget`)."""
        rec = self.reader.get(user_id, memory_id)
        check_write(self.access, self.agent_id, rec)
        now = utcnow()
        change = forget(rec, now)
        phrases = [] if is_raw_turn(rec) else [key_phrase(rec)]
        copies = self.cascade(user_id, [change], now, phrases=phrases, hard=hard)
        if not hard:
            self.write_through.write(user_id, [change, *copies])
            return change.record
        # Only what was targeted: the record, the raw turns it was said in, and summary
        # lines that state it (cut, or the summary dropped when nothing else is left).
        gone = [rec, *(c.record for c in copies if c.action == "forgotten")]
        edited = [c for c in copies if c.action == "edited"]
        # A superseding record carries the old one's history: its words go too.
        ids = {r.id for r in gone}
        for other in self.reader.scan(user_id, include_inactive=True):
            if other.id not in ids and any(h.record_id in ids for h in other.history):
                other.history = [h for h in other.history if h.record_id not in ids]
                edited.append(Change("edited", other, note="history of a deleted memory"))
        self.write_through.write(user_id, edited)
        self.write_through.delete(user_id, gone)
        return rec

    def archive_turns(
        self,
        user_id: UserId,
        turns: Iterable[tuple[str, str, str | list[str]]],
        source: Source,
        *,
        ids: Sequence[str] = (),
        scopes: Mapping[str, str] | None = None,
        expires: Mapping[str, datetime] | None = None,
    ) -> int:
        """Keep raw user turns as `episode` memories (see `MemoryService.archive_turns`).

        Args:
            user_id: Whose turns.
            turns: `(message_id, text, context)` each.
            source: Thread and time.
            ids: The record id of each turn (a statement's, `memory.text.statements`); default:
                one per message.
            scopes: A scope per record id, narrower than the agent's default (a statement
                whose memory is private to an agent is private to it too).
            expires: An end per record id, sooner than the policy's `turn_ttl` (a statement
                whose event ends with it).
        """
        said_at = source.said_at or utcnow()
        records = []
        default_scope = access_scope(self.access, self.agent_id, "episode.turn")
        ends = dict(expires or {})
        for n, (message_id, said, around) in enumerate(turns):
            rid = (
                ids[n]
                if n < len(ids)
                else stable_id(user_id, "turn", source.thread_id or "", message_id)
            )
            text = clean_text(said)[:TURN_CHARS]
            context = [
                clean_text(c)[:TURN_CHARS]
                for c in ([around] if isinstance(around, str) else around)
            ]
            context = [c for c in context if c]
            if not text:
                continue
            _, kept = self.screen([text, *context])
            if kept is None:
                continue
            text, context = kept[0], kept[1:]
            records.append(
                MemoryRecord(
                    id=rid,
                    user_id=user_id,
                    agent_id=self.agent_id,
                    scope=(scopes or {}).get(rid) or default_scope,
                    kind="episode",
                    subject=f"{TURN_SUBJECT}{source.thread_id or 'none'}",
                    content=text,
                    value={"context": context} if context else None,
                    confidence=1.0,
                    source=source.model_copy(update={"message_ids": [message_id],
                                                     "said_at": said_at}),
                    created_at=said_at,
                    updated_at=said_at,
                    valid_from=said_at,
                    expires_at=min(said_at + self.policy.turn_ttl, ends.get(rid, MAX_TIME)),
                )
            )  # fmt: skip
        if not records:
            return 0
        existing = self.reader.get_many(user_id, [("episode", r.id) for r in records])
        new = [r for r in records if r.id not in existing]
        self.write_through.write(user_id, [Change("added", r) for r in new])
        return len(new)

    def import_records(
        self,
        user_id: UserId,
        rows: Iterable[dict[str, Any]],
        max_content: int,
        progress: Progress | None = None,
    ) -> int:
        """Check every row, then write them all (see `MemoryService.import_records`).

        Reports the stages ``checking`` (rows), then those of `WriteThrough.put_all`.
        """
        records = []
        row_of: dict[str, int] = {}
        advance = stage(
            progress, f"{user_id}: checking", len(rows) if isinstance(rows, Sized) else None
        )
        for n, row in enumerate(rows, 1):
            # Checked before validation: cleaning a multi-megabyte text alone takes seconds.
            content = row.get("content") if isinstance(row, dict) else None
            if isinstance(content, str) and len(content) > max_content:
                raise ValueError(
                    f"record {n} has {len(content):,} characters of content; the limit is "
                    f"{max_content:,}. Shorten or split it, then import again (nothing was "
                    "imported)"
                )
            try:
                rec = MemoryRecord.model_validate(
                    {"agent_id": self.agent_id, **row, "user_id": user_id}
                )
            except Exception as exc:
                raise ValueError(f"record {n} is not a memory record: {exc}") from exc
            if rec.id in row_of:
                raise ValueError(
                    f"id {rec.id!r} is used twice, by records {row_of[rec.id]} and {n}: give "
                    "one of them another id or remove it, then import again (nothing was "
                    "imported)"
                )
            row_of[rec.id] = n
            try:
                check_write(self.access, self.agent_id, rec)
            except AccessDenied as exc:
                raise AccessDenied(f"record {n}: {exc}") from exc
            records.append(rec)
            advance(1)
        kept = [r for r in map(self._screen_import, records) if r is not None]
        self.write_through.put_all(user_id, kept, progress)
        return len(kept)

    def related(self, user_id: UserId, new: MemoryRecord) -> list[MemoryRecord]:
        """Return readable records in the new one's scope sharing its id, subject or statement."""
        ns = namespace(user_id, new.kind)
        # Filtered in the database: a save must not read all of a user's memories.
        same_id, by_subject, by_content = self.store.batch(
            [
                GetOp(ns, new.id),
                SearchOp(ns, {"subject": new.subject}, limit=PAGE),
                SearchOp(ns, {"content": new.content}, limit=PAGE),
            ]
        )
        out = []
        if isinstance(same_id, Item):
            out.append(MemoryRecord.from_store(same_id.value))
        seen = {new.id}
        for page in (by_subject, by_content):
            for item in page if isinstance(page, list) else ():
                if not isinstance(item, Item):
                    continue
                rec = MemoryRecord.from_store(item.value)
                if rec.id not in seen and self.reader.may_read(rec) and same_partition(rec, new):
                    seen.add(rec.id)
                    out.append(rec)
        reach = slot_reach(new.subject)
        if reach is not None:  # one value per slot: what it replaces may be filed elsewhere
            out += [
                rec
                for rec in self.reader.filed_under(user_id, new.kind, *reach)
                if rec.id not in seen
                and replaces_subject(new.subject, rec.subject)
                and same_partition(rec, new)
            ]
        return out

    def _screen_import(self, rec: MemoryRecord) -> MemoryRecord | None:
        found, kept = self.screen([rec.content, _text(rec.value)])
        if kept is None or not found:
            return None if kept is None else rec
        rec.content = kept[0]
        rec.value = kept[1] if rec.value is not None else None
        rec.history = []
        return rec

    def _record(
        self,
        user_id: UserId,
        cand: CandidateMemory,
        source: Source,
        said_at: datetime,
        now: datetime,
        position: int,
    ) -> MemoryRecord:
        event_day = None
        if cand.kind == "event" and cand.event_date:
            try:
                event_day = datetime.fromisoformat(cand.event_date).replace(tzinfo=said_at.tzinfo)
            except ValueError:
                log.warning("event_date %r is not an ISO date: ignored", cand.event_date)
        # Same turn + same statement → same id, so a replayed save writes nothing twice.
        origin = ",".join(source.message_ids) or f"{said_at.isoformat()}#{position}"
        rid = stable_id(user_id, cand.kind, cand.subject, normalize_text(cand.content), origin)
        return MemoryRecord(
            id=rid,
            user_id=user_id,
            agent_id=self.agent_id,
            kind=cand.kind,
            subject=cand.subject,
            content=cand.content,
            value=cand.value,
            confidence=cand.confidence,
            source=source.model_copy(update={"said_at": said_at}),
            created_at=now,
            updated_at=now,
            valid_from=event_day if cand.kind == "event" else said_at,
            expires_at=(
                event_expiry(event_day, said_at, self.policy.event_ttl)
                if cand.kind == "event"
                else None
            ),
        )

    def _refusal(self, new: MemoryRecord, step: list[Change]) -> Change | None:
        """Return a `refused` change if the access policy forbids any change in `step`.

        Records other agents wrote are checked first, so the reason names their writer.
        """
        touched = [c.record for c in step if c.action != "unchanged" and c.record is not new]
        for rec in [*touched, new]:
            try:
                check_write(self.access, self.agent_id, rec)
            except AccessDenied as exc:
                return Change("refused", new, note=str(exc))
        return None


def _reached(hard: bool) -> tuple[str, ...]:
    """Return the statuses of the copies a change reaches; a hard delete reaches all."""
    return ("active", "archived", "forgotten", "superseded", "expired")[: 5 if hard else 2]

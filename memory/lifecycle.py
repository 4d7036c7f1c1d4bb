"""What to trust, update, forget: every rule about a memory's life lives here.

The save node, the memory service, the CLI and the MCP server share these rules. The
functions are pure: they take records and return the changes to write.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal

import memory.understanding.topics as topics
from memory.extraction import ForgetRequest
from memory.lexical.bm25 import STOP_WORDS, tokenize
from memory.privacy.screen import redact
from memory.store.records import (
    HALF_LIFE_DAYS,
    MemoryRecord,
    is_raw_turn,
    normalize_text,
    stable_id,
    turn_ids,
)
from memory.summary import came_from
from memory.text.language import HAN
from memory.text.phrases import JUST_SAID, NOT_A_MODIFIER, Phrase, key_phrase, phrase_of, states
from memory.understanding import FAMILY_PREFIX, family_prefixes, read_utterance, replaces_subject
from memory.understanding.topics import by_meaning, continued, family_of, forget_words, said_with

Action = Literal[
    "added", "held", "reinforced", "promoted", "superseded", "conflict", "forgotten",
    "merged", "archived", "expired", "withheld", "refused", "unchanged", "edited", "unmatched",
]  # fmt: skip
"""`withheld`: sensitive data, not written; `refused`: the access policy (`memory.access`)
does not let the writing agent make this change, not written; `edited`: a summary had
forgotten words cut out; `unmatched`: a forget request that matched nothing (not written)."""
REINFORCE_STEP = 0.05

# Words a user says when asking to forget, mapped to the subjects they mean.
_FORGET_ALIASES: dict[str, tuple[str, ...]] = {
    "address": ("profile.city", "profile.address"),
    "where i live": ("profile.city", "profile.address"),
    "city": ("profile.city",),
    "地址": ("profile.city", "profile.address"),
    "住址": ("profile.city", "profile.address"),
    "住在哪": ("profile.city", "profile.address"),
    "住哪": ("profile.city", "profile.address"),
    "城市": ("profile.city",),
    "name": ("profile.name",),
    "名字": ("profile.name",),
    "叫什么": ("profile.name",),
    "叫啥": ("profile.name",),
    "job": ("work.",),
    "work": ("work.",),
    "employer": ("work.company",),
    "工作": ("work.",),
    "职业": ("work.role",),
    "diet": ("diet.",),
    "饮食": ("diet.",),
    "allergy": ("health.allergy",),
    "allergies": ("health.allergy",),
    "过敏": ("health.allergy",),
    "phone": ("contact.",), "email": ("contact.",),
    "email address": ("contact.",), "邮箱地址": ("contact.",),
    "电子邮件地址": ("contact.",),
    "电话": ("contact.",),
    "邮箱": ("contact.",),
    "birthday": ("profile.birthday",), "生日": ("profile.birthday",),
    # The children together are no one relative (`aliases.KIN`): each child's subject.
    "kids": ("family.son", "family.daughter"), "children": ("family.son", "family.daughter"),
    "孩子": ("family.儿子", "family.女儿"),
}  # fmt: skip
# A forget request made of these words points at the user's latest statement.
_DEICTIC = re.compile(
    r"^(?:it|that|this|those|these|that one|this one|the last one|all that|all of that"
    rf"|{JUST_SAID}|i (?:just )?(?:said|told you|mentioned) (?:that|this|it)"
    r"|这个|这|那个|那|这件事|那件事|这些|那些|它|这句|那句|这句话|那句话|上一句|最后一句"
    r"|(?:我)?(?:刚才|刚刚|方才|之前)(?:说|讲|提|告诉你)?(?:的|过的)?(?:那句|这句)?"
    r"(?:话|内容|事|东西)?)$",
    re.I,
)
_BARE = frozenset({"it", "that", "this", "those", "these", "这", "那", "这个", "那个", "它"})


@dataclass(frozen=True)
class Policy:
    """The lifecycle's tunable rules.

    Attributes:
        candidate_threshold: Below this confidence a statement is held as a `candidate`:
            never recalled until confirmed.
        conflict_margin: Confidences closer than this count as near-equal.
        candidate_ttl: How long an unconfirmed candidate waits before it expires.
        event_ttl: Expiry of an event whose date is unknown.
        half_life_days: Per kind, the age at which recency's share of a memory's ranking
            weight halves (None: no decay; facts are superseded instead). Defaults to each
            kind's `half_life` in `memory.store.records.KINDS`.
        archive_after: Memories neither recalled nor restated for this long are archived.
        turn_ttl: How long raw user turns (`episode` memories) stay recallable.
        archive_turns: Keep each user turn as a raw `episode` memory beside the extracted ones.
        sensitive: What to do with passwords, keys, card and ID numbers, phone numbers and
            emails found in a statement: `drop` it, or keep it with the data `redact`ed.
        redact_thread: Also redact them in the checkpointed thread once the turn is
            answered (the model sees the value for the one reply it was given for).
    """

    candidate_threshold: float = 0.6
    conflict_margin: float = 0.1
    candidate_ttl: timedelta = timedelta(days=30)
    event_ttl: timedelta = timedelta(days=7)
    half_life_days: dict[str, float | None] = field(default_factory=lambda: dict(HALF_LIFE_DAYS))
    archive_after: timedelta = timedelta(days=180)
    turn_ttl: timedelta = timedelta(days=365)
    archive_turns: bool = True
    sensitive: Literal["drop", "redact"] = "drop"
    redact_thread: bool = True


@dataclass
class Change:
    """One decision about one record; `record` is what gets written."""

    action: Action
    record: MemoryRecord
    previous: MemoryRecord | None = None
    note: str = ""

    def describe(self) -> str:
        """Return a one-line human description."""
        r = self.record
        if self.action == "unmatched":
            return f'unmatched: nothing remembered matches the forget request "{self.note}"'
        # A withheld statement's value must not reach the state's `saved` list either.
        content = redact(r.content) if self.action == "withheld" else r.content
        base = f"{self.action}: [{r.kind} {r.subject}] {content}"
        if self.previous is not None and self.action in ("added", "merged"):
            base = f"{base} (supersedes: {self.previous.content})"
        return f"{base} ({self.note})" if self.note else base


def said_at(record: MemoryRecord) -> datetime:
    """Return when a record's statement was made."""
    return record.source.said_at or record.created_at


def same_statement(a: MemoryRecord, b: MemoryRecord) -> bool:
    """Return True if two records say the same thing."""
    if normalize_text(a.content) == normalize_text(b.content):
        return True
    return a.subject == b.subject and a.value is not None and a.value == b.value


def _reinforce(old: MemoryRecord, new: MemoryRecord, now: datetime, policy: Policy) -> Change:
    old.history.append(old.snapshot("reinforced", now))
    old.confidence = min(1.0, max(old.confidence, new.confidence) + REINFORCE_STEP)
    old.updated_at = now
    if new.source.statement_ids:
        said = old.source.statement_ids or turn_ids(old)
        old.source.statement_ids = list(dict.fromkeys(said + new.source.statement_ids))
    old.source.message_ids = list(dict.fromkeys(old.source.message_ids + new.source.message_ids))
    if new.kind == "event" and new.expires_at:
        old.expires_at = max(old.expires_at or new.expires_at, new.expires_at)
    if old.status in ("candidate", "archived"):
        # Seen again: a candidate is confirmed, an archived memory is warm again.
        old.status = "active"
        if old.kind != "event":
            old.expires_at = None
        return Change("promoted", old)
    return Change("reinforced", old)


def supersede(old: MemoryRecord, new: MemoryRecord, now: datetime) -> Change:
    """End `old` as superseded by `new`, which takes its history; return the change."""
    old.history.append(old.snapshot("superseded", now))
    old.status, old.valid_until, old.superseded_by = "superseded", now, new.id
    old.updated_at, old.conflict_group = now, None
    new.supersedes = old.id
    new.history = [*new.history, *old.history]
    return Change("superseded", old)


def reconcile(
    new: MemoryRecord,
    existing: list[MemoryRecord],
    now: datetime,
    policy: Policy | None = None,
    replaced: list[MemoryRecord] | None = None,
    negated: str | None = None,
) -> list[Change]:
    """Decide how a new statement changes a user's memories.

    Args:
        new: The candidate, already built as a record.
        existing: The user's records that share its kind and subject (or its slot, see
            `memory.understanding.SLOTS`), or say the same thing.
        now: The time of the decision.
        policy: The rules; defaults to `Policy()`.
        replaced: For a negation, the active records it ends (see `negation_targets`).
        negated: What the negation names ("use Go"): a replaced record that lists it among
            other values keeps those (`remainder`).

    Returns:
        The changes to write, store first and index second. Replaying the same
        statement (same record id) returns an `unchanged` change.
    """
    policy = policy or Policy()
    for old in existing:
        if old.id == new.id:
            return [Change("unchanged", old)]
    for old in existing:
        if old.status in ("active", "candidate", "archived") and same_statement(old, new):
            return [_reinforce(old, new, now, policy)]

    if new.confidence < policy.candidate_threshold:
        new.status = "candidate"
        expiry = now + policy.candidate_ttl
        new.expires_at = min(new.expires_at, expiry) if new.expires_at else expiry
        return [Change("held", new, note="low confidence: waits for confirmation")]

    changes: list[Change] = []
    if replaced:
        new.subject = replaced[0].subject if len(replaced) == 1 else new.subject
        rest = []
        for old in replaced:
            kept = remainder(old.content, negated) if negated else None
            if kept:
                # "I no longer use Go" ends Go, not Python: the other values stay, as a
                # record of their own that supersedes the list.
                left = old.model_copy(
                    deep=True,
                    update={"id": stable_id(old.id, "rest", kept), "content": kept,
                            "created_at": now, "updated_at": now, "history": []},
                )  # fmt: skip
                changes.append(supersede(old, left, now))
                rest.append(Change("added", left, old, note="the values not negated"))
            else:
                changes.append(supersede(old, new, now))
        return [Change("added", new, replaced[0]), *changes, *rest]

    rivals = [
        r
        for r in existing
        # One value per slot: a new employer replaces the old one whatever its subject said.
        if r.status == "active" and r.kind == new.kind and replaces_subject(new.subject, r.subject)
    ]
    previous = None
    for old in rivals:
        later = said_at(new) > said_at(old)
        gap = new.confidence - old.confidence
        # Later and not clearly less sure: restating Berlin twice (confidence up) must not
        # keep it against a later "I moved to Munich".
        if (later and gap >= -policy.conflict_margin) or gap > policy.conflict_margin:
            changes.append(supersede(old, new, now))
            previous = old
        elif abs(gap) <= policy.conflict_margin:
            group = old.conflict_group or stable_id("conflict", old.id)
            old.conflict_group = new.conflict_group = group
            old.updated_at = now
            changes.append(Change("conflict", old, note="both kept; ask the user"))
        else:
            new.status = "candidate"
            new.expires_at = now + policy.candidate_ttl
            return [Change("held", new, note=f"less confident than: {old.content}")]
    return [Change("added", new, previous), *changes]


_LIST_SEP = r"(?:\s*,\s*(?:and\s+|or\s+)?|\s+and\s+|\s+or\s+|\s*[、，,和及与跟]\s*)"


def remainder(content: str, negated: str) -> str | None:
    """Return a list statement without one negated value, or None if it is not listed.

    "User uses Python and Go." without "Go" is "User uses Python."; "用户喜欢茶、咖啡和果汁。"
    without 咖啡 is "用户喜欢茶和果汁。". Only an exact enumeration is cut; a statement about
    the value alone ends whole (None).
    """
    words = negated.split()
    for value in dict.fromkeys([negated, " ".join(words[1:]) if len(words) > 1 else negated]):
        v = re.escape(value.strip())
        if not v:
            continue
        edge = r"(?<![\w])" if value.isascii() else ""
        tail = r"(?![\w])" if value.isascii() else ""
        for pattern in (rf"{_LIST_SEP}{edge}{v}{tail}", rf"{edge}{v}{tail}{_LIST_SEP}"):
            m = re.search(pattern, content, flags=re.IGNORECASE)
            if m:
                cut = content[: m.start()] + content[m.end() :]
                return cut if cut.strip(" .。") else None
    return None


def _overlap(query: str, content: str) -> float:
    """Share of the query's character bigrams found in the content."""
    grams = {query[i : i + 2] for i in range(len(query) - 1)}
    if not grams:
        return 0.0
    return sum(g in content for g in grams) / len(grams)


def negation_targets(phrase: str, records: list[MemoryRecord]) -> list[MemoryRecord]:
    """Return the active records a negation ("I no longer drink coffee") ends.

    In English the verb is dropped before matching ("drink coffee" → "coffee"), since the
    earlier statement may have used another one ("User likes coffee.").
    """
    words = phrase.split()
    obj = " ".join(words[1:]) if len(words) > 1 else phrase
    wanted = [p for p in (phrase_of(phrase), phrase_of(obj)) if p]
    return [
        r
        for r in records
        if r.status == "active"
        and not is_raw_turn(r)
        and any(states(r.content, p) or states(str(r.value or ""), p) for p in wanted)
    ]


def is_summary(record: MemoryRecord) -> bool:
    """Return True for an archived thread summary."""
    return record.kind == "episode" and record.source.via == "summary"


_ITEM = re.compile(r"(?:^|\s)-\s")
"""Where an item of a rendered summary starts (stored content may be one line)."""


def cut_summary(
    summary: MemoryRecord, phrases: Sequence[Phrase], gone: Sequence[str], now: datetime
) -> Change | None:
    """Cut what was forgotten from an archived thread summary, line by line.

    A line goes if it states a forgotten phrase, or comes from a forgotten statement
    (`gone`, their texts) however the summarizer worded it (`memory.summary.came_from`).

    Returns:
        The change (the summary edited, or forgotten if no item is left), or None.
    """
    lines = summary.content.split("\n")
    kept = [
        ln
        for ln in lines
        if not any(states(ln, p) for p in phrases)
        and not any(came_from(item, said) for item in _ITEM.split(ln)[1:] for said in gone)
    ]
    if len(kept) == len(lines):
        return None
    if not any(ln.startswith("- ") for ln in kept):
        return forget(summary, now, "forgotten with what it said")
    summary.content = "\n".join(kept)
    summary.updated_at = now
    return Change("edited", summary, note="summary without what was forgotten")


def is_deictic(query: str) -> bool:
    """Return True if a request names only "that" / "what I just said" (then, maybe, why)."""
    # "forget it, the printer works now" is "never mind": only a said-thing takes a reason.
    head = re.split(r"\s*[,，;；]\s*", query, maxsplit=1)[0]
    said = head.casefold() not in _BARE and bool(_DEICTIC.match(head))
    return not query or bool(_DEICTIC.match(query)) or said


def forget_phrase(
    request: ForgetRequest, family: str | None = None
) -> tuple[Phrase, tuple[str, ...]]:
    """Return what a forget request names, and the prefixes its words (of `family`) stand for."""
    query = topics.forget_words(request)
    low = query.casefold()
    prefixes = topics.filed_under(request.subject) if request.subject else []
    owner = family_of(request.subject) if request.subject else None
    if owner is not None and request.subject == FAMILY_PREFIX[owner]:
        # A family named whole ("stop keeping where I live") reaches its remarks ("home.…").
        prefixes.extend(family_prefixes(owner))
    # An alias stands for its family only where the model reads the words as of that family:
    # "我公司地址" is the office's address (work), not where the user lives.
    family = family or (read_utterance(query).family if query else "none")
    # Longest first, each match used up: "email address" is not also an "address".
    for word in sorted(_FORGET_ALIASES, key=len, reverse=True):
        whole = rf"(?<![a-z]){re.escape(word)}{NOT_A_MODIFIER}"  # "my work van" is no work
        pattern = whole if word.isascii() else re.escape(word)
        if re.search(pattern, low):
            owners = {family_of(p.rstrip(".")) for p in _FORGET_ALIASES[word]} - {None}
            if family not in FAMILY_PREFIX or not owners or family in owners:
                prefixes.extend(_FORGET_ALIASES[word])
            low = re.sub(pattern, " ", low)
    phrase = phrase_of(query, clause=is_clause(query), request=True)
    return phrase, tuple(dict.fromkeys(prefixes))


def is_clause(query: str) -> bool:
    """Return True if a forget request names a statement of the user's, not a topic.

    "that I love running", "I live in Berlin", 我住在北京 say something about the user;
    "Mark", "my sister", 我的地址 name a topic, and everything about it goes.
    """
    q = query.strip().removeprefix("that ").strip()
    if re.search(r"(?i)\b(?:where|what|which|who|when|how)\b|哪|什么|谁|多少|几", q):
        return False  # "where I work", 我叫什么: a topic named by a question
    mine = re.match(r"(?i)^(?:I|I'm|I've|I'd|I was|I used to)\b", q)
    return bool(mine or re.match(f"^我(?!的|们的)[{HAN}]", q))


def forget_targets(
    request: ForgetRequest,
    records: list[MemoryRecord],
    latest: Sequence[str] = (),
    context: str = "",
) -> list[MemoryRecord]:
    """Return the records a forget request points at (raw turns and summaries not included).

    Words are matched whole (`memory.text.phrases`): "tea" never hits "team" or "steak". The
    raw turns and summaries that carry a target are found from it (`MemoryService`).

    Args:
        request: What the user asked to forget.
        records: The user's records.
        latest: Ids of the user's latest statements (or, before statements, messages) in
            this thread, newest first: "forget that" / "别再提这个了" mean the newest remembered.
        context: What the assistant said last: when none of `latest` stated anything,
            "that" means the memories it mentioned.
    """
    # Summaries are cut line by line by the caller, never forgotten whole from here.
    live = [
        r for r in records if r.status in ("active", "candidate", "archived") and not is_summary(r)
    ]
    if is_deictic(topics.forget_words(request)):
        # "That" is what the user said last that is remembered in any form (a memory
        # extracted from it, or only its raw copy): the whole message of their newest such
        # statement, and nothing said before it. "Scratch that last thing I said" takes
        # back "I'm learning the cello, my teacher says my bow arm is a disaster" whole.
        for sid in latest:
            ids = {sid, *said_with(sid, live)} | continued(sid, live)
            group = [
                r
                for r in live
                if r.id in ids or ids.intersection(r.source.statement_ids)
                or (not r.source.statement_ids and sid in r.source.message_ids)
            ]  # fmt: skip
            if group:
                return group
        return [
            r for r in live if r.kind != "episode" and context and states(context, key_phrase(r))
        ]
    # The family the words name, as the user's records agree ("公司地址" is not the home).
    request, family = topics.one_value_family(request, live)
    phrase, prefixes = forget_phrase(request, family)
    found = [
        r for r in live
        if r.kind != "episode" and (
            any(r.subject.startswith(p) for p in prefixes) or states(r.content, phrase)
            or (isinstance(r.value, str) and states(r.value, phrase))
        )
    ]  # fmt: skip
    if not found:  # A topic no word says ("我血糖的事"); a statement is matched as said
        found = by_meaning(forget_words(request), live, family, across=not is_clause(request.query))
    return found + topics.said_around(found, live)


def describe_forget(changes: list[Change], remembered: list[str], zh: bool) -> str:
    """Return the note telling the user what a forget request did.

    What was forgotten is counted, not quoted: quoting it would put it back in the thread.
    """
    forgotten = [c.record for c in changes if c.action == "forgotten"]
    notes = sum(1 for r in forgotten if r.kind != "episode")
    said = len(forgotten) - notes
    missed = [c.note for c in changes if c.action == "unmatched"]
    parts = []
    if forgotten:
        parts.append(
            f"（记忆：已忘记 {notes} 条记忆和 {said} 条原话。）"
            if zh
            else f"(Memory: forgot {notes} memories and {said} statements that said them.)"
        )
    for words in missed:
        have = "；".join(remembered) if zh else "; ".join(remembered)
        if zh:
            parts.append(
                f"（记忆：没有找到与“{words or '刚才说的'}”相符的记忆。"
                + (f"我记得的有：{have}）" if remembered else "我现在没有关于你的记忆。）")
            )
        else:
            parts.append(
                f'(Memory: nothing I remember matched "{words or "what you just said"}". '
                + (f"What I remember: {have})" if remembered else "I remember nothing about you.)")
            )
    return " ".join(parts)


def forget(record: MemoryRecord, now: datetime, reason: str = "forgotten") -> Change:
    """Soft-forget a record: it stays in history but never returns to recall."""
    record.history.append(record.snapshot(reason, now))
    record.status, record.valid_until, record.updated_at = "forgotten", now, now
    record.conflict_group = None
    return Change("forgotten", record)


def consolidate(
    records: list[MemoryRecord], now: datetime, policy: Policy | None = None
) -> list[Change]:
    """Tidy one user's memories: sweep expired, merge duplicates, resolve, archive cold.

    Idempotent: running it on its own output returns no changes. A record may appear in
    several changes; each carries the same (edited) record object.
    """
    policy = policy or Policy()
    changes: list[Change] = []
    for r in records:
        if r.status in ("active", "candidate") and r.expires_at and r.expires_at <= now:
            r.history.append(r.snapshot("expired", now))
            r.status = "expired"
            r.updated_at = now
            r.conflict_group = None
            changes.append(Change("expired", r))

    by_subject: dict[tuple[str, str], list[MemoryRecord]] = defaultdict(list)
    for r in records:
        # Raw turns and summaries are what was said, each once: never merged.
        if r.status == "active" and r.kind != "episode":
            by_subject[(r.kind, r.subject)].append(r)
    for group in by_subject.values():
        group.sort(key=lambda r: (r.confidence, said_at(r)), reverse=True)
        keepers: list[MemoryRecord] = []
        for r in group:
            twin = next((k for k in keepers if _near_duplicate(k, r)), None)
            if twin is None:
                keepers.append(r)
                continue
            supersede(r, twin, now)
            twin.history.append(r.snapshot("merged", now))
            twin.updated_at = now
            changes.append(Change("merged", twin, r))
            changes.append(Change("superseded", r))

    groups: dict[str, list[MemoryRecord]] = defaultdict(list)
    for r in records:
        if r.conflict_group:
            groups[r.conflict_group].append(r)
    for members in groups.values():
        live = [m for m in members if m.status == "active"]
        if len(live) == 1:
            live[0].conflict_group = None
            changes.append(Change("reinforced", live[0], note="conflict resolved"))
            continue
        live.sort(key=lambda r: r.confidence, reverse=True)
        if len(live) > 1 and live[0].confidence - live[1].confidence > policy.conflict_margin:
            winner = live[0]
            for loser in live[1:]:
                changes.append(supersede(loser, winner, now))
            winner.conflict_group = None
            winner.supersedes = winner.supersedes or live[1].id
            changes.append(Change("reinforced", winner, note="conflict resolved"))

    for r in records:
        if r.status != "active" or r.kind == "event":
            continue
        last = max(r.updated_at, r.last_recalled_at or r.updated_at)
        if now - last >= policy.archive_after:
            r.history.append(r.snapshot("archived", now))
            r.status = "archived"
            r.updated_at = now
            changes.append(Change("archived", r))
    return changes


def _near_duplicate(a: MemoryRecord, b: MemoryRecord) -> bool:
    """Return True if two records of one subject say the same thing in other words.

    Bigram overlap alone would merge "Tom" with "Tim" or "car" with "cars": the words of
    one must all be in the other, and what the longer adds may not be a number or a new
    name ("New York" → "New York City" merges; "Tom" → "Tom and Tim" does not).
    """
    x, y = normalize_text(a.content), normalize_text(b.content)
    if x == y:
        return True
    if min(len(x), len(y)) < 4 or _overlap(x, y) < 0.8 or _overlap(y, x) < 0.8:
        return False
    short, long = sorted((a.content, b.content), key=lambda t: len(_words(t)))
    if not _words(short) <= _words(long):
        return False
    shared = _words(short)
    previous = ""
    for word in re.findall(r"[^\W_]+", long):
        folded = word.casefold()
        if folded not in shared and folded not in STOP_WORDS:
            if any(ch.isdigit() for ch in word):
                return False
            if word[0].isupper() and not (previous[:1].isupper() and previous.casefold() in shared):
                return False
        previous = word
    return True


def _words(text: str) -> frozenset[str]:
    """Return the words (unstemmed) and Chinese characters of a text, function words aside."""
    return frozenset(tokenize(text, stemming=False))

"""What is shown together: a recalled memory, and what was said with it.

A message is filed clause by clause, and a clause alone often says little; what was said in
one breath is lifted and shown together (`said_together`, `said_in_message`), and a raw turn
that only restates a memory shown beside it is dropped (`drop_restated_turns`). Pure
functions over the user's records, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from memory.store.records import MemoryRecord, message_of, normalize_text
from memory.understanding.updates import in_users_words

SAID_WITH = 4
"""At most this many raw statements (or memories) of its message come with a clause kept in
the user's words."""


def said_together(ids: set[str], records: Mapping[str, MemoryRecord], now: datetime) -> set[str]:
    """Return the typed memories said in the same statement as one of `ids`.

    A sentence cut into clauses is filed clause by clause, and a clause may land in another
    family than the sentence is about ("我是佛教徒" in "我是佛教徒，长期吃素"): what was said in
    one breath is lifted together. A memory's own statement is the first it is linked to
    (`memory.turn.link`); the others are ones whose words it merely repeats.
    """

    def said_in(rec: MemoryRecord) -> str | None:
        return rec.source.statement_ids[0] if rec.source.statement_ids else None

    said = {sid for i in ids if i in records and (sid := said_in(records[i])) is not None}
    if not said:
        return set()
    return {
        rid
        for rid, rec in records.items()
        if rid not in ids
        and rec.kind != "episode"
        and said_in(rec) in said
        and rec.is_recallable(now)
    }


def said_in_message(
    ids: list[str], records: Mapping[str, MemoryRecord], now: datetime
) -> dict[str, list[str]]:
    """Return, for each memory of `ids`, what else its message said.

    A message is filed clause by clause, and a clause alone often says nothing: "my throat
    gets scratchy and tight" answers "Am I allergic to anything?" only beside "Sesame wrecks
    me." of the same message, and "mostly for a Lisbon trip" says nothing of Portuguese
    when "been trying to pick up Portuguese" was filed under no memory. The message's raw
    statements say all of it that is still kept; when none was archived, its other memories
    stand in. A memory an extractor wrote in its own words ("用户在一家做跨境电商的公司工作。")
    restates its own statements and may have dropped the rest of the message ("叫海鲸科技"):
    it brings the message's other raw statements only. A raw statement brings the rest of
    its message as said ("switched gyms!" answers "which gym do I go to?" only beside "I'm
    at the YMCA now"). At most `SAID_WITH`, in the order kept.
    """
    asked = {i: key for i in ids if i in records and (key := message_of(records[i])) is not None}
    if not asked:
        return {}
    kept: dict[tuple[str, str], list[MemoryRecord]] = {}
    wanted = set(asked.values())
    for rec in records.values():
        key = message_of(rec)
        if key in wanted and rec.is_recallable(now):
            kept.setdefault(key, []).append(rec)

    def said(i: str, key: tuple[str, str]) -> list[str]:
        rec = records[i]
        found = sorted(kept.get(key, []), key=lambda r: (r.created_at, r.id))
        raw = [r for r in found if r.kind == "episode"]
        if rec.kind == "episode":  # a raw statement: the rest of its message, as said
            return [r.id for r in raw if r.id != i][:SAID_WITH]
        if not in_users_words(rec.content):  # in the extractor's words
            own = set(rec.source.statement_ids)
            return [r.id for r in raw if r.id not in own][:SAID_WITH] if own else []
        return [r.id for r in raw or found if r.id != i][:SAID_WITH]

    return {i: said(i, key) for i, key in asked.items()}


def drop_restated_turns(
    ranked: list[tuple[str, float]],
    live: dict[str, MemoryRecord],
    lexical: list[tuple[str, float]],
    pinned: list[MemoryRecord],
    k: int,
) -> list[tuple[str, float]]:
    """Drop raw turns, recalled on meaning alone, whose own extraction is recalled too.

    "I live in Oslo." next to "User lives in Oslo." (extracted from that very message, so
    its source is that one message) only repeats it; a turn that matched the query's words
    is kept, since it may say more than was extracted.
    """
    shown = [live[i] for i, _ in ranked[:k]] + pinned
    typed = [r for r in shown if r.kind != "episode"]
    # A memory linked to its statement restates that statement alone; one from before
    # statements existed restates its whole message.
    said = {sid for r in typed for sid in r.source.statement_ids}
    messages = {
        r.source.message_ids[0]
        for r in typed
        if not r.source.statement_ids and len(r.source.message_ids) == 1
    }
    if not said and not messages:
        return ranked
    matched = {i for i, s in lexical if s > 0}

    def restated(turn: MemoryRecord) -> bool:
        if turn.id in said:
            return True
        ids = set(turn.source.message_ids)
        return bool(ids) and ids <= messages

    # A turn that matched the query's words may say more than was extracted, unless a typed
    # memory shown quotes all of it ("用户说：晚上尽量不吃米饭。" for "晚上尽量不吃米饭。").
    quoted = [normalize_text(r.content) for r in typed]

    def says_more(turn: MemoryRecord) -> bool:
        words = normalize_text(turn.content)
        return not words or not any(words in q for q in quoted)

    return [
        (i, s)
        for i, s in ranked
        if live[i].kind != "episode"
        or not restated(live[i])
        or (i in matched and says_more(live[i]))
    ]

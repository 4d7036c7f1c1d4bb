"""Recall: one user's memories relevant to a query, best first.

Hybrid recall: BM25 over the user's lexical snapshot (`memory.lexical.changes`) fused with Chroma
similarity and ranked by `memory.recall.ranking`; every result is re-read from the store before
it is returned, and a few "core" memories always worth knowing are pinned alongside.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from langgraph.store.base import BaseStore, PutOp

from memory.index.chroma import ChromaIndex, IndexUnavailable
from memory.index.embeddings import embed_queries
from memory.lexical.changes import LexicalSnapshots
from memory.lexical.snapshot import UserIndex
from memory.lifecycle import Policy
from memory.recall import aliases, ranking
from memory.recall.together import drop_restated_turns, said_in_message, said_together
from memory.store.locks import UserLocks
from memory.store.reads import StoreReader
from memory.store.records import (
    KINDS,
    STYLE_SUBJECT,
    MemoryRecord,
    UserId,
    message_of,
    namespace,
    normalize_text,
)
from memory.text.asking import asks_by_form, only_asks_for_help, split_sentences
from memory.text.language import in_letters
from memory.text.statements import parts_of
from memory.understanding import (
    FAMILY_PREFIX,
    family_prefixes,
    nearness,
    probability_of,
    read_question,
    read_utterance,
    read_utterances,
    slot_of,
)
from memory.understanding.topics import filed_under
from memory.understanding.updates import ROUTINE, in_users_words, record_text, spoken

log = logging.getLogger(__name__)
CANDIDATES = 200
"""How many candidates each of the lexical and the dense index is asked for."""
PINNED = 4
"""At most this many core memories are added to what a query recalls."""
CORE_SUBJECTS = ("profile.", "diet.", "health.")
STYLE_PINNED = 2
"""At most this many of the user's newest instructions on how to answer (`STYLE_SUBJECT`) are
added besides the `PINNED`, in a group of their own: never in an allergy's place."""
ASKED_WITH = {"diet": ("health",), "travel": ("event",)}
"""What a question about a family also asks about (the prefixes of what is filed under it):
a meal must avoid what the user's body does not take ("晚饭吃什么好？" reads as diet; "用户对
芒果过敏。" and a reaction kept in the user's words, "芒果我碰不了，一吃就起疹子", are filed
under health); a trip is one the user planned ("那边这几天冷不冷，要带羽绒服吗" after "下周三
飞哈尔滨看冰雕", a dated event)."""
MEAL = "diet"
"""A meal is the household's too: what the food head reads of a relative ("我老公一点辣都
吃不了", filed under him) comes with the user's own limits."""
NEARER = 0.05
"""How far above the best match a meal's limit nearest to what was asked is lifted (one
nearest to nothing: level with it); they are ordered by their nearness to the question
(`Recall._family_matches`)."""
SURE_OF_ONE = 0.5
"""The probability of a family (by hand: likelier than not) at which what is filed under it is
lifted to the best match, as a meal's limits are: "周末想在家附近找个地方逛逛" (home) shares
no word with "我们家租在江北区". Under it, just above the relevance floor."""
IMMINENT = timedelta(days=14)
_PARTS = re.compile(r"[，,;；]")
ALSO_ASKED = 0.15
"""A question is about a second family too when the model gives it at least this."""

KIND_POOL = 50
"""How many of the nearest memories are read for the kind of thing a query is about."""


def _of_kind(
    query: str, dense: list[tuple[str, float]], records: Mapping[str, MemoryRecord], k: int,
    now: datetime,
) -> set[str]:  # fmt: skip
    """Return the ids of the nearest memories about the kind of thing the query is about.

    "it's pouring all week, how do I keep the dog from going stir crazy?" shares no word
    with "we've got a kelpie called Ringo", and the encoder puts a breed or a make far from
    the general word ("can my PC run it?" and "gaming on a Ryzen 5 with a 3060"). The
    things head reads both as a kind of thing (`Reading.thing`: a pet, a vehicle, a device,
    a trip, exercise), as a forget request's topic is read (`topics._things`). Only the
    `KIND_POOL` nearest typed memories are read, so a query's cost does not grow with every
    memory, and only when at most `k` of them are of the kind (more do not say which).
    """
    thing = read_utterance(query).thing
    if thing == "other":
        return set()
    # Typed memories only, as a family's lift (a raw turn of a conversation is no statement
    # of the user's about a thing: on LoCoMo, lifting turns cost evidence recall).
    typed = [(i, sim) for i, sim in dense if i in records and records[i].kind != "episode"]
    near = sorted(typed, key=lambda hit: -hit[1])[:KIND_POOL]
    pool = [i for i, _ in near if records[i].is_recallable(now)]
    readings = read_utterances([record_text(records[i].content) for i in pool])
    found = {i for i, r in zip(pool, readings, strict=True) if r.thing == thing}
    return found if len(found) <= k else set()


def _eats(records: Mapping[str, MemoryRecord], ids: list[str], now: datetime) -> list[str]:
    """Return the ids of `ids` the food head reads as what someone eats or must not.

    Each is read with what its message said too (`said_in_message`), which may say more than
    its clause ("我家那位见不得香菜" is a limit beside "放了就不吃饭").
    """
    said = said_in_message(ids, records, now)
    texts = [(i, spoken(records[i].content)) for i in ids]
    texts += [
        (i, " ".join(record_text(records[j].content) for j in said[i])) for i in ids if said.get(i)
    ]
    readings = read_utterances([text for _, text in texts])
    return sorted({i for (i, _), r in zip(texts, readings, strict=True) if r.food})


def pin(record: MemoryRecord) -> tuple[str, float] | None:
    """Place memories that may be worth knowing in any conversation with the user.

    Dated events, by date (core from the day before to `IMMINENT` days ahead), and
    profile, diet and health memories, newest first (always core).
    """
    if KINDS[record.kind].pins and record.valid_from is not None:
        return "event", record.valid_from.timestamp()
    if record.subject.startswith(STYLE_SUBJECT):
        return "style", -record.updated_at.timestamp()
    if record.subject.startswith(CORE_SUBJECTS):
        return "core", -record.updated_at.timestamp()
    return None


@dataclass(frozen=True)
class Recalled:
    """A memory returned by search, with its score and why it was returned."""

    record: MemoryRecord
    score: float
    why: str = "relevant"
    """`relevant` (ranked for the query), `core` (always worth knowing) or `conflict`
    (the other side of a conflicting note that was recalled)."""
    said_with: tuple[MemoryRecord, ...] = ()
    """The other memories kept from the message a clause was said in (`said_in_message`)."""

    @property
    def shown(self) -> tuple[MemoryRecord, ...]:
        """Return the memory and what was said with it, as a prompt lists them."""
        return (self.record, *self.said_with)


def _as_near_as_said(
    dense: list[tuple[str, float]], records: Mapping[str, MemoryRecord]
) -> list[tuple[str, float]]:
    """Return dense hits with each memory as near as the nearest statement it was said in.

    A memory kept as a whole sentence ("我有哮喘，包里常年揣着一瓶沙丁胺醇喷雾，换季最容易犯")
    has one vector for all its clauses; the statement "我有哮喘" is nearer to "我有什么老毛病
    吗？". Only the hits are looked at: a statement that is no hit lifts nothing.
    """
    near = dict(dense)
    out = []
    for i, sim in dense:
        rec = records.get(i)
        if rec is not None and rec.kind != "episode" and rec.source.statement_ids:
            sim = max(sim, *(near.get(sid, sim) for sid in rec.source.statement_ids))
        out.append((i, sim))
    return out


_ECHO_CHARS = 8  # the least letters (`in_letters`) a remark must have to count as said again


def _echoes(query: str, records: Mapping[str, MemoryRecord], ids: set[str]) -> set[str]:
    """Return the ids of `ids` whose words the query says again beside a question.

    A question often comes with a remark ("what are my eye drops called again? the pharmacy
    form wants it", "帮我写段自我介绍，明早面试用"), kept when the question was first asked:
    asked again, it matched itself far above the answer, which the cut relative to the best
    hit then dropped. What is said again while asking is no answer, nor is the question,
    kept raw when first asked ("下周又要面试了，有啥窍门没" kept "下周又要面试了").
    """
    # Of the latest message only (the one before it is context, `graphs.nodes`), cut at
    # commas too: "我家猫这两天不爱吃东西，咋整" is one sentence and asks in one part.
    query = query.rsplit("\n", 1)[-1]
    sentences = [p for s in split_sentences(query) for p in (parts_of(s)[1:] or [s])]
    if len(sentences) < 2:
        return set()
    readings = read_utterances(sentences)
    asks = [r.asks or r.asking or asks_by_form(s) for s, r in zip(sentences, readings, strict=True)]
    if not any(asks):
        return set()
    said = normalize_text(" ".join(s for s, a in zip(sentences, asks, strict=True) if not a))
    whole = normalize_text(query)
    return {
        i
        for i in ids
        if i in records and (w := _said_words(records[i])) and (w in said or w == whole)
    }


_ISO_END = re.compile(r"\d{8}$")
"""A dated event's day, as its content ends in the offline path ("…（2026-10-02）"), folded."""


def _said_words(record: MemoryRecord) -> str:
    """Return what a record says in the user's words, folded and undated ("" if too short)."""
    words = normalize_text(record_text(record.content))
    words = _ISO_END.sub("", words) if record.kind == "event" else words
    return words if in_letters(words) >= _ECHO_CHARS else ""


class Recall:
    """Searches one store's memories for one agent, and counts what was recalled."""

    def __init__(
        self,
        store: BaseStore,
        index: ChromaIndex | None,
        reader: StoreReader,
        snapshots: LexicalSnapshots,
        locks: UserLocks,
        policy: Policy,
    ) -> None:
        """Create the recall of a store.

        Args:
            store: The source of truth; recall counts are written to it.
            index: The Chroma index; None (or one that is down) recalls by words only.
            reader: Reads records back from the store, and says what the agent may read.
            snapshots: The users' lexical snapshots.
            locks: Snapshot updates are made under the user's lock.
            policy: Its decay half-lives rank the results.
        """
        self.store = store
        self.index = index
        self.reader = reader
        self.snapshots = snapshots
        self.locks = locks
        self.policy = policy

    def search(self, user_id: UserId, query: str, k: int, now: datetime) -> list[Recalled]:
        """Return up to `k` ranked memories plus up to `PINNED` core ones.

        See `MemoryService.search`.
        """
        if k <= 0:
            return []
        snap = self.snapshots.current(user_id, now)
        records = snap.records
        lexical = snap.bm25.search(query, CANDIDATES) if query.strip() else []
        # "My sister" also means the Lena the user named (one hop, read from the user's own
        # naming statements, re-checked like any hit): `memory.recall.aliases`.
        names: list[str] | None = None
        hop = None
        if lexical:
            hop = aliases.hop(
                query,
                lexical,
                snap.bm25.search_terms,
                records,
                lambda ids: self._may_link(user_id, ids, records, now),
                names=ranking.names_in(query),
            )
            if hop is not None:
                lexical, names = hop.lexical, hop.names
        dense: list[tuple[str, float]] = []
        if self.index is not None and query.strip():
            try:
                asked = [query, *(hop.queries if hop is not None else ())]
                vectors = embed_queries(self.index.embedder, asked)
                # The snapshot names the records the store has: a shard user's vectors are
                # scored from those (`memory.index.shard_cache`), not read by filter.
                hits = self.index.query(user_id, vectors[0], CANDIDATES, records)
                dense = [(h.id, h.similarity) for h in hits]
                if hop is not None and hop.queries:
                    more = [self.index.query(user_id, v, CANDIDATES, records) for v in vectors[1:]]
                    dense = hop.dense(dense, [[(h.id, h.similarity) for h in m] for m in more])
                    hits += [h for m in more for h in m]
                missing = list(dict.fromkeys((h.kind, h.id) for h in hits if h.id not in records))
                if missing:  # written elsewhere and not (yet) in the change log we read
                    with self.locks.local(user_id):
                        found = self.reader.get_many(user_id, missing).values()
                        usable = {r.id: r for r in found if r.is_recallable(now)}
                        records.update(usable)
                        self.snapshots.lexical.upsert(user_id, usable.values())
            except IndexUnavailable as exc:
                log.warning("index unavailable, recalling by words only: %s", exc)
        # Only candidates and core memories are looked at: a query's cost must not grow.
        dense = _as_near_as_said(dense, records)
        near = self._family_matches(snap.records, query, k, now, someone=hop is not None)
        matched = {i for i, _ in [*dense, *lexical]} | set(near)
        echoes = _echoes(query, records, matched)
        # Said again word for word, a message sets no cut: a question with no mark of one
        # ("我早上起来头一件事一般干啥来着") kept as a statement matched itself far above all.
        folded = normalize_text(query)
        restated = {i for i in matched if i in records and _said_words(records[i]) == folded}
        kinds = _of_kind(query, dense, records, k, now) - echoes
        dense = [(i, sim) for i, sim in dense if i not in echoes]
        lexical = [(i, score) for i, score in lexical if i not in echoes]
        candidates = {i for i, _ in dense} | {i for i, _ in lexical}
        live = {i: records[i] for i in candidates if i in records and records[i].is_recallable(now)}
        family = (set(near) - echoes) | kinds
        if family:
            family |= said_together(family, snap.records, now)
            # Lifted just above the relevance floor: a candidate, never above a real match
            # (lifting it to the best hit flooded Chinese paraphrase recall with neighbours).
            # What a user has one of (a slot: home, employer, age) is the answer itself: its
            # record is lifted level with the best match ("我在哪上班？" and "我跳槽了，现在在
            # 小米。" share no word, and the encoder puts them apart).
            floor = ranking.tuned(self._rank_config(), query).relevance_floor + 0.05
            # Never under the floor: with few memories every hit may sit below it, and the
            # answer would be cut with them ("Where am I employed these days?" found nothing).
            best = max([floor, *(sim for _, sim in dense)])

            own = dict(dense)

            def lift(i: str) -> float:
                if slot_of(snap.records[i].subject):
                    return best
                # Of the kind of thing asked about (`_of_kind`): the answer, above what is only
                # filed under the family asked about (the dog before the bike: both are
                # possessions), in the order of its own nearness.
                if i in kinds:
                    return best + NEARER * (1.0 + max(own.get(i, 0.0), 0.0))
                # A meal is the user's limits all together (`_family_matches`): each is lifted
                # to the best match or just above it, nearest to what was asked first, so an
                # allergy comes before a pill ("晚饭吃什么？" is no closer to "芒果我碰不了"
                # than to any other remark, in the encoder's eyes), and a remark the encoder
                # finds near a meal (an anniversary dinner) no longer comes between them.
                if near.get(i) is not None:
                    return best + NEARER * (near[i] or 0.0)
                # Level with each other, they keep the order of their own nearness: "my boy
                # needs a coat on walks" reaches the greyhound before the car.
                return floor + NEARER * max(own.get(i, 0.0), 0.0)

            have = {i for i, _ in dense}
            dense = [(i, max(sim, lift(i)) if i in family else sim) for i, sim in dense]
            dense += [(i, lift(i)) for i in family if i not in have]
            # A meal's limits level with the best word match too: a remark said with the
            # question shares words with what it is not about ("Rough shift at the depot,
            # what's for tea?"). Not another family's: "my calves ache, any stretches before
            # five-a-side?" is answered by the football, not by every health remark.
            top = max((s for _, s in lexical), default=0.0)
            sure = {i: top for i in family if near.get(i) is not None}
            if top and sure and read_question(query).asked == MEAL:
                lexical = sorted({**dict(lexical), **sure}.items(), key=lambda x: -x[1])
        for i, _ in dense:
            if i not in live and i in records and records[i].is_recallable(now):
                live[i] = records[i]
        # Raw conversation turns come back when their words match, or above the episode
        # floor of the encoder and the query's language (`ranking.episode_floor`).
        ranked = ranking.rank(
            query,
            dense,
            lexical,
            live,
            now,
            config=self._rank_config(),
            k=3 * k + 10,
            names=names,
            # Ranked up only for the user's own: of a relative ("我妹妹住在哪里？"), what was said
            # of them by name answers (`aliases`), not what is filed under the family.
            asked=set() if aliases.relation_in(query) else family,
            restated=restated - echoes,
        )
        pinned = self._pinned(snap, now)
        ranked = drop_restated_turns(ranked, live, lexical, pinned, k)
        said = said_in_message([i for i, _ in ranked], records, now)
        # The lexical snapshot may be stale: the store has the last word.
        wanted = [(live[i].kind, i) for i, _ in ranked] + [(r.kind, r.id) for r in pinned]
        wanted += [(records[j].kind, j) for js in said.values() for j in js]
        fresh = self.reader.get_many(user_id, wanted)
        gone = [i for _, i in wanted if i not in fresh or not fresh[i].is_recallable(now)]
        if gone:
            with self.locks.local(user_id):
                self.snapshots.lexical.remove(user_id, gone)
        with_it = {
            i: tuple(fresh[j] for j in js if j in fresh and j not in gone) for i, js in said.items()
        }
        out = self._finish(
            user_id,
            [
                Recalled(fresh[i], s, said_with=with_it.get(i, ()))
                for i, s in ranked
                if i in fresh and i not in gone
            ],
            k,
        )
        have = {rec.id for r in out for rec in r.shown}
        extra = [r for r in pinned if r.id in fresh and r.id not in gone and r.id not in have]
        may_read = self.reader.may_read
        readable = [r for r in extra if may_read(r)]
        style = [r for r in readable if r.subject.startswith(STYLE_SUBJECT)][:STYLE_PINNED]
        core = [r for r in readable if not r.subject.startswith(STYLE_SUBJECT)][:PINNED]
        out += [Recalled(fresh[r.id], 0.0, "core") for r in [*core, *style]]
        return out

    @staticmethod
    def _family_matches(
        records: Mapping[str, MemoryRecord], query: str, k: int, now: datetime, someone: bool
    ) -> dict[str, float | None]:
        """Return what is filed under the families a question asks about, with a nearness.

        "Where do I live?" shares no word with "We rent a narrow townhouse in Delft", and the
        encoder puts them apart; the understanding model reads the question as about home,
        and the statement was filed under home. Only typed memories (raw turns have no
        family), and only a family that holds at most `k` memories (one that holds many does
        not say which).

        A question the model gives another family at least `ALSO_ASKED` asks about that one
        too, the same way ("我们这行最近裁员好多啊，要不要学点别的技能？": skills, and work).

        A question that also asks about another family (`ASKED_WITH`: a meal, and what the
        body does not take) counts each family on its own: the user's allergies are not
        fewer because they keep a diet, and a dinner idea must respect both. Its memories
        come with their nearness to what was asked, the model's probability of the question's
        family for each ("Shellfish wrecks me." is nearer to a meal than a daily pill), and
        so do those of a family the question is sure of (`SURE_OF_ONE`); the others come with
        None. A question about someone else ("What does my sister eat?", `someone`: a name an
        alias links) asks about what is filed under them.
        """
        reading = read_question(query)
        asked = reading.asked  # what the answer depends on, not what the words are about
        # A request asks too, read as a plan or not ("help me plan meals for the week"), and so
        # does a message whose last part asks, though it says something first ("这周末回去给我
        # 爸做顿饭，整点啥菜好": kept for what it says, asked for what it asks).
        last = _PARTS.split(query.strip().rstrip("。.!！~～"))[-1]
        asks = (
            reading.intent == "question"
            or reading.asking
            or asks_by_form(query)
            or asks_by_form(last)
            or only_asks_for_help(query)
        )
        if not asks:
            return {}

        def filed(prefixes: tuple[str, ...]) -> list[str]:
            return sorted(
                rid
                for rid, rec in records.items()
                if rec.kind != "episode"
                and rec.subject.startswith(prefixes)
                and rec.is_recallable(now)
            )

        # A meal the user cooks or eats too, whoever else is named ("my brother's over for
        # supper, what should I make?"), is the user's as much as theirs: the user's limits come
        # with what is filed under the relative, and with a taste typed as one ("i hate okra";
        # a remark filed with the tastes is none). "What does my brother eat?" is his alone.
        shared = asked == MEAL and aliases.names_the_user(query)
        found: dict[str, float | None] = {}
        if (who := aliases.relation_in(query)) is not None:
            # Of a relative, by any word for them ("闺女下个月过生日" for "我女儿…"), what is
            # filed under them is the answer (`filed_under`).
            ids = filed(tuple(f"{s}." for s in filed_under(f"{FAMILY_PREFIX['family']}.{who}")))
            if ids and len(ids) <= k:
                if not shared:
                    return dict.fromkeys(ids, 1.0)
                found.update(dict.fromkeys(ids, 1.0))
        if not family_prefixes(asked):
            return {}
        if asked != "family" and (who is not None or someone) and not shared:
            return {}  # of someone else: a relative, or a name linked to one ("小雨爱好是啥")
        also = ASKED_WITH.get(asked, ())

        # Asked as a routine (the kind head: "我一般早上几点起来？"), the time is a routine's.
        habitual = asked == "schedule" and reading.kind == "habit"
        first = (f"{ROUTINE}.",) if habitual else family_prefixes(asked)
        for prefixes in [first, *((p,) for p in also)]:
            ids = filed(prefixes)
            if len(ids) > k:
                continue
            found.update(dict.fromkeys(ids))
            if also or probability_of(reading, asked, asked=True) >= SURE_OF_ONE:
                readings = read_utterances([records[i].content for i in ids])
                found.update((i, nearness(r, reading)) for i, r in zip(ids, readings, strict=True))
        if asked == MEAL and (shared or (who is None and not someone)):
            tastes = [i for i in filed(("likes.",)) if not in_users_words(records[i].content)]
            kin = _eats(records, [*filed(family_prefixes("family")), *tastes], now)
            readings = read_utterances([records[i].content for i in kin])
            found.update((i, nearness(r, reading)) for i, r in zip(kin, readings, strict=True))
        # A second family too: "我们这行最近裁员好多啊，要不要学点别的技能？" (skills, and work).
        # Of someone else ("What does my brother like to eat?"), none of the user's own.
        for family in () if who is not None or someone else FAMILY_PREFIX:
            if family in (asked, *also) or probability_of(reading, family, asked=True) < ALSO_ASKED:
                continue
            ids = [i for i in filed(family_prefixes(family)) if i not in found]
            if len(ids) <= k:
                found.update(dict.fromkeys(ids))
        return found

    def mark_recalled(
        self, user_id: UserId, recalled: Iterable[tuple[str, str]], now: datetime
    ) -> None:
        """Count a recall of each `(kind, id)`; call it under the user's write lock."""
        records = self.reader.get_many(user_id, dict.fromkeys(recalled))
        for rec in records.values():
            rec.hits += 1
            rec.last_recalled_at = now
        self.store.batch(
            [PutOp(namespace(user_id, r.kind), r.id, r.to_store()) for r in records.values()]
        )

    def _pinned(self, snap: UserIndex, now: datetime) -> list[MemoryRecord]:
        """Return the newest core memories (see `pin`) that can be shown, plus spares.

        The spares stand in for any that the store re-check drops. The user's instructions
        come besides, as many again as `STYLE_PINNED`.
        """

        def newest(group: str, want: int) -> list[MemoryRecord]:
            if group not in snap.pinned:
                return []
            live = (r for r in snap.pinned[group].between() if r.is_recallable(now))
            return list(itertools.islice(live, want))

        want = PINNED * 2
        found = newest("core", want)
        if "event" in snap.pinned:
            soon = snap.pinned["event"].between(
                (now - timedelta(days=1)).timestamp(), (now + IMMINENT).timestamp()
            )
            found += [r for r in soon if r.is_recallable(now)]
        core = heapq.nlargest(want, found, key=lambda r: r.updated_at)
        return core + newest("style", STYLE_PINNED * 2)

    def _may_link(
        self, user_id: UserId, ids: list[str], records: Mapping[str, MemoryRecord], now: datetime
    ) -> set[str]:
        """Return the records of `ids` still recallable and readable here (may make an alias)."""
        # The lexical snapshot may lag a forget made elsewhere: the store has the last word.
        fresh = self.reader.get_many(user_id, [(records[i].kind, i) for i in ids if i in records])
        return {i for i, r in fresh.items() if r.is_recallable(now) and self.reader.may_read(r)}

    def _rank_config(self) -> ranking.RankConfig:
        return ranking.RankConfig(
            embedder=self.index.embedder.spec if self.index is not None else "local",
            half_life_days=self.policy.half_life_days,
        )

    def _finish(self, user_id: UserId, ranked: list[Recalled], k: int) -> list[Recalled]:
        """Drop unreadable ones and duplicates, cut to k, pull in the other side of conflicts."""
        out: list[Recalled] = []
        seen: set[str] = set()
        shown: set[str] = set()
        places: dict[tuple[str, str], int] = {}
        may_read = self.reader.may_read
        for r in (r for r in ranked if may_read(r.record)):
            key = normalize_text(r.record.content)
            if key in seen or len(out) == k:
                continue
            # A clause whose own statement is already on show adds nothing ("tastes like soap
            # to me" after "I genuinely hate cilantro. tastes like soap to me, no exceptions").
            said = set(r.record.source.statement_ids)
            if in_users_words(r.record.content) and said and said <= shown:
                continue
            # What was said with a clause is shown with it, once: a clause already shown
            # beside one ranked higher takes no place of its own.
            with_it = tuple(
                w for w in r.said_with if may_read(w) and normalize_text(w.content) not in seen
            )
            seen.update(normalize_text(rec.content) for rec in (r.record, *with_it))
            shown.update(rec.id for rec in (r.record, *with_it))
            # One message is one place of the top: a memory kept from a message already shown
            # (an event dated from one of its clauses, another of its clauses) goes beside it,
            # so the places left go to what other messages said.
            message = message_of(r.record)
            if message is not None and message in places:
                at, first = places[message], out[places[message]]
                if first.record.kind == "episode" and r.record.kind != "episode":
                    # A memory typed from the message heads its place, not a raw statement.
                    beside = (first.record, *first.said_with, *with_it)
                    out[at] = replace(first, record=r.record, said_with=beside)
                else:
                    out[at] = replace(first, said_with=(*first.said_with, r.record, *with_it))
                continue
            if message is not None:
                places[message] = len(out)
            out.append(replace(r, said_with=with_it))
        groups = {r.record.conflict_group for r in out if r.record.conflict_group}
        if groups:
            have = {r.record.id for r in out}
            for rec in self.reader.visible(user_id):
                if rec.conflict_group in groups and rec.id not in have:
                    out.append(Recalled(rec, 0.0, "conflict"))
        return out

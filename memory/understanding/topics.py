"""What a forget request's topic names when no remembered word says it: by family and meaning.

"Delete the stuff about my blood sugar" must reach "I inject insulin every morning": no word
is shared. The words are read for their family (health), and only messages that said
something of it are weighed, statement by statement, by the encoder's similarity to the
words; only what was kept in the user's own words (a record with a value, a name or a
request naming a statement is matched by its words). One message is taken, only when near
enough and clearly nearer than every other: a topic must never take a neighbour (the allergy
beside the insulin), so of two about as near neither goes. Of the message taken, what was
said together with the topic goes too, raw statements included. Also: what "that" reaches
(`continued`), whether a one-value family is what words name (`one_value_family`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from memory.extraction import ForgetRequest
from memory.lexical.bm25 import tokenize
from memory.recall.aliases import filed_as
from memory.store.records import MemoryRecord, is_raw_turn, message_of
from memory.text.language import HAN, has_han
from memory.text.phrases import phrase_of, states
from memory.text.statements import continues, parts_of, split_text, statement_id
from memory.understanding import (
    FAMILY_PREFIX,
    Reading,
    family_prefixes,
    read_utterance,
    read_utterances,
)
from memory.understanding.features import sentence_vectors

MEANING_FLOOR = 0.30
"""The least cosine similarity (bundled encoder) between a request's words and a record. Set
on the calibration pairs of `tests/unit/test_forget_by_meaning.py` (a neighbour of the same
family reaches 0.26: "我海鲜过敏" vs the insulin); checked on its held-out ones."""
MEANING_MARGIN = 0.04
"""How much nearer than the family's next record the one taken must be."""
RAW_OFFSET = 0.07
"""How much less a raw statement's similarity counts than a record's. Without the frame the
floor was set on, the calibration pairs' raw copies are nearer: their neighbours reach 0.35
("我海鲜过敏" vs the insulin) and the topics meant start at 0.39; 0.37 parts them (checked
on the held-out pairs: none wrong), which is the floor plus this."""
ACROSS_FLOOR = 0.30
"""The least similarity of a request's words to the one message they mean, weighed among all
of the user's messages when none of the words' family is clearly it (`by_meaning`). Chosen
with `ACROSS_MARGIN` on the calibration pools of `benchmarks/data/forget_topics.json`
(`python benchmarks/forget_topics.py`: taken right less twice what is taken wrongly); on its
held-out pools, 58 of 84 topics taken right (45 without it), 7 wrong (6), and 20 of 36
topics the user never said take something (20)."""
ACROSS_MARGIN = 0.06
"""How much nearer than every other message of the user's that message must be."""
_ANY_TOPIC = frozenset({"everyth", "anyth", "stuff", "thing", "bit", "info", "detail", "whole"})
"""Words that point at a topic without naming any (stems, as `naming_terms` gives them, and a
closed class): "everything about steak" names one thing, as "steak" does."""
_DESCRIBED_HAN = 5
"""Chinese words that describe a topic, not name one thing: a word is seldom more than four
characters (猫头鹰 is one thing, and no 猫), "家里每月还贷款那事" describes one."""
_BY_KIND = ("habit.", "event.")
"""Subjects that file a record by its kind (a routine, a dated event), not by what it is about."""

_EXTRA_PREFIXES = {"hobbies": ("likes",), "home": ("home",)}
"""Where the offline path files remarks of a family besides its prefix (`graphs.offline_rules`)."""


def family_of(subject: str) -> str | None:
    """Return the subject family a record's subject is filed under, or None."""
    for family in FAMILY_PREFIX:
        prefixes = (*family_prefixes(family), *_EXTRA_PREFIXES.get(family, ()))
        if any(subject == p or subject.startswith(p + ".") for p in prefixes):
            return family
    return None


def by_meaning(
    words: str, records: Sequence[MemoryRecord], family: str | None = None, *, across: bool = True
) -> list[MemoryRecord]:
    """Return what a forget request's `words` name in other words: one message's statements.

    What a user says about one thing is often one message of several clauses ("Because of
    my asthma, I always carry an inhaler"), each kept as its own statement,
    and the request's words may be nearest to any of them. So statements are weighed by the
    message they were said in: only messages with a record of the words' family are weighed,
    and one is taken when it is near enough and clearly nearer than every other. Of it, the
    statements said together with the nearest go too (`_said_together`), not a neighbour
    about something else ("I live in Berlin and I'm vegetarian").

    Args:
        words: What the request names, without its request words ("我血糖的事").
        records: The user's live records, raw statements included (summaries are not weighed).
        family: The words' family, if already weighed (`one_value_family`); else the model's.
        across: Whether a topic no message of its family is clearly near may mean a message
            filed under another (`_across`); not for a statement, matched as said.

    Returns:
        The records and raw statements to forget, or `[]` (no family, none near, two as near).
    """
    if not words.strip():
        return []
    units = _statements(records)
    # A word for medicines in general names one, whatever else is said with it (`_ANY_MEDICINE`).
    if read_utterance(words).medicine or _ANY_MEDICINE.search(words):
        taken = _medicines(words, units)
        if taken:
            return [r for u in taken for r in u.records]
    # A kind of thing is one whoever it is named with ("the holiday I took after losing
    # Margaret"): the one message of that kind.
    thing = read_utterance(words).thing
    if thing != "other":
        taken = _things(words, thing, units)
        if taken:
            return [r for u in taken for r in u.records]
    if phrase_of(words, request=True).names:
        return []  # a name ("Forget about Tomtom") is matched by its words only
    family = family or read_utterance(words).family
    said = _by_message(units)
    messages: list[str] = []
    if family in FAMILY_PREFIX:
        # A message is weighed only if it says something of the family: "我胃不舒服的那些事"
        # must not reach "我吃素" because both say 吃.
        messages = [m for m, us in said.items() if any(family in _families(u) for u in us)]
        if messages:
            best, near = _message_nearness(words, messages, said)
            at = pick(best, MEANING_FLOOR, MEANING_MARGIN)
            if at is None:
                at = _by_a_word(words, best, [[u.text for u in said[m]] for m in messages])
            if at is not None:
                of = [(u, n) for u, n in near if u.message == messages[at]]
                return [r for u in _said_together(family, of) for r in u.records]
    return _across(words, said, set(messages)) if across else []


def _across(words: str, said: dict[str, list[_Statement]], weighed: set[str]) -> list[MemoryRecord]:
    """Return the statements of the one message of all that `words` clearly mean, or `[]`.

    The family the model reads in the words and the one a statement was filed under often
    differ ("my evening ceramics class" is a schedule, "Thursday nights I do pottery at a
    little studio …" was filed under home), and a paraphrase is far from what it names in
    the encoder's eyes. Among all of the user's messages the one meant is still the nearest,
    clearly: `ACROSS_FLOOR` and `ACROSS_MARGIN`, chosen on calibration pools where a third
    of the topics name nothing the user said. Its nearest statement goes with what is said
    of its family with it (`_said_together`). A message of the words' family already
    `weighed` and left is left: "my health" names the family, not its nearest message. With
    one message there is nothing for it to be clearly nearer than ("forget steak" after only
    "I like tea"), and nothing is taken. Nor is anything for words that name one thing
    (`naming_terms`, `_DESCRIBED_HAN`: "杭州", "猫头鹰", "steak"): a name is matched as said.
    """
    from memory.understanding.updates import naming_terms  # it imports this module

    messages = list(said)
    described = len(naming_terms(words) - _ANY_TOPIC) >= 2 and (
        not has_han(words) or len(re.findall(f"[{HAN}]", words)) >= _DESCRIBED_HAN
    )
    if len(messages) < 2 or not described:
        return []
    best, near = _message_nearness(words, messages, said)
    at = pick(best, ACROSS_FLOOR, ACROSS_MARGIN)
    if at is None or messages[at] in weighed:
        return []
    of = [(u, n) for u, n in near if u.message == messages[at]]
    first = max(of, key=lambda un: un[1])[0]
    family = next(
        (f for r in first.typed if (f := family_of(r.subject)) is not None),
        read_utterance(first.text).family,
    )
    taken = _said_together(family, of)
    return [r for u in (taken if first in taken else [first, *taken]) for r in u.records]


_ANY_MEDICINE = re.compile(
    r"(?i)\b(?:pills?|meds?|medications?|medicines?|prescriptions?|drugs?|tablets?|capsules?)\b|药"
)
"""Words for medicine in general (a closed class): "my meds" is each one, a drug's name one."""


def _medicines(words: str, units: Sequence[_Statement]) -> list[_Statement]:
    """Return the statements of the messages that name a medicine the words mean.

    The encoder knows few medicines: "the pills I'm on" is nearer to "I'm allergic to sesame"
    than to "I take levothyroxine". The medicine head reads the words and the messages, read
    whole ("我血压高，每天吃一颗X，医生喊我少吃盐" is about salt) and by clause beside a
    condition (alone, "took up fly fishing when I retired" reads as one). Of them, the one
    health message other words name ("甲亢吃药那个"), else the one clearly nearest the words
    ("my thyroid pill"), else all ("my meds", `_ANY_MEDICINE`); a drug named and not clearly
    one of them takes nothing. Its health goes with a medicine.
    """
    from memory.understanding.updates import naming_terms, record_text  # it imports this

    said = _by_message(units)
    # A clause read as a medicine and not as food (an allergy's "吃一口就肿" is) names one.
    read = read_utterances([record_text(u.text) for u in units])
    alone = {id(u): r for u, r in zip(units, read, strict=True)}
    pills = {id(u) for u in units if alone[id(u)].medicine and not alone[id(u)].food}
    health = {m for m, us in said.items() if any("health" in _families(u) for u in us)}
    wholes = zip(said, _read_whole(said), strict=True)
    messages = [
        m for m, r in wholes if r.medicine or m in health and pills & {id(u) for u in said[m]}
    ]
    other = naming_terms(_ANY_MEDICINE.sub(" ", words)) - _ANY_TOPIC  # what it is for, a name
    named = [m for m, us in said.items() if other & naming_terms(" ".join(u.text for u in us))]
    named = [m for m in named if m in health]
    if len(named) == 1:  # "甲亢吃药那个" beside a nut allergy's 药 in the bag
        messages = named
    if not messages:
        return []
    best, near = _message_nearness(words, messages, said)
    at = 0 if messages == named else pick(best, MEANING_FLOOR, MEANING_MARGIN)
    if at is not None:
        chosen = {messages[at]}
    elif _ANY_MEDICINE.search(words):
        chosen = set(messages)
    else:
        return []  # one medicine named ("that I take metformin"), and none clearly it
    said_of = [(u, n) for u, n in near if u.message in chosen]
    taken = {id(u) for u in _said_together("health", said_of)}
    # A medicine said alone is filed as a routine, read as a schedule: its own reading counts.
    return [u for u, _ in said_of if id(u) in taken or alone[id(u)].medicine]


def _things(words: str, thing: str, units: Sequence[_Statement]) -> list[_Statement]:
    """Return the statements of the one message about the kind of thing the words name.

    A user names a thing by its make, breed or place and forgets it by a general word: "my
    car" shares no word with "I drive a silver Hyundai i20", nor "我家狗狗" with "家里那只
    柯基叫豆包", and the encoder knows few makes and breeds. The model's things head reads
    both the words and each message, read whole (`Reading.thing`). One message about that
    kind of thing is what they mean; of several, the one clearly nearest the words, else
    none (two cars: the request names neither). Of the message taken, the statements read
    as that thing go, and the others only when none is (a clause alone says too little).
    """
    from memory.understanding.updates import record_text  # it imports this module

    said = _by_message(units)
    messages = [m for m, r in zip(said, _read_whole(said), strict=True) if r.thing == thing]
    if len(messages) > 1:
        best, _ = _message_nearness(words, messages, said)
        at = pick(best, MEANING_FLOOR, MEANING_MARGIN)
        messages = [] if at is None else [messages[at]]
    if not messages:
        return []
    mine = said[messages[0]]
    readings = read_utterances([record_text(u.text) for u in mine])
    return [u for u, r in zip(mine, readings, strict=True) if r.thing == thing] or mine


def said_around(
    taken: Sequence[MemoryRecord], records: Sequence[MemoryRecord]
) -> list[MemoryRecord]:
    """Return what goes on with what a forget took: its clauses with no subject of their own.

    "我有鼻炎，每天睡前都要喷一次内舒拿" is filed as the rhinitis and a routine; "我用药那些事
    你别记了" takes the rhinitis by its family, and the spray, which goes on with it
    (`continued`) and is filed by its kind (`habit.`, read alone as a schedule), must go with
    it, as must a clause kept only as a raw statement. A clause filed under a family of its
    own stays ("我对花生过敏，平时特别爱吃辣" keeps the spice), except a medicine going on with
    a health record taken ("胃不好好些年了，…，包里常备奥美拉唑" goes whole with "我胃那个老毛病").
    """
    said = {sid for r in taken for sid in (r.source.statement_ids or [r.id])}
    going = {cid for sid in said for cid in continued(sid, records)} - said
    own = {
        sid
        for r in records
        if not is_raw_turn(r) and not r.subject.startswith(_BY_KIND)
        for sid in r.source.statement_ids
    }
    treats: set[str] = set()
    if any(family_of(r.subject) == "health" for r in taken):
        raw = {r.id: r.content for r in records if is_raw_turn(r) and r.id in going & own}
        readings = read_utterances(list(raw.values()))
        treats = {sid for sid, reading in zip(raw, readings, strict=True) if reading.medicine}
    going -= own - treats
    return [
        r
        for r in records
        if (r.id in going and is_raw_turn(r))
        or (r.subject.startswith(_BY_KIND) and going.intersection(r.source.statement_ids))
        or treats.intersection(r.source.statement_ids)
    ]


@dataclass(frozen=True)
class _Statement:
    """One thing said: its raw copy (if kept) and the records extracted from it."""

    message: str
    text: str
    typed: tuple[MemoryRecord, ...]
    records: tuple[MemoryRecord, ...]


def _statements(records: Sequence[MemoryRecord], *, valued: bool = False) -> list[_Statement]:
    """Return the statements `records` keep, each with the message it was said in.

    A record with a value names one thing ("allergic to shellfish", "lives in Hangzhou"):
    only its words reach it, or "my peanut allergy" would take the shellfish one. So a
    statement that holds one is left out, and only what is kept in the user's own words is
    what other words may mean (an event's day is no such value).
    """
    raw = {r.id: r for r in records if is_raw_turn(r)}
    typed = [r for r in records if r.kind != "episode"]
    out = []
    said_in: dict[str, list[MemoryRecord]] = {sid: [] for sid in raw}
    for r in typed:
        for sid in dict.fromkeys(r.source.statement_ids):
            if sid in said_in:
                said_in[sid].append(r)
    for sid, mine in said_in.items():
        out.append(
            _Statement(_message_of(raw[sid]), raw[sid].content, tuple(mine), (raw[sid], *mine))
        )
    # Records linked to no raw statement (from before statements, or a raw copy not kept).
    out += [
        _Statement(_message_of(r), r.content, (r,), (r,))
        for r in typed
        if not any(s in raw for s in r.source.statement_ids)
    ]
    # An event's value is its day, not what it is about: it is kept in the user's words.
    return [u for u in out if valued or all(r.value is None or r.kind == "event" for r in u.typed)]


def _families(unit: _Statement) -> set[str]:
    """Return the families a statement's records are filed under, or are about.

    A routine or a dated event is filed by its kind: "I take metformin twice a day" under
    `habit.`, "we moved to Halifax last month" under `event.`. What it is about (health,
    home) is the model's reading of the statement, so "anything about my prescriptions"
    and "what city I live in" reach them.
    """
    found = {f for r in unit.typed if (f := family_of(r.subject)) is not None}
    if any(r.subject.startswith(_BY_KIND) for r in unit.typed):
        about = read_utterance(unit.text).family
        if about in FAMILY_PREFIX:
            found.add(about)
    return found


def _message_of(record: MemoryRecord) -> str:
    """Return the key of the message a record was said in (its own id when not known)."""
    said = message_of(record)
    return "\x1f".join(said) if said else record.id


_ASIDE = re.compile(rf"[(（]([^()（）]*?[A-Za-z{HAN}][^()（）]*?)[)）]")
"""What a bracket holds, when it holds words (not a date or a number)."""


def _nearness(words: str, units: Sequence[_Statement]) -> list[float]:
    """Return how near `words` are to each statement, on its records' scale.

    A record kept as a whole sentence is as near as it is, or as its nearest statement
    ("I take levothyroxine …" in "Just so you know, I take levothyroxine …"). A raw copy is
    the user's words without the record's frame ("User said: …", "用户说：…"), which the
    encoder finds nearer to anything: it is weighed `RAW_OFFSET` lower. An aside in brackets
    says what a thing is ("Mochi (my cat) knocked my coffee off the desk"): it is weighed
    on its own too, so "my pet" finds the cat the whole sentence buries.
    """
    pieces = [
        [
            (t, 0.0)
            for r in u.typed
            for t in dict.fromkeys([r.content, *split_text(r.content), *_ASIDE.findall(r.content)])
        ]
        + [(u.text, RAW_OFFSET)]
        for u in units
    ]
    flat = [p for ps in pieces for p in ps]
    near = similarities(words, [t for t, _ in flat]) - np.array([o for _, o in flat])
    bounds = np.cumsum([0, *(len(ps) for ps in pieces)])
    return [float(near[a:b].max()) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def _by_message(units: Sequence[_Statement]) -> dict[str, list[_Statement]]:
    """Return the statements by the message they were said in, in the order said."""
    said: dict[str, list[_Statement]] = {}
    for u in units:
        said.setdefault(u.message, []).append(u)
    return said


def _read_whole(said: dict[str, list[_Statement]]) -> list[Reading]:
    """Return the model's reading of each message, read whole.

    A clause alone says too little ("吃一口嘴巴就肿成香肠" of an allergy read alone as a
    medicine, "每天早晚都要吸一次信必可" as none, "他叫豆包" as no pet).
    """
    from memory.understanding.updates import record_text  # it imports this module

    whole = [[record_text(u.text) for u in us] for us in said.values()]
    return read_utterances([("，" if has_han("".join(t)) else ", ").join(t) for t in whole])


def _message_nearness(
    words: str, messages: Sequence[str], said: dict[str, list[_Statement]]
) -> tuple[np.ndarray, list[tuple[_Statement, float]]]:
    """Return how near `words` are to each message (its nearest statement's) and to each statement.

    Statements are weighed by `_nearness`; a message is as near as its nearest statement.
    """
    pool = [u for m in messages for u in said[m]]
    near = list(zip(pool, _nearness(words, pool), strict=True))
    best = np.array([max(n for u, n in near if u.message == m) for m in messages])
    return best, near


def _said_together(family: str, said: Sequence[tuple[_Statement, float]]) -> list[_Statement]:
    """Return the statements of the message taken that the request means.

    Those of the request's family go, and those of no family ("最近好多了" after "我有胃溃
    疡"), which the model reads as part of what is said around them; one of another family
    only when the words are near enough to it by themselves ("每天饭后要吃一粒奥美拉唑" for
    "我胃不舒服的那些事"), so "I'm vegetarian" stays when the home beside it goes.
    """
    readings = read_utterances([u.text for u, _ in said])
    out = []
    for (u, near), reading in zip(said, readings, strict=True):
        families = {family_of(r.subject) for r in u.typed} - {None} or {reading.family}
        if near >= MEANING_FLOOR or family in families or families <= {"none"}:
            out.append(u)
    return out


def similarities(words: str, texts: Sequence[str]) -> np.ndarray:
    """Return the bundled encoder's cosine similarity of `words` to each of `texts`.

    That of the whole or of its nearest part (`parts_of`): "my old bike, sold it last week
    anyway" is about the bike, not the sale.
    """
    parts = parts_of(words)
    vectors = sentence_vectors([*parts, *texts])
    sims = vectors[len(parts) :] @ vectors[: len(parts)].T
    return np.asarray(sims.max(axis=1), dtype=np.float64)


def nearest(words: str, texts: Sequence[str], floor: float, margin: float) -> int | None:
    """Return the index of the one text `words` mean, or None.

    Only when it is at least `floor` near and `margin` nearer than every other text: two
    about as near are both left alone.
    """
    return pick(similarities(words, texts), floor, margin) if texts else None


def _by_a_word(words: str, near: np.ndarray, said: Sequence[Sequence[str]]) -> int | None:
    """Return the one of messages about as near that alone shares a word with `words`.

    Messages within `MEANING_MARGIN` of the nearest are about as near: "我膝盖那个老伤" is
    an old complaint, as "我膝盖半月板伤过" and "我有偏头痛" are, to the encoder; only the
    first shares 膝盖. None when no message, or several, share the most. Words are the lexical
    index's terms (English stems, Chinese characters and bigrams); a term every such message
    has says nothing of which.
    """
    if not len(near) or float(near.max()) < MEANING_FLOOR:
        return None
    tied = [i for i, s in enumerate(near) if near.max() - s < MEANING_MARGIN]
    terms = [set(tokenize(" ".join(said[i]))) for i in tied]
    wanted = set(tokenize(words)).difference(set[str].intersection(*terms))
    shared = [len(wanted & t) for t in terms]
    most = max(shared)
    if not most or shared.count(most) > 1:
        return None
    at = tied[shared.index(most)]
    return at if near[at] >= MEANING_FLOOR else None


def pick(sims: np.ndarray, floor: float, margin: float) -> int | None:
    """Return the index of the one similarity at least `floor` and `margin` above the rest."""
    if not len(sims):
        return None
    order = np.argsort(-sims)
    best = float(sims[order[0]])
    runner_up = float(sims[order[1]]) if len(order) > 1 else -1.0
    if best < floor or best - runner_up < margin:
        return None
    return int(order[0])


def said_with(sid: str, records: Sequence[MemoryRecord]) -> dict[str, str]:
    """Return `{id: text}` of the raw statements said in the message statement `sid` was.

    Empty when `sid` is no raw statement of `records` or its message is not known.
    """
    this = next((r for r in records if r.id == sid and is_raw_turn(r)), None)
    if this is None or not this.source.message_ids:
        return {}
    return {
        r.id: r.content
        for r in records
        if is_raw_turn(r) and r.source.thread_id == this.source.thread_id
        and r.source.message_ids[:1] == this.source.message_ids[:1]
    }  # fmt: skip


_MAX_PLACES = 10_000
"""A bound on the statements of one message that `continued` counts through."""


def continued(sid: str, records: Sequence[MemoryRecord]) -> set[str]:
    """Return a statement's id with the ids of the clauses of its sentence it goes on with.

    "That" / "刚才那句" is the last thing said: in "阳台上种了几盆多肉，长得特别慢，每周浇一
    次水" the last clause is about the plants the first names, and forgetting only it would
    leave the plants. A clause with a subject of its own ("我喜欢猫，我住在杭州") stands
    alone (`memory.text.statements.continues`).
    """
    this = next((r for r in records if r.id == sid and is_raw_turn(r)), None)
    if this is None or not this.source.message_ids:
        return {sid}
    thread, message = this.source.thread_id or "", this.source.message_ids[0]
    said = said_with(sid, records)
    # A statement's id is its place in its message: the clauses before it are found by it.
    # Some places hold no kept statement (a question said between), so count until every
    # kept one has its place, and one more (the walk below looks one past the last).
    ids: list[str] = []
    placed = 0
    while placed < len(said) and len(ids) < _MAX_PLACES:
        ids.append(statement_id(this.user_id, thread, message, len(ids)))
        placed += ids[-1] in said
    ids.append(statement_id(this.user_id, thread, message, len(ids)))
    out = {sid}
    at = ids.index(sid) if sid in ids else 0
    while at > 0 and ids[at - 1] in said and continues(said[ids[at - 1]], said[ids[at]]):
        at -= 1
        out.add(ids[at])
    # And the clauses after it that go on with it (a remark the model reads as no statement).
    at = ids.index(sid) if sid in ids else len(ids) - 1
    while ids[at + 1 :] and ids[at + 1] in said and continues(said[ids[at]], said[ids[at + 1]]):
        at += 1
        out.add(ids[at])
    return out


_ONE_VALUE = ("home", "name", "age")
"""Families a user has one of: named, the family is forgotten whole (`forget_requests`)."""


def one_value_family(
    request: ForgetRequest, records: Sequence[MemoryRecord]
) -> tuple[ForgetRequest, str | None]:
    """Return a forget request as the user's records read it, and the family its words name.

    The model may read a family a user has one of where the words name another thing: "公司地
    址那个" reads as home (地址), and the home would go whole. When the words are clearly
    nearer (the bundled encoder) to a record of another family than to every record of the
    one the model read, that family is what they name, and the one-value family is not
    taken whole. Otherwise the model's reading stands.

    Returns:
        The request (without the one-value subject when its words disagree), and the family
        its words name (None: not weighed, the model's reading is used).
    """
    words = forget_words(request)
    said = read_utterance(words).family if words else "none"
    whole = next((f for f in _ONE_VALUE if request.subject == FAMILY_PREFIX[f]), None)
    if whole is not None and said in FAMILY_PREFIX and said != whole:
        # The sentence read as a family the words alone do not ("my office address").
        return request.model_copy(update={"subject": None}), said
    named = phrase_of(words, request=True).names
    if whole is not None and named:
        # A name the user's record of that family does not say is another thing: "my lad in
        # Australia" is the son, not the home in Wicklow.
        mine = [r.content for r in records if family_of(r.subject) == whole]
        if not any(states(c, phrase_of(n)) for c in mine for n in named):
            return request.model_copy(update={"subject": None}), None
    units = [u for u in _statements(records, valued=True) if _families(u)]
    if said not in _ONE_VALUE or not units:
        return request, None
    near = _nearness(words, units)
    best = max(range(len(units)), key=near.__getitem__)
    own = max((n for n, u in zip(near, units, strict=True) if said in _families(u)), default=-1.0)
    if (
        said in _families(units[best])
        or near[best] < MEANING_FLOOR
        or near[best] - own < MEANING_MARGIN
    ):
        return request, said
    other = sorted(_families(units[best]))[0]
    if request.subject == FAMILY_PREFIX[said]:
        request = request.model_copy(update={"subject": None})
    return request, other


def filed_under(subject: str) -> list[str]:
    """Return the subjects a request's subject reaches: a relative's, by every word for them.

    "我家那口子" reaches what was said of 我老公 (`aliases.filed_as`).
    """
    who = subject.removeprefix(f"{FAMILY_PREFIX['family']}.")
    if who == subject or "." in who:
        return [subject]
    return [f"{FAMILY_PREFIX['family']}.{w}" for w in filed_as(who)]


def forget_words(request: ForgetRequest) -> str:
    """Return the words a forget request names, without quotes and end punctuation."""
    return request.query.strip(" \t\"'“”‘’，。,.!！?？;；了吧")

"""Which remembered statement an update changes, found by meaning, not by its words.

"The book club got moved to Thursdays now" changes "My book club meets every Tuesday
evening", and "不对，我车牌尾号是73" changes "我车牌尾号是37", though no pattern names
either pair and the old value is not repeated. The understanding model reads the sentence as
an update and its subject family; the records it may change are what is remembered on the
message's subjects (the extraction prompt's list), those of the same family or filed under
no family (a habit, a remark). The bundled encoder weighs each against the sentence
(`memory.understanding.topics.pick`): one record is taken, and only when it is near
enough and clearly nearer than every other, so an update never ends a neighbour with it.

The floor and margin were chosen on the calibration pairs of
`benchmarks/data/update_pairs.json` (`python benchmarks/update_match.py`), and checked on its
held-out pairs, written after and not tuned on.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from memory.lexical.bm25 import ZH_STOP_CHARS, tokenize
from memory.recall.aliases import aliases_in, relation_in, relations_in
from memory.store.records import TURN_SUBJECT
from memory.text.language import has_han
from memory.understanding import FAMILY_PREFIX, read_utterance, slot_of
from memory.understanding.topics import family_of, pick, similarities

UPDATE_FLOOR = 0.26
"""The least cosine similarity (bundled encoder) between an update (its nearest part) and the
record it changes. Chosen on the calibration pairs: 25 of 26 changes taken, none wrong (at
0.24 an unrelated remark takes a habit at 0.25); held out, 14 of 16 taken, 1 wrong (a role
change in the same bank takes the bank), 1 missed."""
UPDATE_MARGIN = 0.06
"""How much nearer than the pool's next record the one taken must be (calibration pairs:
every margin from 0 to 0.14 scores the same; the middle one)."""

SAME_THING = 0.5
"""The similarity at which an update is about a record of another family than the one read
(`changed_record`). Set by hand, well above the floor: on the calibration pairs no update
is that near to a record it does not change."""
TERM_FLOOR = 0.15
"""The least similarity an update needs to change the one record that shares a word with it
(`_by_a_term`). Set by hand: under it, a shared word is all they have in common."""

NEWS_FLOOR = 0.15
"""The least update probability a statement the model reads as remembered needs to be taken
as news of a change, when the one record it is clearly about is a routine (`is_routine`):
"Guitar lessons have moved to Saturday mornings" reads as remembered (update at 0.19) and
moves the Tuesday lesson. Half the update sentences of `benchmarks/data/update_pairs.json`
are read as remembered, the moved routines among them from 0.05 to 0.41; every routine the
dev split states stays under 0.12 ("Most mornings I'm up at 6" 0.11), and so does one more
said beside another ("我周四也开始上瑜伽课了" 0.12)."""

_SAID = re.compile(r"^(?:User said:\s*|用户说[：:]\s*)")


def record_text(content: str) -> str:
    """Return a record's content without the offline path's "User said:" frame."""
    return _SAID.sub("", content).strip()


_TYPED_FRAME = re.compile(r"^(?:User\b(?!')\s*|用户(?!说))")


def spoken(content: str) -> str:
    """Return a record's content nearer the user's own words: without the offline frame.

    "User dislikes okra." is read as "dislikes okra.": the heads were fitted on what users
    say, and the third-person "User" that opens a typed record hides what it is about.
    """
    return _TYPED_FRAME.sub("", record_text(content))


def in_users_words(content: str) -> bool:
    """Return True if a record's content is the user's words in the offline path's frame."""
    return record_text(content) != content.strip()


ROUTINE = "habit"
"""The subject a routine is filed under (`habit.…`): one time, said again and again."""


def is_routine(subject: str) -> bool:
    """Return True if a record filed under `subject` is a routine (`habit.…`).

    A routine has one time (when the guitar lesson is): news near it moves it. A list
    (allergies, tastes) only grows, and a slot (the employer) is not weighed this way:
    where the office is ("我们公司在天府三街", update at 0.15) is as near the job as news of a
    new one, and reads as remembered as often.
    """
    return subject == ROUTINE or subject.startswith(f"{ROUTINE}.")


def pool_of(family: str, subjects: Sequence[str]) -> list[int]:
    """Return the indexes of the subjects an update read in `family` may change.

    Those of the family, and those filed under none (a habit, a body measure). An update the
    model reads in no family may change any: what changed often has no family of its own
    ("换健身房了，现在去超级猩猩", "Finally replaced the iPhone 8 with a Pixel"), and the
    floor and margin still keep news of nothing remembered ("The café downstairs closed")
    from ending anything (`benchmarks/update_match.py`).
    """
    pool = [i for i, s in enumerate(subjects) if family_of(s) in (family, None)]
    if family not in FAMILY_PREFIX or not pool:
        # Nothing remembered is of the family read: the reading is the suspect, not the
        # update ("my carrier is actually T-Mobile, not the other one" read as work, with
        # the carrier filed under possessions). Every record is weighed, as nearly.
        return list(range(len(subjects)))
    return pool


NAMED_ONLY = ("health", "diet")
"""Families an update changes a record of only when it names it (shares a word with it).

What is filed under health is a list (conditions, medicines, allergies) whose items the
encoder puts close together ("我海鲜过敏" is 0.26 from the insulin): news of one more
("最近医生让我控糖") is as near to "我有高血压" as a change of it, and ended it. A change of
one says what it changes ("I stopped the metformin", "血压现在正常了"); no calibration or
held-out pair changes a health record without a word of it. Such a record still weighs in
the pool: it is why no other record is clearly nearest. What the user eats is such a list
too (a dislike, an allergy, a diet): news of a diet begun ("晚上不吃主食了") ended the
coriander the user never eats, the one food record listed."""


def may_change(sentence: str, subject: str, content: str) -> bool:
    """Return True if an update may change the record it is nearest to (`NAMED_ONLY`).

    A raw statement (`episode.turn.…`) is of the family the model reads in its words: news
    of a sesame allergy was nearest the raw "my knees have been playing up" and ended it.
    """
    family = family_of(subject)
    if subject.startswith(TURN_SUBJECT):
        family = read_utterance(record_text(content)).family
    if family not in NAMED_ONLY:
        return True
    shared = naming_terms(sentence) & naming_terms(record_text(content))
    return bool(shared - _NAMES_NO_ITEM)


def naming_terms(text: str) -> set[str]:
    """Return the words of `text` that name something: English words, Chinese bigrams.

    A Chinese character alone names too little (吃, 天), and a bigram with a function
    character (我有, 的话) nothing.
    """
    return {
        _SAME_ROLE.get(t, t)
        for t in tokenize(text)
        if not has_han(t) or (len(t) == 2 and not ZH_STOP_CHARS.intersection(t))
    }


_SAME_ROLE = {"boss": "manager", "supervisor": "manager", "领导": "上司"}
"""Words for one role at work, one word each when updates are matched by a word: "we got a new
boss" names what "my manager is …" said."""


_NAMES_NO_ITEM = naming_terms(
    "eat eating drink drinking food meal not never no more any day every morning night evening"
    " week lately recently now 不吃 不喝 爱吃 吃了 喝了 每天 早上 晚上 最近 现在 一点 不碰"
)
"""Words an item of a `NAMED_ONLY` list shares with news of another (a closed class):
eating and drinking, negation, when and how often ("I don't eat pork" and "Lately I'm not
eating bread at night" share "not" and "eat", no item)."""


def changed_record(
    sentence: str,
    family: str,
    records: Sequence[tuple[str, str]],
    floor: float = UPDATE_FLOOR,
    margin: float = UPDATE_MARGIN,
) -> int | None:
    """Return the index of the one record of `records` an update changes, or None.

    Args:
        sentence: The update, as said ("The book club got moved to Thursdays now").
        family: The subject family the model reads in it.
        records: `(subject, content)` of what is remembered on the message's subjects.
        floor: The least similarity the record must reach.
        margin: How much nearer it must be than the next record of the pool.
    """
    # The name given a relative ("我男朋友叫周航") is no value that news of them changes,
    # called by it ("周航公司把他调去广州了"): only news that names the relative by relation
    # may ("I've got a new partner now, her name's Hannah", "actually my sister's called …").
    renamed = {relation for relation, _, _ in aliases_in(sentence)} | {
        *relations_in(sentence),
        relation_in(sentence),
    }
    named = [
        i for i, (_, content) in enumerate(records)
        if any(pure and rel not in renamed for rel, _, pure in aliases_in(content))
    ]  # fmt: skip
    if named:
        kept = [i for i in range(len(records)) if i not in named]
        at = changed_record(sentence, family, [records[i] for i in kept], floor, margin)
        return None if at is None else kept[at]
    pool = pool_of(family, [subject for subject, _ in records])
    # Every record is weighed once: the pool's are read from it, and so is the fallback below.
    everything = update_similarities(sentence, [content for _, content in records])
    near = everything[pool]
    if family in FAMILY_PREFIX and all(family_of(s) not in (family, None) for s, _ in records):
        # Of none of the family read, a one-value slot of another (home, employer) changes
        # only as plainly as below: "我退休前在纺织局做会计…现在小区里的账目还是我帮忙看看"
        # (work) ended the user's home at 0.28.
        plain = [slot_of(records[i][0]) is None or everything[i] >= SAME_THING for i in pool]
        near = np.where(plain, near, -1.0)
    at = pick(near, floor, margin)
    if at is None:
        at = _by_a_term(
            sentence, near, [records[i][1] for i in pool], [records[i][0] for i in pool]
        )
    if at is None and len(pool) < len(records):
        # The family read may be wrong where the update is plainly about one record of
        # another ("网费换成联通的了，一个月才49" read as possessions, the 电信
        # broadband filed under home, at 0.52): weighed among all, at `SAME_THING`.
        whole = pick(everything, SAME_THING, margin)
        if whole is not None and may_change(sentence, *records[whole]):
            return whole
    if at is None or not may_change(sentence, *records[pool[at]]):
        return None
    return pool[at]


def _by_a_term(
    sentence: str, near: np.ndarray, contents: Sequence[str], subjects: Sequence[str] = ()
) -> int | None:
    """Return the one record of a pool an update names by a word, when near enough.

    A new person in a role shares only the role's word with the old one ("班主任换了 新来的
    姓周" and "我们班主任是王老师"): the one record that alone shares a naming word with
    the update (`naming_terms`) is taken, from `TERM_FLOOR`. Not a raw statement (of
    `subjects`, `episode.turn.…`): a whole message, a word shared with it says nothing of
    what changed. News of an allergy ("last time I ate it …") shared "time" with the raw
    statement of the user's job ("… shifts at a time") and took its place.
    """
    words = naming_terms(sentence)
    sharing = [i for i, c in enumerate(contents) if words & naming_terms(record_text(c))]
    if len(sharing) != 1 or near[sharing[0]] < TERM_FLOOR:
        return None
    raw = sharing[0] < len(subjects) and subjects[sharing[0]].startswith(TURN_SUBJECT)
    return None if raw else sharing[0]


def update_similarities(sentence: str, contents: Sequence[str]) -> np.ndarray:
    """Return how near an update is to each record: its nearest part's cosine similarity.

    An update says more than the value it changes ("…, the host's schedule changed"), so
    the sentence and each of its clauses are weighed, and the nearest counts
    (`topics.similarities`, as a forget request's topic is).
    """
    return similarities(sentence, [record_text(c) for c in contents])

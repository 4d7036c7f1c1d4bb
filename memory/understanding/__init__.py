"""What a user's utterance is, read by a model trained on a labelled zh/en corpus.

`read_utterances` returns, for each text, its intent (remember, chitchat, question,
forget, update, plan), the kind of memory it states, the subject family it is about and,
for a forget or an update, what it points at (a family, "that" = the previous statement,
or everything). The graph's rules only pull values out of the text and read exact formats;
what a sentence *is* comes from here.

The corpus, the training script and the benchmark: `memory/understanding/corpus/`,
`python -m memory.understanding.train`, `benchmarks/understanding.py`.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace

import numpy as np

from memory.store.records import subject_under
from memory.text.language import read_form
from memory.understanding.model import UnderstandingModel, load_model

__all__ = [
    "FAMILY_PREFIX",
    "QUESTION_CONFIDENCE",
    "RECORD_KIND",
    "SLOTS",
    "UPDATE_SUBJECT",
    "Reading",
    "family_prefixes",
    "in_context",
    "nearness",
    "read_utterance",
    "read_utterances",
    "replaces_subject",
    "slot_of",
]

QUESTION_CONFIDENCE = 0.5
"""Below this, the model's "question" alone does not make a sentence ask ("月底我要交报告"
read as a question at 0.39 is a plan). At or above it, a sentence with no memory taken from
it asks: a request to the assistant ("Give me three tips for a job interview", "给我讲个冷笑
话呗") states nothing about the user, for the extractor and for the raw archive alike."""

SMALL_TALK = 0.9
"""The model's chit-chat probability at or above which a part says nothing: not kept raw
(`memory.turn.archivable`), and no statement beside a question (`graphs.offline_rules`)."""

RECORD_KIND: dict[str, str] = {
    "fact": "fact",
    "preference": "preference",
    "event": "event",
    # A birthday recurs: a fact with a yearly date, never an event that expires.
    "recurring_date": "fact",
    # A routine is how the user lives, not a one-off: it never expires either.
    "habit": "preference",
}
"""The record kind each predicted kind is stored as (`memory.store.records.KINDS`)."""

FAMILY_PREFIX: dict[str, str] = {
    "home": "profile.city",
    "name": "profile.name",
    "age": "profile.age",
    "work": "work",
    "family": "family",
    "diet": "diet",
    "health": "health",
    "contact": "contact",
    "schedule": "event",
    "possessions": "possessions",
    "skills": "skills",
    "hobbies": "likes",
    "education": "education",
    "travel": "travel",
}
"""The subject prefix of each family: the one vocabulary of rules, forget requests and updates."""

SLOTS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # slot: (its subjects, the prefixes of remarks about it no pattern typed)
    "home": (("profile.city", "profile.address"), ("home",)),
    "employer": (("work.company", "work.place", "work.employer"), ("work",)),
    "role": (("work.role",), ()),
    "age": (("profile.age",), ()),
    "name": (("profile.name",), ()),
}
"""What a user has one of. A statement filed under a slot's subject replaces every active
record of that slot, whatever words the old one used ("I now work at Contoso" ends "User
works at Fabrikam." and "I'm employed by Fabrikam"), and the remarks filed under its
prefixes that belong to no other slot (a move ends what was said about the old home; a new
employer does not end the role). Shared by both paths: the offline model files a family's
update under `UPDATE_SUBJECT`, a real model is asked for these subjects (`prompts/extract.*`)."""

UPDATE_SUBJECT: dict[str, str] = {
    "home": "profile.city",
    "work": "work.company",
    "age": "profile.age",
    "name": "profile.name",
}
"""Where an update the model reads in a family is filed when no pattern typed it: the
family's slot (a work update is most often a new employer: "跳槽了", "I've switched jobs")."""


def family_prefixes(family: str) -> tuple[str, ...]:
    """Return the subject prefixes what is said about a family is filed under."""
    if family not in FAMILY_PREFIX:
        return ()
    prefix = FAMILY_PREFIX[family]
    slots = [(subjects, remarks) for subjects, remarks in SLOTS.values() if prefix in subjects]
    return tuple(dict.fromkeys([prefix, *(p for s, r in slots for p in (*s, *r))]))


def slot_of(subject: str) -> str | None:
    """Return the slot (`SLOTS`) a subject is one of the subjects of, or None."""
    return next((name for name, (subjects, _) in SLOTS.items() if subject in subjects), None)


def slot_reach(subject: str) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """Return (the subjects, the remark prefixes) of the slot a subject is of, or None."""
    slot = slot_of(subject)
    return None if slot is None else SLOTS[slot]


def replaces_subject(new: str, old: str) -> bool:
    """Return True if a statement filed under `new` replaces an active one filed under `old`."""
    if new == old:
        return True
    slot = slot_of(new)
    if slot is None:
        return False
    subjects, remarks = SLOTS[slot]
    if old in subjects:
        return True
    return slot_of(old) is None and any(subject_under(old, p) for p in remarks)


@dataclass(frozen=True)
class Reading:
    """What one utterance is, as the model reads it."""

    intent: str
    kind: str
    family: str
    target: str
    """For forget and update: `family`, `that` (the previous statement) or `all`."""
    confidence: float
    """The intent's probability."""
    forget: float = 0.0
    """The probability of `forget`, whatever intent won (a request's wording may tip it)."""
    update: float = 0.0
    """The probability of `update`, whatever intent won (news of a change is often read as a
    plain statement: `memory.understanding.updates.NEWS_FLOOR`)."""
    families: tuple[float, ...] = ()
    """The probability of each family (`family` is the likeliest), in the model's label order."""
    forget_head: float = 0.0
    """The `forget` head's probability of forget: a head fitted with requests worded like a
    forget request that are none ("remove the last line from that card verse", "把上面那段第二
    句去掉") besides the intent head's lines. A request to take back "that" needs it
    (`memory.requests.forget_requests`)."""
    asked: str = "none"
    """For a question, the family of the user's facts a good answer depends on, though the
    question may not name it ("any good walks near me?": home), read by the `asked` head
    (fitted with the indirect questions, `memory.understanding.corpus.ASKING`)."""
    asked_families: tuple[float, ...] = ()
    """The `asked` head's probability of each family, in the model's label order."""
    medicine: bool = False
    """Whether it is about a medicine the user takes or uses ("每天早上吃一片缬沙坦", "the pills
    I'm on"): the `medicine` head at its threshold (`UnderstandingModel.medicine_threshold`)."""
    food: bool = False
    """Whether it tells what someone, the user or another, eats or must not ("我老公一点辣都
    吃不了", "our youngest is allergic to sesame"): the `food` head at its threshold."""
    moves: bool = False
    """Whether a dated statement says the user's own employer or home changes from that day
    ("I start at the planning office on Monday"), not a one-off there ("a job interview on
    Friday"): the `moves` head at its threshold (`UnderstandingModel.moves_threshold`)."""
    moving: float = 0.0
    """The `moves` head's probability that the user's own employer or home changes (read on
    the text as given: the head was fitted on texts without their day, `without_date`)."""
    swaps: bool = False
    """Whether it says a thing of the user's was replaced by a new one of its kind ("sold the
    hatchback, we've got an EV now"), not trouble with it, a second one or someone else's:
    the `swaps` head at its threshold (`UnderstandingModel.swaps_threshold`)."""
    instructs: bool = False
    """Whether it tells the assistant how to answer the user from now on ("no emoji from now
    on, please", "以后的回答都别超过五句话"), not how to answer once ("make that shorter"):
    the `instructs` head at its threshold (`UnderstandingModel.instructs_threshold`)."""
    asking: bool = False
    """Whether it asks the assistant something, with no question mark as often as with one
    ("who did my car service last time", "我闺女在哪念书来着"), not a statement with a
    question word in it ("no idea why but I love olives", "我去哪儿都带着它"): the `asks` head
    at its threshold (`UnderstandingModel.asks_threshold`)."""
    thing: str = "other"
    """The kind of thing it is about, where a user names it by a make, a breed or a place and
    forgets it by a general word ("I drive a silver Mazda 3", "my car": `vehicle`): the
    `things` head's label at its threshold, else `other`."""

    @property
    def asks(self) -> bool:
        """Return True if the model is sure enough the utterance asks (`QUESTION_CONFIDENCE`)."""
        return self.intent == "question" and self.confidence >= QUESTION_CONFIDENCE

    @property
    def small_talk(self) -> bool:
        """Return True if the model is sure enough the utterance is small talk (`SMALL_TALK`)."""
        return self.intent == "chitchat" and self.confidence >= SMALL_TALK

    @property
    def plans(self) -> bool:
        """Return True if the model reads a plan of the user's, likelier than not (0.5, by hand).

        "帮我规划一下日本旅行" (0.97) is one; "帮我把这句翻成英文：…" (0.36) is a request.
        """
        return self.intent == "plan" and self.confidence >= 0.5


_CACHE: dict[str, Reading] = {}
_CACHE_LIMIT = 8192
_LOCK = threading.Lock()


def _label(labels: tuple[str, ...], row: list[float]) -> str:
    return labels[max(range(len(row)), key=row.__getitem__)]


def _thing(model: UnderstandingModel, probs: dict[str, np.ndarray], i: int) -> str:
    """Return the `things` head's label of row `i` at its threshold, else "other"."""
    if "things" not in probs:
        return "other"
    row = probs["things"][i]
    best = int(row.argmax())
    return model.heads["things"].labels[best] if row[best] >= model.things_threshold else "other"


def read_utterances(texts: list[str]) -> list[Reading]:
    """Return the model's reading of each text (one encoder batch for the ones not cached)."""
    # What was cached is read once: making room for new readings (here or in another
    # thread) may clear the cache before this call returns.
    with _LOCK:
        known = {t: _CACHE[t] for t in texts if t in _CACHE}
    todo = list(dict.fromkeys(t for t in texts if t not in known))
    fresh: dict[str, Reading] = {}
    if todo:
        model = load_model()
        # Read in simplified characters and standard spelling, as the corpus is written.
        probs = model.predict([read_form(t) for t in todo])
        intents = model.heads["intent"].labels
        forget, update = intents.index("forget"), intents.index("update")
        asked = "asked" if "asked" in probs else "family"  # a model from before the head
        for i, text in enumerate(todo):
            row = [float(p) for p in probs["intent"][i]]
            if _label(intents, row) == "forget" and row[forget] < model.forget_threshold:
                row[forget] = 0.0  # not sure enough to forget: the next best reading
            intent = _label(intents, row)
            fresh[text] = Reading(
                intent=intent,
                kind=_label(model.heads["kind"].labels, list(probs["kind"][i])),
                family=_label(model.heads["family"].labels, list(probs["family"][i])),
                target=_label(model.heads["target"].labels, list(probs["target"][i])),
                confidence=row[intents.index(intent)],
                forget=float(probs["intent"][i][forget]),
                forget_head=float(
                    probs["forget"][i][model.heads["forget"].labels.index("forget")]
                    if "forget" in probs
                    else probs["intent"][i][forget]
                ),
                update=float(probs["intent"][i][update]),
                families=tuple(float(p) for p in probs["family"][i]),
                asked=_label(model.heads[asked].labels, list(probs[asked][i])),
                asked_families=tuple(float(p) for p in probs[asked][i]),
                medicine="medicine" in probs
                and float(probs["medicine"][i][model.heads["medicine"].labels.index("medicine")])
                >= model.medicine_threshold,
                food="food" in probs
                and float(probs["food"][i][model.heads["food"].labels.index("food")])
                >= model.food_threshold,
                thing=_thing(model, probs, i),
                moves="moves" in probs
                and float(probs["moves"][i][model.heads["moves"].labels.index("moves")])
                >= model.moves_threshold,
                moving=float(probs["moves"][i][model.heads["moves"].labels.index("moves")])
                if "moves" in probs
                else 0.0,
                swaps="swaps" in probs
                and float(probs["swaps"][i][model.heads["swaps"].labels.index("swaps")])
                >= model.swaps_threshold,
                instructs="instructs" in probs
                and float(probs["instructs"][i][model.heads["instructs"].labels.index("instructs")])
                >= model.instructs_threshold,
                asking="asks" in probs
                and float(probs["asks"][i][model.heads["asks"].labels.index("asks")])
                >= model.asks_threshold,
            )
        with _LOCK:
            if len(_CACHE) + len(fresh) > _CACHE_LIMIT:
                _CACHE.clear()
            _CACHE.update(fresh)
    return [known[t] if t in known else fresh[t] for t in texts]


def read_utterance(text: str) -> Reading:
    """Return the model's reading of one text."""
    return read_utterances([text])[0]


def read_question(text: str) -> Reading:
    """Return the model's reading of a message that asks, with what it asks read where it asks.

    A meal is often asked for with who is at home ("what's for supper, my husband's away and
    the kids are starving"): read whole, its answer depends on the family, when the part
    that asks is about the meal. Of a message read as asking about the family whose last
    line has parts that ask by their form and parts that do not, the answer depends on a
    meal (`Reading.asked`, "diet") when every part that asks reads so; the rest of the
    reading is the whole's. Only a whole read as of the family, and only a meal: a part
    that asks may say too little alone ("…, any tips?"), and what else the whole names is
    what it asks about ("which treats suit our old dog best"). Only the last line: a
    turn's query is the user's previous message and the latest
    (`graphs.nodes.load_memory`).
    """
    from memory.text.asking import asks_by_form
    from memory.text.statements import parts_of

    whole = read_utterance(text)
    if whole.asked != "family":
        return whole
    parts = parts_of(text.rsplit("\n", 1)[-1])[1:]
    asking = [p for p in parts if asks_by_form(p)]
    if not asking or len(asking) == len(parts):
        return whole
    readings = read_utterances(asking)
    if any(r.asked != "diet" for r in readings):
        return whole
    return replace(whole, asked=readings[0].asked, asked_families=readings[0].asked_families)


def in_context(reading: Reading, context: Reading) -> Reading:
    """Return a part's reading with its family read together with the whole it was said in.

    A clause or a sentence on its own often says too little to name its subject: "Sesame
    wrecks me." alone reads as a hobby, followed by "my throat gets tight" in the same
    message as health; "我是佛教徒" alone is about nothing in particular, in "我是佛教徒，
    长期吃素" about diet. The part's and the whole's family probabilities are added, so a
    part that names its own subject clearly keeps it ("I live in Oslo and I'm vegan").
    Only the family changes: what the part does (states, asks) is its own.
    """
    if not reading.families or len(reading.families) != len(context.families):
        return reading
    both = [a + b for a, b in zip(reading.families, context.families, strict=True)]
    family = _label(load_model().heads["family"].labels, both)
    if family == reading.family or family == "none":
        return reading  # a whole about nothing in particular takes no subject from a part
    return replace(reading, family=family)


def nearness(reading: Reading, asked: Reading) -> float:
    """Return the probability the model gives `reading` of being about what `asked` asks.

    A health memory read against a question about diet: "Shellfish wrecks me." is nearer to
    a meal than "I take levothyroxine every morning".
    """
    return probability_of(reading, asked.asked)


def probability_of(reading: Reading, family: str, *, asked: bool = False) -> float:
    """Return the probability the model gives `reading` of being about `family`.

    `asked`: of a question's answer depending on it (`Reading.asked`), not of being about it.
    """
    labels = load_model().heads["family"].labels
    row = reading.asked_families if asked else reading.families
    if not row or family not in labels:
        return 0.0
    return row[labels.index(family)]

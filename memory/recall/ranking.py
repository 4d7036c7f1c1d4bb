"""Hybrid ranking of recalled memories: pure functions, no I/O.

Interface (what `memory.recall.search.Recall.search` calls)
----------------------------------------------
::

    from memory.recall import ranking
    snap = self.snapshots.current(user_id, now)        # memory.lexical.snapshot.UserIndex
    records = snap.records                             # {id: record}, recallable ones
    lexical = snap.bm25.search(query, 200)             # [(id, bm25 score)], best first
    dense = [(h.id, h.similarity) for h in self.index.query(user_id, vector, 200, records)]
    config = ranking.RankConfig(
        embedder=self.index.embedder.spec,             # selects the relevance floor
        half_life_days=self.policy.half_life_days,     # one decay policy for the service
    )
    ranked = ranking.rank(query, dense, lexical, records, now, config=config, k=3 * k + 10)
    # -> [(id, score)] best first; re-check each against the store, then cut to k
    kept = ranking.cut_to_budget(ranked, records, max_tokens, render=format_line)

`rank` reads from a record only ``content``, ``kind`` and, when present, ``confidence``,
``valid_from`` (events), ``source.said_at``, ``created_at``, ``updated_at`` and
``last_recalled_at``. Ids missing from `records` are dropped, so pass only records that
are active, recallable and owned by the user, and re-check the top ones against the
store (the lexical snapshot may lag another process's writes). Optional arguments:
``window`` (a `TimeWindow`, default `memory.dates.grammar.find_window` of the query),
``names`` (default: capitalised names found in the query; pass known names for Chinese),
``context`` (neighbours of raw turns whose dense similarity is averaged in; facts have none).

What the score is
-----------------
1. **Fusion** (``fusion="score"``): ``lexical_weight · bm25 / max bm25 +
   dense_weight · max(0, sim − floor) / (max sim − floor)``. A record is a candidate only
   if it matched lexically or its similarity reached the **relevance floor** and came
   within the **dense margin** of the best similarity; a raw turn (``episode``) with no
   word in common must also reach the **episode floor**; in Chinese a lexical match must
   come within the **lexical margin** of the best similarity too (one shared character is
   a match). The dense weight, the floors and the margins depend on the encoder and the
   query's language (`tuned`, `LANGUAGE_TUNING`). Weighted RRF is kept as
   ``fusion="rrf"``.
2. **Multipliers**: recency ``1 − w + w · 0.5^(age / half_life[kind])`` (facts do not
   decay: they are superseded instead; events fade in a month, preferences in a year,
   raw episodes in half a year); confidence ``1 − w + w · confidence``; time window
   ``1 + time_boost`` when the record's time falls in the span the query names ("last
   week", "in May 2023", "上周", "去年"), fading to 0 over one window-length outside it;
   names ``1 + name_boost`` when the record mentions a person the query names.
3. **Near duplicates** (Jaccard of term sets ≥ 0.9) keep only the best one.
4. `cut_to_budget` then keeps the best records whose rendered lines fit the token budget.

How the weights, floors and margins were chosen, with the ablations: `docs/recall-tuning.md`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Collection, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Protocol, TypeVar

from memory.dates.grammar import EN_MONTHS, EN_WEEKDAYS, TimeWindow, find_window
from memory.lexical.bm25 import STOP_WORDS, tokenize
from memory.store.records import HALF_LIFE_DAYS
from memory.text.language import language_of

__all__ = [
    "RankConfig",
    "RecordLike",
    "TimeWindow",
    "DEFAULT_CONFIG",
    "RELEVANCE_FLOORS",
    "cut_to_budget",
    "dedupe",
    "estimate_tokens",
    "names_in",
    "rank",
    "recency_factor",
    "relevance_floor",
    "LANGUAGE_TUNING",
    "Tuned",
    "is_chinese",
    "tuned",
    "smooth_with_context",
    "window_weight",
]


Id = TypeVar("Id", bound=Hashable)


class RecordLike(Protocol):
    """What `rank` reads from a record. `MemoryRecord` satisfies it.

    Optional attributes, read with `getattr` when present: `confidence` (0..1),
    `valid_from`, `source.said_at`, `created_at`, `updated_at`, `last_recalled_at` (datetimes).
    """

    content: str
    kind: str


# --- configuration ----------------------------------------------------------------------------

# Cosine similarity below which a dense hit that has no lexical support is dropped.
# "local" was calibrated on LoCoMo (dev split): see the module docstring.
# "local-e5" (cosines of unrelated texts sit at 0.7-0.8): chosen by leave-one-conversation-out
# CV in 4 of 5 folds (benchmarks/locomo_cv.py).
RELEVANCE_FLOORS: dict[str, float] = {"local": 0.15, "local-e5": 0.8}
DEFAULT_FLOOR = 0.0
"""Used for embedders without a calibrated floor: keep everything (no false drops)."""

NO_EPISODE_FLOOR = float("inf")
"""Raw turns need a word in common with the query."""
DEFAULT_DENSE_WEIGHT = 0.3
NO_MARGIN = float("inf")
FAMILY_MARGIN = 2.0
"""What is filed under the family a question asks about is a candidate within this many dense
margins of the best hit ("how cold before my pup needs a coat?" and "it's far too cold to go
out tonight" share a word, and the dog sat one margin below); hand-set, see
`docs/recall-tuning.md` for what it costs in noise."""

LANGUAGE_TUNING: dict[tuple[str, str], dict[str, float]] = {
    ("local", "en"): {"episode_floor": 0.15, "dense_margin": 0.15},
    ("local", "zh"): {"dense_weight": 5.0, "relevance_floor": 0.0, "episode_floor": 0.15,
                      "dense_margin": 0.13, "lexical_margin": 0.3},
    ("local-e5", "en"): {"episode_floor": 0.8, "dense_margin": 0.05},
    ("local-e5", "zh"): {"dense_weight": 5.0, "relevance_floor": 0.8, "episode_floor": 0.84,
                         "dense_margin": 0.05, "lexical_margin": 0.05},
}  # fmt: skip
"""Per (encoder, query language "zh"/"en"): the dense weight, relevance floor and episode
floor, chosen by cross-validation (English on LoCoMo, Chinese on `benchmarks/zh_recall.py`;
see the module docstring). The episode floor is the similarity at which a raw conversation
turn is recalled although it shares no word with the query: raw turns are whole utterances,
so a vague dense neighbour is noise next to the extracted memories, but a Chinese question
rarely shares a word with the turn that answers it and the offline rules extract little."""


@dataclass(frozen=True)
class Tuned:
    """The language- and encoder-dependent part of a `RankConfig`, resolved for one query."""

    language: str
    dense_weight: float
    relevance_floor: float
    episode_floor: float
    dense_margin: float
    lexical_margin: float


def relevance_floor(embedder: str | None) -> float:
    """Return the calibrated dense-similarity floor for an embedder spec (`local`, `openai:...`)."""
    if not embedder:
        return DEFAULT_FLOOR
    return RELEVANCE_FLOORS.get(embedder, DEFAULT_FLOOR)


def is_chinese(text: str) -> bool:
    """Return True if a query is Chinese (`memory.text.language.language_of`)."""
    return language_of(text) == "zh"


def tuned(config: RankConfig, query: str) -> Tuned:
    """Resolve a config's dense weight, floors and margins for a query.

    Values set in the config win, then `LANGUAGE_TUNING` for the encoder and the query's
    language, then the encoder defaults (`RELEVANCE_FLOORS`, no episode floor, no margin).
    """
    language = "zh" if is_chinese(query) else "en"
    table = LANGUAGE_TUNING.get((config.embedder, language), {})

    def pick(value: float | None, name: str, default: float) -> float:
        return value if value is not None else table.get(name, default)

    return Tuned(
        language=language,
        dense_weight=pick(config.dense_weight, "dense_weight", DEFAULT_DENSE_WEIGHT),
        relevance_floor=pick(
            config.relevance_floor, "relevance_floor", relevance_floor(config.embedder)
        ),
        episode_floor=pick(config.episode_floor, "episode_floor", NO_EPISODE_FLOOR),
        dense_margin=pick(config.dense_margin, "dense_margin", NO_MARGIN),
        lexical_margin=pick(config.lexical_margin, "lexical_margin", NO_MARGIN),
    )


@dataclass(frozen=True)
class RankConfig:
    """Weights of every ranking signal (defaults tuned on the LoCoMo dev split)."""

    fusion: str = "score"
    """`score` (floor/max-normalised score sum) or `rrf` (weighted reciprocal-rank fusion)."""
    lexical_weight: float = 1.0
    dense_weight: float | None = None
    """Weight of the dense score; None: tuned per encoder and language (`LANGUAGE_TUNING`)."""
    rrf_k: float = 60.0
    half_life_days: Mapping[str, float | None] = field(default_factory=lambda: dict(HALF_LIFE_DAYS))
    """Recency half-life per kind (default: `memory.store.records.KINDS`); None: no decay.

    The service may pass its lifecycle policy's ``half_life_days`` so one policy governs decay.
    """
    decay_weight: float = 0.2
    """Share of the score that recency can take away: factor = 1 - w + w * 0.5**(age/hl)."""
    confidence_weight: float = 0.3
    """factor = 1 - w + w * confidence."""
    time_boost: float = 1.0
    """Multiplier bonus for records inside the query's time window (1 + boost)."""
    name_boost: float = 0.5
    """Multiplier bonus for records naming a person named in the query (1 + boost)."""
    family_boost: float = 0.5
    """Multiplier bonus for records filed under a family the question asks about (1 + boost;
    which ones: `rank`'s `asked`, from `memory.recall.search`)."""
    dedupe_jaccard: float = 0.9
    """Drop a record whose term set overlaps a better one's by at least this much."""
    embedder: str = "local"
    """Selects the tuned dense weight and floors (`LANGUAGE_TUNING`, `RELEVANCE_FLOORS`)."""
    relevance_floor: float | None = None
    """Dense similarity below which a hit with no lexical support is dropped; None: tuned
    per encoder and language (`LANGUAGE_TUNING`, else `RELEVANCE_FLOORS`)."""
    dense_margin: float | None = None
    """A hit with no lexical support must also come within this of the best similarity
    (`inf`: no margin); None: tuned per encoder and language (`LANGUAGE_TUNING`)."""
    lexical_margin: float | None = None
    """A lexical hit must come within this of the best similarity (`inf`: any lexical hit is
    a candidate); None: tuned per encoder and language (`LANGUAGE_TUNING`)."""
    episode_floor: float | None = None
    """Similarity a raw turn sharing no word with the query must reach (`inf`: never);
    None: tuned per encoder and language (`LANGUAGE_TUNING`, else never)."""


DEFAULT_CONFIG = RankConfig()


# --- names ------------------------------------------------------------------------------------

_NOT_NAMES = frozenset(
    {w.capitalize() for w in STOP_WORDS}
    | {m.capitalize() for m in EN_MONTHS}
    | {d.capitalize() for d in EN_WEEKDAYS}
    | {"I", "Im", "Ok", "Okay", "Hey", "Hi", "Hello", "Thanks", "Please", "Yes", "No", "Tell",
       "Remind", "Remember", "Give", "List", "Name", "Describe", "Explain", "Would", "Which",
       "Do", "Did", "Does", "Is", "Are", "Was", "Were", "Can", "Could", "Should", "User",
       "Mr", "Mrs", "Ms", "Dr", "Also", "And", "But", "Or", "So", "Then", "Now", "Today"}
)  # fmt: skip
_CAP_WORD_RE = re.compile(r"\b([A-Z][a-z]+(?:[A-Z][a-z]+)*(?:['’]s)?)\b")


def names_in(query: str, known: Iterable[str] = ()) -> list[str]:
    """Return names of people (or places) the query mentions.

    English: capitalised words that are not sentence-initial function words, months or
    weekdays. Chinese has no capitals, so any name in `known` (e.g. the people a user's
    memories mention) that occurs in the query is also returned.
    """
    found: list[str] = []
    for m in _CAP_WORD_RE.finditer(query):
        word = re.sub(r"['’]s$", "", m.group(1))
        if word not in _NOT_NAMES and word not in found:
            found.append(word)
    for name in known:
        if name and name in query and name not in found:
            found.append(name)
    return found


# --- signals ----------------------------------------------------------------------------------


def _record_time(rec: Any) -> datetime | None:
    """When the record is about: an event's day, else when it was said, else when written."""
    if getattr(rec, "kind", None) == "event" and getattr(rec, "valid_from", None) is not None:
        day: datetime = rec.valid_from
        return day
    source = getattr(rec, "source", None)
    said: datetime | None = getattr(source, "said_at", None) if source is not None else None
    if said is not None:
        return said
    for attr in ("said_at", "created_at", "updated_at"):
        value: datetime | None = getattr(rec, attr, None)
        if value is not None:
            return value
    return None


def _aligned(a: datetime, b: datetime) -> tuple[datetime, datetime]:
    if (a.tzinfo is None) != (b.tzinfo is None):
        a = a.replace(tzinfo=UTC) if a.tzinfo is None else a
        b = b.replace(tzinfo=UTC) if b.tzinfo is None else b
    return a, b


def _decay_anchor(rec: Any) -> datetime | None:
    """Return when a record was last alive, the start of its decay.

    An event's day; else its last update or recall (as `memory.lifecycle.weight` counts
    them); else when it was said.
    """
    if getattr(rec, "kind", None) == "event" and getattr(rec, "valid_from", None) is not None:
        day: datetime = rec.valid_from
        return day
    touched: list[datetime] = [
        t for t in (getattr(rec, "updated_at", None), getattr(rec, "last_recalled_at", None)) if t
    ]
    if touched:
        return max(touched)
    return _record_time(rec)


def recency_factor(rec: Any, now: datetime, config: RankConfig = DEFAULT_CONFIG) -> float:
    """Return the decay multiplier of a record: 1 when fresh, down to 1 - decay_weight.

    Age runs from an event's day, else from the last update or recall, else from when it
    was said; the half-life is `config.half_life_days[kind]` (None: no decay).
    """
    hl = config.half_life_days.get(getattr(rec, "kind", ""), None)
    when = _decay_anchor(rec)
    if not hl or when is None or config.decay_weight <= 0:
        return 1.0
    when, now = _aligned(when, now)
    age = max((now - when).total_seconds() / 86400.0, 0.0)
    w = config.decay_weight
    return float(1.0 - w + w * 0.5 ** (age / hl))


def window_weight(when: datetime | None, window: TimeWindow | None) -> float:
    """Return 1 inside the window, fading linearly to 0 over one window-length (≥ 1 day) outside."""
    if when is None or window is None:
        return 0.0
    start, when = _aligned(window.start, when)
    end, when = _aligned(window.end, when)
    if start <= when < end:
        return 1.0
    slack = max((end - start).total_seconds(), 86400.0)
    gap = (start - when).total_seconds() if when < start else (when - end).total_seconds()
    return max(0.0, 1.0 - gap / slack)


@functools.lru_cache(maxsize=16384)
def _term_set(text: str) -> frozenset[str]:
    return frozenset(tokenize(text))


# --- ranking ----------------------------------------------------------------------------------


def smooth_with_context(
    sims: Mapping[Id, float],
    context: Mapping[Id, Sequence[tuple[Id, float]]],
    *,
    missing: float = 0.0,
) -> dict[Id, float]:
    """Return each id's similarity averaged with its neighbours' (weighted).

    ``smoothed[i] = (sim[i] + Σ w_j · sim[j]) / (1 + Σ w_j)`` over the ``(j, w_j)`` that
    `context` lists for `i`; a neighbour absent from `sims` counts as `missing`. Ids
    without context keep their similarity. Used for raw dialogue turns, whose meaning
    often sits in the turns around them ("What did you research?" / "Adoption agencies").
    """
    out: dict[Id, float] = {}
    for i, s in sims.items():
        neighbours = context.get(i) or ()
        if not neighbours:
            out[i] = s
            continue
        total, weight = s, 1.0
        for j, w in neighbours:
            total += w * sims.get(j, missing)
            weight += w
        out[i] = total / weight
    return out


def rank(
    query: str,
    dense: Sequence[tuple[Id, float]],
    lexical: Sequence[tuple[Id, float]],
    records: Mapping[Id, Any],
    now: datetime,
    *,
    config: RankConfig = DEFAULT_CONFIG,
    k: int | None = None,
    window: TimeWindow | None = None,
    names: Iterable[str] | None = None,
    context: Mapping[Id, Sequence[tuple[Id, float]]] | None = None,
    asked: Collection[Id] = (),
    restated: Collection[Id] = (),
) -> list[tuple[Id, float]]:
    """Fuse dense and lexical hits into one ranking of record ids.

    Args:
        query: The query text (read for a time window and names of people).
        dense: ``(id, cosine similarity)`` from the vector index, best first.
        lexical: ``(id, BM25 score)`` from `BM25Index.search`, best first.
        records: id → record, for every id that may be returned. Ids missing here (stale
            index entries) are dropped: callers pass only store-checked, recallable records.
        now: The time of the query (for recency and relative time words).
        config: Weights; the defaults were tuned on the LoCoMo dev split.
        k: Return at most this many (None: all).
        window: A time window; None parses one from `query`.
        names: Names in the query; None finds them with `names_in`.
        context: Optional neighbours of each id, ``id → [(neighbour id, weight)]``, whose
            dense similarity is averaged in (`smooth_with_context`). Only for records that
            have neighbours, such as raw turns of a conversation; facts have none.
        asked: Records filed under a family the question asks about; their score is
            multiplied by ``1 + family_boost``.
        restated: Records that say the query again word for word: ranked as any other,
            but the cuts relative to the best similarity ignore theirs.

    Returns:
        ``(id, score)`` best first; scores are comparable within one call only. A record
        is returned only if it matched lexically or its dense similarity reached the
        embedder's relevance floor.
    """
    if window is None:
        window = find_window(query, now)
    name_list = list(names_in(query) if names is None else names)
    name_keys = [n.casefold() for n in name_list if n]
    t = tuned(config, query)
    floor, turn_floor, dense_weight = t.relevance_floor, t.episode_floor, t.dense_weight

    lex = {i: s for i, s in lexical if s > 0}
    raw = {i: float(s) for i, s in dense}
    sims = raw
    if context and raw:
        sims = smooth_with_context(raw, context, missing=0.0)
    best = {i: max(raw.get(i, 0.0), sims.get(i, 0.0)) for i in raw.keys() | sims.keys()}
    # A hit with no word in common must reach the floor and come close to the best hit:
    # the margin keeps a handful of unrelated memories out when nothing else is relevant.
    top_sim = max((v for i, v in best.items() if i in records and i not in restated), default=0.0)
    cut = max(floor, top_sim - t.dense_margin)
    # In Chinese a lexical match may be one shared character; there it can be asked to come
    # within `lexical_margin` of the best similarity too.
    lex_cut = top_sim - t.lexical_margin
    # What is filed under the family a question asks about gets a wider margin (`FAMILY_MARGIN`):
    # a remark sharing a word with the question must not cut what the model read it as about.
    candidates = (
        {i for i in lex if best.get(i, 0.0) >= lex_cut}
        | {i for i, v in best.items() if v >= cut}
        | {i for i in asked if raw.get(i, 0.0) >= top_sim - FAMILY_MARGIN * t.dense_margin}
    )
    # Raw turns with no word in common come back only above the (higher) episode floor.
    candidates = {
        i for i in candidates
        if i in lex or getattr(records.get(i), "kind", None) != "episode"
        or best[i] >= turn_floor
    }  # fmt: skip

    fused: dict[Id, float] = {}
    if config.fusion == "rrf":
        c = config.rrf_k
        lex_order = sorted(lex, key=lambda i: lex[i], reverse=True)
        dense_order = sorted(
            (i for i in sims if sims[i] >= floor), key=lambda i: sims[i], reverse=True
        )
        for r, i in enumerate(lex_order):
            fused[i] = config.lexical_weight / (c + r + 1)
        for r, i in enumerate(dense_order):
            fused[i] = fused.get(i, 0.0) + dense_weight / (c + r + 1)
        for i in candidates:
            fused.setdefault(i, 0.0)
    else:
        top_lex = max(lex.values(), default=0.0) or 1.0
        top_dense = max(sims.values(), default=floor)
        span = max(top_dense - floor, 1e-6)
        for i in candidates:
            d = max(sims.get(i, floor) - floor, 0.0) / span
            fused[i] = config.lexical_weight * lex.get(i, 0.0) / top_lex + dense_weight * d

    scored: list[tuple[Id, float]] = []
    for i, base in fused.items():
        rec = records.get(i)
        if rec is None:
            continue
        factor = recency_factor(rec, now, config)
        conf = getattr(rec, "confidence", None)
        if conf is not None and config.confidence_weight > 0:
            factor *= 1.0 - config.confidence_weight + config.confidence_weight * float(conf)
        if window is not None and config.time_boost > 0:
            factor *= 1.0 + config.time_boost * window_weight(_record_time(rec), window)
        if name_keys and config.name_boost > 0:
            content = rec.content.casefold()
            if any(n in content for n in name_keys):
                factor *= 1.0 + config.name_boost
        if i in asked and config.family_boost > 0:
            factor *= 1.0 + config.family_boost
        scored.append((i, base * factor))
    # Lifted records often tie (one lift, no decay): ties go by what they say, never by their
    # ids (random per user), so the same memories give the same order run after run.
    scored.sort(key=lambda kv: (-kv[1], records[kv[0]].content, str(kv[0])))
    return dedupe(scored, records, config.dedupe_jaccard, k=k)


def dedupe(
    ranked: Sequence[tuple[Id, float]],
    records: Mapping[Id, Any],
    threshold: float = DEFAULT_CONFIG.dedupe_jaccard,
    *,
    k: int | None = None,
) -> list[tuple[Id, float]]:
    """Drop records whose term set overlaps a better-ranked one's by ≥ `threshold` (Jaccard).

    Catches the same statement saved twice with different punctuation, case or word forms;
    `threshold` ≥ 1 turns it off. A raw turn and the typed memory that restates it are one
    statement too: the memory takes the turn's place (and score), whichever ranked higher,
    since it is what can be named, updated and superseded (the extraction prompt lists
    typed memories only: "科目二其实是3月29号" must see the event it corrects, not its turn).
    """
    out: list[tuple[Id, float]] = []
    kept: list[frozenset[str]] = []
    for i, s in ranked:
        if threshold < 1.0:
            terms = _term_set(records[i].content)
            same = next(
                (
                    n
                    for n, t in enumerate(kept)
                    if terms and len(terms & t) / len(terms | t) >= threshold
                ),
                None,
            )
            if same is not None:
                if _is_turn(records[out[same][0]]) and not _is_turn(records[i]):
                    out[same] = (i, out[same][1])
                    kept[same] = terms
                continue
            kept.append(terms)
        out.append((i, s))
        if k is not None and len(out) >= k:
            break
    return out


def _is_turn(record: Any) -> bool:
    return getattr(record, "kind", None) == "episode"


# --- token budget -----------------------------------------------------------------------------


def estimate_tokens(text: str) -> int:
    """Estimated tokens of a text: `memory.text.tokens.count_tokens`, the agent's one estimator."""
    from memory.text.tokens import count_tokens

    return count_tokens(text)


def cut_to_budget(
    ranked: Sequence[tuple[Id, float]],
    records: Mapping[Id, Any],
    max_tokens: int,
    *,
    render: Callable[[Any], str] | None = None,
    overhead_tokens: int = 4,
) -> list[tuple[Id, float]]:
    """Keep the best-ranked records whose rendered lines fit in `max_tokens`.

    A record that does not fit is skipped (a shorter, lower-ranked one may still fit).

    Args:
        ranked: Output of `rank`.
        records: id → record.
        max_tokens: Budget of the whole memory block.
        render: How one record appears in the block (default: its content); pass
            `memory.recall.block.format_line` to count the labels too.
        overhead_tokens: Tokens of the block's opening and closing tags.
    """
    render = render or (lambda rec: rec.content)
    used = overhead_tokens
    out = []
    for i, s in ranked:
        cost = estimate_tokens(render(records[i])) + 1
        if used + cost > max_tokens:
            continue
        used += cost
        out.append((i, s))
    return out


def with_overrides(config: RankConfig, **changes: Any) -> RankConfig:
    """Return a copy of `config` with some fields changed (for benchmarks and tuning)."""
    return replace(config, **changes)

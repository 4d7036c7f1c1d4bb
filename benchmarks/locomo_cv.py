"""Leave-one-conversation-out cross-validation of the ranking weights on LoCoMo (dev split).

    python benchmarks/locomo_cv.py [--data PATH] [--encoders local local-e5]
                                   [--limit-questions N] [--rounds 2] [--no-entities]
                                   [--no-aliases]

(also reachable as ``benchmarks/locomo.py --cv``). For each encoder, every conversation is
ingested once into a `MemoryService` of its own (as ``service`` in `benchmarks/locomo.py`) and
every question is asked once through `MemoryService.search`. While it runs, the inputs the
service hands to `memory.recall.ranking.rank` (query, dense hits, lexical hits, candidate records)
are recorded, so any other `RankConfig` can be replayed on them without touching the store or
the index again; the replay applies what `search` does after `rank` (raw turns only when
their words match, duplicates of the same text dropped, cut to k). The replay of the default
configuration is checked against what `search` returned (``replay_mismatches``).

Tuning: for each of the 5 conversations, the weights are chosen on the other 4 by coordinate
descent over a small grid per weight (``GRID``; ``--rounds`` passes, ties keep the current
value, so a weight moves only when it helps), objective = mean of R@5 and R@10 ("all"
evidence) over the training questions; the chosen configuration is scored on the held-out
conversation. Reported: in-sample figures at today's defaults and tuned on all 5, the
cross-validated figures (held-out questions pooled), per category, and the values chosen in
each fold. Same-run baselines: dense only (the service's Chroma hits in order) and BM25 (the
service's lexical hits in order, and plain BM25 over the turn text as in locomo.py).

What LoCoMo cannot tune: `confidence_weight` (every raw turn has confidence 1) and the
half-lives of facts, preferences and events (only raw turns are ranked); `lexical_weight` is
fixed at 1 because only its ratio to `dense_weight` matters.

``--entities`` (default on) adds the experiment of `memory.recall.entities`: a one-hop expansion of
the first hits through the entities they mention (see `entity_expansion`), tuned the same way.
"""

from __future__ import annotations

import argparse
import json
import pickle
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import _common  # noqa: E402,F401  (sets the offline environment before chromadb loads)
import _locomo as locomo  # noqa: E402  (the one LoCoMo reader)
import numpy as np  # noqa: E402

from memory.dates.grammar import find_window  # noqa: E402
from memory.index.embeddings import embed_queries, make_embedder  # noqa: E402
from memory.lexical.bm25 import BM25Index  # noqa: E402
from memory.recall import ranking  # noqa: E402
from memory.recall.together import drop_restated_turns  # noqa: E402
from memory.store.records import normalize_text  # noqa: E402

KS = (5, 10)
KMAX = 10

# The small grid each weight is searched over (coordinate descent). Floors are per encoder:
# e5's cosines sit much higher than USE's.
GRID: dict[str, list[Any]] = {
    "fusion": ["score", "rrf"],
    "dense_weight": [0.0, 0.15, 0.3, 0.5, 0.8],
    "decay_weight": [0.0, 0.1, 0.2, 0.4],
    "episode_half_life": [30.0, 90.0, 180.0, 365.0, 730.0],
    "time_boost": [0.0, 0.5, 1.0, 2.0],
    "name_boost": [0.0, 0.25, 0.5, 1.0],
    "dedupe_jaccard": [0.8, 0.9, 1.0],
    "rrf_k": [10.0, 60.0],
}
FLOOR_GRID: dict[str, list[float]] = {
    "local": [0.0, 0.1, 0.15, 0.2, 0.25],
    "local-e5": [0.0, 0.7, 0.75, 0.78, 0.8, 0.82, 0.85],
}
# The similarity at which a raw turn sharing no word with the query is recalled anyway
# (`ranking.episode_floor`); inf: never (raw turns need a word in common).
INF = float("inf")
MARGIN_GRID: list[float] = [INF, 0.05, 0.1, 0.15, 0.2]
# BM25's (k1, b) of the lexical index, Lucene's first; the service uses `SERVICE_BM25`
# (`memory.lexical.bm25.BM25Index`'s defaults). Each other pair's hits are computed once per
# question over the same records (`add_lexical_variants`).
BM25_GRID: list[tuple[float, float]] = [(1.2, 0.75), (0.9, 0.4), (0.9, 0.2), (1.2, 0.4), (0.6, 0.3)]
"""How close to the best similarity a hit with no lexical support must come."""
EPISODE_FLOOR_GRID: dict[str, list[float]] = {
    "local": [INF, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6],
    "local-e5": [INF, 0.8, 0.82, 0.84, 0.86, 0.88, 0.9],
}
ENTITY_GRID: dict[str, list[Any]] = {
    "entity_seeds": [0, 3, 5],
    "entity_weight": [0.1, 0.25, 0.5],
}


# --- recording the service's ranking inputs ------------------------------------------------


@dataclass
class Asked:
    """One question as the service saw it: the inputs of `ranking.rank` and its answer."""

    question: locomo.Question
    now: datetime
    dense: list[tuple[str, float]]
    lexical: list[tuple[str, float]]
    live: dict[str, Any]
    returned: list[str]
    """dia_ids `MemoryService.search` returned, in order."""
    window: Any = None
    names: list[str] = field(default_factory=list)
    everything: dict[str, Any] = field(default_factory=dict)
    """Every record of the conversation's user (shared), for the entity expansion."""
    lexical_variants: dict[tuple[float, float], list[tuple[str, float]]] = field(
        default_factory=dict
    )
    """Lexical hits under other BM25 ``(k1, b)`` (`add_lexical_variants`)."""

    def lexical_for(
        self, bm25: tuple[float, float] | None
    ) -> tuple[list[tuple[str, float]], dict[str, Any]]:
        """The lexical hits under BM25 ``(k1, b)`` (None: as the service ran), and the
        candidate records they and the dense hits bring, as `search` gathers them."""
        if bm25 is None or bm25 == SERVICE_BM25:
            return self.lexical, self.live
        lexical = self.lexical_variants[bm25]
        extra = {i: self.everything[i] for i, _ in lexical if i not in self.live}
        return lexical, (self.live | extra) if extra else self.live


SERVICE_BM25 = (BM25Index().k1, BM25Index().b)


def add_lexical_variants(asked: list[list[Asked]], params: Sequence[tuple[float, float]]) -> int:
    """Search every question again under each BM25 ``(k1, b)``, over the same records.

    The index is built once, by the service's own builder (`LexicalIndexes.build`); k1 and b
    are read at query time, so each pair scores the same postings (`BM25Index.from_export`).
    Returns how many questions' top 20 under the service's own parameters differ from what
    the service returned (0 when the rebuild is faithful).
    """
    from memory.lexical.snapshot import LexicalIndexes

    mismatches = 0
    for conv in asked:
        if not conv:
            continue
        for a in conv:
            a.lexical_variants = {}  # also for questions recorded before the field existed
        built = LexicalIndexes().build("locomo", conv[0].everything.values()).bm25
        postings = built.export()
        for k1, b in {*params, SERVICE_BM25}:
            index = BM25Index.from_export(postings, k1=k1, b=b, stemming=built.stemming)
            for a in conv:
                hits_ = index.search(a.question.question, 200)
                if (k1, b) == SERVICE_BM25:
                    mismatches += [i for i, _ in hits_[:20]] != [i for i, _ in a.lexical[:20]]
                else:
                    a.lexical_variants[(k1, b)] = hits_
    return mismatches


class RecordingEmbedder:
    """An embedder with a text → vector cache that embeds queries in query mode while asked.

    `MemoryService.search` embeds its query with `embed([query])`; while `asking()` is active,
    this sends them to `embed_query`, so e5 sees its "query: " prefix (the service should call
    `memory.index.embeddings.embed_queries` itself; see the report). Query latency is recorded from
    the first (uncached) embedding of each question, one text at a time.
    """

    def __init__(self, base: Any) -> None:
        self.base = base
        self.spec = base.spec
        self._docs: dict[str, np.ndarray] = {}
        self._queries: dict[str, np.ndarray] = {}
        self.query_seconds: list[float] = []
        self.doc_seconds = 0.0
        self.doc_texts = 0
        self._asking = False

    @contextmanager
    def asking(self) -> Iterator[None]:
        self._asking = True
        try:
            yield
        finally:
            self._asking = False

    def embed(self, texts: list[str]) -> np.ndarray:
        if self._asking:
            return self.embed_query(texts)
        missing = [t for t in dict.fromkeys(texts) if t not in self._docs]
        if missing:
            t0 = time.perf_counter()
            self._docs.update(zip(missing, self.base.embed(missing), strict=True))
            self.doc_seconds += time.perf_counter() - t0
            self.doc_texts += len(missing)
        return np.vstack([self._docs[t] for t in texts]).astype(np.float32)

    def embed_query(self, texts: list[str]) -> np.ndarray:
        for t in dict.fromkeys(texts):
            if t not in self._queries:
                t0 = time.perf_counter()
                self._queries[t] = embed_queries(self.base, [t])[0]
                self.query_seconds.append(time.perf_counter() - t0)
        return np.vstack([self._queries[t] for t in texts]).astype(np.float32)


@contextmanager
def recording_rank() -> Iterator[list[dict[str, Any]]]:
    """Record every call of `ranking.rank` (the service calls it through the module)."""
    calls: list[dict[str, Any]] = []
    real = ranking.rank

    def spy(query: str, dense: Any, lexical: Any, records: Any, now: Any, **kw: Any) -> Any:
        calls.append({"query": query, "dense": list(dense), "lexical": list(lexical),
                      "live": dict(records), "now": now, "names": kw.get("names")})  # fmt: skip
        return real(query, dense, lexical, records, now, **kw)

    ranking.rank = spy
    try:
        yield calls
    finally:
        ranking.rank = real


def dia_of(rec: Any) -> str:
    return str(rec.source.message_ids[0])


def ask_all(
    convs: list[locomo.Conversation], spec: str, tmp: Path, limit_questions: int | None
) -> tuple[list[list[Asked]], dict[str, Any]]:
    """Ingest each conversation once and ask each question once; return what was recorded."""
    embedder = RecordingEmbedder(make_embedder(spec))
    embedder.base.embed(["warm up"])
    embed_queries(embedder.base, ["warm up"])
    per_conv: list[list[Asked]] = []
    ingest_s = 0.0
    for ci, conv in enumerate(convs):
        user = f"locomo-{ci}"
        service = locomo.service_in(tmp / f"{spec}-{ci}", embedder)
        t0 = time.perf_counter()
        locomo.ingest_service(service, user, conv)
        ingest_s += time.perf_counter() - t0
        everything = {r.id: r for r in service.list(user, include_turns=True)}
        asked: list[Asked] = []
        questions = conv.questions[:limit_questions] if limit_questions else conv.questions
        for q in questions:
            with recording_rank() as calls, embedder.asking():
                found = service.search(user, q.question, k=KMAX, now=conv.now)
            if len(calls) != 1:
                raise RuntimeError(
                    f"expected MemoryService.search to call ranking.rank once, saw {len(calls)}"
                )
            c = calls[0]
            asked.append(
                Asked(
                    question=q,
                    now=conv.now,
                    dense=c["dense"],
                    lexical=c["lexical"],
                    live=c["live"],
                    returned=list(
                        dict.fromkeys(dia_of(r.record) for r in found if r.why != "core")
                    ),
                    window=find_window(q.question, conv.now),
                    # The names `search` passed (with those its aliases add), else the query's.
                    names=c["names"] if c["names"] is not None else ranking.names_in(q.question),
                    everything=everything,
                )
            )
        per_conv.append(asked)
        _common.log(f"[{spec}] conversation {ci}: {len(conv.turns)} turns, {len(asked)} questions")
        locomo.close_service(service)
        del service
    q_ms = [s * 1000 for s in embedder.query_seconds]
    info = {
        "bm25_k1_b": list(SERVICE_BM25),
        "ingest_seconds": round(ingest_s, 1),
        "passages_embedded": embedder.doc_texts,
        "passage_texts_per_s_batched": round(embedder.doc_texts / embedder.doc_seconds, 1)
        if embedder.doc_seconds
        else None,
        "query_encode_ms_one_text": {
            "median": round(statistics.median(q_ms), 2),
            "p95": round(_common.percentile(q_ms, 95), 2),
            "n": len(q_ms),
        },
    }
    return per_conv, info


# --- replaying a configuration -------------------------------------------------------------


@dataclass(frozen=True)
class Trial:
    """One point of the search: a `RankConfig` plus the floor and the entity expansion."""

    config: ranking.RankConfig
    floor: float
    entity_seeds: int = 0
    entity_weight: float = 0.0
    bm25: tuple[float, float] = SERVICE_BM25

    def key(self) -> str:
        cfg = {k: v for k, v in self.config.__dict__.items() if k not in ("half_life_days",)}
        cfg["half_life_days"] = dict(self.config.half_life_days)
        return json.dumps(
            [cfg, self.floor, self.entity_seeds, self.entity_weight, self.bm25], sort_keys=True
        )

    def values(self) -> dict[str, Any]:
        c = self.config
        out = {
            "fusion": c.fusion,
            "lexical_weight": c.lexical_weight,
            "dense_weight": c.dense_weight,
            "relevance_floor": self.floor,
            "episode_floor": None if c.episode_floor in (None, INF) else c.episode_floor,
            "dense_margin": None if c.dense_margin in (None, INF) else c.dense_margin,
            "lexical_margin": None if c.lexical_margin in (None, INF) else c.lexical_margin,
            "decay_weight": c.decay_weight,
            "episode_half_life": c.half_life_days.get("episode"),
            "time_boost": c.time_boost,
            "name_boost": c.name_boost,
            "dedupe_jaccard": c.dedupe_jaccard,
            "bm25_k1_b": list(self.bm25),
        }
        if c.fusion == "rrf":
            out["rrf_k"] = c.rrf_k
        if self.entity_seeds:
            out |= {"entity_seeds": self.entity_seeds, "entity_weight": self.entity_weight}
        return out

    def with_value(self, name: str, value: Any) -> Trial:
        if name == "floor":
            return replace(self, floor=float(value))
        if name in ("entity_seeds", "entity_weight", "bm25"):
            return replace(self, **{name: value})
        if name == "episode_half_life":
            hl = dict(self.config.half_life_days) | {"episode": float(value)}
            return replace(self, config=replace(self.config, half_life_days=hl))
        return replace(self, config=replace(self.config, **{name: value}))

    def get(self, name: str) -> Any:
        if name == "floor":
            return self.floor
        if name in ("entity_seeds", "entity_weight", "bm25"):
            return getattr(self, name)
        if name == "episode_half_life":
            return self.config.half_life_days.get("episode")
        return getattr(self.config, name)


def json_grid(grid: dict[str, list[float]]) -> dict[str, list[float | None]]:
    """A grid of floors for JSON: infinity (never) as null."""
    return {k: [None if v == INF else v for v in vs] for k, vs in grid.items()}


def default_grid(spec: str) -> dict[str, list[Any]]:
    """What LoCoMo tunes for an encoder: its floors and `GRID`."""
    return (
        {"floor": FLOOR_GRID.get(spec, [0.0])}
        | GRID
        | {"episode_floor": EPISODE_FLOOR_GRID.get(spec, [INF])}
        | {"dense_margin": MARGIN_GRID}
        | {"bm25": BM25_GRID}
    )


def start_trial(spec: str, language: str = "en") -> Trial:
    """Today's configuration of an encoder for queries in a language ("en" or "zh")."""
    config = ranking.RankConfig(embedder=spec)
    t = ranking.tuned(config, "中文" if language == "zh" else "en")
    config = replace(
        config,
        dense_weight=t.dense_weight,
        episode_floor=t.episode_floor,
        dense_margin=t.dense_margin,
        lexical_margin=t.lexical_margin,
    )
    return Trial(config, t.relevance_floor)


Expander = Callable[[Asked, list[tuple[str, float]], Trial], list[tuple[str, float]]]


def replay(a: Asked, trial: Trial, expand: Expander | None = None) -> list[str]:
    """What `MemoryService.search` would return for this question under `trial`."""
    config = replace(trial.config, relevance_floor=trial.floor)
    lexical, live = a.lexical_for(trial.bm25)
    ranked = ranking.rank(
        a.question.question, a.dense, lexical, live, a.now, config=config,
        k=3 * KMAX + 10, window=a.window, names=a.names,
    )  # fmt: skip
    # As `search` does (the pinned core memories are not recorded: none in LoCoMo).
    ranked = drop_restated_turns(ranked, live, lexical, [], KMAX)
    if expand is not None and trial.entity_seeds:
        ranked = expand(a, ranked, trial)
    out: list[str] = []
    seen: set[str] = set()
    for i, _ in ranked:
        rec = a.live.get(i) or a.everything[i]
        key = normalize_text(rec.content)
        if key not in seen:
            seen.add(key)
            out.append(dia_of(rec))
        if len(out) >= KMAX:
            break
    return out


def hits(ranked: Sequence[str], evidence: Sequence[str]) -> tuple[float, float]:
    rel = set(evidence)
    return tuple(float(rel <= set(ranked[:k])) for k in KS)  # type: ignore[return-value]


class Evaluator:
    """Per-question (R@5, R@10) of a trial over every conversation, computed once per trial."""

    def __init__(self, asked: list[list[Asked]], expand: Expander | None = None) -> None:
        self.asked = asked
        self.expand = expand
        self._cache: dict[str, list[np.ndarray]] = {}
        self.replays = 0

    def per_conv(self, trial: Trial) -> list[np.ndarray]:
        key = trial.key()
        if key not in self._cache:
            rows = []
            for conv in self.asked:
                rows.append(
                    np.array(
                        [hits(replay(a, trial, self.expand), a.question.evidence) for a in conv]
                    ).reshape(-1, len(KS))
                )
                self.replays += len(conv)
            self._cache[key] = rows
        return self._cache[key]

    def objective(self, trial: Trial, convs: Sequence[int]) -> float:
        rows = np.vstack([self.per_conv(trial)[c] for c in convs])
        return float(rows.mean()) if len(rows) else 0.0


def tune(
    ev: Evaluator, start: Trial, grid: dict[str, list[Any]], convs: Sequence[int], rounds: int
) -> Trial:
    """Coordinate descent: each weight in turn moves to its best grid value; ties stay put."""
    best = start
    best_score = ev.objective(best, convs)
    for _ in range(rounds):
        moved = False
        for name, values in grid.items():
            if name == "rrf_k" and best.config.fusion != "rrf":
                continue
            for v in values:
                if v == best.get(name):
                    continue
                trial = best.with_value(name, v)
                score = ev.objective(trial, convs)
                if score > best_score + 1e-9:
                    best, best_score, moved = trial, score, True
        if not moved:
            break
    return best


def summarize(rows: list[tuple[float, float]], cats: list[int]) -> dict[str, Any]:
    def mean(sel: list[tuple[float, float]]) -> dict[str, float]:
        if not sel:
            return {}
        arr = np.array(sel)
        return {f"R@{k}_all": round(float(arr[:, j].mean()), 4) for j, k in enumerate(KS)}

    out: dict[str, Any] = {"n": len(rows), **mean(rows)}
    out["by_category"] = {
        name: {"n": sum(1 for c in cats if c == cat),
               **mean([r for r, c in zip(rows, cats, strict=True) if c == cat])}
        for cat, name in locomo.CATEGORIES.items()
        if cat in cats
    }  # fmt: skip
    return out


def cross_validate(
    asked: list[list[Asked]],
    spec: str,
    *,
    rounds: int,
    expand: Expander | None = None,
    entity_grid: dict[str, list[Any]] | None = None,
    start: Trial | None = None,
    grid: dict[str, list[Any]] | None = None,
) -> dict[str, Any]:
    """In-sample (defaults and tuned on all) and leave-one-conversation-out figures."""
    ev = Evaluator(asked, expand)
    start = start or start_trial(spec)
    grid = (grid or default_grid(spec)) | (entity_grid or {})
    all_convs = list(range(len(asked)))
    cats = [a.question.category for conv in asked for a in conv]

    def rows_of(trial: Trial, convs: Sequence[int]) -> list[tuple[float, float]]:
        per = ev.per_conv(trial)
        return [tuple(r) for c in convs for r in per[c].tolist()]

    t0 = time.perf_counter()
    tuned_all = tune(ev, start, grid, all_convs, rounds)
    folds: list[dict[str, Any]] = []
    held_rows: list[tuple[float, float]] = []
    held_cats: list[int] = []
    for held in all_convs:
        train = [c for c in all_convs if c != held]
        chosen = tune(ev, start, grid, train, rounds)
        rows = rows_of(chosen, [held])
        held_rows += rows
        held_cats += [a.question.category for a in asked[held]]
        arr = np.array(rows)
        folds.append({
            "held_out": held,
            "chosen": chosen.values(),
            "train_objective": round(ev.objective(chosen, train), 4),
            "held_out_R@5_all": round(float(arr[:, 0].mean()), 4),
            "held_out_R@10_all": round(float(arr[:, 1].mean()), 4),
            "held_out_at_start_R@5_all": round(float(ev.per_conv(start)[held][:, 0].mean()), 4),
        })  # fmt: skip
    return {
        "start": start.values(),
        "in_sample_start": summarize(rows_of(start, all_convs), cats),
        "in_sample_tuned_on_all": summarize(rows_of(tuned_all, all_convs), cats),
        "tuned_on_all": tuned_all.values(),
        "cross_validated": summarize(held_rows, held_cats),
        "cross_validated_fold_mean": {
            f"R@{k}_all": round(statistics.mean(f[f"held_out_R@{k}_all"] for f in folds), 4)
            for k in KS
        },
        "folds": folds,
        "configs_tried": len(ev._cache),
        "replays": ev.replays,
        "tuning_seconds": round(time.perf_counter() - t0, 1),
    }


# --- entity expansion (experiment) ---------------------------------------------------------


def entity_expander(asked: list[list[Asked]]) -> Expander:
    """One hop through entities: records sharing an entity with the first hits join the ranking.

    The first `entity_seeds` results (after the service's own filtering) are the seeds; each
    record that shares a non-hub entity with them (`memory.recall.entities.EntityIndex`) gains
    ``entity_weight · top score · shared entities`` on top of its own score (0 if it was not
    ranked), so a strong first hit can pull in the memory that completes a multi-hop answer.
    """
    from memory.recall.entities import EntityIndex

    indexes: dict[int, EntityIndex] = {}
    for conv in asked:
        if conv:
            everything = conv[0].everything
            indexes[id(everything)] = EntityIndex({i: r.content for i, r in everything.items()})

    def expand(a: Asked, ranked: list[tuple[str, float]], trial: Trial) -> list[tuple[str, float]]:
        if not ranked:
            return ranked
        index = indexes[id(a.everything)]
        seeds = [i for i, _ in ranked[: trial.entity_seeds]]
        linked = index.neighbours(seeds)
        if not linked:
            return ranked
        top = ranked[0][1]
        scores = dict(ranked)
        for j, shared in linked.items():
            if j in a.everything:
                scores[j] = scores.get(j, 0.0) + trial.entity_weight * top * shared
        return sorted(scores.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)

    return expand


# --- baselines -------------------------------------------------------------------------------


def baselines(asked: list[list[Asked]], convs: list[locomo.Conversation]) -> dict[str, Any]:
    """Dense only, the service's BM25, and plain BM25 over the turn text, per question."""
    out: dict[str, list[tuple[float, float]]] = {"dense": [], "bm25_service": [], "bm25_plain": []}
    cats: list[int] = []
    for conv_asked, conv in zip(asked, convs, strict=True):
        plain: BM25Index[str] = BM25Index(stemming=False)
        for t in conv.turns:
            plain.add(t.id, t.content)
        for a in conv_asked:
            ev = a.question.evidence
            dense = [dia_of(a.live[i]) for i, _ in a.dense if i in a.live]
            lex = [dia_of(a.live[i]) for i, s in a.lexical if s > 0 and i in a.live]
            out["dense"].append(hits(dense, ev))
            out["bm25_service"].append(hits(lex, ev))
            out["bm25_plain"].append(hits([i for i, _ in plain.search(a.question.question, KMAX)],
                                          ev))  # fmt: skip
            cats.append(a.question.category)
    return {name: summarize(rows, cats) for name, rows in out.items()}


def replay_mismatches(asked: list[list[Asked]], spec: str, language: str = "en") -> int:
    """Questions where replaying today's configuration differs from what `search` returned."""
    default = start_trial(spec, language)
    return sum(1 for conv in asked for a in conv if replay(a, default) != a.returned)


# --- entry point -----------------------------------------------------------------------------


def run_cv(
    data: Path = locomo.DEFAULT_DATA,
    *,
    encoders: Sequence[str] = ("local", "local-e5"),
    limit_questions: int | None = None,
    rounds: int = 2,
    entities: bool = True,
    plain: bool = True,
    asked_cache: Path | None = None,
) -> dict[str, Any]:
    """Run the cross-validation for each encoder and return one JSON-ready object."""
    t_start = time.perf_counter()
    convs, stats = locomo.load(data, None)
    result: dict[str, Any] = {
        "benchmark": "locomo leave-one-conversation-out CV of the service ranking",
        "data": data.name,
        "conversations": len(convs),
        **stats,
        "objective": "mean of R@5_all and R@10_all over the training questions",
        "rounds": rounds,
        "grid": {"floor": FLOOR_GRID}
        | GRID
        | {
            "episode_floor": json_grid(EPISODE_FLOOR_GRID),
            "dense_margin": json_grid({"all": MARGIN_GRID}),
            "bm25_k1_b": [list(p) for p in BM25_GRID],
        },
        "encoders": {},
    }
    with tempfile.TemporaryDirectory(prefix="locomo-cv-") as tmp:
        for spec in encoders:
            cached = asked_cache / f"{spec}.pickle" if asked_cache else None
            loaded = pickle.loads(cached.read_bytes()) if cached and cached.exists() else None
            if loaded and tuple(loaded[1].get("bm25_k1_b", ())) != SERVICE_BM25:
                # Its lexical hits were made under other BM25 values than today's.
                _common.log(f"[{spec}] {cached} predates BM25 {SERVICE_BM25}: asking again")
                loaded = None
            if loaded:
                asked, info = loaded
            else:
                asked, info = ask_all(convs, spec, Path(tmp), limit_questions)
                if cached:
                    cached.parent.mkdir(parents=True, exist_ok=True)
                    cached.write_bytes(pickle.dumps((asked, info)))
            entry: dict[str, Any] = {"encode": info}
            entry["replay_mismatches"] = replay_mismatches(asked, spec)
            entry["lexical_rebuild_mismatches"] = add_lexical_variants(asked, BM25_GRID)
            entry["baselines"] = baselines(asked, convs)
            entry["service_as_returned"] = summarize(
                [hits(a.returned, a.question.evidence) for conv in asked for a in conv],
                [a.question.category for conv in asked for a in conv],
            )
            result["encoders"][spec] = entry
            if plain:
                _common.log(f"[{spec}] tuning")
                entry["cv"] = cross_validate(asked, spec, rounds=rounds)
            if entities:
                expand = entity_expander(asked)
                _common.log(f"[{spec}] tuning with entity expansion")
                entry["cv_with_entities"] = cross_validate(
                    asked, spec, rounds=rounds, expand=expand, entity_grid=ENTITY_GRID
                )
    result["elapsed_seconds"] = round(time.perf_counter() - t_start, 1)
    return result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", type=Path, default=locomo.DEFAULT_DATA)
    p.add_argument("--encoders", nargs="+", default=["local", "local-e5"])
    p.add_argument("--limit-questions", type=int, default=None)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--no-entities", action="store_true")
    p.add_argument("--no-plain", action="store_true", help="only the entity-expansion tuning")
    p.add_argument(
        "--no-aliases",
        action="store_true",
        help="recall without `memory.recall.aliases` (the before of its before/after figures)",
    )
    p.add_argument(
        "--asked-cache",
        type=Path,
        default=None,
        help="keep (or reuse) what the service was asked, per encoder, in this folder",
    )
    _common.output_args(p, chart=False)
    args = p.parse_args(argv)
    _common.start(args)
    if args.no_aliases:
        from memory.recall import aliases

        aliases.hop = lambda *_, **__: None  # type: ignore[assignment]  # search calls it by name
    result = run_cv(
        args.data.resolve(),
        encoders=args.encoders,
        limit_questions=args.limit_questions,
        rounds=args.rounds,
        entities=not args.no_entities,
        plain=not args.no_plain,
        asked_cache=args.asked_cache,
    )
    result["aliases"] = not args.no_aliases
    _common.finish(result, args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

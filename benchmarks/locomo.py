"""Evidence recall on LoCoMo: dense-only vs BM25-only vs our hybrid ranking.

    python benchmarks/locomo.py [--data PATH] [--audit PATH] [--limit-conversations N]
                                [--limit-questions N] [--k 1 5 10 25]
                                [--ours JSON] [--rank-config JSON]

``--data`` defaults to ``<repo>/../shared/data/locomo/locomo10_dev.json``;
``--limit-questions`` keeps the first N questions of each conversation.

Every raw turn of a conversation is one document of one user (one user per conversation):
"<speaker>: <text> [shares a photo of <caption>]", said at its session's date. Vectors are
made with the bundled embedder (`make_embedder("local")`) and stored in an embedded Chroma
through `memory.index.chroma.ChromaIndex` (one collection per user, as in the product); the
lexical index is `memory.lexical.bm25.BM25Index`. Each non-adversarial question (category != 5)
is asked after the whole conversation. Three systems are measured side by side:

* ``dense``: Chroma similarity of the question to each turn;
* ``bm25``: `BM25Index` over the turn text alone (our tokenizer); ``bm25_plain`` is the
  same with no stemming, the README's reference setting;
* ``ours``: `memory.recall.ranking.rank` with its default `RankConfig`, fusing the top 200
  Chroma hits (each turn's similarity averaged with its neighbours', see
  `ranking.smooth_with_context`) with a BM25 index whose documents also carry the two
  turns either side as a down-weighted field (still one document, one score per turn).
  Turns are ranked as ``episode`` records (the kind the design reserves for archived raw
  turns), so they get the episode recency half-life; the time window and the name boost
  are read from the question, with "now" one day after the last session;
* ``service``: the product path. Per conversation, a `memory.service.MemoryService` over a
  `SqliteStore` (temp file) and its own embedded `ChromaIndex` (temp dir), with
  `Policy(turn_ttl=SERVICE_TURN_TTL)`. Each session's turns are ingested with
  `MemoryService.archive_turns(user, [(dia_id, content, context)], Source(thread_id=
  "session_<n>", said_at=<session date>, via="import"))`, context = the previous and next
  turn of the same session (as ``ours``' lexical neighbours); the question is asked with
  `MemoryService.search(user, question, k=max(ks), now=<last session + 1 day>)` and the
  results are ranked in the order returned (hits mapped back to dia_ids through
  `record.source.message_ids[0]`; "core" results dropped: there are none for episodes).
  Whatever `search` decides (relevance floor, episode floor and margins, dedupe of
  equal texts) is kept: it may return fewer than k results.

Metrics per system, overall and per category: evidence recall@k ("all" evidence turns in
the top k, and "any"), NDCG@10, tokens of the top-k memory block vs the full history,
and retrieval latency per question (query embedding included for dense and ours).
Evidence strings are split on ``;``, ``,`` and spaces and repaired ("D:11:26" → "D11:26");
with ``--audit`` the audit's ``correct_evidence`` replaces the cited evidence.
Prints one JSON object on stdout; progress goes to stderr. The data is read in place,
never copied.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402  (sets the offline environment before the imports below)
from _locomo import (  # noqa: E402,F401  (the one LoCoMo reader; re-exported for locomo_cv)
    CATEGORIES,
    DEFAULT_AUDIT,
    DEFAULT_DATA,
    SERVICE_TURN_TTL,
    Conversation,
    Question,
    Turn,
    close_service,
    ingest_service,
    load,
    parse_evidence,
    parse_session_date,
    service_in,
    turn_content,
)

from memory.dates.grammar import find_window  # noqa: E402
from memory.lexical.bm25 import BM25Index  # noqa: E402
from memory.recall import ranking  # noqa: E402
from memory.recall.block import format_block  # noqa: E402
from memory.store.records import MemoryRecord, Source  # noqa: E402

SYSTEMS = ("dense", "bm25", "bm25_plain", "ours", "service")

# How "ours" builds its documents and queries (the ranking weights live in RankConfig).
OURS_DEFAULTS: dict[str, Any] = {
    # BM25 document of a turn = the turn + up to this many turns either side (same session),
    # each counted with this weight.
    "lexical_neighbours": [0.5, 0.5],
    # Dense similarity of a turn averaged with its neighbours' (`ranking.smooth_with_context`).
    "dense_neighbours": [0.5, 0.25],
    # Candidates fetched from each index (0 = every turn of the user).
    "dense_depth": 200,
    "lexical_depth": 200,
}

log = C.log


# --- metrics ----------------------------------------------------------------------------------


def ndcg(ranked: list[str], relevant: set[str], k: int) -> float:
    dcg = sum(1.0 / math.log2(r + 2) for r, i in enumerate(ranked[:k]) if i in relevant)
    ideal = sum(1.0 / math.log2(r + 2) for r in range(min(len(relevant), k)))
    return dcg / ideal if ideal else 0.0


class Scores:
    def __init__(self, ks: list[int]) -> None:
        self.ks = ks
        self.rows: list[dict[str, float]] = []
        self.cats: list[int] = []
        self.latency_ms: list[float] = []
        self.latency_search_ms: list[float] = []
        self.block_ratio: dict[int, list[float]] = defaultdict(list)
        self.block_tokens: dict[int, list[int]] = defaultdict(list)

    def add(self, ranked: list[str], evidence: list[str], category: int) -> None:
        rel = set(evidence)
        row: dict[str, float] = {}
        for k in self.ks:
            top = set(ranked[:k])
            row[f"R@{k}_all"] = float(rel <= top)
            row[f"R@{k}_any"] = float(bool(rel & top))
        row["NDCG@10"] = ndcg(ranked, rel, 10)
        self.rows.append(row)
        self.cats.append(category)

    @staticmethod
    def _mean(rows: list[dict[str, float]]) -> dict[str, float]:
        if not rows:
            return {}
        return {key: round(sum(r[key] for r in rows) / len(rows), 4) for key in rows[0]}

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {"n": len(self.rows), **self._mean(self.rows)}
        out["by_category"] = {
            name: {"n": sum(1 for c in self.cats if c == cat),
                   **self._mean([r for r, c in zip(self.rows, self.cats, strict=True) if c == cat])}
            for cat, name in CATEGORIES.items()
            if cat in self.cats
        }  # fmt: skip
        latencies = {
            "latency_ms": self.latency_ms,
            "latency_ms_without_query_embedding": self.latency_search_ms,
        }
        for key, values in latencies.items():
            if values:
                out[key] = C.describe(values, ("median", "p95", "max"), digits=2)
        out["memory_tokens"] = {
            f"top{k}": {
                "median_tokens": statistics.median(self.block_tokens[k]),
                "median_ratio_to_history": round(statistics.median(self.block_ratio[k]), 4),
            }
            for k in sorted(self.block_ratio)
        }
        return out


# --- systems ----------------------------------------------------------------------------------


def memory_records(conv: Conversation, user: str) -> dict[str, MemoryRecord]:
    return {
        t.id: MemoryRecord(
            id=t.id,
            user_id=user,
            kind="fact",
            subject=f"locomo.{t.id}",
            content=t.content,
            confidence=1.0,
            source=Source(thread_id=f"session_{t.session}", said_at=t.said_at, via="import"),
            created_at=t.said_at,
            updated_at=t.said_at,
        )
        for t in conv.turns
    }


def history_tokens(conv: Conversation) -> int:
    """Tokens of the whole dated transcript (what a full-history prompt would carry)."""
    return ranking.estimate_tokens(conv.transcript())


def build_ours_lexical(conv: Conversation, opts: dict[str, Any]) -> BM25Index[str]:
    index: BM25Index[str] = BM25Index()
    turns = {t.id: t for t in conv.turns}
    near = conv.neighbours(list(opts["lexical_neighbours"]))
    for t in conv.turns:
        index.add(t.id, t.content, extra=[(turns[j].content, w) for j, w in near[t.id]])
    return index


def run(
    data: Path,
    audit: Path | None,
    *,
    ks: list[int],
    limit_conversations: int | None = None,
    limit_questions: int | None = None,
    ours: dict[str, Any] | None = None,
    rank_config: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Run the benchmark and return the result object."""

    from memory.index.chroma import ChromaIndex
    from memory.index.embeddings import make_embedder

    opts = {**OURS_DEFAULTS, **(ours or {})}
    config = ranking.with_overrides(ranking.DEFAULT_CONFIG, **(rank_config or {}))
    ks = sorted(set(ks) | {10})
    kmax = max(ks)
    convs, stats = load(data, audit)
    convs = convs[:limit_conversations] if limit_conversations else convs
    scores = {s: Scores(ks) for s in SYSTEMS}
    t_start = time.perf_counter()
    embedder = make_embedder("local")
    embedder.embed(["warm up"])
    n_turns = 0
    embed_seconds = 0.0
    ratios_history: list[int] = []
    svc_stats: dict[str, Any] = {"turns_archived": 0, "ingest_seconds": 0.0,
                                 "returned": [], "short": 0, "core_dropped": 0}  # fmt: skip
    timed = C.TimedEmbedder(embedder)
    with tempfile.TemporaryDirectory(prefix="locomo-chroma-") as tmp:
        index = ChromaIndex.open(embedder, path=tmp)
        for ci, conv in enumerate(convs):
            user = f"locomo-{ci}"
            recs = memory_records(conv, user)
            t0 = time.perf_counter()
            index.upsert(list(recs.values()))
            embed_seconds += time.perf_counter() - t0
            n_turns += len(conv.turns)
            turns = {t.id: t for t in conv.turns}
            bm25: BM25Index[str] = BM25Index()
            bm25_plain: BM25Index[str] = BM25Index(stemming=False)
            for t in conv.turns:
                bm25.add(t.id, t.content)
                bm25_plain.add(t.id, t.content)
            lex_ours = build_ours_lexical(conv, opts)
            context = conv.neighbours(list(opts["dense_neighbours"]))
            depth = int(opts["dense_depth"]) or len(conv.turns)
            hist = history_tokens(conv)
            ratios_history.append(hist)
            now = conv.now
            # The product path: a service of its own per conversation (store + index).
            service = service_in(Path(tmp) / f"service-{ci}", timed)
            t0 = time.perf_counter()
            svc_stats["turns_archived"] += ingest_service(service, user, conv)
            svc_stats["ingest_seconds"] += time.perf_counter() - t0
            questions = conv.questions[:limit_questions] if limit_questions else conv.questions
            log(f"conversation {ci}: {len(conv.turns)} turns, {len(questions)} questions, "
                f"history ≈{hist} tokens")  # fmt: skip
            for q in C.track(questions, f"conversation {ci + 1}/{len(convs)}"):
                # Query embedding, shared by dense and ours (counted in both latencies).
                t0 = time.perf_counter()
                vec = embedder.embed([q.question])[0]
                t_embed = (time.perf_counter() - t0) * 1000

                t0 = time.perf_counter()
                hits = index.query(user, vec, kmax)
                dense_ids = [h.id for h in hits]
                t_search = (time.perf_counter() - t0) * 1000
                scores["dense"].latency_ms.append(t_embed + t_search)
                scores["dense"].latency_search_ms.append(t_search)

                t0 = time.perf_counter()
                lex_ids = [i for i, _ in bm25.search(q.question, kmax)]
                scores["bm25"].latency_ms.append((time.perf_counter() - t0) * 1000)
                scores["bm25"].latency_search_ms.append(scores["bm25"].latency_ms[-1])

                t0 = time.perf_counter()
                plain_ids = [i for i, _ in bm25_plain.search(q.question, kmax)]
                scores["bm25_plain"].latency_ms.append((time.perf_counter() - t0) * 1000)
                scores["bm25_plain"].latency_search_ms.append(scores["bm25_plain"].latency_ms[-1])

                t0 = time.perf_counter()
                window = find_window(q.question, now)
                lexical = lex_ours.search(q.question, int(opts["lexical_depth"]))
                dense_hits = index.query(user, vec, depth)
                ranked = ranking.rank(
                    q.question,
                    [(h.id, h.similarity) for h in dense_hits],
                    lexical,
                    turns,
                    now,
                    config=config,
                    k=kmax,
                    window=window,
                    context=context,
                )
                ours_ids = [i for i, _ in ranked]
                t_search = (time.perf_counter() - t0) * 1000
                scores["ours"].latency_ms.append(t_embed + t_search)
                scores["ours"].latency_search_ms.append(t_search)

                e0 = timed.seconds
                t0 = time.perf_counter()
                found = service.search(user, q.question, k=kmax, now=now)
                t_total = (time.perf_counter() - t0) * 1000
                t_embed_svc = (timed.seconds - e0) * 1000
                svc_stats["core_dropped"] += sum(1 for r in found if r.why == "core")
                found = [r for r in found if r.why != "core"]
                svc_records = {r.record.source.message_ids[0]: r.record for r in found}
                svc_ids = list(dict.fromkeys(r.record.source.message_ids[0] for r in found))
                svc_stats["returned"].append(len(svc_ids))
                svc_stats["short"] += len(svc_ids) < kmax
                scores["service"].latency_ms.append(t_total)
                scores["service"].latency_search_ms.append(t_total - t_embed_svc)

                for name, ids in (("dense", dense_ids), ("bm25", lex_ids),
                                  ("bm25_plain", plain_ids), ("ours", ours_ids),
                                  ("service", svc_ids)):  # fmt: skip
                    sc = scores[name]
                    sc.add(ids, q.evidence, q.category)
                    for k in (5, 10):
                        if name == "service":
                            block = format_block([svc_records[i] for i in ids[:k]])
                        else:
                            block = format_block([recs[i] for i in ids[:k]])
                        tok = ranking.estimate_tokens(block)
                        sc.block_tokens[k].append(tok)
                        sc.block_ratio[k].append(tok / hist)
            close_service(service)
            del service
        del index
    elapsed = time.perf_counter() - t_start
    n_questions = len(scores["ours"].rows)
    systems = {name: sc.summary() for name, sc in scores.items()}
    baselines = ("dense", "bm25", "bm25_plain")
    best = {k: max(systems[b][k] for b in baselines) for k in ("R@5_all", "R@10_all")}

    def targets_for(summary: dict[str, Any]) -> dict[str, bool]:
        return {
            "R@5_all>=0.60": summary["R@5_all"] >= 0.60,
            "R@10_all>=0.70": summary["R@10_all"] >= 0.70,
            "R@5_all>=best_baseline+0.10": summary["R@5_all"] >= best["R@5_all"] + 0.10,
            "R@10_all>=best_baseline+0.10": summary["R@10_all"] >= best["R@10_all"] + 0.10,
            "top10_block_tokens_median_ratio<=0.10": summary["memory_tokens"]
            .get("top10", {})
            .get("median_ratio_to_history", 1.0)
            <= 0.10,
            "latency_p95_ms<=50": summary.get("latency_ms", {}).get("p95", math.inf) <= 50,
        }

    targets = targets_for(systems["ours"]) | {
        f"service {key}": ok for key, ok in targets_for(systems["service"]).items()
    }
    returned = svc_stats["returned"]
    return {
        "benchmark": "locomo evidence recall (raw turns, category 5 excluded)",
        "data": str(data),
        "audit": str(audit) if audit else None,
        "conversations": len(convs),
        "turns": n_turns,
        "questions": n_questions,
        **stats,
        "ks": ks,
        "embedder": "local",
        "dense_index": "embedded Chroma via memory.index.ChromaIndex (one collection per user)",
        "ours_options": opts,
        "service_options": {
            "store": "langgraph.store.sqlite.SqliteStore (temp file, one per conversation)",
            "index": "embedded Chroma via memory.index.chroma.ChromaIndex (temp dir, one per "
            "conversation)",
            "policy": f"memory.lifecycle.Policy(turn_ttl=timedelta(days="
            f"{SERVICE_TURN_TTL.days})), otherwise defaults",
            "ingest": "MemoryService.archive_turns per session (thread session_<n>, said_at = "
            "session date, via import), context = previous and next turn of the session",
            "query": f"MemoryService.search(k={kmax}, now=last session + 1 day); "
            "'core' results dropped",
            "turns_archived": svc_stats["turns_archived"],
            "turns_not_archived": n_turns - svc_stats["turns_archived"],
            "ingest_seconds": round(svc_stats["ingest_seconds"], 2),
            "core_results_dropped": svc_stats["core_dropped"],
            "median_results_returned": statistics.median(returned) if returned else 0,
            "questions_with_fewer_than_k_results": svc_stats["short"],
            "questions_with_no_result": sum(1 for n in returned if n == 0),
        },
        "rank_config": {k: v for k, v in config.__dict__.items() if k != "half_life_days"}
        | {"half_life_days": dict(config.half_life_days)},
        "median_history_tokens": statistics.median(ratios_history) if ratios_history else 0,
        "systems": systems,
        "ours_vs_best_baseline": {
            k: round(systems["ours"][k] - best[k], 4) for k in ("R@5_all", "R@10_all")
        },
        "service_vs_best_baseline": {
            k: round(systems["service"][k] - best[k], 4) for k in ("R@5_all", "R@10_all")
        },
        "service_vs_ours": {
            k: round(systems["service"][k] - systems["ours"][k], 4)
            for k in ("R@1_all", "R@5_all", "R@10_all", "NDCG@10")
            if k in systems["service"]
        },
        "targets_met": targets,
        "index_seconds": round(embed_seconds, 2),
        "embed_texts_per_second": round(n_turns / embed_seconds, 1) if embed_seconds else None,
        "elapsed_seconds": round(elapsed, 1),
    }


# --- chart ------------------------------------------------------------------------------------

CHART_SYSTEMS = {
    "service": ("service (MemoryService.search)", "#2b7bba"),
    "ours": ("ours (rank only)", "#8dbde3"),
    "dense": ("dense (Chroma)", "#e8a33d"),
    "bm25": ("BM25", "#7aa457"),
    "bm25_plain": ("BM25, no stemming", "#b5d39b"),
}


def draw_chart(result: dict[str, Any], plt: Any) -> Any:
    """Recall@5 and @10 ("all" evidence) by category, the product next to the baselines."""
    systems = result["systems"]
    names = [s for s in CHART_SYSTEMS if s in systems]
    groups = ["overall", *[c for c in CATEGORIES.values() if c in systems[names[0]]["by_category"]]]
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.6), sharey=True)
    width = 0.8 / len(names)
    for ax, k in zip(axes, (5, 10), strict=True):
        key = f"R@{k}_all"
        for j, name in enumerate(names):
            summary = systems[name]
            values = [
                summary[key] if g == "overall" else summary["by_category"][g].get(key, 0.0)
                for g in groups
            ]
            xs = [g + (j - (len(names) - 1) / 2) * width for g in range(len(groups))]
            label, color = CHART_SYSTEMS[name]
            bars = ax.bar(xs, values, width, label=label, color=color)
            if name == "service":
                ax.bar_label(bars, labels=[f"{v:.2f}" for v in values], fontsize=7, padding=1)
        counts = [
            systems[names[0]]["n"] if g == "overall" else systems[names[0]]["by_category"][g]["n"]
            for g in groups
        ]
        ax.set_xticks(range(len(groups)))
        ax.set_xticklabels(
            [f"{g.replace('_', ' ')}\nn={n}" for g, n in zip(groups, counts, strict=True)]
        )
        ax.set_ylim(0, 1.05)
        ax.set_title(f"recall@{k} (every evidence turn in the top {k})")
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel("share of questions")
    axes[0].legend(loc="upper left", fontsize=8, frameon=False)
    fig.suptitle(
        f"LoCoMo evidence recall by category: {result['questions']} questions, "
        f"{result['conversations']} conversations, {result['turns']:,} turns",
        fontsize=11,
    )
    fig.tight_layout()
    return fig


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", type=Path, default=DEFAULT_DATA)
    p.add_argument("--audit", type=Path, default=None,
                   help="audit file whose correct_evidence replaces cited evidence")  # fmt: skip
    p.add_argument("--limit-conversations", type=int, default=None)
    p.add_argument("--limit-questions", type=int, default=None)
    p.add_argument("--k", type=int, nargs="+", default=[1, 5, 10, 25])
    p.add_argument(
        "--ours",
        type=json.loads,
        default=None,
        help='JSON overrides of OURS_DEFAULTS, e.g. {"lexical_neighbours": []}',
    )
    p.add_argument("--rank-config", type=json.loads, default=None,
                   help='JSON overrides of RankConfig, e.g. {"dense_weight": 0.2}')  # fmt: skip
    p.add_argument("--cv", action="store_true", help="cross-validate the ranking weights")
    C.output_args(p)
    args = p.parse_args(argv)
    C.start(args)
    if args.cv:  # leave-one-conversation-out tuning of every ranking weight: locomo_cv.py
        from locomo_cv import run_cv

        C.finish(run_cv(args.data.resolve(), limit_questions=args.limit_questions), args)
        return 0
    result = run(
        args.data.resolve(),
        args.audit.resolve() if args.audit else None,
        ks=args.k,
        limit_conversations=args.limit_conversations,
        limit_questions=args.limit_questions,
        ours=args.ours,
        rank_config=args.rank_config,
    )
    C.finish(result, args, draw_chart)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

import json
import math
import subprocess
import sys
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory.dates.grammar import find_window
from memory.lexical.bm25 import BM25_B, BM25_K1, BM25Index, stem, tokenize
from memory.lexical.snapshot import LexicalIndexes, OrderedRecords, record_fields
from memory.recall import ranking
from memory.recall.ranking import (
    RankConfig,
    cut_to_budget,
    dedupe,
    names_in,
    rank,
    recency_factor,
    relevance_floor,
    smooth_with_context,
    window_weight,
)
from memory.store.records import MemoryRecord, Source

REPO = Path(__file__).resolve().parents[2]
LOCOMO = REPO / "../shared/data/locomo/locomo10_dev.json"
NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)  # a Monday


@dataclass
class Rec:
    content: str
    kind: str = "fact"
    confidence: float = 1.0
    created_at: datetime = field(default_factory=lambda: NOW - timedelta(days=1))
    valid_from: datetime | None = None


# --- tokenizer --------------------------------------------------------------------------------


def test_english_tokens_are_lowercased_stemmed_and_stop_words_dropped() -> None:
    assert tokenize("What did Caroline research?") == ["carolin", "research"]
    assert tokenize("She's researching adoption agencies") == ["research", "adoption", "agenci"]
    # Inflected forms share one key.
    for group in (["bake", "baked", "baking", "bakes"], ["story", "stories"], ["run", "running"]):
        assert len({stem(w) for w in group}) == 1, group
    assert tokenize("Don't") == []
    assert tokenize("Nate won the tournament") == ["nat", "won", "tournament"]


def test_chinese_tokens_are_bigrams_plus_content_unigrams() -> None:
    tokens = tokenize("我不吃辣")
    assert "吃辣" in tokens and "辣" in tokens and "不吃" in tokens
    assert "我" not in tokens  # a function character as a unigram
    assert "我不" in tokens  # but still part of a bigram
    mixed = tokenize("Alice喜欢jazz")
    assert {"alic", "喜欢", "jazz"} <= set(mixed)
    assert tokenize("上海，咖啡") == ["上", "上海", "海", "咖", "咖啡", "啡"]


# --- BM25 index -------------------------------------------------------------------------------


def test_bm25_ranks_add_replace_and_remove() -> None:
    idx: BM25Index[str] = BM25Index()
    idx.add("a", "I moved to Berlin last year and love the city")
    idx.add("b", "My favourite food is spicy noodles")
    idx.add("c", "用户住在上海，喜欢喝咖啡")
    assert [i for i, _ in idx.search("where does she live? Berlin")] == ["a"]
    assert idx.search("咖啡")[0][0] == "c"
    assert idx.search("the of and") == []
    idx.add("a", "I live in Munich now")  # replace
    assert idx.search("Berlin") == []
    assert idx.search("Munich")[0][0] == "a"
    assert idx.remove("b") and not idx.remove("b")
    assert idx.search("noodles") == [] and len(idx) == 2
    assert idx.ids() == {"a", "c"}


def test_chat_interjections_match_nothing() -> None:
    # "which herb do I hate again lol" shares only "lol" with a remark about work.
    idx: BM25Index[str] = BM25Index()
    idx.add("work", "basically scraping plaque all day lol")
    idx.add("herb", "I genuinely cannot stand cilantro")
    assert idx.search("which herb do I hate again lol") == []
    assert idx.search("btw pls haha ok") == []


def test_bm25_statistics_follow_removals() -> None:
    idx: BM25Index[object] = BM25Index()
    for n in range(5):
        idx.add(n, "common words here")
    idx.add("rare", "common rare")
    before = dict(idx.search("common"))["rare"]
    for n in range(4):
        idx.remove(n)
    after = dict(idx.search("common"))["rare"]
    assert after != before  # idf and average length were updated
    idx.clear()
    assert len(idx) == 0 and idx.search("common") == []


def test_bm25_extra_fields_count_with_their_weight() -> None:
    idx: BM25Index[str] = BM25Index()
    idx.add("turn", "Adoption agencies.", extra=[("What did you research?", 0.5)])
    idx.add("other", "I went hiking")
    assert idx.search("research")[0][0] == "turn"
    assert idx.search("adoption")[0][1] > idx.search("research")[0][1]


def test_per_user_indexes_follow_writes_and_keep_pinnable_records() -> None:
    def mem(i: str, content: str, subject: str = "diet.avoid.spicy") -> MemoryRecord:
        return MemoryRecord(id=i, user_id="u", kind="preference", subject=subject,
                            content=content)  # fmt: skip

    reg = LexicalIndexes(
        pin=lambda r: ("diet", len(r.content)) if r.subject[:5] == "diet." else None
    )
    assert reg.peek("u") is None
    snap = reg.build("u", [mem("1", "User does not eat spicy food"),
                           mem("2", "用户住在上海", "profile.city")], "v1")  # fmt: skip
    assert set(snap.records) == {"1", "2"} and snap.bm25.search("上海")[0][0] == "2"
    assert snap.bm25.search("diet")[0][0] == "1"  # the subject is indexed too
    assert [r.id for r in snap.pinned["diet"].between()] == ["1"]
    reg.upsert("u", [mem("3", "User loves jazz", "diet.jazz"), mem("1", "User eats anything", "x")])
    reg.upsert("u", [mem("4", "User eats no nuts", "diet.nuts")])
    reg.remove("u", ["2"])
    assert reg.peek("u") is snap and set(snap.records) == {"1", "3", "4"}
    # "1" no longer qualifies once re-indexed; the rest are in key order (content length).
    assert [r.id for r in snap.pinned["diet"].between()] == ["3", "4"]
    assert [r.id for r in snap.pinned["diet"].between(16, 20)] == ["4"]
    reg.remove("u", ["3"])
    assert [r.id for r in snap.pinned["diet"].between()] == ["4"]
    assert snap.bm25.search("jazz") == [] and snap.bm25.search("上海") == []
    assert snap.bm25.search("nuts")[0][0] == "4"
    reg.advance("u", "stale", "v9")  # only a snapshot current at `old` moves
    assert snap.version == "v1"
    reg.advance("u", "v1", "v2")
    assert snap.version == "v2"
    reg.upsert("other", [mem("9", "not loaded")])  # no index yet: nothing to do
    assert reg.peek("other") is None
    reg.drop("u")
    assert reg.peek("u") is None
    assert record_fields(mem("x", "c")) == ("c", [("diet avoid spicy", 0.5)])
    small = LexicalIndexes(max_users=1)
    small.build("a", [])
    small.build("b", [])
    assert small.peek("a") is None and small.peek("b") is not None


def test_ordered_records_read_ranges_in_key_order() -> None:
    class Rec:
        def __init__(self, i: str) -> None:
            self.id = i

    o = OrderedRecords()
    for key, i in [(5.0, "b"), (1.0, "a"), (5.0, "a2"), (9.0, "c")]:
        o.put(key, Rec(i))
    assert [r.id for r in o.between()] == ["a", "a2", "b", "c"]
    assert [r.id for r in o.between(2, 5)] == ["a2", "b"]
    o.put(0.5, Rec("c"))  # moved, not duplicated
    o.discard("b")
    o.discard("missing")
    assert [r.id for r in o.between()] == ["c", "a", "a2"] and len(o) == 3
    walk = o.between()
    assert next(walk).id == "c"
    o.discard("a")  # removed while a read is under way: skipped, no error
    assert [r.id for r in walk] == ["a2"]


# --- fusion, floor, boosts --------------------------------------------------------------------


def test_relevance_floor_is_a_per_embedder_table() -> None:
    assert relevance_floor("local") == ranking.RELEVANCE_FLOORS["local"] > 0
    assert relevance_floor("openai:unknown-model") == 0.0
    assert relevance_floor(None) == 0.0


def test_fusion_keeps_lexical_hits_and_dense_hits_above_the_floor_only() -> None:
    records = {i: Rec(f"memory {i}") for i in "abcd"}
    dense = [("b", 0.6), ("c", 0.35), ("d", 0.05)]
    lexical = [("a", 7.0), ("c", 3.0)]
    out = dict(rank("q", dense, lexical, records, NOW, config=RankConfig(dedupe_jaccard=1.0)))
    assert set(out) == {"a", "b", "c"}  # d is below the "local" floor and has no words
    # c is supported by both and beats b (dense only); a (best lexical) is first.
    ordered = list(out)
    assert ordered[0] == "a" and ordered.index("c") < ordered.index("b")
    # With no floor, d comes back (last).
    no_floor = RankConfig(embedder="x", dedupe_jaccard=1)
    assert rank("q", dense, lexical, records, NOW, config=no_floor)[-1][0] == "d"


def test_fusion_weights_and_rrf_mode() -> None:
    records = {i: Rec(f"memory {i}") for i in "ab"}
    dense, lexical = [("b", 0.9)], [("a", 5.0)]
    cfg = RankConfig(dedupe_jaccard=1.0)
    assert rank("q", dense, lexical, records, NOW, config=cfg)[0][0] == "a"
    cfg = RankConfig(dense_weight=2.0, dedupe_jaccard=1.0)
    assert rank("q", dense, lexical, records, NOW, config=cfg)[0][0] == "b"
    cfg = RankConfig(fusion="rrf", dense_weight=0.3, dedupe_jaccard=1.0)
    assert [i for i, _ in rank("q", dense, lexical, records, NOW, config=cfg)] == ["a", "b"]


def test_stale_ids_are_dropped_and_k_is_respected() -> None:
    records = {"a": Rec("alpha"), "b": Rec("beta")}
    out = rank("q", [("ghost", 0.9)], [("a", 2.0), ("b", 1.0), ("gone", 3.0)], records, NOW, k=1)
    assert out == [("a", pytest.approx(out[0][1]))]


def test_name_and_time_boosts() -> None:
    records = {
        "mel": Rec("Melanie: I painted a sunset", created_at=NOW - timedelta(days=100)),
        "car": Rec("Caroline: I painted a sunrise", created_at=NOW - timedelta(days=100)),
        "may": Rec("Caroline: a painting class", created_at=datetime(2026, 5, 12, tzinfo=UTC)),
    }
    lexical = [("mel", 2.0), ("car", 2.0), ("may", 1.9)]
    out = rank("What did Melanie paint?", [], lexical, records, NOW)
    assert out[0][0] == "mel"
    out = rank("What did Caroline paint in May?", [], lexical, records, NOW)
    assert out[0][0] == "may"


def test_confidence_lowers_a_score() -> None:
    records = {
        "sure": Rec("likes tea", confidence=0.95),
        "guess": Rec("likes tea a lot", confidence=0.4),
    }
    out = rank("tea", [], [("guess", 2.0), ("sure", 2.0)], records, NOW)
    assert out[0][0] == "sure"


def test_near_duplicates_are_removed() -> None:
    records = {
        "a": Rec("User is vegetarian."),
        "b": Rec("user is Vegetarian"),
        "c": Rec("Lives in Berlin"),
    }
    out = dedupe([("a", 3.0), ("b", 2.0), ("c", 1.0)], records)
    assert [i for i, _ in out] == ["a", "c"]


def test_a_typed_memory_takes_the_place_of_the_raw_turn_it_restates() -> None:
    # The turn ranked higher (its words are the query's), but the memory is what the
    # extraction prompt lists and an update can name: it takes the turn's place and score.
    records = {
        "turn": Rec("我的驾照科目二约在了3月26号", kind="episode"),
        "event": Rec("我的驾照科目二约在了3月26号（2027-03-26）", kind="event"),
        "other": Rec("Lives in Berlin"),
    }
    out = dedupe([("turn", 3.0), ("other", 2.0), ("event", 1.0)], records)
    assert out == [("event", 3.0), ("other", 2.0)]
    # Two raw turns, or a memory and a turn below it: the better-ranked one stays.
    records["turn2"] = Rec("我的驾照科目二约在了3月26号。", kind="episode")
    assert [i for i, _ in dedupe([("turn", 3.0), ("turn2", 2.0)], records)] == ["turn"]
    assert [i for i, _ in dedupe([("event", 3.0), ("turn", 2.0)], records)] == ["event"]


def test_context_smoothing_averages_neighbours() -> None:
    sims = {"q": 0.2, "a": 0.6}
    ctx = {"q": [("a", 0.5)], "a": [("q", 0.5), ("missing", 0.5)]}
    out = smooth_with_context(sims, ctx)
    assert out["q"] == pytest.approx((0.2 + 0.3) / 1.5)
    assert out["a"] == pytest.approx((0.6 + 0.1 + 0.0) / 2.0)


# --- decay ------------------------------------------------------------------------------------


def test_recency_decay_per_kind() -> None:
    cfg = RankConfig(decay_weight=0.2)
    old_fact = Rec("x", kind="fact", created_at=NOW - timedelta(days=3000))
    assert recency_factor(old_fact, NOW, cfg) == 1.0  # facts do not decay
    event = Rec("x", kind="event", valid_from=NOW - timedelta(days=30))
    assert recency_factor(event, NOW, cfg) == pytest.approx(0.8 + 0.2 * 0.5)
    fresh = Rec("x", kind="preference", created_at=NOW)
    assert recency_factor(fresh, NOW, cfg) == pytest.approx(1.0)
    pref = Rec("x", kind="preference", created_at=NOW - timedelta(days=365))
    assert recency_factor(pref, NOW, cfg) == pytest.approx(0.9)
    # A MemoryRecord ages from its last update or recall (as lifecycle.weight counts it).
    rec = MemoryRecord(
        id="1", user_id="u", kind="preference", subject="likes.x", content="x",
        source=Source(said_at=NOW - timedelta(days=730)),
        created_at=NOW - timedelta(days=730), updated_at=NOW - timedelta(days=730),
    )  # fmt: skip
    assert recency_factor(rec, NOW, cfg) == pytest.approx(0.8 + 0.2 * 0.25)
    rec.last_recalled_at = NOW
    assert recency_factor(rec, NOW, cfg) == pytest.approx(1.0)


# --- time windows -----------------------------------------------------------------------------


def _days(w: ranking.TimeWindow) -> tuple[date, date]:
    return w.start.date(), (w.end - timedelta(days=1)).date()


@pytest.mark.parametrize(
    ("query", "first", "last"),
    [
        ("what did I do yesterday?", date(2026, 11, 29), date(2026, 11, 29)),
        ("what did we discuss last week", date(2026, 11, 23), date(2026, 11, 29)),
        ("what did I eat last Saturday", date(2026, 11, 28), date(2026, 11, 28)),
        ("where was I in May?", date(2026, 5, 1), date(2026, 5, 31)),
        ("what did I buy in December", date(2025, 12, 1), date(2025, 12, 31)),
        ("What did Nate share in November 2022?", date(2022, 11, 1), date(2022, 11, 30)),
        ("What dish did Nate make on 9 November, 2022?", date(2022, 11, 9), date(2022, 11, 9)),
        ("What movie did he watch on October 6, 2022?", date(2022, 10, 6), date(2022, 10, 6)),
        ("what happened 3 days ago", date(2026, 11, 27), date(2026, 11, 27)),
        ("what did I do last year", date(2025, 1, 1), date(2025, 12, 31)),
        ("When did John get injured in 2023?", date(2023, 1, 1), date(2023, 12, 31)),
        ("last month", date(2026, 10, 1), date(2026, 10, 31)),
    ],
)
def test_english_time_windows(query: str, first: date, last: date) -> None:
    w = find_window(query, NOW)
    assert w is not None and _days(w) == (first, last), w


@pytest.mark.parametrize(
    ("query", "first", "last"),
    [
        ("我昨天说了什么", date(2026, 11, 29), date(2026, 11, 29)),
        ("上周我们聊了什么", date(2026, 11, 23), date(2026, 11, 29)),
        ("上周三去哪了", date(2026, 11, 25), date(2026, 11, 25)),
        ("去年我住在哪", date(2025, 1, 1), date(2025, 12, 31)),
        ("5月份的计划", date(2026, 5, 1), date(2026, 5, 31)),
        ("2023年5月发生了什么", date(2023, 5, 1), date(2023, 5, 31)),
        ("三天前买的书", date(2026, 11, 27), date(2026, 11, 27)),
        ("上个月的账单", date(2026, 10, 1), date(2026, 10, 31)),
        ("十二月八号那天", date(2025, 12, 8), date(2025, 12, 8)),
    ],
)
def test_chinese_time_windows(query: str, first: date, last: date) -> None:
    w = find_window(query, NOW)
    assert w is not None and _days(w) == (first, last), w


@pytest.mark.parametrize(
    "query", ["I may go hiking", "What do I like to eat?", "我喜欢什么", "recently"]
)
def test_no_time_window(query: str) -> None:
    assert find_window(query, NOW) is None


def test_window_weight_fades_outside() -> None:
    w = find_window("yesterday", NOW)
    assert w is not None
    assert window_weight(NOW - timedelta(days=1), w) == 1.0
    assert 0 < window_weight(NOW, w) < 1.0
    assert window_weight(NOW - timedelta(days=10), w) == 0.0
    assert window_weight(None, w) == 0.0


def test_names_in_query() -> None:
    assert names_in("What did Caroline's friend tell Melanie in May?") == ["Caroline", "Melanie"]
    assert names_in("小王喜欢什么", known=["小王", "小李"]) == ["小王"]


# --- token budget -----------------------------------------------------------------------------


def test_cut_to_budget_keeps_the_best_that_fit() -> None:
    records = {"long": Rec("word " * 400), "a": Rec("short one"), "b": Rec("short two")}
    ranked = [("long", 3.0), ("a", 2.0), ("b", 1.0)]
    kept = cut_to_budget(ranked, records, 40)
    assert [i for i, _ in kept] == ["a", "b"]
    assert cut_to_budget(ranked, records, 5) == []
    assert 10 <= ranking.estimate_tokens("abcd" * 10) <= 12


# --- the benchmark on a tiny slice ------------------------------------------------------------


@pytest.mark.skipif(not LOCOMO.exists(), reason="LoCoMo dev data is not beside the repo")
def test_locomo_benchmark_tiny_slice() -> None:
    proc = subprocess.run(
        [sys.executable, str(REPO / "benchmarks/locomo.py"), "--data", str(LOCOMO),
         "--limit-conversations", "1", "--limit-questions", "10", "--k", "1", "5", "10"],
        capture_output=True, text=True, timeout=300, cwd=REPO,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout)
    assert result["questions"] == 10 and result["conversations"] == 1
    assert {"dense", "bm25", "bm25_plain", "ours", "service"} <= set(result["systems"])
    for system in result["systems"].values():
        assert system["n"] == 10
        for key in ("R@1_all", "R@5_all", "R@5_any", "R@10_all", "NDCG@10"):
            assert 0.0 <= system[key] <= 1.0
        assert system["R@5_all"] <= system["R@10_all"] and system["R@5_all"] <= system["R@5_any"]
        assert 0 < system["memory_tokens"]["top10"]["median_ratio_to_history"] < 1
        assert system["latency_ms"]["median"] > 0
    # The product path: every turn archived through MemoryService, then searched.
    service = result["systems"]["service"]
    assert result["service_options"]["turns_archived"] > 0
    assert result["service_options"]["median_results_returned"] <= 10
    assert set(result["service_vs_best_baseline"]) == {"R@5_all", "R@10_all"}
    assert "service R@5_all>=0.60" in result["targets_met"]
    assert 0.0 < service["R@10_any"] <= 1.0


WORDS = ["ab", "cd", "ef", "gh", "ij", "kl", "mn", "op", "上海", "咖啡"]


def _reference_bm25(
    docs: dict[int, list[str]], query: list[str], k1: float = BM25_K1, b: float = BM25_B
) -> dict[int, float]:
    """BM25 written out from its formula over tokenized documents."""
    n = len(docs)
    avgdl = sum(len(d) for d in docs.values()) / n if n else 1.0
    avgdl = avgdl or 1.0
    weights = {t: query.count(t) for t in query}
    out: dict[int, float] = {}
    for i, words in docs.items():
        score = 0.0
        for term, qw in weights.items():
            df = sum(term in d for d in docs.values())
            f = words.count(term)
            if df and f:
                idf = math.log(1 + (n - df + 0.5) / (df + 0.5)) * qw
                score += idf * f * (k1 + 1) / (f + k1 * (1 - b + b * len(words) / avgdl))
        if score > 0:
            out[i] = score
    return out


@settings(max_examples=150, deadline=None)
@given(
    docs=st.lists(st.lists(st.sampled_from(WORDS), max_size=12), min_size=1, max_size=60),
    removed=st.sets(st.integers(0, 59), max_size=20),
    query=st.lists(st.sampled_from([*WORDS, "zz"]), max_size=6),
    k=st.integers(1, 8),
)
def test_bm25_scores_match_the_formula_after_adds_and_removes(
    docs: list[list[str]], removed: set[int], query: list[str], k: int
) -> None:
    idx: BM25Index[int] = BM25Index(stemming=False)
    for i, words in enumerate(docs):
        idx.add(i, " ".join(words))
    idx.search_terms(query, 5)  # caches the posting arrays, which the changes below must drop
    for i in removed:
        idx.remove(i)
    kept = {i: w for i, w in enumerate(docs) if i not in removed}
    for i in list(kept)[:3]:  # re-added under a new id: slots are reused
        idx.add(100 + i, " ".join(kept[i]))
        kept[100 + i] = kept[i]
    tokens = {i: tokenize(" ".join(w), stemming=False) for i, w in kept.items()}
    expected = _reference_bm25(tokens, query)
    got = idx.search_terms(query, k)
    best = sorted(expected.values(), reverse=True)[:k]
    assert [round(s, 9) for _, s in got] == [round(s, 9) for s in best]
    assert all(abs(expected[i] - s) < 1e-9 for i, s in got)


def test_bm25_common_words_still_count_among_the_best_matches() -> None:
    idx: BM25Index[int] = BM25Index(stemming=False)
    for i in range(300):
        words = ["common"] * (1 + i % 3) + (["rare"] if i < 5 else []) + [f"w{i}"]
        idx.add(i, " ".join(words))
    got = idx.search_terms(["rare", "common"], 3)
    assert got == idx.search_terms(["rare", "common"], 1000)[:3]
    assert {i for i, _ in got} <= set(range(5))

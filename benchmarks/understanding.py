"""What a user's utterance is, on the corpus's test split: the trained model vs the old rules.

    python benchmarks/understanding.py [--split test] [--graph [--graph-day YYYY-MM-DD]]
        [--model openai:<name>] [--json] [--out PATH]

On each utterance of the split (`memory/understanding/corpus/test.jsonl`, never used for
tuning), per language: per-label precision / recall / F1 of the intent, the intent macro-F1,
the kind accuracy (over statements and updates), the subject family accuracy, forget
precision / recall and the confusion of forget requests vs everything else (and how many
ordinary statements with a trap word, "forget", "run", 删, 忘, 别 ..., were taken for a
forget request); then the median time per utterance of the model (one utterance at a time,
the encoder included, nothing cached) and of the old keyword rules, in the same run.

Also, in the same JSON: the fresh sets (`benchmarks/data/understanding_fresh.json`, and
`understanding_fresh2.json` to `understanding_fresh55.json`, each written blind by another
author; in no split) through the
offline extractor, and with ``--graph`` through the compiled graph
(`benchmarks/_fresh_graph.py`: typed, recalled in the top 5, updates, forgets, the dinner
question); and `rules_check`, the phrasing rules the model's labels could replace, scored
on the split.

``--model openai:<name>`` also scores a real model (OpenAI-compatible, `OPENAI_BASE_URL`)
asked for the same labels; it needs a key and a network, so it is not run here.
Prints one JSON object on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime
from typing import Any

# `_common` clears the key and endpoint so nothing leaves the machine; `--model` needs them.
_OPENAI = {
    "api_key": os.environ.get("OPENAI_API_KEY"),
    "base_url": os.environ.get("OPENAI_BASE_URL"),
}

import _common  # noqa: E402, F401  (sets the offline environment, puts the repo on sys.path)
import _fresh_graph  # noqa: E402
from _common import finish, load_avg, log, output_args, start  # noqa: E402
from _rules_baseline import FIRST_PERSON, rule_is_question  # noqa: E402

from graphs.offline import plan_update  # noqa: E402
from graphs.offline_rules import _clauses, _from_rules, extract_rules  # noqa: E402
from memory.index.embeddings import make_embedder  # noqa: E402
from memory.requests import forget_requests, forget_span  # noqa: E402
from memory.text.asking import asks_by_form, split_sentences  # noqa: E402
from memory.understanding import Reading, read_utterances  # noqa: E402
from memory.understanding.corpus import (  # noqa: E402
    FAMILIES,
    INTENTS,
    TRAP,
    Utterance,
    asking_test,
    load_split,
)
from memory.understanding.features import sentence_vectors  # noqa: E402
from memory.understanding.model import load_model  # noqa: E402

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
Label = tuple[str, str, str]
"""(intent, kind, family) as a system reads one utterance."""
_NEUTRAL = Reading("remember", "fact", "none", "none", 1.0)


def rules_label(text: str) -> Label:
    """Return how the old keyword rules read an utterance (what they did before the model)."""
    sentences = split_sentences(text) or [text]
    if any(forget_span(s) is not None for s in sentences):
        return "forget", "none", "none"
    if rule_is_question(text):
        return "question", "none", "none"
    if plan_update(text, "") is not None:
        return "plan", "none", "none"
    found = [
        cand
        for s in sentences
        if not rule_is_question(s)
        for c in _clauses(s)
        if (cand := _from_rules(c, NOW, _NEUTRAL)) is not None
    ]
    if not found:
        return "chitchat", "none", "none"
    intent = "update" if any(c.replaces for c in found) else "remember"
    return intent, found[0].kind, found[0].subject.split(".")[0]


def model_label(text: str) -> Label:
    """Return the trained model's reading of an utterance."""
    r = read_utterances([text])[0]
    return r.intent, r.kind, r.family


def offline_path_label(text: str) -> Label:
    """Return the reading the offline path acts on: the model's, with the question grammar.

    `extract_rules` keeps nothing from a sentence the grammar reads as asking, whatever the
    model says (a forget request excepted), so a question without a mark is still one; a
    forget request is what `forget_requests` returns (the model, or a request's wording
    the model does not rule out). A forget reading it turns down counts as chit-chat.
    """
    intent, kind, family = model_label(text)
    sentences = split_sentences(text) or [text]
    # A forget request is `forget_requests`' call: the model, tipped by a request's wording.
    if any(forget_requests(s) for s in sentences):
        return "forget", kind, family
    if intent == "forget":
        intent = "question" if all(asks_by_form(s) for s in sentences) else "chitchat"
    elif all(asks_by_form(s) for s in sentences):
        return "question", kind, family
    return intent, kind, family


def llm_labeller(spec: str) -> Callable[[str], Label]:
    """Return a labeller asking a real OpenAI-compatible model (needs a key and a network)."""
    from langchain_openai import ChatOpenAI

    llm = ChatOpenAI(model=spec.removeprefix("openai:"), temperature=0, **_OPENAI)
    prompt = (
        "Label the user's utterance. Reply with JSON only: "
        f'{{"intent": one of {list(INTENTS)}, "kind": one of fact, preference, event, '
        f'recurring_date, habit, none, "family": one of {list(FAMILIES)}}}.\nUtterance: '
    )

    def label(text: str) -> Label:
        reply = llm.invoke(prompt + text).content
        try:
            got = json.loads(str(reply).strip().strip("`").removeprefix("json"))
            return str(got["intent"]), str(got["kind"]), str(got["family"])
        except (ValueError, KeyError, TypeError):
            return "chitchat", "none", "none"

    return label


def _prf(gold: Sequence[str], pred: Sequence[str], label: str) -> dict[str, float]:
    tp = sum(g == p == label for g, p in zip(gold, pred, strict=True))
    fp = sum(p == label != g for g, p in zip(gold, pred, strict=True))
    fn = sum(g == label != p for g, p in zip(gold, pred, strict=True))
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "precision": round(precision, 4),
        "recall": round(recall, 4),
        "f1": round(f1, 4),
        "support": sum(g == label for g in gold),
    }


def score(items: Sequence[Utterance], labels: Sequence[Label]) -> dict[str, Any]:
    """Return every figure of one system over `items`."""
    gold = [u.intent for u in items]
    pred = [label[0] for label in labels]
    per_label = {name: _prf(gold, pred, name) for name in INTENTS if name in gold}
    stated = [i for i, u in enumerate(items) if u.intent in ("remember", "update")]
    families = [i for i, u in enumerate(items) if u.family != "none"]
    is_forget = [g == "forget" for g in gold]
    said_forget = [p == "forget" for p in pred]
    traps = [i for i, u in enumerate(items) if u.intent != "forget" and TRAP.search(u.text)]
    return {
        "n": len(items),
        "intent": per_label,
        "intent_macro_f1": round(statistics.mean(v["f1"] for v in per_label.values()), 4),
        "intent_accuracy": round(
            sum(g == p for g, p in zip(gold, pred, strict=True)) / len(gold), 4
        ),
        "kind_accuracy": round(sum(labels[i][1] == items[i].kind for i in stated) / len(stated), 4),
        "family_accuracy": round(
            sum(labels[i][2] == items[i].family for i in families) / len(families), 4
        ),
        "forget": {
            **_prf(gold, pred, "forget"),
            "confusion": {
                f"{'forget' if a else 'other'}_as_{'forget' if b else 'other'}": n
                for (a, b), n in sorted(Counter(zip(is_forget, said_forget, strict=True)).items())
            },
            "trap_word_statements": len(traps),
            "trap_word_statements_as_forget": sum(said_forget[i] for i in traps),
        },
    }


def by_language(items: Sequence[Utterance], labels: Sequence[Label]) -> dict[str, Any]:
    """Return `score` per language and over both."""
    out = {}
    for lang in ("en", "zh"):
        rows = [i for i, u in enumerate(items) if u.lang == lang]
        out[lang] = score([items[i] for i in rows], [labels[i] for i in rows])
    out["all"] = score(items, labels)
    return out


def indirect_questions() -> dict[str, Any]:
    """Return, per language, how the model reads the held-out indirect questions.

    `family_accuracy` over all of them (the `none` ones are general questions that must
    lift nothing), `user_family_accuracy` over those that depend on a fact of the user,
    `none_as_family` how many general ones were read as about a family of the user's, and
    `read_as_question` how many were read as questions at all.
    """
    items = asking_test()
    out: dict[str, Any] = {}
    for lang in ("en", "zh"):
        mine = [u for u in items if u.lang == lang]
        # Read by the `asked` head: the family an answer depends on (`Reading.asked`).
        read = [(r.intent, r.kind, r.asked) for r in read_utterances([u.text for u in mine])]
        user = [(u, r) for u, r in zip(mine, read, strict=True) if u.family != "none"]
        general = [(u, r) for u, r in zip(mine, read, strict=True) if u.family == "none"]
        out[lang] = {
            "n": len(mine),
            "family_accuracy": round(
                sum(r[2] == u.family for u, r in zip(mine, read, strict=True)) / len(mine), 4
            ),
            "user_family_accuracy": round(sum(r[2] == u.family for u, r in user) / len(user), 4),
            "none_as_family": sum(r[2] != "none" for _, r in general),
            "general": len(general),
            "read_as_question": sum(r[0] == "question" for r in read),
        }
    return out


def timed(fn: Callable[[str], Any], texts: Sequence[str]) -> tuple[list[Any], dict[str, float]]:
    """Run `fn` on each text once, timing each call; return results and the median / p95 ms."""
    for text in texts[:5]:
        fn(text)  # warm-up: the encoder and the model load once per process
    results, times = [], []
    for text in texts:
        t0 = time.perf_counter()
        results.append(fn(text))
        times.append((time.perf_counter() - t0) * 1000)
    times.sort()
    return results, {
        "median_ms": round(statistics.median(times), 3),
        "p95_ms": round(times[int(0.95 * (len(times) - 1))], 3),
    }


FRESH_SETS = tuple(_fresh_graph.FRESH_SETS)
"""`benchmarks/_fresh_graph.FRESH_SETS`: the first fresh set, then the ones written blind."""


def fresh_set(name: str) -> dict[str, Any]:
    """Score the offline extractor on a fresh set (written after training, in no split).

    Through `extract_rules`, not the compiled graph: a statement is typed when it yields a
    memory; an update lands when its memory is filed under the subject of what it updates;
    a forget request is read when it yields a forget request; a distractor must yield none.
    """
    from _fresh_graph import load_fresh

    data = load_fresh(name)
    out: dict[str, Any] = {}
    for lang in ("en", "zh"):
        part = data[lang]
        typed = [bool(extract_rules(t, NOW).memories) for t in part["statements"]]
        landed = []
        for before, after in part["updates"]:
            old = {c.subject for c in extract_rules(before, NOW).memories}
            new = {c.subject for c in extract_rules(after, NOW).memories}
            landed.append(bool(old & new))
        forgets = [bool(extract_rules(t, NOW).forget) for t in part["forgets"]]
        noise = [extract_rules(t, NOW) for t in part["distractors"]]
        out[lang] = {
            "typed": f"{sum(typed)}/{len(typed)}",
            "updates_filed_under_the_old_subject": f"{sum(landed)}/{len(landed)}",
            "forgets_read": f"{sum(forgets)}/{len(forgets)}",
            "distractors_with_output": sum(bool(e.memories or e.forget) for e in noise),
            "untyped": [t for t, ok in zip(part["statements"], typed, strict=True) if not ok],
        }
    return out


_STATES = ("remember", "update")


def rules_check(items: Sequence[Utterance]) -> dict[str, Any]:
    """Score the phrasing rules the model's labels could replace, on `items`, per language.

    * the first-person pattern `memory.turn.latest_statements` used ("a statement about the
      user", so "forget that" means it before a request; `_rules_baseline.FIRST_PERSON`),
      against the gold "a statement to remember or an update", over the sentences that do
      not ask, vs the model's reading, which replaced it;
    * `memory.lifecycle.is_clause` (a forget request names a statement, not a topic): no
      label says which, so how often the rule and the model (the span read as a statement)
      agree on the forget requests' spans;
    * `memory.text.statements._EN_CLAUSE` (where an English message splits into statements):
      of the statements it splits, how many pieces the model reads as statements still.
    """
    from memory.lifecycle import is_clause
    from memory.text.statements import split_text

    out: dict[str, Any] = {}
    for lang in ("en", "zh"):
        rows = [u for u in items if u.lang == lang and not asks_by_form(u.text)]
        gold = ["about" if u.intent in _STATES else "other" for u in rows]
        rule = ["about" if FIRST_PERSON.search(u.text) else "other" for u in rows]
        model = [
            "about" if r.intent in _STATES else "other"
            for r in read_utterances([u.text for u in rows])
        ]
        spans = [
            f.query
            for u in items
            if u.lang == lang and u.intent == "forget"
            for s in split_sentences(u.text)
            if (f := forget_span(s)) is not None and f.query not in ("that", "这个")
        ]
        span_reads = read_utterances(spans) if spans else []
        agree = sum(
            is_clause(q) == (r.intent in _STATES) for q, r in zip(spans, span_reads, strict=True)
        )
        part: dict[str, Any] = {
            "first_person": {
                "n": len(rows),
                "rule": _prf(gold, rule, "about"),
                "model": _prf(gold, model, "about"),
            },
            "is_clause": {"spans": len(spans), "rule_and_model_agree": agree},
        }
        if lang == "en":
            stated = [u.text for u in items if u.lang == lang and u.intent in _STATES]
            pieces = [p for t in stated if len(parts := split_text(t)) > 1 for p in parts]
            reads = read_utterances(pieces) if pieces else []
            part["en_clause"] = {
                "statements_split": sum(len(split_text(t)) > 1 for t in stated),
                "of": len(stated),
                "pieces": len(pieces),
                "pieces_read_as_statements": sum(r.intent in _STATES for r in reads),
            }
        out[lang] = part
    return out


def fresh_graph(name: str, day: date | None = None) -> dict[str, Any]:
    """Play a fresh set through the compiled graph, each language in a home of its own."""
    import asyncio
    import tempfile

    from _fresh_graph import run_fresh

    out: dict[str, Any] = {}
    for lang in ("en", "zh"):
        with tempfile.TemporaryDirectory() as home:
            log(f"{name} set through the graph: {lang}")
            out[lang] = asyncio.run(run_fresh(lang, home, name, day))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", default="test", choices=("train", "dev", "test"))
    parser.add_argument("--model", default=None, help="also score openai:<name> (needs a key)")
    parser.add_argument(
        "--graph",
        action="store_true",
        help="also play the fresh set through the compiled graph (embedded, a temporary home)",
    )
    parser.add_argument(
        "--graph-day",
        type=date.fromisoformat,
        default=None,
        help="with --graph: say every turn on this day (YYYY-MM-DD), not today, so that runs "
        "on different days are comparable (the sets name dates that pass)",
    )
    output_args(parser, chart=False)
    args = parser.parse_args(argv)
    start(args)
    items = load_split(args.split)
    texts = [u.text for u in items]
    log(f"{len(items)} utterances of the {args.split} split")
    model = load_model()

    # The whole cost of one turn's reading (encoder and heads), nothing cached; and the
    # encoder's share of it (the graph embeds the turn for recall as well).
    recent = make_embedder("local")
    uncached = getattr(recent, "clear_recent", lambda: None)  # the encoder keeps recent texts

    def predict(text: str) -> Any:
        uncached()
        return model.predict([text])

    def encode(text: str) -> Any:
        uncached()
        return sentence_vectors([text])

    _, model_time = timed(predict, texts)
    _, encoder_time = timed(encode, texts)
    model_labels, _ = timed(model_label, texts)
    rule_labels, rule_time = timed(rules_label, texts)
    result: dict[str, Any] = {
        "benchmark": "understanding",
        "split": args.split,
        "corpus": {"n": len(items), "en": sum(u.lang == "en" for u in items)},
        "model": by_language(items, model_labels),
        "offline_path": by_language(items, [offline_path_label(t) for t in texts]),
        "rules": by_language(items, rule_labels),
        "time_per_utterance": {
            "model": model_time,
            "model_encoder_only": encoder_time,
            "rules": rule_time,
            "load_avg": load_avg(),
        },
        "indirect_questions": indirect_questions(),
        "fresh_set": {name: fresh_set(name) for name in FRESH_SETS},
        "rules_check": rules_check(items),
        "targets": {
            "intent_macro_f1_per_language": 0.90,
            "kind_accuracy": 0.85,
            "forget_recall": 0.90,
            "forget_precision": 0.98,
            "model_median_ms": 10.0,
        },
    }
    if args.graph:
        result["fresh_graph"] = {name: fresh_graph(name, args.graph_day) for name in FRESH_SETS}
    if args.model:
        if not _OPENAI["api_key"]:
            log(
                "--model needs OPENAI_API_KEY (and OPENAI_BASE_URL for another server)", always=True
            )
            return 2
        labels, llm_time = timed(llm_labeller(args.model), texts)
        result["llm"] = {"spec": args.model, **by_language(items, labels), "time": llm_time}
    finish(result, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())

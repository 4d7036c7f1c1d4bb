"""`benchmarks/locomo_qa.py` end to end against the scripted OpenAI stub on loopback.

The benchmark runs as a subprocess on a small conversation in LoCoMo's format (written
here, so the expected answers are known). The stub plays both the chat model and the judge:

- asked a question, it answers the gold answer only when every word of it is in the
  system prompt (memory block or transcript), else "I don't know." So memory on and the
  full history can be right and memory off cannot: a difference proves the wiring;
- asked to judge, it says CORRECT when every word of the gold answer is in the answer.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

_TESTS = str(Path(__file__).resolve().parents[1])
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)

from conftest import offline_env  # noqa: E402
from openai_stub import OpenAIStub, Reply, last_user_text, system_text  # noqa: E402

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "benchmarks" / "locomo_qa.py"

FILLER = [
    ("Caroline", "Hey Mel, how has your week been?"),
    ("Melanie", "Busy but good, work keeps me on my toes."),
    ("Caroline", "Same here, I have been reading a lot lately."),
    ("Melanie", "Anything good? I need a new book for the evenings."),
    ("Caroline", "A novel about a lighthouse keeper, very calm and slow."),
    ("Melanie", "That sounds lovely, I will look for it at the library."),
    ("Caroline", "The weather has been strange, sunny one day and rainy the next."),
    ("Melanie", "The kids did not mind, they played outside anyway."),
    ("Caroline", "How are the kids doing at school these days?"),
    ("Melanie", "They are fine, the youngest loves drawing dinosaurs."),
    ("Caroline", "Ha, I loved dinosaurs at that age too."),
    ("Melanie", "We should have coffee together soon."),
]

# (session, speaker, text): the facts the questions ask about.
FACTS = [
    (1, "Caroline", "I finally moved to Lisbon in March, the light there is amazing."),
    (1, "Melanie", "I have been playing the cello every evening after work."),
    (2, "Melanie", "Our dog Biscuit loves running on the beach."),
    (2, "Caroline", "I started pottery in June 2022 and I still go every week."),
    (3, "Melanie", "We adopted a cat named Pepper, she sleeps all day."),
    (3, "Caroline", "One day I would love to study marine biology."),
]

QUESTIONS = [
    {"question": "What city did Caroline move to?", "answer": "Lisbon", "category": 4},
    {"question": "What instrument does Melanie play?", "answer": "cello", "category": 4},
    {"question": "What are the names of Melanie's pets?", "answer": "Biscuit and Pepper",
     "category": 1},
    {"question": "When did Caroline start pottery?", "answer": "June 2022", "category": 2},
    {"question": "What might Caroline study one day?", "answer": "marine biology",
     "category": 3},
    {"question": "What did Melanie say about Mars?", "adversarial_answer": "red planet",
     "category": 5},
]  # fmt: skip
ANSWERABLE = [q for q in QUESTIONS if q["category"] != 5]
GOLD = {q["question"]: q["answer"] for q in ANSWERABLE}
DATES = {1: "1:56 pm on 8 May, 2023", 2: "10:37 am on 27 May, 2023", 3: "7:55 pm on 9 June, 2023"}


def locomo_data() -> list[dict[str, Any]]:
    """One conversation in LoCoMo's format: three sessions of filler with the facts inside."""
    conversation: dict[str, Any] = {"speaker_a": "Caroline", "speaker_b": "Melanie"}
    for s, date in DATES.items():
        turns = [(sp, f"{text} ({s}.{i})") for i, (sp, text) in enumerate(FILLER)]
        for fs, speaker, text in FACTS:
            if fs == s:
                turns.insert(len(turns) // 2, (speaker, text))
        conversation[f"session_{s}_date_time"] = date
        conversation[f"session_{s}"] = [
            {"speaker": sp, "dia_id": f"D{s}:{i + 1}", "text": text}
            for i, (sp, text) in enumerate(turns)
        ]
    qa = [{**q, "evidence": ["D1:1"]} for q in QUESTIONS]
    return [{"sample_id": "conv-test", "conversation": conversation, "qa": qa}]


def words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def handler(body: dict[str, Any]) -> str:
    prompt = last_user_text(body)
    if "<gold_answer>" in prompt:  # the judge
        gold = re.search(r"<gold_answer>(.*?)</gold_answer>", prompt, re.S)
        answer = re.search(r"<generated_answer>(.*?)</generated_answer>", prompt, re.S)
        assert gold and answer, prompt
        return "CORRECT" if words(gold.group(1)) <= words(answer.group(1)) else "WRONG"
    gold_answer = GOLD[prompt]  # a KeyError (e.g. the adversarial question) shows in errors
    return gold_answer if words(gold_answer) <= words(system_text(body)) else "I don't know."


@pytest.fixture
def data_file(tmp_path: Path) -> Path:
    path = tmp_path / "locomo_test.json"
    path.write_text(json.dumps(locomo_data()), encoding="utf-8")
    return path


def run_script(*args: str, cwd: Path) -> dict[str, Any]:
    env = offline_env(MPLCONFIGDIR=str(cwd / "mpl"))
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout)


def test_memory_on_beats_memory_off_with_fewer_tokens_than_full_history(
    data_file: Path, tmp_path: Path
) -> None:
    out, chart = tmp_path / "results.json", tmp_path / "results.png"
    with OpenAIStub(handler=handler) as stub:
        result = run_script(
            "--model", "openai:stub-answerer", "--judge", "openai:stub-judge",
            "--base-url", stub.base_url, "--api-key", "test",
            "--data", str(data_file), "--limit-conversations", "1", "--limit-questions", "10",
            "--concurrency", "2", "--out", str(out), "--chart", str(chart),
            cwd=tmp_path,
        )  # fmt: skip
        requests = stub.chat_requests()
        assert not stub.errors, stub.errors

    systems = result["systems"]
    assert set(systems) == {"memory_on", "memory_off", "full_history"}
    n = len(ANSWERABLE)
    assert result["questions"] == n
    assert result["left_out"]["adversarial"] == 1
    for name, s in systems.items():
        assert s["n"] == n, name
        assert 0.0 <= s["accuracy"] <= 1.0, name
        assert s["answer_errors"] == s["judge_errors"] == s["judge_unparsed"] == 0, name
        assert set(s["by_category"]) == {"multi_hop", "temporal", "open_domain", "single_hop"}
        assert s["prompt_tokens_per_question"]["from_usage"] == n, name  # the stub's usage
        assert s["latency_ms"]["n"] == n and s["latency_ms"]["p95_ms"] >= 0, name

    on, off, full = systems["memory_on"], systems["memory_off"], systems["full_history"]
    assert off["accuracy"] == 0.0  # nothing in the prompt to answer from
    assert full["accuracy"] == 1.0  # everything in the prompt
    assert on["accuracy"] > off["accuracy"]
    tokens = {name: s["prompt_tokens_per_question"]["median"] for name, s in systems.items()}
    assert tokens["memory_off"] < tokens["memory_on"] < tokens["full_history"]
    ratios = result["ratios"]
    assert 0 < ratios["memory_on_vs_full_history"]["prompt_tokens_median"] < 1
    assert ratios["memory_on_vs_memory_off"]["accuracy_difference"] == on["accuracy"]

    # 3 answers + 3 verdicts per question, models as named; the adversarial one never asked.
    assert len(requests) == 6 * n
    models = [r["model"] for r in requests]
    assert models.count("stub-answerer") == models.count("stub-judge") == 3 * n
    assert not any("Mars" in json.dumps(r) for r in requests)
    # Memory on sent a memory block; full history sent every session's transcript.
    answers = [r for r in requests if r["model"] == "stub-answerer"]
    assert sum("<memories>" in system_text(r) for r in answers) == n
    assert sum("[session 3, 2023-06-09 19:55]" in system_text(r) for r in answers) == n

    cost = result["cost"]
    assert cost["calls"] == {"answer": 3 * n, "judge": 3 * n}
    assert cost["usd"]["total"] > 0
    assert result["estimate"]["calls"]["total"] == 6 * n
    assert result["run"]["commit"] is not None and "load_avg_end" in result["run"]

    saved = json.loads(out.read_text(encoding="utf-8"))
    assert len(saved["answers"]) == 3 * n
    assert {a["answer"] for a in saved["answers"] if a["system"] == "memory_off"} == {
        "I don't know."
    }
    assert result["chart"] == {"path": str(chart)}
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert chart.stat().st_size > 10_000


def test_dry_run_cost_makes_no_call(data_file: Path, tmp_path: Path) -> None:
    with OpenAIStub(handler=handler) as stub:
        result = run_script(
            "--dry-run-cost", "--base-url", stub.base_url, "--data", str(data_file),
            "--price-in", "1", "--price-out", "2", cwd=tmp_path,
        )  # fmt: skip
        assert stub.requests == []
    est = result["estimate"]
    n = len(ANSWERABLE)
    assert result["dry_run"] is True and "systems" not in result
    assert est["calls"] == {"answer": 3 * n, "judge": 3 * n, "total": 6 * n}
    per = est["per_system"]
    assert per["memory_off"]["prompt_tokens"] < per["memory_on"]["prompt_tokens"]
    assert per["memory_on"]["prompt_tokens"] < per["full_history"]["prompt_tokens"]
    t = est["tokens"]
    tokens_in, tokens_out = t["answer_in"] + t["judge_in"], t["answer_out"] + t["judge_out"]
    expected = tokens_in * 1 / 1e6 + tokens_out * 2 / 1e6
    assert est["usd"]["total"] == pytest.approx(expected, abs=1e-3)


PETS = "What are the names of Melanie's pets?"


def searching_handler(body: dict[str, Any]) -> Any:
    """As `handler`, but asked about the pets with the tool at hand, it searches per pet
    first; then it answers from the system prompt and what its searches found."""
    messages = body.get("messages", [])
    if "<gold_answer>" in last_user_text(body):
        return handler(body)
    found = " ".join(str(m.get("content")) for m in messages if m.get("role") == "tool")
    if body.get("tools") and last_user_text(body) == PETS and not found:
        return Reply(tool_calls=[(SEARCH, {"query": "dog"}), (SEARCH, {"query": "cat"})])
    gold = GOLD[last_user_text(body)]
    return gold if words(gold) <= words(system_text(body) + " " + found) else "I don't know."


SEARCH = "SearchMemory"


def run_answerer(stub: OpenAIStub, data_file: Path, out: Path, *extra: str) -> dict[str, Any]:
    """Run the benchmark on the test conversation, the stub answering and judging."""
    return run_script(
        "--model", "openai:stub-answerer", "--base-url", stub.base_url, "--api-key", "test",
        "--data", str(data_file), "--limit-conversations", "1", "--limit-questions", "10",
        "--out", str(out), *extra, cwd=out.parent,
    )  # fmt: skip


def pets_row(out: Path, system: str) -> dict[str, Any]:
    saved = json.loads(out.read_text(encoding="utf-8"))
    (row,) = [a for a in saved["answers"] if a["system"] == system and a["question"] == PETS]
    return row


@pytest.mark.parametrize("tool", [True, False])
def test_memory_on_searches_memory_for_each_part_as_the_graph_does(
    data_file: Path, tmp_path: Path, tool: bool
) -> None:
    out = tmp_path / "results.json"
    with OpenAIStub(handler=searching_handler) as stub:
        # One memory in the block: the pets need two.
        result = run_answerer(stub, data_file, out, "--k", "1",
                              *([] if tool else ["--no-search-tool"]))  # fmt: skip
        answers = [r for r in stub.chat_requests() if "<gold_answer>" not in last_user_text(r)]
        assert not stub.errors, stub.errors
    row = pets_row(out, "memory_on")
    assert result["setup"]["search_tool"] is tool
    if not tool:
        assert not any(r.get("tools") for r in answers)
        assert row["verdict"] is False and row["searches"] == 0
        return
    assert row["verdict"] is True and row["searches"] == 2
    assert result["systems"]["memory_on"]["questions_searched"] == 1
    (second,) = [r for r in answers if r["messages"][-1]["role"] == "tool"]
    results = [m["content"] for m in second["messages"] if m["role"] == "tool"]
    assert "Biscuit" in results[0] and "Pepper" in results[1]
    assert all(c.startswith("<memories>") for c in results)
    # Memory on gets the tool and the graph's hint; memory off and the full history neither.
    tooled = [r for r in answers if r.get("tools")]
    assert len(tooled) == len(ANSWERABLE) + 1  # one more round for the pets
    assert all("SearchMemory" in system_text(r) for r in tooled)
    assert not any("SearchMemory" in system_text(r) for r in answers if not r.get("tools"))


def always_searching(body: dict[str, Any]) -> Any:
    """Asked about the pets with the tool at hand, it searches every time."""
    if body.get("tools") and last_user_text(body) == PETS:
        return Reply(tool_calls=[(SEARCH, {"query": "pets"})])
    return searching_handler(body)


def stub_prompt_tokens(body: dict[str, Any]) -> int:
    """The prompt tokens `OpenAIStub` reports in `usage` for a request."""
    return sum(len(str(m.get("content", ""))) // 4 + 1 for m in body.get("messages", []))


def test_searching_stops_after_the_graphs_rounds_and_every_call_counts(
    data_file: Path, tmp_path: Path
) -> None:
    out = tmp_path / "results.json"
    with OpenAIStub(handler=always_searching) as stub:
        result = run_answerer(stub, data_file, out)
        pets = [r for r in stub.chat_requests() if last_user_text(r) == PETS and r.get("tools")]
        final = [r for r in stub.chat_requests()
                 if last_user_text(r) == PETS and r["messages"][-1]["role"] == "tool"
                 and not r.get("tools")]  # fmt: skip
        assert not stub.errors, stub.errors
    # Two rounds with the tool (MAX_TOOL_ROUNDS), then one without: it must answer.
    assert len(pets) == 2 and len(final) == 1
    row = pets_row(out, "memory_on")
    assert row["searches"] == 2 and row["answer_calls"] == 3 and not row["error"]
    assert row["prompt_tokens"] == sum(stub_prompt_tokens(r) for r in [*pets, *final])
    assert row["billed_prompt_tokens"] == row["prompt_tokens"]
    n = len(ANSWERABLE)
    assert result["cost"]["calls"]["answer"] == 3 * n + 2


def test_a_call_is_retried_by_one_layer_only() -> None:
    """`--retries N` is the OpenAI client's N retries after the first attempt, no more:
    the benchmark once wrapped the client's own retries in retries of its own."""
    sys.path.insert(0, str(SCRIPT.parent))
    import locomo_qa

    busy = Reply(status=429, error="slow down", headers={"retry-after-ms": "10"})
    with OpenAIStub() as stub:
        stub.script(busy, busy, busy)
        model = locomo_qa.make_model("openai:m", "test", stub.base_url, retries=2)
        out = locomo_qa.call(model, [locomo_qa.HumanMessage("hi")])
        assert "RateLimitError" in out["error"]
        assert len(stub.chat_requests()) == 3  # the first attempt and two retries
        stub.clear()
        stub.script(busy, "fine")
        assert locomo_qa.call(model, [locomo_qa.HumanMessage("hi")])["text"] == "fine"

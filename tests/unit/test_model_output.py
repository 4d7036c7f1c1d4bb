"""What a real model's output goes through before it is stored: salvage, then validation.

And the request settings of a real model client (answer length, timeout, retries).
"""

from __future__ import annotations

import json

import pytest
from openai import LengthFinishReasonError
from openai.types.chat import ChatCompletion

from graphs.models import cut_reply, make_chat_model
from graphs.settings import ModelRequests, Settings
from graphs.window import ANSWER_RESERVE_TOKENS
from memory.extraction import CandidateMemory, coerce_extraction, junk_reason, salvage_json

BERLIN = {"kind": "fact", "subject": "profile.city", "content": "User lives in Berlin."}
PEANUTS = {"kind": "fact", "subject": "health.allergy", "content": "User is allergic to peanuts."}


def _cand(subject: str = "profile.city", content: str = "User lives in Berlin.") -> CandidateMemory:
    return CandidateMemory(kind="fact", subject=subject, content=content)


@pytest.mark.parametrize(
    "subject",
    [
        "profile.city",
        "diet.avoid.spicy",
        "tech.stack.python",
        "likes.jazz-fusion",
        "habit.idrinkcoffeeeverymorning",  # the offline rules' squashed phrases
        "habit.我每天早上喝咖啡",
        "event.launch",
        "Profile City",  # folded to profile_city
    ],
)
def test_short_dotted_subjects_are_kept(subject: str) -> None:
    assert junk_reason(_cand(subject=subject)) is None


@pytest.mark.parametrize(
    "subject",
    [
        "munich_is_a_city_with_many_interesting_things,and_more",  # seen from SmolLM2-135M
        "profile..city",
        ".profile",
        "profile.city.",
        "profile/city",
        "fact: profile.city",
        "a" * 41,
        "a.b.c.d.e.f.g",
        "profile." + "x" * 60,
        "{{subject}}",
    ],
)
def test_a_subject_that_is_not_a_short_key_is_refused(subject: str) -> None:
    reason = junk_reason(_cand(subject=subject))
    assert reason is not None and "subject" in reason


@pytest.mark.parametrize(
    "content",
    [
        "{{}}",
        "{{content}}",
        "{content}",
        "<content>",
        "...",
        "…",
        "string",
        "N/A",
        "null",
        "--",
        "123",
        "TODO",
        "{{}} {{}}",
    ],  # fmt: skip
)
def test_placeholder_content_is_refused(content: str) -> None:
    reason = junk_reason(_cand(content=content))
    assert reason is not None and "placeholder" in reason


@pytest.mark.parametrize(
    "content",
    [
        "User lives in Berlin.",
        "用户不吃辣。",
        "User's string quartet plays on Fridays.",
        "User writes {{ jinja }} templates at work.",
        "User's code uses dict[str, int] {}.",
    ],  # fmt: skip
)
def test_sentences_are_kept(content: str) -> None:
    assert junk_reason(_cand(content=content)) is None


def test_coerce_drops_the_junk_and_keeps_the_rest() -> None:
    raw = {
        "memories": [
            {"kind": "fact", "subject": "a_sentence,not_a_key", "content": "x y z"},
            BERLIN,
            {"kind": "fact", "subject": "profile.name", "content": "{{}}"},
            {"kind": "fact", "subject": "profile.job", "content": ""},
        ],
        "forget": [{"query": "that"}],
    }
    out = coerce_extraction(raw)
    assert [m.content for m in out.memories] == ["User lives in Berlin."]
    assert [f.query for f in out.forget] == ["that"]


def test_a_raw_statements_subject_is_junk_unless_the_candidate_updates_it() -> None:
    said = "User said: I switched to a barber on King Street."
    raw = {"kind": "fact", "subject": "episode.turn.t1", "content": said}
    assert junk_reason(CandidateMemory(**raw)) is not None
    # Its id in `updates`: the store files the update over what was extracted from it.
    assert junk_reason(CandidateMemory(**raw, updates="abc123")) is None


def test_salvage_reads_an_object_wrapped_in_prose_or_a_fence() -> None:
    obj = {"memories": [BERLIN]}
    assert salvage_json(json.dumps(obj)) == obj
    assert salvage_json(f"Here you go:\n```json\n{json.dumps(obj)}\n```\nDone.") == obj
    assert salvage_json("no object here") is None


def test_salvage_of_a_cut_reply_keeps_every_complete_item_and_drops_the_cut_one() -> None:
    whole = json.dumps({"memories": [BERLIN, PEANUTS, BERLIN], "forget": []})
    third = whole.index("profile.city", whole.index("allergic"))
    assert salvage_json(whole[:third]) == {"memories": [BERLIN, PEANUTS]}
    # Cut inside the second item's content: only the first is whole.
    inside = whole.index("allergic")
    assert salvage_json(whole[:inside]) == {"memories": [BERLIN]}
    # A brace inside a string is not the end of an item.
    tricky = json.dumps({"memories": [BERLIN | {"content": "Likes {braces}} a lot."}, PEANUTS]})
    assert salvage_json(tricky[: tricky.index("allergic")]) == {
        "memories": [BERLIN | {"content": "Likes {braces}} a lot."}]
    }
    # Cut before any item was complete.
    assert salvage_json(whole[: whole.index("Berlin")]) in (None, {})


def _completion(content: str, finish: str) -> ChatCompletion:
    return ChatCompletion.model_validate(
        {
            "id": "c1", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "finish_reason": finish,
                         "message": {"role": "assistant", "content": content}}],
        }
    )  # fmt: skip


def test_cut_reply_reads_the_text_of_a_length_error_only() -> None:
    err = LengthFinishReasonError(completion=_completion('{"memories": [', "length"))
    cut = cut_reply(err)
    assert cut is not None and cut.content == '{"memories": ['
    assert cut.response_metadata["finish_reason"] == "length"
    assert cut_reply(ValueError("something else")) is None


def test_request_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings.from_env().requests == ModelRequests(ANSWER_RESERVE_TOKENS, 60.0, 2)
    monkeypatch.setenv("MEMORY_AGENT_MAX_TOKENS", "256")
    monkeypatch.setenv("MEMORY_AGENT_MODEL_TIMEOUT", "12.5")
    monkeypatch.setenv("MEMORY_AGENT_MODEL_RETRIES", "0")
    settings = Settings.from_env()
    assert settings.requests == ModelRequests(max_tokens=256, timeout=12.5, retries=0)
    model = make_chat_model("openai:m", Settings(openai_api_key="k", requests=settings.requests))
    assert (model.max_tokens, model.request_timeout, model.max_retries) == (256, 12.5, 0)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("MEMORY_AGENT_MAX_TOKENS", "0"),
        ("MEMORY_AGENT_MAX_TOKENS", str(ANSWER_RESERVE_TOKENS + 1)),  # the window keeps 1,024
        ("MEMORY_AGENT_MODEL_TIMEOUT", "0"),
        ("MEMORY_AGENT_MODEL_TIMEOUT", "nan"),
        ("MEMORY_AGENT_MODEL_RETRIES", "-1"),
        ("MEMORY_AGENT_MODEL_RETRIES", "two"),
    ],
)
def test_bad_request_settings_are_refused_by_name(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ValueError, match=name):
        Settings.from_env()

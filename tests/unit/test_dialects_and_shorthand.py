"""Dialects and chat shorthand read in standard words, and kin words of dialects (issue 22).

Phrasings here are the project's own, none from the fresh sets.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from graphs.offline_rules import extract_rules
from memory.lexical.bm25 import tokenize
from memory.recall.aliases import relation_in
from memory.requests import forget_requests
from memory.text.language import read_form, simplified
from memory.understanding import read_question


@pytest.mark.parametrize(
    ("said", "read"),
    [
        ("ach I cannae mind whit she telt me", "oh I can't mind what she told me"),
        ("Dinnae bother, the bairn's asleep", "Don't bother, the child's asleep"),
        ("took the wean tae the park wi my da", "took the child to the park with my dad"),
        # A verb, a word with a hyphen and Chinese keep their own reading.
        ("we had to wean him off the bottle", "we had to wean him off the bottle"),
        ("the wi-fi drops every night", "the wi-fi drops every night"),
        ("we drove to Madison, WI", "we drove to Madison, WI"),
        (
            "r u free tmr? need smth abt ur bday",
            "r you free tomorrow? need something about your birthday",
        ),
        ("the U.S. consulate", "the U.S. consulate"),
        ("我對芒果過敏", "我对芒果过敏"),
    ],
)
def test_scots_is_read_in_standard_words(said: str, read: str) -> None:
    assert read_form(said) == read


def test_a_retraction_opened_in_scots_takes_back_the_last_statement() -> None:
    # "och" was read as what the request was about, so it matched nothing.
    asked = forget_requests("och strike that one fae the record, didnae mean tae say it")
    assert [r.query for r in asked] == ["that"]


def test_a_child_called_the_wean_is_asked_about_as_family() -> None:
    # Unread, "wean" was no word for anyone: the question asked about nothing of the user's.
    assert read_question("the wean's needing new wellies, whit size should I get").asked == "family"


def test_ma_and_an_are_read_as_scots_only_beside_a_sure_scots_word() -> None:
    assert read_form("an dinnae tell ma sister") == "and don't tell my sister"
    assert read_form("och, ma ma's birthday") == "oh, my mum's birthday"
    assert read_form("Ma and Pa are here an hour early") == "Ma and Pa are here an hour early"


def test_youngest_daughter_and_son_in_sichuan_are_relatives() -> None:
    assert relation_in("我幺女在成都上班") == relation_in("我女儿在成都上班") is not None
    assert relation_in("我幺儿今年考高中") == relation_in("我儿子今年考高中") is not None
    assert relation_in("阿拉囡囡在南京读大学") == relation_in("我女儿在南京读大学") is not None


def test_a_request_in_chat_shorthand_names_its_topic() -> None:
    # Read as typed, "u" and "abt" made the sentence no request.
    asked = forget_requests("is it ok if u dont keep the stuff abt my knee op?")
    assert [r.query for r in asked] == ["my knee op"]


@pytest.mark.parametrize(
    ("said", "read"),
    [
        ("侬勿要记阿拉囡囡寻工作的事体", "你不要记我们囡囡寻工作的事情"),
        ("今朝交关欢喜，啥辰光再来伐？", "今天非常喜欢，啥时候再来吗？"),
        # Arabic, Alaska, a pace and felling keep their own characters.
        ("阿拉伯语和阿拉斯加", "阿拉伯语和阿拉斯加"),
        ("加快步伐", "加快步伐"),
    ],
)
def test_wu_is_read_in_standard_words(said: str, read: str) -> None:
    assert simplified(said) == read


def test_kin_words_of_heritage_speakers_are_relatives_in_lower_case_only() -> None:
    # "my lola" was no one, so a request about "my grandma" matched nothing said of her.
    assert relation_in("my lola still makes pancit every new year") == "grandmother"
    assert relation_in("my tito drives a jeepney") == "uncle"
    # Capitalised, each is a name.
    assert relation_in("Lola is our beagle, she's 9") is None


def test_function_words_spelled_in_chat_or_scots_match_nothing_by_words() -> None:
    # "aff" (off) matched any remark with an "aff" in it.
    assert tokenize("is the pool open on my day aff? tell ye wi u") == tokenize(
        "is the pool open on my day off? tell you with you"
    )


def test_a_topic_said_first_then_that_names_the_topic_however_the_whole_is_read() -> None:
    # Read whole as taking back the last statement, it forgot the crochet said last.
    asked = forget_requests("hey the pill thing from before, can you not keep that?")
    assert [r.query for r in asked] == ["hey the pill thing from before"]


NOW = datetime(2026, 12, 8, 9, tzinfo=UTC)


def test_what_is_said_of_our_daughter_in_wu_is_filed_under_her() -> None:
    kept = extract_rules("阿拉囡囡在杭州教书", NOW).memories
    assert [m.subject.split(".")[0] for m in kept] == ["family"], kept


def test_work_read_as_news_ends_no_home_of_another_family() -> None:
    # Nothing of work was remembered, so every record was weighed: the home, at 0.28.
    home = ("r1", "profile.city", "用户说：我家住在浦东金桥，二十多年了。")
    said = "我以前在银行做柜员，干了二十年，现在楼里的水电费还是我帮大家算"
    assert [m.updates for m in extract_rules(said, NOW, [home]).memories] == [None]

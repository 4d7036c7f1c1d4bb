"""Scots read in standard words, and 幺女 and 幺儿 as relatives (issue 22).

Phrasings here are the project's own, none from the fresh sets.
"""

from __future__ import annotations

import pytest

from memory.recall.aliases import relation_in
from memory.requests import forget_requests
from memory.text.language import read_form
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
    assert read_question("any ideas whit tae get the wean for christmas").asked == "family"


def test_ma_and_an_are_read_as_scots_only_beside_a_sure_scots_word() -> None:
    assert read_form("an dinnae tell ma sister") == "and don't tell my sister"
    assert read_form("och, ma ma's birthday") == "oh, my mum's birthday"
    assert read_form("Ma and Pa are here an hour early") == "Ma and Pa are here an hour early"


def test_youngest_daughter_and_son_in_sichuan_are_relatives() -> None:
    assert relation_in("我幺女在成都上班") == relation_in("我女儿在成都上班") is not None
    assert relation_in("我幺儿今年考高中") == relation_in("我儿子今年考高中") is not None

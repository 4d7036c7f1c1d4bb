"""What a forget request names, without the words that ask or say what the assistant holds.

A request names its topic in many wordings ("whatever you've got on my bike", "我健身那个事
你给我删了嘛"); the words of the request itself (a closed class) are cut, so what is left is
what the request is about, and a request for "what I just said" stays one when a reason
follows it after a comma.
"""

from __future__ import annotations

import pytest
from kept import kept_for

from agent.runner import Session
from memory.lifecycle import is_deictic
from memory.requests import forget_requests
from memory.understanding.topics import forget_words


@pytest.mark.parametrize(
    ("said", "topic"),
    [
        ("please drop whatever you've got on my bike", "my bike"),
        ("could you stop keeping track of my blood pressure pills", "my blood pressure pills"),
        ("关于我学吉他的那些删掉吧，最近没空练了", "我学吉他"),
        # Other verbs of removal: said with a reason, the model reads such a request as news.
        ("take out the bit about Ruth's wedding plans as well", "Ruth's wedding plans"),
        ("get rid of everything about my knee op", "my knee op"),
        ("bin everything about my old flat in Deptford", "my old flat in Deptford"),
        ("ditch anything on my ex", "my ex"),
    ],
)
def test_a_request_keeps_only_the_words_of_its_topic(said: str, topic: str) -> None:
    (found,) = forget_requests(said)
    assert forget_words(found) == topic, found


@pytest.mark.parametrize("said", ["I binned the old sofa", "we had to get rid of the car"])
def test_a_removal_done_is_no_request(said: str) -> None:
    assert forget_requests(said) == []


def test_a_topic_said_before_the_request_is_the_topic() -> None:
    (found,) = forget_requests("我健身那个事 你给我删了嘛")
    words = forget_words(found)
    assert "健身" in words and "给我" not in words and "嘛" not in words, words


def test_a_bare_verb_with_no_particle_that_asks_is_no_request() -> None:
    # What was done ("照片都删掉了"), or an edit of a text, is no request to forget.
    assert forget_requests("照片都删掉了") == []
    assert forget_requests("上面那段的错别字删掉咯") == []


@pytest.mark.parametrize(
    ("said", "topic"),
    [
        ("I'd sooner you didn't hold on to my work address, clear that out", "work address"),
        ("the salsa classes, wipe it off too", "salsa classes"),
        # 噻 and 咯 end a request as 吧 does, and 莫 is "don't" (Hunan, Sichuan); asked twice
        # over, the topic is before the first request.
        ("我表哥找工作那事 删掉噻", "表哥找工作"),
        ("我前任那些 你莫存了", "前任"),
        ("我表哥找工作那事 莫存了 删掉咯", "表哥找工作"),
    ],
)
def test_a_topic_before_a_request_with_a_particle_is_not_what_was_just_said(
    said: str, topic: str
) -> None:
    # "clear that out" after the topic points back at it, not at the last statement.
    (found,) = forget_requests(said)
    assert not is_deictic(found.query) and topic in forget_words(found), found
    assert "莫" not in forget_words(found) and "存了" not in forget_words(found), found


@pytest.mark.parametrize(
    ("said", "topic"),
    [
        ("the bit about my pills i mentioned, can you not hold onto that? bit private", "pills"),
        ("hey that thing about my ex i told u, could u not keep that", "my ex"),
    ],
)
def test_a_topic_asked_of_as_a_favour_with_that_is_the_topic(said: str, topic: str) -> None:
    # Asked as a favour after its topic, with a question mark or not, "that" is the topic
    # named first, not the last statement.
    (found,) = forget_requests(said)
    assert not is_deictic(found.query) and topic in forget_words(found), found


@pytest.mark.parametrize(
    ("said", "subject"),
    [
        ("还有我对象那条，帮我删了吧，最近有点情况", "family.对象"),
        ("and my other half's stuff, delete that too, things are rocky at work", "family.partner"),
    ],
)
def test_a_relative_named_as_the_topic_is_the_subject_whatever_the_reason(
    said: str, subject: str
) -> None:
    # Read whole, the reason pulls the request to another family; the topic names a partner.
    (found,) = forget_requests(said)
    assert found.subject == subject, found


@pytest.mark.parametrize(
    "said",
    [
        "Hmm, would you mind discarding what I've just told you?",
        "Sorry, could you disregard what I've just told you?",
    ],
)
def test_what_was_just_said_asked_as_a_favour_after_an_interjection_is_that(said: str) -> None:
    # The part after the interjection, read alone, is a question; the sentence is one request.
    (found,) = forget_requests(said)
    assert is_deictic(found.query), found


@pytest.mark.parametrize(
    ("query", "deictic"),
    [
        ("what I just said, the date isn't fixed yet", True),
        # "forget it, …" is "never mind": a bare "it" or "that" takes no reason
        ("it, the printer works again", False),
        ("that, my boss hasn't signed it off", False),
        ("my sister, she asked me to", False),
        ("my bike", False),
    ],
)
def test_what_i_just_said_is_still_that_with_a_reason_after_a_comma(
    query: str, deictic: bool
) -> None:
    assert is_deictic(query) is deictic


async def test_taking_back_the_last_statement_with_a_reason(offline_session: Session) -> None:
    s = offline_session
    await s.turn("ola", "ola-1", "I'm allergic to kiwi.")
    await s.turn("ola", "ola-1", "We're getting a beagle puppy next month.")
    await s.turn("ola", "ola-1", "actually forget what I just said, it may fall through")
    kept = await kept_for(s, "ola")
    assert "beagle" not in kept and "kiwi" in kept, kept


@pytest.mark.parametrize(
    "request_",
    [
        "Oh man, forget what I just said, the flat isn't ours yet and Priya would kill me",
        "ugh, forget what I just said, nothing's signed and I don't want to jinx it",
    ],
)
async def test_taking_back_what_was_just_said_after_an_interjection(
    offline_session: Session, request_: str
) -> None:
    # Read whole, the reason made it news of the statement before: the request's own words
    # were kept in its place.
    s = offline_session
    await s.turn("ida", "ida-1", "I'm allergic to kiwi.")
    await s.turn("ida", "ida-1", "Me and Priya are buying a flat in Leith in the spring.")
    await s.turn("ida", "ida-1", request_)
    kept = await kept_for(s, "ida")
    assert "Leith" not in kept and "jinx" not in kept and "kill me" not in kept, kept
    assert "kiwi" in kept, kept


async def test_a_kind_of_thing_named_with_someone_is_still_that_thing(
    offline_session: Session,
) -> None:
    # "the holiday I took after losing Margaret" names a person; the words are read as a trip
    # first, and the one trip remembered goes, not what else names her.
    s = offline_session
    for said in (
        "My late wife Margaret loved the garden.",
        "Last autumn I went on a river cruise down the Danube, my first holiday since she passed",
        "I'm allergic to kiwi.",
        "the holiday I took after losing Margaret, please let that go from your memory",
    ):
        await s.turn("ned", "ned-1", said)
    kept = await kept_for(s, "ned")
    assert "Danube" not in kept, kept
    assert "loved the garden" in kept and "kiwi" in kept, kept

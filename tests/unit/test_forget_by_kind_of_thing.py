"""A thing named by its make, breed or place is forgotten by a general word for it.

"we run around in a battered old Corolla" shares no word with "my car", nor "家里那只柯基叫
豆豆" with "我家狗": the encoder knows few makes and breeds. The understanding model's things
head (`memory/understanding/corpus/things.*.txt`) reads both the request's words and each
message as a kind of thing (a pet, a vehicle, a device, a trip, exercise); one message of
that kind is what the request means (`memory.understanding.topics._things`), and the rest of
what the user said stays.
"""

from __future__ import annotations

import pytest
from kept import kept_for

from agent.runner import Session
from memory.understanding import read_utterances

EN = ["I'm allergic to kiwi", "my gran lives in Cork", "I work at the post office"]
ZH = ["我对芒果过敏", "我姐在苏州当老师", "我在邮局上班"]


@pytest.mark.parametrize(
    ("thing", "asked", "gone"),
    [
        ("we run around in a battered old Corolla", "forget what I said about my car", "Corolla"),
        ("our whippet Dot is eight now", "stop keeping anything about our dog", "whippet"),
        ("Mochi sleeps on my keyboard all day, she's a ragdoll", "forget about my cat", "Mochi"),
        ("gaming on a Ryzen 5 with a 3060", "forget what I told you about my PC", "Ryzen"),
        ("I go bouldering three times a week", "forget my workouts", "bouldering"),
        ("家里那只柯基叫豆豆", "我家狗的事删了吧", "柯基"),
        ("我用的是小米13", "我手机那条删掉", "小米"),
        ("下个月去云南玩一周", "旅游那事别记了", "云南"),
        ("每周三晚上去游泳", "我运动那块的别存了", "游泳"),
    ],
)
async def test_a_general_word_forgets_the_one_thing_of_its_kind_and_keeps_the_rest(
    offline_session: Session, thing: str, asked: str, gone: str
) -> None:
    s = offline_session
    rest = ZH if any("\u4e00" <= ch <= "\u9fff" for ch in thing) else EN
    for text in [thing, *rest]:
        await s.turn("nia", "nia-1", text)
    await s.turn("nia", "nia-1", asked)
    left = await kept_for(s, "nia")
    assert gone not in left, left
    # Everything else said stays: the allergy, the relative, the job.
    assert all(text in left for text in rest), left


async def test_a_kind_of_thing_the_user_never_spoke_of_forgets_nothing(
    offline_session: Session,
) -> None:
    s = offline_session
    for text in ["we run around in a battered old Corolla", *EN]:
        await s.turn("ravi", "ravi-1", text)
    before = sorted((await kept_for(s, "ravi")).split(" | "))
    await s.turn("ravi", "ravi-1", "forget what I said about my laptop")
    assert sorted((await kept_for(s, "ravi")).split(" | ")) == before


def test_the_head_reads_kinds_of_things_and_leaves_the_rest_alone() -> None:
    said = [
        "my wheels",
        "我那台电脑",
        "the holiday we booked",
        "I'm saving for a deposit on a flat",
        "my mum's birthday",
        "我在超市上班",
    ]
    things = [r.thing for r in read_utterances(said)]
    assert things == ["vehicle", "device", "trip", "other", "other", "other"], things

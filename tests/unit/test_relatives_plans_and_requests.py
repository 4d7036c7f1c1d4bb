"""Relatives by any of their words, statements said beside a plan, request words that name
nothing, questions sure of a family, and the reading cache (issue 22).

Phrasings here are the project's own, none from the fresh sets.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from fakes import save_said

from graphs.offline_rules import extract_rules
from memory.extraction import Extraction, ForgetRequest
from memory.lifecycle import forget_phrase
from memory.recall.aliases import KIN, RELATIONS, relation_in
from memory.requests import forget_requests
from memory.service import MemoryService
from memory.store.records import Source
from memory.text.phrases import states, topic_clause

NOW = datetime(2026, 11, 30, 9, tzinfo=UTC)


@pytest.mark.parametrize(
    ("words", "relation"),
    [
        (("my mom", "my mum", "my mother", "Mum's"), "mother"),
        (("我妈", "我老妈", "我妈妈", "我母亲"), "妈妈"),
        (("my hubby", "my husband"), "husband"),
        (("the missus", "my wife"), "wife"),
        (("我媳妇儿", "我老婆", "我媳妇"), "老婆"),
        (("我老伴儿", "那口子", "我对象"), "对象"),
        (("my grandson", "our grandson's"), "grandson"),
        (("我孙女", "孙女儿"), "孙女"),
        (("my sister-in-law",), "sister-in-law"),
        (("我婆婆",), "婆婆"),
    ],
)
def test_every_word_for_a_relative_names_one_relation(
    words: tuple[str, ...], relation: str
) -> None:
    assert {relation_in(w) for w in words} == {relation}


def test_what_is_said_of_a_relative_is_filed_under_one_subject_whatever_the_word() -> None:
    subjects = [
        m.subject
        for said in ("My mom works as a nurse in Leeds.", "My mum is a retired nurse.")
        for m in extract_rules(said, NOW).memories
    ]
    assert subjects and all(s.startswith("family.mother.") for s in subjects), subjects
    zh = [m.subject for m in extract_rules("我老妈在老家开了个小卖部", NOW).memories]
    assert zh and all(s.startswith("family.妈妈.") for s in zh), zh
    # A forget request by another of the words reaches that subject.
    assert forget_requests("forget everything about my mum")[0].subject == "family.mother"
    assert forget_requests("forget what I told you about my hubby")[0].subject == "family.husband"


def test_relatives_of_one_kind_are_different_people_and_a_colleague_is_no_sister() -> None:
    assert len({relation_in(w) for w in ("我表姐", "我表哥", "我堂弟")}) == 3
    assert relation_in("我外婆") != relation_in("我奶奶")
    # After a surname, 姐 and 哥 are how a colleague is called.
    assert relation_in("带我的是王姐") is None
    assert relation_in("李哥人挺好") is None
    assert relation_in("我姐在北京") == relation_in("我姐姐在北京") == "姐姐"


def test_a_pet_is_no_relative_and_a_relative_no_pet() -> None:
    assert relation_in("my dog Bruce is nine") is None
    assert "dog" not in KIN and "cat" not in KIN
    # Every word of a relation names it, in its language (no word in two relations).
    seen: dict[str, str] = {}
    for relation, (en, zh) in RELATIONS.items():
        for word in (*en, *zh):
            assert seen.setdefault(word, relation) == relation, word


def test_a_statement_said_beside_a_plan_is_kept_and_a_plan_alone_keeps_nothing() -> None:
    # Read whole as a plan; its second clause states what the user owns.
    said = extract_rules("计划明年春天去新疆自驾，我有辆二手的途观", NOW).memories
    assert any("途观" in m.content for m in said), [m.content for m in said]
    assert not any("新疆" in m.content for m in said), [m.content for m in said]
    assert extract_rules("Planning to repaint the kitchen next month", NOW).memories == []


def test_a_particle_after_a_request_names_nothing() -> None:
    # "…别存了嘛": the 嘛 that ends the request is no word of what it names, so a record that
    # ends in 嘛 too is not what it points at.
    phrase, _ = forget_phrase(ForgetRequest(query="我晕车 毛病 嘛"))
    assert "嘛" not in phrase.zh and "晕车" in phrase.zh, phrase
    assert not states("用户说：我是做外贸的嘛。", phrase)
    assert states("用户说：我晕车挺厉害的。", phrase)


@pytest.mark.parametrize(
    ("query", "record"),
    [
        ("whatever you've got about my camper", "User said: we bought an old VW camper."),
        ("track of my blood pressure pills", "User said: I take blood pressure pills at night."),
        ("the gym stuff pls", "User said: I go to the gym on Mondays."),
    ],
)
def test_words_of_the_request_are_no_words_of_its_topic(query: str, record: str) -> None:
    # "got", "keep track of", "whatever", "pls" ask; they name nothing the record must say.
    phrase, _ = forget_phrase(ForgetRequest(query=query))
    assert states(record, phrase), phrase


def test_a_reason_after_an_ellipsis_is_no_part_of_the_topic() -> None:
    assert topic_clause("my ex... we split up in May") == "my ex"
    assert topic_clause("前任的事…我们分了") == "前任的事"
    assert topic_clause("my sister, my brother and my dad") == "my sister, my brother and my dad"


@pytest.mark.parametrize(
    ("statements", "question", "answer"),
    [
        (
            ["我闺女在杭州当护士，每周六晚上跟我视频", "我对芒果过敏", "我住在绍兴",
             "每周二下午去老年大学学书法", "我家狗叫旺财，是条土狗", "我老伴儿爱钓鱼"],
            "女儿下个月生日，送她点啥好",
            "杭州当护士",
        ),
        (
            ["我媳妇儿在小学教语文，寒暑假比我闲", "我对花生过敏", "我住在苏州",
             "每周四晚上去打羽毛球", "养了只猫叫年糕", "我哥在深圳开出租",
             "我妈退休了在老家种菜", "我爸爱下象棋", "我妹在读大学", "我儿子上三年级",
             "我女儿在学钢琴"],
            "我家那位生日快到了，送点啥好",
            "小学教语文",
        ),
        (
            ["My mom teaches piano in Cork.", "I'm allergic to shellfish.", "I live in Galway.",
             "I swim every Tuesday morning.", "Our dog Biscuit is a beagle.",
             "My brother runs a bike shop."],
            "Any gift ideas for my mum's 70th?",
            "teaches piano",
        ),
        (
            ["我们家租在江北区，两室一厅", "周末一般去爬山，偶尔露营", "我对芒果过敏",
             "我在银行上班，天天对着电脑", "我家狗叫豆豆，每天要遛两次", "每周六早上去公园跑步"],
            "周末想在家附近找个地方逛逛，有推荐吗",
            "江北区",
        ),
        (
            ["We rent a small flat down in Leith.", "I go hillwalking most Sundays.",
             "I'm allergic to kiwi.", "I work in a call centre, lots of screen time.",
             "Our dog Maisie needs two walks a day.", "I run in the park on Saturday mornings."],
            "any nice spots for a stroll near where I live?",
            "Leith",
        ),
    ],
)  # fmt: skip
def test_what_is_filed_under_whom_or_what_a_question_is_about_comes_first(
    service: MemoryService, statements: list[str], question: str, answer: str
) -> None:
    # A relative by another word (女儿 for 闺女, mum for mom, the other half for 媳妇儿), or a
    # family the model is sure
    # the question is about (home) though it shares no word with the home remark and the
    # encoder finds the walks, the runs and the dog nearer. A place of the top is a memory
    # with what was said with it.
    save_said(service, statements, NOW)
    top = [
        " · ".join([h.record.content, *(r.content for r in h.said_with)])
        for h in service.search("u", question, 5)
    ]
    assert answer in top[0], top


def test_readings_survive_the_cache_being_cleared_to_make_room(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A batch of cached and new texts that overflows the cache clears it before the batch's
    # readings are returned: the cached ones must still come back (a long-running server
    # raised KeyError in load_memory once the cache was full).
    import memory.understanding as understanding

    understanding.read_utterances(["我住在绍兴", "I live in Galway."])
    monkeypatch.setattr(understanding, "_CACHE_LIMIT", len(understanding._CACHE) + 1)
    texts = ["我住在绍兴", "周末一般去爬山", "I live in Galway.", "I swim on Tuesdays."]
    got = understanding.read_utterances(texts)
    assert [r.family for r in got][0] == understanding.read_utterance("我住在绍兴").family
    assert len(got) == len(texts)


@pytest.mark.parametrize(
    ("request_", "gone", "kept"),
    [
        # the other half by the word for any of them: everything said of one
        ("我家那口子的事你也删了吧", ["修车铺", "钓鱼", "前男友"], ["读大学"]),
        # by a word for one of them: what was said by that word and by the word for any
        ("我老公的事都别记了", ["修车铺", "钓鱼"], ["读大学", "前男友"]),
    ],
)
def test_a_forget_request_reaches_the_other_half_by_any_word_and_no_one_else(
    service: MemoryService, request_: str, gone: list[str], kept: list[str]
) -> None:
    save_said(
        service,
        [
            "我老公在县城开修车铺",
            "我对象最近迷上了钓鱼",
            "我妹在读大学",
            "我男朋友是我前男友的同学",
        ],
        NOW,
    )
    before = [r.content for r in service.list("u")]
    assert all(any(w in c for c in before) for w in [*gone, *kept]), before
    service.save(
        "u", Extraction(forget=forget_requests(request_)), Source(thread_id="t", said_at=NOW)
    )
    left = " | ".join(r.content for r in service.list("u"))
    assert not [w for w in gone if w in left], left
    assert all(w in left for w in kept), left


def test_laomei_is_a_younger_sister_in_a_statement_and_in_a_request() -> None:
    # 老妹 (north-east and Hunan) is "my younger sister": said of her, a statement is filed
    # under her, and a request about her reaches what is filed there.
    said = extract_rules("我老妹在长沙读师范，明年毕业", NOW).memories
    assert said and all(m.subject.startswith("family.妹妹") for m in said), said
    assert relation_in("我老妹那边的事都莫存了") == "妹妹"


def test_wo_xiansheng_is_a_husband_and_no_mister_is() -> None:
    # "我先生" is "my husband": his name was filed as the user's own (`profile.name`) and
    # superseded it. "王先生" (Mr Wang) and "先生您好" name no relative.
    said = extract_rules("我先生叫陈立，在区医院做麻醉医生", NOW).memories
    assert said and all(m.subject.startswith("family.老公") for m in said), said
    assert relation_in("王先生是我的房东") is None
    assert relation_in("先生您好，请问几位") is None


@pytest.mark.parametrize(
    ("said", "request_", "kept"),
    [
        (["My sister Ana is a nurse in Porto.", "My mum lives in Faro.", "I work at a bakery."],
         "forget what I said about my sister and my mum", "bakery"),
        (["我先生叫陈立，在区医院做麻醉医生。", "女儿叫陈果，今年七岁。", "我在银行上班。"],
         "我先生和女儿的事你都别记了", "银行"),
    ],
)  # fmt: skip
def test_a_request_naming_two_relatives_forgets_each(
    service: MemoryService, said: list[str], request_: str, kept: str
) -> None:
    # Filed under the first relative alone, what was said of the second stayed.
    save_said(service, said, NOW)
    service.save(
        "u", Extraction(forget=forget_requests(request_)), Source(thread_id="t", said_at=NOW)
    )
    left = [r.content for r in service.list("u") if r.kind != "episode"]
    assert len(left) == 1 and kept in left[0], left


def test_the_children_together_are_each_child(service: MemoryService) -> None:
    # "孩子" / "the kids" is no one relative: a request about them reaches each child's
    # subject, not only statements that say the word.
    save_said(service, ["My daughter Ella starts school in September.", "My son Tom plays rugby.",
                        "I work at a bakery."], NOW)  # fmt: skip
    request = forget_requests("forget everything about the kids")
    service.save("u", Extraction(forget=request), Source(thread_id="t", said_at=NOW))
    left = [r.content for r in service.list("u", include_turns=True)]
    assert not any("Ella" in c or "Tom" in c for c in left) and any("bakery" in c for c in left)

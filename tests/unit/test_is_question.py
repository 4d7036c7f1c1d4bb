"""`is_question` decides which user turns the graph keeps raw: a statement read as a question
is never archived, so it can never be recalled. A table of questions and statements, most of
them phrasings the rules were not written from (question words used as pronouns, embedded
questions, sentence-final particles that do not ask), in Chinese and in English."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memory.requests import is_question

ZH_QUESTIONS = [
    "我住在哪里？",
    "我喜欢吃什么",
    "你还记得我女儿叫什么名字吗",
    "我下周几点开会",
    "我为什么要去上海",
    "你知道我在哪工作吗",
    "我对什么过敏",
    "你呢",
    "那明天呢",
    "我明天要不要带伞",
    "你觉得我该去不该去",
    "我是不是说过我要搬家",
    "有没有我喜欢的餐厅",
    "我上次去医院是哪天",
    "我的猫叫啥",
    "我弟弟多大了，在哪上学",
    "请问我的航班是几号",
    "告诉我我住在哪",
    "怎么去我公司最快",
    "谁是我的牙医",
    "你好！我住哪？",
    "我外甥在哪念书 学的啥来着",
]
ZH_STATEMENTS = [
    "帮我爸把花园的草修了一下午，腰都直不起来",
    "帮我记一下，下周四要去交物业费",
    "我什么都吃。",
    "我不知道为什么喜欢猫",
    "谁都知道我爱喝茶",
    "今天好像什么都不顺，出门还踩到了水坑。",
    "今天不知道为什么特别想家。",
    "周末去商场逛了一圈，什么也没买。",
    "今天心情一般，也说不上来为什么。",
    "我还在加班呢",
    "我怎么也睡不着",
    "我哪儿都不想去",
    "我多少有点紧张",
    "我没什么爱好，就喜欢看书",
    "水果什么的我都爱吃",
    "我不怎么喝酒",
    "这就是为什么我搬到了杭州",
    "我记得他叫什么，叫老王",
    "去不去都行，我随便",
    "我对花生过敏，现在在杭州当护士。",
    "我对花生过敏。你知道我在哪工作吗？",
    "我对花生过敏，你知道我在哪工作吗",
    "随便吃点什么就好",
    "那家店哪怕排队我也要去",
    "我这么喜欢咖啡，当然天天喝",
    # Chat writing puts spaces where commas go: the last clause alone reads as asking.
    "苦瓜我一口都咽不下 打小就这样 谁劝我吃我跟谁急",
]
EN_QUESTIONS = [
    # Contracted with no apostrophe, as typed quickly.
    "whats the name of my eye drops",
    "wheres the closest post office to me",
    "Where do I live?",
    "what is my dog's name",
    "Do I like sushi",
    "Can you suggest dinner",
    "Did my mother call",
    "Is Anna coming on Friday",
    "When is my dentist appointment",
    "How many kids do I have",
    "Who is my manager",
    "Which city did I move to",
    "Have I told you about my job",
    "Are there any events next week",
    "Tell me what I am allergic to",
    "Remind me where I parked",
    "Hi! Where do I work?",
    "Why did I quit my job",
    "Would you recommend a book for me",
    "What about my sister",
    "Whose birthday is next",
    "Should I bring an umbrella tomorrow",
    # A request opened by its verb asks for something: "on the weekend" made it an event.
    "give me a good stew I could make on the weekend",
    "Recommend a film for Friday night",
    "suggest a quick lunch for tomorrow",
    # "u" is "you" ("can u …" asks as "can you …" does).
    "can u check the spelling in my cover letter",
]
EN_STATEMENTS = [
    "I'm vegetarian and live in Berlin.",
    "When I was ten we moved to Lyon.",
    "What I really want is a dog.",
    "Will is my brother.",
    "Can't wait to see the new office",
    "Don't forget I am allergic to peanuts",
    "Had the best day ever at the beach",
    "Would love to visit Japan next year",
    "Could be worse, the job is fine",
    "Have a nice day",
    "Where I live it rains a lot",
    "What a day, I finally finished the marathon",
    "How I love this city",
    "Which reminds me, I moved to Munich",
    "I wonder why I like cats so much.",
    "I'm allergic to peanuts. Do you know a good snack?",
    "My sister asked what I want for my birthday",
    "Nobody knows where the keys are",
    "Do remember that I work night shifts",
    "I know who took my bike",
    "Name's Tom, by the way",
    "list of my meds: ibuprofen and cetirizine",
    "Recommended by my GP: half a tablet a day",
    "I write a newsletter about birds every month",
    "Helped my dad move house at the weekend",
]


@pytest.mark.parametrize("text", ZH_QUESTIONS + EN_QUESTIONS)
def test_questions_ask(text: str) -> None:
    assert is_question(text)


@pytest.mark.parametrize("text", ZH_STATEMENTS + EN_STATEMENTS)
def test_statements_do_not_ask(text: str) -> None:
    assert not is_question(text)


def test_table_is_big_enough() -> None:
    assert min(len(ZH_QUESTIONS), len(ZH_STATEMENTS), len(EN_QUESTIONS), len(EN_STATEMENTS)) >= 10
    assert len(ZH_QUESTIONS + ZH_STATEMENTS) >= 20 and len(EN_QUESTIONS + EN_STATEMENTS) >= 20


def test_every_user_turn_of_the_zh_set_is_kept() -> None:
    """The zh recall set's users only state things: every turn of theirs must be archived."""
    data = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "zh_recall.json"
    raw = json.loads(data.read_text(encoding="utf-8"))
    asked = []
    for sample in raw["samples"]:
        conv = sample["conversation"]
        s = 1
        while f"session_{s}" in conv:
            asked += [t["text"] for t in conv[f"session_{s}"]
                      if t["speaker"] == conv["speaker_a"] and is_question(t["text"])]  # fmt: skip
            s += 1
    assert asked == []


def test_the_zh_questions_of_the_set_ask() -> None:
    """And every question the set asks is read as one (they are what recall is asked)."""
    data = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "zh_recall.json"
    raw = json.loads(data.read_text(encoding="utf-8"))
    missed = [
        q["question"] for s in raw["samples"] for q in s["qa"] if not is_question(q["question"])
    ]
    assert missed == []

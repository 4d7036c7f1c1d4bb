"""Forget, supersede and sensitive data, case by case, through the real compiled graph.

Every case is a short scripted conversation run with the offline model on the embedded
default backends (SQLite checkpointer, SQLite store, embedded Chroma), each in its own
MEMORY_AGENT_HOME (see tests/conftest.py). After the conversation every copy of what the
user said is checked: recall from a new thread (its recalled memories, memory block and
reply), `search`, the raw turns, the export, the thread's checkpointed messages, its
rolling summary and working memory, and the archived summary episodes. Precision is
checked too: what the case did not target stays active and recallable, and nothing else
was forgotten or superseded.
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass
from typing import Any

import pytest
from langchain_core.messages import AIMessage

from agent.runner import Session, open_session
from graphs.settings import Settings
from memory.store.records import MemoryRecord

SUMMARY_TOKENS = 60
"""Small enough that a few turns trigger the rolling summary."""
FORGOT = re.compile(r"^\(Memory: forgot |^（记忆：已忘记")
NOTHING = re.compile(r"^\(Memory: nothing I remember matched|^（记忆：没有找到")
LIVE = ("active", "candidate", "archived")

Gone = str | tuple[str, str]
"""What must be in no live copy: a word (it is both the search query and, as a whole word,
the pattern) or `(query, regex)` where whole words need more care (猫 is not 熊猫)."""


@dataclass(frozen=True)
class Case:
    """One scripted conversation and what must hold after it.

    Attributes:
        id: Test id, `<family>-<lang>-<name>`.
        said: The user's messages in the original thread, in order.
        ask: A question asked from a new thread afterwards.
        gone: Forgotten or superseded: in no live copy, never recalled.
        kept: Text of other statements of the conversation: still active and recalled
            by `search` for these words.
        answer: Text the new thread's memory block must hold (the new value).
        secret: Sensitive values: nowhere in the export, the thread, recall.
        request: The last of `said` is a forget request (never archived; answered by a
            note).
        note: What the note must say: `forgot` or `nothing` (matched).
        then: More statements in the original thread after the request.
        summary: Run with a small summary budget so the rolling summary is built; the
            gone text must be in it before the request (checked) and out of it after.
    """

    id: str
    said: tuple[str, ...]
    ask: str
    gone: tuple[Gone, ...] = ()
    kept: tuple[str, ...] = ()
    answer: tuple[str, ...] = ()
    secret: tuple[str, ...] = ()
    request: bool = True
    note: str = "forgot"
    then: tuple[str, ...] = ()
    summary: bool = False

    @property
    def family(self) -> str:
        return self.id.split("-")[0]

    @property
    def statements(self) -> tuple[str, ...]:
        """The messages that state something (and are kept as raw turns)."""
        said = self.said[:-1] if self.request else self.said
        return (*said, *self.then)


CAT = ("猫", r"(?<!熊)猫(?!头鹰)")
"""猫 as a word of its own: not 熊猫 (panda), not 猫头鹰 (owl)."""

TOPIC = [
    Case(
        "topic-en-tea",
        (
            "I like tea.",
            "I play team sports on weekends.",
            "I love steak.",
            "Please forget that I like tea.",
        ),
        "What do I like?",
        gone=("tea",),
        kept=("team sports", "steak"),
        answer=("steak",),
    ),
    Case(
        "topic-en-tom",
        (
            "I love tomatoes.",
            "I use Tomtom for navigation.",
            "My brother Tom lives in Leeds.",
            "Forget everything you know about Tom.",
        ),
        "What do you know about my family?",
        gone=("Tom",),
        kept=("tomatoes", "Tomtom"),
    ),
    # A "that" after a request in the same message is the request said again: the statement
    # before the message (the diet) stays.
    Case(
        "topic-en-that-said-again",
        (
            "I live in Lyon.",
            "I'm vegetarian.",
            "Forget where I live. I'd rather you didn't keep that.",
        ),
        "Any plans you'd suggest for my weekend?",
        gone=("Lyon",),
        kept=("vegetarian",),
    ),
    # "That" said twice in one message is one request: the statement before the last one
    # stays (each sentence was read as a request, and the second took the vinyl too).
    Case(
        "that-en-said-twice",
        (
            "I collect old vinyl records.",
            "I drive a grey Volvo estate.",
            "Scratch that. Act like I never said it.",
        ),
        "What do you know about my hobbies and my car?",
        gone=("Volvo",),
        kept=("vinyl",),
    ),
    Case(
        "that-zh-said-twice",
        ("我收藏老黑胶唱片。", "我开一辆灰色的沃尔沃。", "刚才那句不算。你就当我没说过。"),
        "你知道我有什么爱好、开什么车吗？",
        gone=("沃尔沃",),
        kept=("黑胶",),
    ),
    # The topic first, then the request with a pronoun for it, and a reason after it: the
    # topic goes, and the other statement stays.
    Case(
        "topic-en-topic-first",
        (
            "I do salsa classes every Tuesday night.",
            "I'm allergic to kiwi.",
            "oh and the salsa thing — please forget that too, I quit last month",
        ),
        "Any plans you'd suggest for my week?",
        gone=("salsa",),
        kept=("kiwi",),
    ),
    Case(
        "topic-zh-topic-first",
        ("我每周三晚上去学游泳。", "我对猕猴桃过敏。", "还有我学游泳那个也删掉吧，不学了"),
        "这周有什么安排建议？",
        gone=("游泳",),
        kept=("猕猴桃",),
    ),
    Case(
        "topic-en-can-you-not-keep",
        (
            "I had knee surgery in March.",
            "I live in Oslo.",
            "also can you not keep the stuff about my knee surgery? it's a bit personal",
        ),
        "Anything I should know before a long walk?",
        gone=("surgery", "knee"),
        kept=("Oslo",),
    ),
    Case(
        "topic-zh-topic-first-dont-keep",
        (
            "我最近在驾校学车。",
            "我不吃香菜。",
            "对了我学车那事儿你别记了，不想学了",
        ),
        "周末有什么安排建议？",
        gone=("驾校",),
        kept=("香菜",),
    ),
    Case(
        "topic-zh-can-you-not-keep",
        ("我上个月做了个胃镜。", "我住在南京。", "能不能别存胃镜的事？有点隐私"),
        "周末有什么安排建议？",
        gone=("胃镜",),
        kept=("南京",),
    ),
    # "my work laptop" is a laptop: the job stays.
    Case(
        "topic-en-a-modifier-is-no-family",
        (
            "I'm a nurse at St Mary's.",
            "My work laptop is a clunky old ThinkPad.",
            "please forget my work laptop",
        ),
        "What do I do for a living?",
        gone=("ThinkPad",),
        kept=("nurse",),
    ),
    Case(
        "topic-zh-that-said-again",
        ("我住在苏州。", "我不吃香菜。", "我住哪儿你就别记了。这个你就别留着了。"),
        "周末有什么安排建议？",
        gone=("苏州",),
        kept=("香菜",),
    ),
    Case(
        "topic-en-city",
        ("I live in Berlin.", "I work at Acme.", "I love jazz.", "Forget where I live, please."),
        "Any plans you'd suggest for my weekend?",
        gone=("Berlin",),
        kept=("Acme", "jazz"),
    ),
    Case(
        "topic-en-where-work",
        (
            "I work at Globex.",
            "I love hiking.",
            "I'm allergic to peanuts.",
            "Can you forget where I work?",
        ),
        "What should I pack for a day trip?",
        gone=("Globex",),
        kept=("hiking", "peanuts"),
        answer=("peanuts",),
    ),
    Case(
        "topic-en-allergy",
        (
            "I'm allergic to peanuts.",
            "I don't eat pork.",
            "I love Thai food.",
            "Delete everything you know about my allergies.",
        ),
        "Can you suggest a dinner?",
        gone=("peanuts",),
        kept=("pork", "Thai food"),
        answer=("pork",),
    ),
    Case(
        "topic-en-steak",
        (
            "I love steak.",
            "I like tea.",
            "I enjoy tennis.",
            "Hey, could you remove steak from your memory?",
        ),
        "What do I enjoy?",
        gone=("steak",),
        kept=("tea", "tennis"),
    ),
    Case(
        "topic-en-postgres",
        ("We use Postgres.", "I use Python.", "I like tea.", "Stop bringing up Postgres."),
        "Which tools do I use?",
        gone=("Postgres",),
        kept=("Python", "tea"),
    ),
    Case(
        "topic-en-summary",
        (
            "I love green tea.",
            "My goal is to plan a healthy breakfast week.",
            "I want green tea with every breakfast.",
            "Let's go with oatmeal on Monday.",
            "I want eggs for the second day.",
            "Please forget that I love green tea.",
        ),
        "What did we plan for breakfast?",
        gone=("green tea",),
        kept=("oatmeal",),
        then=(
            "Let's do yogurt for day three.",
            "I want fruit for day four.",
            "We decided on pancakes for day five.",
        ),
        summary=True,
    ),
    Case(
        "topic-zh-cat",
        ("我喜欢猫。", "我喜欢熊猫。", "我很喜欢猫头鹰。", "请忘掉我喜欢猫这件事"),
        "我喜欢什么动物？",
        gone=(CAT,),
        kept=("熊猫", "猫头鹰"),
        answer=("熊猫",),
    ),
    Case(
        "topic-zh-where-work",
        ("我住在成都。", "我在阿里巴巴工作。", "我喜欢火锅。", "请忘记我在哪里工作"),
        "周末有什么推荐？",
        gone=("阿里巴巴",),
        kept=("成都", "火锅"),
        answer=("成都",),
    ),
    Case(
        "topic-zh-chengdu",
        ("我住在成都。", "我喜欢熊猫。", "我对花生过敏。", "帮我把关于成都的记录删了吧"),
        "给我推荐个周末活动？",
        gone=("成都",),
        kept=("熊猫", "花生"),
        answer=("花生",),
    ),
    Case(
        "topic-zh-where-live-question",
        ("我住在杭州。", "我喜欢龙井茶。", "我是一名设计师。", "请问你能忘记我住在哪里吗？"),
        "我平时喝什么茶？",
        gone=("杭州",),
        kept=("龙井茶", "设计师"),
        answer=("龙井茶",),
    ),
    Case(
        "topic-zh-name",
        ("我叫小王。", "我喜欢爬山。", "我住在成都。", "忘记我叫什么"),
        "周末做点什么好？",
        gone=("小王",),
        kept=("爬山", "成都"),
    ),
    Case(
        "topic-zh-allergy",
        ("我对花生过敏。", "我不吃辣。", "我喜欢吃面条。", "删除我的过敏信息"),
        "晚饭吃什么好？",
        gone=("花生",),
        kept=("辣", "面条"),
        answer=("辣",),
    ),
    Case(
        "topic-zh-panda",
        ("我喜欢熊猫。", "我喜欢猫。", "我很喜欢猫头鹰。", "不要再提熊猫了"),
        "我喜欢什么动物？",
        gone=("熊猫",),
        kept=("喜欢猫", "猫头鹰"),
    ),
    Case(
        "topic-zh-summary",
        (
            "我喜欢喝龙井茶。",
            "我的目标是安排一周的早餐。",
            "我想每天早餐都配龙井茶。",
            "决定周一吃燕麦。",
            "我想第二天吃鸡蛋。",
            "请忘掉龙井茶",
        ),
        "我们的早餐计划是什么？",
        gone=("龙井茶",),
        kept=("燕麦",),
        then=("第三天就用酸奶吧，决定了。", "我想第四天吃水果。", "决定第五天吃煎饼。"),
        summary=True,
    ),
]

DEICTIC = [
    Case(
        "deictic-zh-with-a-reason",
        ("我不吃辣。", "我下个月要去上海出差。", "当我没说，还没定呢"),
        "我下个月有什么安排？",
        gone=("上海",),
        kept=("辣",),
    ),
    # A reason after the request: it is still the request, and what it gives as a reason is
    # no memory.
    Case(
        "deictic-en-with-a-reason",
        (
            "I'm vegetarian.",
            "I got the job at Initech!",
            "ok scratch that, forget what I just said, it's not official yet",
        ),
        "Where do I work?",
        gone=("Initech",),
        kept=("vegetarian",),
    ),
    Case(
        "deictic-en-scratch",
        ("I love jazz.", "I hate cilantro.", "Scratch that."),
        "What music do I like?",
        gone=("cilantro",),
        kept=("jazz",),
        answer=("jazz",),
    ),
    Case(
        "deictic-en-forget-that",
        ("I live in Berlin.", "I'm allergic to shellfish.", "Forget that."),
        "Any dinner ideas?",
        gone=("shellfish",),
        kept=("Berlin",),
        answer=("Berlin",),
    ),
    Case(
        "deictic-en-just-said",
        ("I like tea.", "I'm a nurse.", "Please forget what I just said."),
        "What do I do for a living?",
        gone=("nurse",),
        kept=("tea",),
    ),
    Case(
        "deictic-en-delete-that",
        ("I love steak.", "I work at Initech.", "Actually, delete that."),
        "Where do I work?",
        gone=("Initech",),
        kept=("steak",),
    ),
    Case(
        "deictic-en-polite-question",
        ("I love hiking.", "I'm vegan.", "Could you forget that, please?"),
        "What should I cook tonight?",
        gone=("vegan",),
        kept=("hiking",),
    ),
    Case(
        "deictic-en-never-mind",
        ("I like tea.", "My name is Tomtom.", "I love tomatoes.", "Never mind what I just said."),
        "What's my name?",
        gone=("tomatoes",),
        kept=("tea", "Tomtom"),
        answer=("Tomtom",),
    ),
    Case(
        "deictic-en-i-said-that",
        ("I like tea.", "I hate cilantro.", "Forget I said that."),
        "What do I like to drink?",
        gone=("cilantro",),
        kept=("tea",),
    ),
    Case(
        "deictic-zh-pretend",
        ("我喜欢爬山。", "我讨厌香菜。", "当我没说"),
        "我有什么爱好？",
        gone=("香菜",),
        kept=("爬山",),
    ),
    Case(
        "deictic-zh-dont-mention",
        ("我住在成都。", "我对虾过敏。", "别再提这个了"),
        "晚饭吃什么？",
        gone=("虾",),
        kept=("成都",),
        answer=("成都",),
    ),
    Case(
        "deictic-zh-just-said",
        ("我喜欢猫。", "我是一名护士。", "刚才说的别记了"),
        "我是做什么工作的？",
        gone=("护士",),
        kept=("喜欢猫",),
    ),
    Case(
        "deictic-zh-delete-this",
        ("我喜欢熊猫。", "我在腾讯工作。", "把这个删掉"),
        "我在哪里上班？",
        gone=("腾讯",),
        kept=("熊猫",),
    ),
    Case(
        "deictic-zh-last-sentence",
        ("我喜欢喝茶。", "我吃素。", "刚才那句话删掉"),
        "今晚吃什么？",
        gone=("吃素",),
        kept=("喝茶",),
    ),
    Case(
        "deictic-zh-never-mind",
        ("我叫小李。", "我喜欢猫头鹰。", "算了，刚才那句别记了"),
        "我叫什么名字？",
        gone=("猫头鹰",),
        kept=("小李",),
        answer=("小李",),
    ),
    Case(
        "deictic-zh-take-back",
        ("我住在杭州。", "我不吃香菜。", "撤回刚才那句"),
        "晚饭有什么推荐？",
        gone=("香菜",),
        kept=("杭州",),
        answer=("杭州",),
    ),
]

DONT_REMEMBER = [
    Case(
        "dontremember-en-allergy",
        (
            "I'm allergic to peanuts.",
            "I love jazz.",
            "Please don't remember that I'm allergic to peanuts.",
        ),
        "Any snack ideas?",
        gone=("peanuts",),
        kept=("jazz",),
    ),
    Case(
        "dontremember-en-where-live",
        ("I live in Berlin.", "I work at Acme.", "I don't want you to remember where I live."),
        "What's a good weekend plan?",
        gone=("Berlin",),
        kept=("Acme",),
    ),
    Case(
        "dontremember-en-keep-that",
        ("I'm vegetarian.", "I love tomatoes.", "Don't keep that."),
        "What should I make for lunch?",
        gone=("tomatoes",),
        kept=("vegetarian",),
        answer=("vegetarian",),
    ),
    Case(
        "dontremember-en-name",
        ("My name is Sam.", "I like tea.", "You don't need to remember my name."),
        "What do I like to drink?",
        gone=("Sam",),
        kept=("tea",),
    ),
    Case(
        "dontremember-en-stop",
        ("I like tea.", "I love steak.", "Stop remembering that I like steak."),
        "What do I like?",
        gone=("steak",),
        kept=("tea",),
        answer=("tea",),
    ),
    Case(
        "dontremember-en-summary",
        (
            "I enjoy chess.",
            "My goal is to learn a new opening.",
            "I want to practice chess every evening.",
            "I work at Initech.",
            "Let's go with the London System.",
            "Don't save anything about chess, please.",
        ),
        "What did we decide?",
        gone=("chess",),
        kept=("Initech", "London System"),
        then=(
            "We decided to review games on Sunday.",
            "I want a calmer schedule.",
            "Let's go with two sessions a week.",
        ),
        summary=True,
    ),
    Case(
        "dontremember-zh-city",
        ("我住在成都。", "我喜欢火锅。", "不要记住我住在成都"),
        "周末吃什么好？",
        gone=("成都",),
        kept=("火锅",),
    ),
    Case(
        "dontremember-zh-cat",
        ("我喜欢猫。", "我喜欢熊猫。", "别记我喜欢猫"),
        "我喜欢什么动物？",
        gone=(CAT,),
        kept=("熊猫",),
        answer=("熊猫",),
    ),
    Case(
        "dontremember-zh-vegetarian",
        ("我吃素。", "我住在杭州。", "我吃素这件事就不用记了"),
        "今晚吃什么？",
        gone=("吃素",),
        kept=("杭州",),
        answer=("杭州",),
    ),
    Case(
        "dontremember-zh-allergy",
        ("我对花生过敏。", "我喜欢跑步。", "以后别记着我对花生过敏了"),
        "推荐点零食？",
        gone=("花生",),
        kept=("跑步",),
    ),
    Case(
        "dontremember-zh-name",
        ("我叫小王。", "我在字节跳动上班。", "请不要保存我的名字"),
        "我在哪里上班？",
        gone=("小王",),
        kept=("字节跳动",),
        answer=("字节跳动",),
    ),
    Case(
        "dontremember-zh-summary",
        (
            "我是一名律师。",
            "我喜欢爬山。",
            "我的目标是准备一次周末徒步。",
            "我想在莫干山徒步。",
            "决定周六出发。",
            "我想带两瓶水。",
            "不要记住莫干山",
        ),
        "我们的徒步计划是什么？",
        gone=("莫干山",),
        kept=("律师", "爬山", "周六出发"),
        then=("决定住山脚的民宿。", "我想第二天早点下山。", "决定周日中午回家。"),
        summary=True,
    ),
]

SUPERSEDE = [
    Case(
        "supersede-en-city",
        ("I live in Berlin.", "I love jazz.", "I moved to Munich."),
        "Where do I live?",
        gone=("Berlin",),
        kept=("jazz",),
        answer=("Munich",),
        request=False,
    ),
    Case(
        "supersede-en-employer",
        ("I work at Acme.", "I like tea.", "I work at Globex."),
        "Where do I work?",
        gone=("Acme",),
        kept=("tea",),
        answer=("Globex",),
        request=False,
    ),
    Case(
        "supersede-en-diet",
        ("I'm vegetarian.", "I love hiking.", "I'm vegan."),
        "What should I eat tonight?",
        gone=("vegetarian",),
        kept=("hiking",),
        answer=("vegan",),
        request=False,
    ),
    Case(
        "supersede-en-name",
        ("My name is Sam.", "I like tea.", "Call me Alex."),
        "What's my name?",
        gone=("Sam",),
        kept=("tea",),
        answer=("Alex",),
        request=False,
    ),
    Case(
        "supersede-en-no-longer",
        ("I love coffee.", "I like tea.", "I no longer drink coffee."),
        "What do I drink?",
        gone=(("coffee", r"(?i)\b(?:likes?|love) coffee\b"),),
        kept=("tea",),
        answer=("no longer drinks coffee",),
        request=False,
    ),
    Case(
        "supersede-en-job",
        ("I'm a teacher.", "I live in Leeds.", "I'm a nurse now."),
        "What do I do for work?",
        gone=("teacher",),
        kept=("Leeds",),
        answer=("nurse",),
        request=False,
    ),
    Case(
        "supersede-en-restated",
        ("I live in Berlin.", "I love jazz.", "I'm based in Berlin.", "I moved to Munich."),
        "Where do I live?",
        gone=("Berlin",),
        kept=("jazz",),
        answer=("Munich",),
        request=False,
    ),
    Case(
        "supersede-zh-city",
        ("我住在成都。", "我喜欢火锅。", "我搬到杭州了。"),
        "我住在哪里？",
        gone=("成都",),
        kept=("火锅",),
        answer=("杭州",),
        request=False,
    ),
    Case(
        "supersede-zh-restated",
        ("我住在成都。", "我喜欢火锅。", "我现在住在成都。", "我搬到杭州了。"),
        "我住在哪里？",
        gone=("成都",),
        kept=("火锅",),
        answer=("杭州",),
        request=False,
    ),
    Case(
        "supersede-zh-employer",
        ("我在阿里巴巴工作。", "我喜欢猫。", "我现在在腾讯上班。"),
        "我在哪里工作？",
        gone=("阿里巴巴",),
        kept=("喜欢猫",),
        answer=("腾讯",),
        request=False,
    ),
    Case(
        "supersede-zh-job",
        ("我是老师。", "我住在成都。", "我是一名程序员。"),
        "我是做什么的？",
        gone=("老师",),
        kept=("成都",),
        answer=("程序员",),
        request=False,
    ),
    Case(
        "supersede-zh-no-longer",
        ("我喜欢喝咖啡。", "我喜欢猫。", "我不再喝咖啡了。"),
        "我平时喝什么？",
        gone=(("喝咖啡", r"喜欢喝咖啡"),),
        kept=("喜欢猫",),
        answer=("不喝咖啡",),
        request=False,
    ),
    Case(
        "supersede-zh-name",
        ("我叫小王。", "我喜欢跑步。", "我的名字是王小明。"),
        "我叫什么名字？",
        gone=("小王",),
        kept=("跑步",),
        answer=("王小明",),
        request=False,
    ),
    Case(
        "supersede-zh-diet",
        ("我吃素。", "我喜欢爬山。", "我不再吃素了。"),
        "今晚吃什么？",
        gone=(("吃素", r"(?<![不再])吃素"),),
        kept=("爬山",),
        answer=("不吃素",),
        request=False,
    ),
]

SENSITIVE = [
    Case(
        "sensitive-en-phone",
        ("My phone number is 415-555-0132.", "I like tea."),
        "How can you reach me?",
        kept=("tea",),
        secret=("415-555-0132",),
        request=False,
    ),
    Case(
        "sensitive-en-email-end",
        ("I live in Austin.", "You can write to me at jane.doe@example.org"),
        "How do I get in touch?",
        kept=("Austin",),
        secret=("jane.doe@example.org",),
        request=False,
    ),
    Case(
        "sensitive-en-card",
        ("My card number is 4242 4242 4242 4242.", "I love steak."),
        "What's my card?",
        kept=("steak",),
        secret=("4242 4242 4242 4242",),
        request=False,
    ),
    Case(
        "sensitive-en-password",
        ("I work at Acme.", "My password is Tr0ub4dor&3."),
        "What's my password?",
        kept=("Acme",),
        secret=("Tr0ub4dor&3",),
        request=False,
    ),
    Case(
        "sensitive-en-api-key",
        ("I use Python.", "My API key is sk-proj-9fQ2xLm4Tz8WbN1cV7aa"),
        "What key do I use?",
        kept=("Python",),
        secret=("sk-proj-9fQ2xLm4Tz8WbN1cV7aa",),
        request=False,
    ),
    Case(
        "sensitive-en-phone-mid",
        ("I love hiking.", "Text me at +1 512 555 0199 when you're free, I live in Denver."),
        "How can you contact me?",
        kept=("hiking",),
        secret=("+1 512 555 0199",),
        request=False,
    ),
    Case(
        "sensitive-en-forget-email",
        (
            "I live in Austin.",
            "My email is sam.lee@example.com.",
            "Please forget my email address.",
        ),
        "Where do I live?",
        kept=("Austin",),
        answer=("Austin",),
        secret=("sam.lee@example.com",),
        note="nothing",
    ),
    Case(
        "sensitive-zh-phone",
        ("我的手机号是13812345678，有事打给我。", "我喜欢爬山。"),
        "怎么联系我？",
        kept=("爬山",),
        secret=("13812345678",),
        request=False,
    ),
    Case(
        "sensitive-zh-email-glued",
        ("我住在成都。", "我的邮箱是wang.xm@example.com"),
        "我的邮箱是什么？",
        kept=("成都",),
        secret=("wang.xm@example.com",),
        request=False,
    ),
    Case(
        "sensitive-zh-bank-card",
        ("我的银行卡号是6222021234567890123，别告诉别人。", "我喜欢火锅。"),
        "我的卡号是多少？",
        kept=("火锅",),
        secret=("6222021234567890123",),
        request=False,
    ),
    Case(
        "sensitive-zh-password",
        ("我喜欢猫。", "我的密码是Hunter2024!，帮我记一下"),
        "我的密码是什么？",
        kept=("喜欢猫",),
        secret=("Hunter2024!",),
        request=False,
    ),
    Case(
        "sensitive-zh-api-key",
        ("我们用Go写后端。", "我的API key是sk-proj-7dK3pQ9wZr2YhB5nM1xx"),
        "我的密钥是什么？",
        kept=("Go",),
        secret=("sk-proj-7dK3pQ9wZr2YhB5nM1xx",),
        request=False,
    ),
    Case(
        "sensitive-zh-phone-end",
        ("我喜欢跑步。", "有急事请打我手机13912345678"),
        "怎么找到我？",
        kept=("跑步",),
        secret=("13912345678",),
        request=False,
    ),
    Case(
        "sensitive-zh-forget-email",
        ("我住在成都。", "我的邮箱是 wang@example.cn。", "可以把我的邮箱地址删掉吗？"),
        "我住在哪里？",
        kept=("成都",),
        answer=("成都",),
        secret=("wang@example.cn",),
        note="nothing",
    ),
]

CASES = [*TOPIC, *DEICTIC, *DONT_REMEMBER, *SUPERSEDE, *SENSITIVE]


def _pattern(gone: Gone) -> re.Pattern[str]:
    if isinstance(gone, tuple):
        return re.compile(gone[1])
    if gone.isascii():
        return re.compile(rf"(?i)(?<![A-Za-z0-9]){re.escape(gone)}(?![A-Za-z0-9])")
    return re.compile(re.escape(gone))


def _query(gone: Gone) -> str:
    return gone[0] if isinstance(gone, tuple) else gone


def _secret(value: str) -> re.Pattern[str]:
    """The value, or its digits with any spacing if it is a number (4242 4242 = 4242-4242)."""
    digits = re.sub(r"\D", "", value)
    if len(digits) >= 7 and len(digits) >= len(value) // 2:
        return re.compile(r"[\s-]?".join(digits))
    return re.compile(re.escape(value))


def _cfg(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


def _text(record: MemoryRecord | dict[str, Any]) -> str:
    if isinstance(record, MemoryRecord):
        return f"{record.content}\n{record.value or ''}"
    return f"{record.get('content', '')}\n{record.get('value') or ''}"


def _is_summary(row: dict[str, Any]) -> bool:
    return row.get("kind") == "episode" and (row.get("source") or {}).get("via") == "summary"


async def _summaries(session: Session, user: str, thread: str) -> tuple[str, int]:
    """Return the thread's rolling summary and active summary episodes as text, and the count."""
    state = (await session.graph.aget_state(_cfg(thread))).values
    rows = await session.service.aexport(user)
    archived = [r["content"] for r in rows if _is_summary(r) and r["status"] in LIVE]
    text = json.dumps(state.get("summary") or {}, ensure_ascii=False) + "\n" + "\n".join(archived)
    return text, int(state.get("summary_count") or 0)


async def _converse(session: Session, case: Case, user: str, thread: str) -> list[str]:
    """Play the case's conversation; return problems seen on the way."""
    problems: list[str] = []
    for n, text in enumerate(case.said):
        last = n == len(case.said) - 1
        if last and case.summary:
            before, count = await _summaries(session, user, thread)
            # The setup must put the value in the summary, or the case proves nothing.
            assert count > 0, "setup: no rolling summary was built before the request"
            assert any(_pattern(g).search(before) for g in case.gone), (
                f"setup: the summary does not state {case.gone} before the request: {before}"
            )
        result = await session.turn(user, thread, text)
        if last and case.request:
            want = FORGOT if case.note == "forgot" else NOTHING
            if not want.search(result.reply):
                problems.append(
                    f"note after {text!r}: expected {case.note!r}, got {result.reply!r}"
                    f" (saved: {result.saved})"
                )
    if case.then:
        _, count = await _summaries(session, user, thread)
        for text in case.then:
            await session.turn(user, thread, text)
        _, later = await _summaries(session, user, thread)
        assert later > count, "setup: the later turns did not build a new summary"
    return problems


def _check_gone(case: Case, where: str, texts: list[str]) -> list[str]:
    out = []
    for gone in case.gone:
        pat = _pattern(gone)
        out += [f"{where}: gone {_query(gone)!r} still in {t!r}" for t in texts if pat.search(t)]
    for secret in case.secret:
        pat = _secret(secret)
        out += [f"{where}: secret {secret!r} in {t!r}" for t in texts if pat.search(t)]
    return out


async def _check(session: Session, case: Case, user: str, thread: str, other: str) -> list[str]:
    problems: list[str] = []
    service = session.service

    # Recall from a new thread: recalled memories, memory block, reply.
    result = await session.turn(user, other, case.ask)
    block = (await session.graph.aget_state(_cfg(other))).values.get("memory_block") or ""
    recalled = [r["content"] for r in result.recalled]
    problems += _check_gone(case, "new thread recall", recalled)
    problems += _check_gone(case, "new thread memory block", [block])
    problems += _check_gone(case, "new thread reply", [result.reply])
    for text in case.answer:
        if text not in block:
            problems.append(f"new thread memory block: {text!r} missing from {block!r}")

    # search, for the question and for the forgotten words themselves.
    queries = [case.ask, *(_query(g) for g in case.gone), *case.secret]
    for query in queries:
        found = [r.record.content for r in await service.asearch(user, query)]
        problems += _check_gone(case, f"search({query!r})", found)

    # Live records, raw turns included.
    live = await service.alist(user, include_turns=True)
    problems += _check_gone(case, "live records", [_text(r) for r in live])

    # Precision: every other statement is still active, as a memory and as a raw turn.
    turns = {r.content for r in live if r.subject.startswith("episode.turn.")}
    for text in case.kept:
        if not any(text in r.content for r in live):
            problems.append(f"kept {text!r}: no live record says it any more")
        found = [r.record.content for r in await service.asearch(user, text)]
        if not any(text in f for f in found):
            problems.append(f"kept {text!r}: search({text!r}) no longer finds it: {found}")
    secrets = [_secret(s) for s in case.secret]
    gone = [_pattern(g) for g in case.gone]
    for text in case.statements:
        if any(p.search(text) for p in [*gone, *secrets]):
            continue
        if text not in turns:
            problems.append(f"raw turn {text!r} is no longer active")

    # Export: no live row states what is gone; nothing else was ended; secrets nowhere.
    rows = await service.aexport(user)
    problems += _check_gone(
        case, "export (live rows)", [_text(r) for r in rows if r["status"] in LIVE]
    )
    for row in rows:
        if row["status"] in LIVE or _is_summary(row):
            continue
        if not any(p.search(_text(row)) for p in gone):
            problems.append(f"export: {row['status']} though not targeted: {row['content']!r}")
    dump = json.dumps(rows, ensure_ascii=False, default=str)
    problems += [
        f"export: secret {s!r} appears"
        for s, p in zip(case.secret, secrets, strict=True)
        if p.search(dump)
    ]
    if case.request:
        request = case.said[-1]
        if any(row["content"] == request for row in rows):
            problems.append(f"export: the request {request!r} was archived as a raw turn")

    # The original thread: its messages, rolling summary and working memory.
    state = (await session.graph.aget_state(_cfg(thread))).values
    messages = [m.content for m in state.get("messages", []) if isinstance(m.content, str)]
    if case.family != "supersede":  # an old value the thread once stated is history, not a leak
        problems += _check_gone(case, "thread messages", messages)
    else:
        problems += [
            f"thread messages: secret {s!r}"
            for s, p in zip(case.secret, secrets, strict=True)
            if any(p.search(m) for m in messages)
        ]
    shortterm = json.dumps(
        {key: state.get(key) for key in ("summary", "working", "memory_block", "recalled")},
        ensure_ascii=False,
    )
    if case.family != "supersede":
        problems += _check_gone(case, "thread summary / working memory / last recall", [shortterm])
    summaries, _ = await _summaries(session, user, thread)
    problems += _check_gone(case, "summaries", [summaries])
    notes = [
        m.content
        for m in state.get("messages", [])
        if isinstance(m, AIMessage) and m.name == "memory"
    ]
    if case.request and not notes:
        problems.append("thread: no memory note was given")
    return problems


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
async def test_every_copy_obeys(case: Case) -> None:
    settings = Settings.from_env()
    if case.summary:
        settings = dataclasses.replace(settings, summary_tokens=SUMMARY_TOKENS)
    # Neutral ids: a thread id is quoted in the memory block, and must not say "tea".
    n = CASES.index(case)
    user, thread, other = f"user{n}", f"thread{n}a", f"thread{n}b"
    async with open_session(settings) as session:
        problems = await _converse(session, case, user, thread)
        problems += await _check(session, case, user, thread, other)
    assert not problems, "\n".join(problems)


def test_the_table_is_balanced() -> None:
    langs = [c.id.split("-")[1] for c in CASES]
    assert len(CASES) >= 64 and langs.count("zh") == langs.count("en")
    assert len({c.id for c in CASES}) == len(CASES)
    for family in ("topic", "deictic", "dontremember", "supersede", "sensitive"):
        assert sum(c.family == family for c in CASES) >= 12, family

"""Whether a sentence asks rather than states, judged by its form; where sentences end.

The understanding model (`memory.understanding`) reads what a sentence is; these exact-form
checks are what every reader shares besides: a question mark, an auxiliary or a wh-word
opening an English question, a Chinese question word or final particle. The extractor, the
raw archive and the offline thread summary judge a question the same way
(`memory.requests.is_question` reads a whole message with them).

How a request is asked is here too: a polite tag at its end ("…, ok?", "…好吗？") asks
nothing ("Let's keep my salary off the record, ok?" is a request: its question mark belongs
to the tag), and a favour asked ("Would you mind …", "能不能…") is not a question whether
something was done.
"""

from __future__ import annotations

import re

from memory.text.language import EMOJI, HAN, HAN_CHAR, HAN_SPACE, NOT_AN_END, read_form
from memory.text.statements import parts_of

# An auxiliary verb opening a yes/no question is followed by its subject ("do you", "is it",
# "can Anna"); followed by anything else it opens a statement ("Will is my brother", "Do
# remember: ...", "Can't wait", "Had the best day"), so both parts are required.
_PRONOUN_EN = r"i|you|u|we|they|he|she|it|there|anyone|anybody|someone|somebody|everyone|everybody"
_YES_NO_EN = re.compile(
    rf"^(?:(?:do|does|did|can|could|should|would|will|shall|may|might|must|is|are|am|was|were)"
    rf"(?:n't|nt)?\s+(?:(?:{_PRONOUN_EN}|the|this|that|these|those|my|your|our|their|his|her"
    rf"|its|any|a|an)\b|(?-i:[A-Z]))"
    rf"|(?:have|has|had)(?:n't|nt)?\s+(?:{_PRONOUN_EN})\b)",
    re.I,
)
# A wh-word contracted with no apostrophe ("whats the bus into town", "wheres the nearest
# chemist") is one as typed quickly.
_WH_START_EN = re.compile(r"^(?:what|where|when|why|how|who|whom|whose|which)s?\b", re.I)
# "Any" opening a sentence with no verb of its own asks ("any good curry houses round mine",
# "any ideas"), as does a last part that asks for them ("doing a roast sunday, any ideas"); "any
# day now", "anyway" do not.
_ANY_EN = re.compile(
    r"(?:^(?:(?:so|ok|okay|and|hey|also)\s+)*|[,;]\s*)any\s+(?!(?:day|time|way|more|longer"
    r"|how|chance)\b)\w+(?:\s+\w+){0,6}\s*[.!]*$",
    re.I,
)
# A wh-word followed by a subject and a clause opens a statement: "When I was ten we moved
# to Lyon", "What I want is a dog", "How I love this city".
_WH_STATEMENT_EN = re.compile(
    r"^(?:(?:what|where|when|why|how|who|which)\s+(?:i|we|he|she|they|my|our)\s+\S+\s+\S+"
    r"|what an?\b|what such\b|which (?:reminds|means)\b)",
    re.I,
)
# A request to the assistant opens with its verb ("give me a pasta sauce I could make on the
# weekend", "recommend a film for tonight"): it asks for something and states nothing.
_ASK_EN = re.compile(
    r"^(?:(?:please|pls|ok|so|now|hey)\s+)*(?:tell me|remind me|guess|(?:give|show|send|write|find"
    r"|get|make|lend|bring)\s+me\b|recommend|suggest|explain|describe)\b",
    re.I,
)
# A request for help or for a text ("help me …", "draft a note to …"): a request, or a plan
# the user has ("help me plan a trip to Japan"), which the model tells apart (`only_asks_for_help`).
_HELP_EN = re.compile(
    r"^(?:(?:please|pls|ok|so|now|hey|go ahead and)\s+)*(?:help me|(?:write|draft|translate"
    r"|summari[sz]e|proofread|rewrite|rephrase)\s+(?:a|an|the|this|that|these|those|some|up"
    r"|out)\b|(?:give|show|send|write|find|get|make|lend|bring)\s+me\b|recommend|suggest)",
    re.I,
)

# Chinese question words. Used non-interrogatively they are indefinite or universal
# pronouns ("我什么都吃", "谁都知道", "怎么也睡不着", "没什么事"), or sit in an embedded
# clause under a verb of (not) knowing ("我不知道为什么喜欢猫", "说不上来为什么").
_ZH_WH = (
    r"什么|啥|哪(?!怕)|几点|几号|几岁|几月|为什么|为啥|怎么|咋|谁|多少|多大|多久|多远|多长"
    r"|如何|干嘛"
)
_ZH_WH_RE = re.compile(_ZH_WH)
_ZH_A_NOT_A = f"([{HAN}]{{1,2}})[不没]\\1"
_ZH_BREAK = r"[^，,。.!！?？；;]"
_ZH_UNIVERSAL = re.compile(rf"(?:{_ZH_WH}|{_ZH_A_NOT_A}){_ZH_BREAK}{{0,4}}?[都也就]")
_ZH_INDEFINITE = re.compile(
    r"(?:不知道|不清楚|不记得|记不得|记不清|忘了|说不上来?|说不清|不明白|不懂|搞不懂|想不通"
    r"|想不起来?|我[也都就]?(?:知道|记得|明白|清楚|懂)|无论|不管|随便|没有?|不是|[不没](?=怎)"
    r"|好像|似乎|可能|也许|大概|反正|这就是|那就是|这也是|[点些](?=(?:什么|啥)(?!子?好)))"
    rf"{_ZH_BREAK}{{0,6}}?(?:{_ZH_WH}|{_ZH_A_NOT_A})"
)
_ZH_ETC = re.compile(r"什么的|多少有|多多少少|或多或少|怎么说呢")
_ZH_FINAL_PARTICLE = re.compile(r"(?:吗|(?<![这那什怎多要])么)[。.!！~～…]*$")
# "呢" ends statements too ("我还在加班呢", "好着呢"); it asks after a question word (caught
# below) or on a short topic ("你呢", "那明天呢").
_ZH_NE = re.compile(r"^[^，,。.!！还在着正了]{1,4}呢[。.!！~～…]*$")
# A request to the assistant opens with "help me" and its verb ("帮我把这句翻成英文：…",
# "帮我写段祝福语"): unless the model reads a plan of the user's in it, what it quotes or asks
# for is not the user's to remember. "帮我记一下…" asks to remember, and "帮我妈…" is about the
# user's mother.
_ZH_REQUEST = (
    r"^(?:请|麻烦你?|你)?(?:帮我|替我|帮忙)(?:把|给|写|想|列|查|看|算|翻|改|润色|排|整理|找|推荐"
    r"|规划|出|做|生成|总结|起|编|检查|画|设计|拟|准备|挑|选|对比|分析)"
)
_ZH_REQUEST_RE = re.compile(_ZH_REQUEST)
_ZH_ASK = re.compile(rf"{_ZH_A_NOT_A}|是不是|有没有|对不对|^(?:请问|告诉我|提醒我|猜猜)")


# A clause that only announces a question ("我想问一下", "你还记得", "对了").
_ZH_ASK_LEAD = re.compile(
    r"^(?:那|所以|对了|还有|嗯|哦|好的?|话说)?(?:我)?(?:想|要|能|再)?"
    r"(?:问|请问|知道|打听|确认|查|看看)(?:一下|下|问|你)*$|^你(?:还)?(?:说|觉得|记得|知道)$"
)


def _asks_zh(clause: str) -> bool:
    """Return True if one Chinese clause asks."""
    if _ZH_FINAL_PARTICLE.search(clause) or _ZH_NE.search(clause):
        return True
    rest = _ZH_ETC.sub("", _ZH_INDEFINITE.sub("", _ZH_UNIVERSAL.sub("", clause)))
    return bool(_ZH_WH_RE.search(rest) or _ZH_ASK.search(rest))


# A clause that only sets the scene of the next one ("我外出旅行那阵子", "为了老爷子的护理").
_ZH_SUBORDINATE = re.compile(
    r"(?:以后|之后|后|以前|之前|时|时候|那阵子|那会儿|期间|的话)$|^(?:如果|要是|为了|等到?|自从|关于)"
)


def _asks_for_help(text: str) -> bool:
    """Return True if a text opens with a request to the assistant ("帮我把…", "help me …")."""
    s = text.strip().strip("\"'“”‘’「」")
    return bool(_ZH_REQUEST_RE.match(s) or _HELP_EN.match(s))


# A clause of the user's own after a request ("帮我挑家餐厅，我对芒果过敏", "help me pick a
# restaurant, I'm allergic to mango") states something; what is quoted after a colon does not.
_OWN_CLAUSE = re.compile(r"[，,;；]\s*(?:我(?!们的?公司)|(?:I|I'm|I've|I'd|my)\b)", re.I)


def only_asks_for_help(s: str) -> bool:
    """Return True if a sentence is worded as a request to the assistant and nothing more.

    "帮我把这句翻成英文：…", "帮我写个请假条，就说孩子发烧了"; not "帮我挑家餐厅，我对芒果过敏",
    which states something of the user's own after the request. The wording alone does not
    make it a question: "帮我规划一下日本旅行" and "Help me plan a trip to Japan" are plans the
    user has, which the model reads (`Reading.plans`); the offline extractor and the raw
    archive ask it (`graphs.offline_rules`, `memory.turn`).
    """
    if not _asks_for_help(s):
        return False
    quoted = re.search(r"[:：]", s)
    own = _OWN_CLAUSE.search(s)
    return own is None or (quoted is not None and quoted.start() < own.start())


def asks_by_form(sentence: str) -> bool:
    """Return True if one sentence asks rather than states.

    A question mark asks. Without one, a Chinese sentence is read clause by clause (clauses
    chain with commas far more than in English, and chat writing chains them with spaces):
    it asks when every clause that says something asks or only sets the scene, so
    "最近头发掉得有点多，是不是压力太大了" states (and is kept) while "我弟弟多大了，在哪上学"
    asks.
    """
    s = read_form(sentence.strip().strip("\"'“”‘’「」"))
    if not s:
        return False
    if s.endswith(("?", "？")):
        return True
    if HAN_CHAR.search(s):
        clauses = [c.strip() for c in re.split(rf"[，,、:：]|{HAN_SPACE}", s) if c.strip()]
        verdicts = [_asks_zh(c) or bool(_ZH_ASK_LEAD.search(c)) for c in clauses]
        if not verdicts[-1]:
            return False
        return all(
            v or is_filler(c) or bool(_ZH_SUBORDINATE.search(c.rstrip("。.!！~～…")))
            for v, c in zip(verdicts, clauses, strict=True)
        )
    if _YES_NO_EN.match(s) or _ASK_EN.match(s) or _ANY_EN.search(s):
        return True
    return bool(_WH_START_EN.match(s)) and not _WH_STATEMENT_EN.match(s)


def is_filler(sentence: str) -> bool:
    """Return True for a sentence too short to state anything ("Hi!", "好的。", "嗯")."""
    cjk = len(HAN_CHAR.findall(sentence))
    if cjk:
        return cjk < 3
    return len(re.findall(r"[A-Za-z0-9']+", sentence)) < 3


_EMOJI_END = f"(?<=[{EMOJI}])\\s*(?=\\w)"


def split_sentences(text: str) -> list[str]:
    """Return the sentences of a message, in order."""
    # A full stop inside a word ("bob@example.com", "3.11") does not end a sentence; an
    # emoji followed by more words does, as a full stop would (`_EMOJI_END`); an
    # abbreviation's does not ("St. Vincent's").
    parts = re.split(rf"(?<=[!?。！？；;\n])\s*|(?<=\.){NOT_AN_END}(?:\s+|$)|{_EMOJI_END}", text)
    return [p.strip() for p in parts if p.strip()]


_TAG = (
    r"[,，\s]+(?:please|thanks|thank you|ok|okay|alright|all right)"
    r"|[，,]?(?:好吗|好不好|可以吗|行吗|行不行|谢谢)"
)
POLITE_TAG = re.compile(rf"(?i)(?:{_TAG})+[\s?？!！.。~～]*$")
"""A polite tag ending a sentence, with the punctuation after it."""
POLITE_END = re.compile(rf"(?i)(?:{_TAG}|[，,]?(?:吗|呢))+$")
"""How a request's end is softened or asked ("…删掉吗", "…, please"): not what it names."""


def without_tag(sentence: str) -> str:
    """Return a sentence without the polite tag it ends with ("…, ok?" → "…")."""
    s = sentence.strip()
    return POLITE_TAG.sub("", s) or s


# How a favour is asked: a modal question, not one whether something was done or known.
_ASKS_A_FAVOUR = re.compile(
    r"(?i)^(?:please\s+)?(?:would|could|can|will|won't|mind|do you mind|is it (?:ok|okay|alright"
    r"|possible|fine)|would it be|how about|why don't|why not)\b"
    r"|能不能|能否|可不可以|可以|要不|行吗|好吗|好不好|行不行|麻烦"
)


def asks_a_favour(sentence: str) -> bool:
    """Return True if a sentence asks a favour ("Would you mind …", "能不能…"), not a question.

    The favour may follow what it is about: "the stuff about my knee, could you not keep
    that?" names its topic first, and its last part asks the favour.
    """
    return any(_ASKS_A_FAVOUR.search(part) for part in parts_of(sentence))

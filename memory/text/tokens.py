"""The one token estimator: how many tokens a text or a list of chat messages costs.

Every budget in the agent counts with this module: the context window and its budget
(`graphs.window.tokens`), the memory block (`memory.recall.ranking.estimate_tokens`) and the
benchmarks. It needs no tokenizer download and no network.

What it estimates
-----------------
The token count of OpenAI's **o200k_base** encoding (gpt-4o, gpt-4o-mini, gpt-4.1, o-series):
within ±20% for a sentence or more of Chinese, English, mixed Chinese/English, code and
numbers (`tests/unit/test_tokens.py` checks a table of 54 texts against the real encoding;
median errors are a few percent). English, code and numbers cost the same in the older
**cl100k_base** (gpt-4, gpt-3.5-turbo), but Chinese costs it 1.3-1.8 times as many tokens,
so no one estimate is within ±20% of both for Chinese: against cl100k_base this one
undercounts Chinese by about a third. Tokenizers of other OpenAI-compatible models (Qwen,
DeepSeek, ...) spend about as few tokens on Chinese as o200k_base, or fewer. A single short
sentence can be off by a little more than 20% (o200k_base merges common Chinese words into
one token, which a character rule cannot see); errors average out over longer texts.

The rule
--------
The text is cut into pieces the way OpenAI's tokenizers pre-split it, and each piece costs:

* **Chinese characters**: 0.67 each among the 800 characters of common words
  (`COMMON_CJK`), 1.35 each for the others. Kana 0.62, Hangul 0.7, CJK punctuation
  (，。「」…) 0.55 each, fullwidth letters and digits 1.2 each.
* **Latin words**, split at case changes (``camelCase`` → ``camel`` ``Case``) as
  o200k_base does: 1 token, plus 0.05 a letter past 6 (lowercase) or 0.06 / 0.12 a letter
  past 2 (Capitalized / ALL-CAPS); ``'s 't 're 've 'm 'll 'd`` 0.2; accented letters 0.3
  more each. Past 16 letters (hashes, identifiers) a word grows by 1/3 a letter, but never
  past a token per 4 letters.
* **Other letters** (Cyrillic, Greek, Arabic, ...): 0.3 a letter plus 0.3 a word.
* **Digits**: a token per group of up to 3; a space before a number 0.8.
* **Punctuation**: 1 a run plus 0.15 each further mark (a line break right after is
  free); a single mark glued to the next word (``.append``, ``_id``) 0.3.
* **Whitespace**: a space before a word is free; a run of 2+ spaces or tabs 0.7; a line
  break (blank lines included) 1.2.
* Anything else (emoji, symbols): 0.3 a UTF-8 byte.

The sum is rounded up. The weights were fitted (least squares on the relative error) to
o200k_base counts of ~11,000 texts: Debian's Chinese and English message catalogues, Vim's
Chinese and English tutors, Chinese package descriptions, Python source, JSON, generated
numbers and a few dozen chat-style sentences. Messages follow the convention of
`langchain_core.messages.utils.count_tokens_approximately`: content, role, name, an AI
message's tool calls and a tool message's call id, plus 3 tokens a message and 85 an image.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from memory.text.language import HAN

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

__all__ = [
    "COMMON_CJK",
    "EXTRA_TOKENS_PER_MESSAGE",
    "TOKENS_PER_IMAGE",
    "count_message_tokens",
    "count_tokens",
]

EXTRA_TOKENS_PER_MESSAGE = 3
"""Tokens each chat message costs besides its text (as `count_tokens_approximately`)."""
TOKENS_PER_IMAGE = 85
"""An image block (OpenAI's low-resolution cost, as `count_tokens_approximately`)."""

COMMON_CJK = frozenset(
    "一丁七万三上下不与专世业东个中丰为主举久么义之乐九也习书买乱亂了予争事二于云互五亚些交产"
    "享京人亿什今介仕他付代以们件价任份企伊众优会传伦伯位住体何作你使例供価保信修俺倍候倫值假"
    "做停偷像元充先克免兑党入全公六共关其具典养内册军冠况冻准几凤凰出击函分划列则创初删利别到"
    "制刷前力办功加务动助势動務包化北区医十升午华协卓单南博卡印即历原去县参及友双反发取受变口"
    "另只可台右号司合吉同名后吗否吧听告员周命和品响哪售商啪喜器四回因团国图國在地场址坛型城域"
    "基堂報場增士声处备复外多夜大天太夫央头奇奖套女好如妇妻始姐委娱婆婷媒子字存学宁安完官定宝"
    "实客家容宾密富对导尊小少尚就尼局展属山川州工左巧己已市布师帝常幕平年幸广庆序库应底度建开"
    "弊式强当录彩影待很律得微心必快态怎思性总息情惠想意愛感戏成我战截户房所手扑打扫技投护报拍"
    "招择拿持挂指按捕换据排接推描提搜播操支收改攻放政故效教数整文斗料断斯新方施旅旗无日早时明"
    "易星是显時晚普智更最月有朋服期未本术机杀权材条来東极构析林果查标校样根格案棋植業模次欢欧"
    "款止正此步比毛民水永求江汽沙没河治法注洲活派流测浏海消深添清港游湖湾源满漏演漫澳激点热無"
    "然熟爰爱爵爽片版牌物特犯状狗狠猜玄率王玩环现球理生用由申电男画界留略病登白百的皇盈益监盘"
    "盛盟目直相看真着知码研破确碰示社神祥票福种科秘积称程稳稿空突立站竞章端符第等策签简算管篮"
    "米类精系素索網線红级纪线组经绑结给络统续维综编网置美群老考者而职联肖股育胆能脑腾自至航艇"
    "色节苏英苹草荐获菜菲营葡蕉藏藝虎蛛蜘融血行術表被装西要观规视览觉解言記設计认议讯记许论设"
    "诀证评识诉词试话询详语说请诺读谁调谱象豹費資负财责账质购费资赌赚赛赢走起超越足跑路身載车"
    "转软载辑输达过迎运近返还这进违连述追退送选透通速造道遮邀那邦部都采里重野量金钟钱铁银链销"
    "锋错键长開間门问间闻阅队阳际陆限院除险随集電需霸青非靠面革韩音页项预领频题额飞餐首香马验"
    "骗體高鱼黄黑鼎龙"
)
"""The 800 characters of common Chinese words: those most often inside o200k_base's multi-character
Chinese tokens (喜欢, 我们, 什么...). A text made of them costs far fewer tokens a character."""

# Weights (tokens), fitted against o200k_base: see the module docstring.
_CJK_COMMON = 0.67
_CJK_RARE = 1.35
_KANA = 0.62
_HANGUL = 0.7
_CJK_PUNCT = 0.55
_FULLWIDTH = 1.2  # fullwidth letters and digits (ｈｅｌｌｏ, １２３)
_LOWER_BASE, _LOWER_STEP = 1.0, 0.05  # + step per letter past 6
_CAP_BASE, _CAP_STEP = 1.0, 0.06  # + step per letter past 2
_UPPER_BASE, _UPPER_STEP = 1.0, 0.12  # + step per letter past 2
_ONE_LETTER = 1.0
_CONTRACTION = 0.2  # 's 't 're 've 'm 'll 'd
_ACCENTED = 0.3  # extra per non-ASCII Latin letter
_LONG_WORD = 16  # past this many letters: + 1/3 a letter, capped at 1/4 a letter overall
_OTHER_LETTER, _OTHER_WORD = 0.3, 0.3
_DIGIT_GROUP = 1.0
_SPACE_BEFORE_NUMBER = 0.8
_PUNCT_RUN, _PUNCT_EXTRA = 1.0, 0.15
_LEAD_PUNCT = 0.3
_SPACE_RUN = 0.7
_NEWLINE = 1.2
_OTHER_BYTE = 0.3

_HAN = HAN
_KANA_RANGE = "\u3040-\u30ff\u31f0-\u31ff"
_HANGUL_RANGE = "\u1100-\u11ff\u3130-\u318f\uac00-\ud7af"
_CJK_PUNCT_RANGE = "\u3000-\u303f\uff00-\uffef\u2010-\u206f"
_ASCII_PUNCT = r"!-/:-@\[-`{-~"
_LATIN = "A-Za-z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f"

_PIECES = re.compile(
    rf"""
    (?P<nl>\s*[\r\n])                                   # line break(s), blank lines included
    |(?P<spaces>[^\S\r\n]{{2,}}|[^\S\r\n]+\Z)           # indentation, runs, trailing space
    |(?P<spnum>[^\S\r\n](?=[0-9]))                      # a space before a number: own token
    |(?P<space>[^\S\r\n])                               # a space before a word: free
    |(?P<num>[0-9]+)
    |(?P<han>[{_HAN}]+)
    |(?P<kana>[{_KANA_RANGE}]+)
    |(?P<hangul>[{_HANGUL_RANGE}]+)
    |(?P<wide>[\uff10-\uff19\uff21-\uff3a\uff41-\uff5a]+)
    |(?P<word>[{_LATIN}]+)
    |(?P<letters>[^\W\d_]+)                             # other scripts
    |(?P<cjkpunct>[{_CJK_PUNCT_RANGE}]+)[\r\n]*            # a line break after it is free
    |(?P<contraction>(?<=[A-Za-z])'(?:[sStTmMdD]|re|ve|ll|RE|VE|LL)(?![{_LATIN}]))
    |(?P<lead>(?<![\s{_ASCII_PUNCT}])[{_ASCII_PUNCT}](?=[{_LATIN}]))  # .append, _id
    |(?P<punct>[{_ASCII_PUNCT}]+)[\r\n]*
    |(?P<other>.)
    """,
    re.VERBOSE | re.DOTALL,
)
_UP = "A-Z\u00c0-\u00d6\u00d8-\u00de"
_CASE_PARTS = re.compile(rf"[{_UP}]*[^\W{_UP}\d_]+|[{_UP}]+")


def _word_cost(word: str) -> float:
    """Tokens of one run of Latin letters, split at case changes as o200k_base does."""
    if word.islower() or word.isupper() or (word[:1].isupper() and word[1:].islower()):
        parts: Sequence[str] = (word,)
    else:
        parts = _CASE_PARTS.findall(word) or (word,)
    total = 0.0
    for part in parts:
        n = len(part)
        if n == 1:
            cost = _ONE_LETTER
        elif part.islower():
            cost = _LOWER_BASE + _LOWER_STEP * min(max(n - 6, 0), _LONG_WORD - 6)
        elif part.isupper():
            cost = _UPPER_BASE + _UPPER_STEP * (min(n, _LONG_WORD) - 2)
        else:
            cost = _CAP_BASE + _CAP_STEP * (min(n, _LONG_WORD) - 2)
        if n > _LONG_WORD:
            cost = max(cost, min(cost + (n - _LONG_WORD) / 3, n / 4))
        total += cost
    if not word.isascii():
        total += _ACCENTED * sum(1 for c in word if c > "\x7f")
    return total


def _text_cost(text: str) -> float:
    total = 0.0
    for m in _PIECES.finditer(text):
        kind = m.lastgroup
        piece = m.group()
        if kind == "word":
            total += _word_cost(piece)
        elif kind == "han":
            common = sum(1 for c in piece if c in COMMON_CJK)
            total += _CJK_COMMON * common + _CJK_RARE * (len(piece) - common)
        elif kind == "space":
            continue
        elif kind == "num":
            total += _DIGIT_GROUP * -(-len(piece) // 3)
        elif kind == "punct":
            total += _PUNCT_RUN + _PUNCT_EXTRA * (len(piece) - 1)
        elif kind == "nl":
            total += _NEWLINE
        elif kind == "cjkpunct":
            total += _CJK_PUNCT * len(piece)
        elif kind == "spaces":
            total += _SPACE_RUN
        elif kind == "spnum":
            total += _SPACE_BEFORE_NUMBER
        elif kind == "contraction":
            total += _CONTRACTION
        elif kind == "lead":
            total += _LEAD_PUNCT
        elif kind == "wide":
            total += _FULLWIDTH * len(piece)
        elif kind == "kana":
            total += _KANA * len(piece)
        elif kind == "hangul":
            total += _HANGUL * len(piece)
        elif kind == "letters":
            total += _OTHER_LETTER * len(piece) + _OTHER_WORD
        else:
            total += _OTHER_BYTE * len(piece.encode("utf-8", "surrogatepass"))
    return total


def count_tokens(text: str) -> int:
    """Return the estimated o200k_base token count of `text` (0 for an empty text).

    Args:
        text: Any text: Chinese, English, mixed, code, numbers.
    """
    if not text:
        return 0
    return max(1, math.ceil(_text_cost(text)))


def _role(message: BaseMessage) -> str:
    kind = message.type
    if kind == "human":
        return "user"
    if kind == "ai":
        return "assistant"
    if kind == "chat":
        return str(getattr(message, "role", kind))
    return kind  # system, tool, function, developer


def _message_tokens(message: BaseMessage) -> int:
    """Return the estimated tokens of one chat message, its per-message overhead included.

    Counts what `count_tokens_approximately` counts: the content (text blocks; 85 tokens
    an image; other blocks as their repr), the role, the name, an AI message's tool calls
    and a tool message's call id, plus `EXTRA_TOKENS_PER_MESSAGE`.
    """
    cost = 0.0
    images = 0
    content: Any = message.content
    if isinstance(content, str):
        cost += _text_cost(content)
    elif isinstance(content, list):
        for block in content:
            if isinstance(block, str):
                cost += _text_cost(block)
            elif isinstance(block, dict) and block.get("type") in ("image", "image_url"):
                images += 1
            elif isinstance(block, dict) and block.get("type") == "text":
                cost += _text_cost(str(block.get("text", "")))
            else:
                cost += _text_cost(repr(block))
    else:
        cost += _text_cost(repr(content))
    tool_calls = getattr(message, "tool_calls", None)
    if tool_calls and not isinstance(content, list):
        cost += _text_cost(repr(tool_calls))
    tool_call_id = getattr(message, "tool_call_id", None)
    if message.type == "tool" and tool_call_id:
        cost += _text_cost(str(tool_call_id))
    cost += _text_cost(_role(message))
    if message.name:
        cost += _text_cost(message.name)
    return math.ceil(cost) + TOKENS_PER_IMAGE * images + EXTRA_TOKENS_PER_MESSAGE


def count_message_tokens(messages: Iterable[Any]) -> int:
    """Return the estimated tokens of chat messages, with 3 tokens of overhead per message.

    Accepts what `count_tokens_approximately` accepts (messages, ``(role, text)`` tuples,
    dicts, strings). Each message is rounded up on its own, so the count of a list is the
    sum of the counts of its parts.
    """
    from langchain_core.messages import BaseMessage, convert_to_messages

    items = list(messages)
    if not all(isinstance(m, BaseMessage) for m in items):
        items = convert_to_messages(items)
    return sum(_message_tokens(m) for m in items)

"""Entities a text mentions (people, places, organisations, things): offline rules, zh and en.

An experiment for multi-hop recall (issue 14): a question whose answer sits in two memories
("What does Melanie's daughter like?") can reach the second one through an entity the first
one names. Nothing here loads a model: English reads capitalised names and quoted titles;
Chinese, which has no capitals, reads names by their suffix (北京大学, 杭州市, 阿里巴巴公司),
a short list of cities, titles of people (王老师, 李医生), kinship words (我妈妈, 女朋友)
and 《titles》.

Each entity is `(kind, key)`: `kind` is `person`, `place`, `org` or `thing`; `key` is
the casefolded surface form, so "Paris" and "paris" match. The kinds are a best guess
(a capitalised word may be a person or a place); linking uses the key alone.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from memory.lexical.bm25 import STOP_WORDS
from memory.text.language import HAN

EntityKind = Literal["person", "place", "org", "thing"]

__all__ = ["Entity", "EntityIndex", "entities_in"]


@dataclass(frozen=True)
class Entity:
    """One entity a text mentions."""

    kind: EntityKind
    key: str
    """Casefolded surface form: what links two texts."""


def _words(spaced: str) -> list[str]:
    """Split a space-separated word list (kept as one string: long lists read better so)."""
    return spaced.split()


# --- English -------------------------------------------------------------------------------

_EN_MONTHS = _words(
    "January February March April May June July August September October November December"
)
_EN_DAYS = _words("Monday Tuesday Wednesday Thursday Friday Saturday Sunday")
# Capitalised words that start sentences or are not names.
_NOT_NAMES = frozenset(
    {w.capitalize() for w in STOP_WORDS}
    | set(_EN_MONTHS)
    | set(_EN_DAYS)
    | {"I", "I'm", "I've", "I'd", "I'll", "Im", "Ok", "Okay", "Oh", "Wow", "Yeah", "Yes", "No",
       "Hey", "Hi", "Hello", "Thanks", "Thank", "Please", "Sure", "Great", "Nice", "Cool",
       "Awesome", "Sounds", "Good", "Congrats", "Congratulations", "Love", "Glad", "Sorry",
       "Haha", "Lol", "Omg", "Well", "Also", "And", "But", "Or", "So", "Then", "Now", "Today",
       "Yesterday", "Tomorrow", "Tonight", "Last", "Next", "This", "That", "These", "Those",
       "What", "When", "Where", "Why", "How", "Who", "Which", "Did", "Do", "Does", "Is", "Are",
       "Was", "Were", "Can", "Could", "Would", "Should", "Will", "Have", "Has", "Had", "My",
       "Your", "Our", "Their", "His", "Her", "It", "We", "You", "They", "He", "She", "Let",
       "Just", "Really", "Definitely", "Absolutely", "Totally", "User", "Mr", "Mrs", "Ms",
       "Dr", "Christmas", "Easter", "Halloween", "Thanksgiving", "God", "Remember", "Tell",
       "Take", "Keep", "Enjoy", "Here", "There", "Anyway", "Maybe", "Yep", "Not", "Any", "All",
       "Some", "Every", "Both", "Each", "Even", "Still", "Such", "Plus", "Btw", "Happy"}
)  # fmt: skip
_ORG_WORDS = frozenset(
    _words(
        "Inc Ltd Corp Company Co University College School Academy Institute Hospital Clinic Bank "
        "Club Society Association Foundation Center Centre Church Museum Library Team Group Lab "
        "Studio Agency Council Committee Department Ministry Festival Conference"
    )
)
_PLACE_WORDS = frozenset(
    _words(
        "City Town Village Street St Road Rd Avenue Ave Park Lake River Mountain Mount Beach Bay "
        "Island Islands Valley County State Province Country Square Bridge Canyon Forest"
    )
)
_PLACE_PREPS = frozenset({"in", "at", "from", "to", "near", "visit", "visited", "visiting"})
_EN_NAME_RE = re.compile(r"[A-Z][a-zA-Z'’\-]*(?:\s+(?:of\s+|de\s+|the\s+)?[A-Z][a-zA-Z'’\-]*)*")
_QUOTED_RE = re.compile(r"[\"“]([^\"”]{3,60})[\"”]")
_WORD_BEFORE_RE = re.compile(r"([A-Za-z]+)\W*$")


def _en_entities(text: str) -> list[Entity]:
    out: list[Entity] = []
    for m in _EN_NAME_RE.finditer(text):
        words = [re.sub(r"['’]s$", "", w) for w in m.group(0).split()]
        # Drop sentence-initial and other non-name words at the edges ("Hey Caroline").
        while words and words[0] in _NOT_NAMES:
            words.pop(0)
        while words and (words[-1] in _NOT_NAMES or words[-1].lower() in ("of", "de", "the")):
            words.pop()
        if not words or (len(words) == 1 and len(words[0]) < 2):
            continue
        phrase = " ".join(words)
        kind: EntityKind = "person"
        if words[-1] in _ORG_WORDS or (len(words) > 1 and words[0] in _ORG_WORDS):
            kind = "org"
        elif words[-1] in _PLACE_WORDS or (len(words) > 1 and words[0] in _PLACE_WORDS):
            kind = "place"
        elif phrase.isupper():
            kind = "thing"  # an acronym: LGBTQ, NASA
        else:
            before = _WORD_BEFORE_RE.search(text[: m.start()])
            if before and before.group(1).lower() in _PLACE_PREPS:
                kind = "place"
            elif len(words) > 1 and words[0] not in ("Mr", "Mrs", "Ms", "Dr"):
                kind = "thing" if len(words) > 2 else "person"
        out.append(Entity(kind, phrase.casefold()))
    for m in _QUOTED_RE.finditer(text):
        out.append(Entity("thing", m.group(1).strip().casefold()))
    return out


# --- Chinese -------------------------------------------------------------------------------

_HAN = HAN
_ZH_ORG_RE = re.compile(
    rf"[{_HAN}A-Za-z]{{2,10}}?(?:公司|集团|大学|学院|中学|小学|医院|银行|研究所|研究院|"
    rf"事务所|工作室|俱乐部|协会|基金会|博物馆|图书馆|幼儿园|餐厅|酒店)"
)
# The prefix is lazy, so a longer administrative suffix may follow ("西湖" + "区").
_ZH_PLACE_RE = re.compile(
    rf"[{_HAN}]{{1,6}}?(?:省|市|县|区|镇|村|路|街|公园|湖|山|岛)[省市县区镇村]?"
)
_ZH_CITIES = _words(
    "北京 上海 天津 重庆 广州 深圳 杭州 南京 苏州 成都 武汉 西安 长沙 郑州 青岛 厦门 福州 "
    "济南 合肥 昆明 大连 沈阳 哈尔滨 长春 宁波 无锡 东莞 佛山 珠海 南昌 贵阳 南宁 兰州 "
    "太原 石家庄 呼和浩特 乌鲁木齐 拉萨 海口 三亚 香港 澳门 台北 高雄 新加坡 东京 大阪 首尔 "
    "纽约 伦敦 巴黎 柏林 悉尼 墨尔本 旧金山 洛杉矶 西雅图 多伦多 温哥华 曼谷 迪拜"
)
_ZH_CITY_RE = re.compile("|".join(sorted(_ZH_CITIES, key=len, reverse=True)))
_ZH_SURNAMES = (
    "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余"
    "杜叶程苏魏吕丁任沈姚卢姜崔钟谭陆汪范金石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯龙史"
)
_ZH_TITLED_RE = re.compile(
    rf"[{_ZH_SURNAMES}](?:老师|医生|大夫|先生|女士|小姐|经理|总|教授|阿姨|叔叔|师傅)"
)
_ZH_NAMED_RE = re.compile(
    rf"(?:叫|名叫|名字是|朋友|同事|同学|老板|室友|邻居)([{_ZH_SURNAMES}][{_HAN}]{{1,2}})(?=[，。、！？\s,.!?]|$|说|是|的|在|和|也)"
)
_ZH_KIN = _words(
    "妈妈 爸爸 母亲 父亲 老婆 老公 妻子 丈夫 女朋友 男朋友 儿子 女儿 哥哥 姐姐 弟弟 妹妹 "
    "爷爷 奶奶 外公 外婆 姥姥 姥爷 孩子 宝宝 室友 同事 老板 闺蜜"
)
_ZH_KIN_RE = re.compile("|".join(sorted(_ZH_KIN, key=len, reverse=True)))
_ZH_TITLE_RE = re.compile(r"《([^》]{1,40})》")


def _zh_entities(text: str) -> list[Entity]:
    out: list[Entity] = []
    orgs = [m.group(0) for m in _ZH_ORG_RE.finditer(text)]
    out += [Entity("org", _trim_zh(o)) for o in orgs]
    for m in _ZH_CITY_RE.finditer(text):
        out.append(Entity("place", m.group(0)))
    for m in _ZH_PLACE_RE.finditer(text):
        place = _trim_zh(m.group(0))
        if len(place) >= 2 and not any(place in o for o in orgs):
            out.append(Entity("place", place))
    out += [Entity("person", m.group(0)) for m in _ZH_TITLED_RE.finditer(text)]
    out += [Entity("person", m.group(1)) for m in _ZH_NAMED_RE.finditer(text)]
    out += [Entity("person", m.group(0)) for m in _ZH_KIN_RE.finditer(text)]
    out += [Entity("thing", m.group(1)) for m in _ZH_TITLE_RE.finditer(text)]
    return out


# Verbs and particles a greedy suffix match may carry at its start ("在杭州市" → "杭州市").
_ZH_LEAD_RE = re.compile(r"^(?:我|你|他|她|们|在|去|到|从|住|来|回|的|了|是|和|跟|想|要|搬)+")


def _trim_zh(phrase: str) -> str:
    trimmed = _ZH_LEAD_RE.sub("", phrase)
    return trimmed if len(trimmed) >= 2 else phrase


# --- public --------------------------------------------------------------------------------


def entities_in(text: str) -> list[Entity]:
    """Return the entities a text mentions, in order, without repeats (by key).

    Args:
        text: Any text, Chinese, English or mixed.

    Returns:
        Entities with their guessed kind; the first kind seen wins for a key.
    """
    text = unicodedata.normalize("NFKC", text)
    seen: dict[str, Entity] = {}
    for ent in _zh_entities(text) + _en_entities(text):
        if ent.key and ent.key not in seen:
            seen[ent.key] = ent
    return list(seen.values())


class EntityIndex:
    """Which records mention which entities, for a one-hop expansion of a ranking.

    Entities that many records mention (a user's own name, the other speaker of every
    turn) link everything to everything; those above `max_share` of the records are
    ignored as hubs.
    """

    def __init__(self, texts: Mapping[str, str], *, max_share: float = 0.05) -> None:
        self.of: dict[str, frozenset[str]] = {
            i: frozenset(e.key for e in entities_in(t)) for i, t in texts.items()
        }
        counts = Counter(k for keys in self.of.values() for k in keys)
        limit = max(2, int(max_share * len(texts)))
        self.hubs = frozenset(k for k, n in counts.items() if n > limit)
        self.postings: dict[str, list[str]] = {}
        for i, keys in self.of.items():
            for k in keys - self.hubs:
                self.postings.setdefault(k, []).append(i)

    def neighbours(self, ids: Iterable[str], *, ignore: Iterable[str] = ()) -> dict[str, int]:
        """Return records sharing a non-hub entity with any of `ids`, and how many they share.

        Args:
            ids: The seed records.
            ignore: Entity keys not to follow (e.g. those the query itself names, which the
                lexical ranking already covers).
        """
        skip = set(ignore)
        seeds = set(ids)
        found: Counter[str] = Counter()
        for i in seeds:
            for k in self.of.get(i, frozenset()) - self.hubs - skip:
                for j in self.postings.get(k, ()):
                    if j not in seeds:
                        found[j] += 1
        return dict(found)

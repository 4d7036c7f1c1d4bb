"""Does this text say that? Whole-word matching of a user's phrase against memories.

Forgetting must hit exactly what the user named: "tea" is not "team" or "steak", "Tom"
is not "tomatoes" or "Tomtom", 猫 is not 熊猫 or 猫头鹰. English is compared word by word
(light stems, so "peanut" finds "peanuts"); Chinese has no spaces, so a phrase counts
only where it is not glued into a longer word: the characters around it must be a
boundary (punctuation, another script, a function character or a verb ending).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from memory.lexical.bm25 import STOP_WORDS, stem, tokenize
from memory.store.records import MemoryRecord, normalize_text
from memory.text.language import HAN, HAN_CHAR, simplified

__all__ = [
    "TOLD",
    "Phrase",
    "key_phrase",
    "phrase_of",
    "said_phrase",
    "states",
    "topic_clause",
    "topic_words",
]

# Where what a request names ends and its reason starts: a sentence's end or an ellipsis, or
# a comma or a dash before a subject pronoun (a closed class) that starts a clause of its own.
_REASON_STARTS = re.compile(
    r"\s*(?:[?？!！。;；]|…+|\.{3,})"
    # A full stop ends the topic, not one of a title ("Dr. Okafor", "St. Mary's").
    r"|(?<!\bdr)(?<!\bmr)(?<!\bms)(?<!\bst)(?<!\bmt)(?<!\bmrs)(?<!\bprof)\.\s+(?=\w)"
    r"|\s*[,，—–(（]\s*(?=(?:I|I'm|I've|I'd|I'll|he|he's|she|she's|it|it's"
    r"|we|we're|you|you're|they|they're|that's|there's)\b)",
    re.I,
)


_WHAT = r"what|wot|wat|whit|wut"
""""What", as it is typed ("whit" in Scotland, "wot" in England): a closed class of spellings."""

JUST_SAID = (
    rf"(?:{_WHAT}|everything|the (?:thing|bit|last thing|last bit))(?: that)? i"
    r" (?:just |last |literally just )?(?:said|told you|mentioned|wrote)"
    r"(?: (?:just now|there|a sec ago|a second ago))?"
)
"""What the user just said, named as such ("what I just said there", "the last bit I wrote",
"whit I just said"): the one pattern a forget request's span (`memory.requests`) and its
target (`memory.lifecycle.is_deictic`) read."""

TOLD = re.compile(
    rf"(?i)^(?:(?:{_WHAT}|everything|anything|all|whatever"
    r"|the (?:stuff|bits?|things?|parts?))\s+)?"
    r"(?:that\s+)?i(?:'ve| have)?\s+(?:just\s+)?(?:said|told you|mentioned|shared)"
    r"(?:\s+(?:to|with) you)?\s+(?:about|re|regarding|on)\s+"
    r"|^(?:the\s+)?(?:stuff|bits?|things?|parts?|details?|info|business)\s+(?:about|on|of|re)\s+"
    # What the assistant holds: "whatever you've got on my car", "track of my heart tablets".
    r"|^(?:(?:what|whatever|everything|anything|all)\s+)?you(?:'ve| have)?\s+(?:got\s+)?"
    r"(?:on|about|re|regarding)\s+|^track\s+of\s+"
)
"""What was told, which a forget request names its topic by ("don't keep what I said about
my allotment", "the details about my allotment"): no words of the topic."""

# The words of a forget request that name no content, cut before its words are matched.
_REQUEST_WORDS = re.compile(
    # "what" names a topic ("what I drive") unless it is what was told ("what I told you").
    r"(?i)\b(?:what (?:i|you) (?:just )?(?:told|said|mentioned|know|have|remember)\w*"
    r"|(?:hang|hold) on ?to|actually|please|pls|oops|hmm|wait|just|can you|could you"
    r"|would you|you|i'd"
    r"|rather|sooner|didn't|don't|do not|not|no|stop|disregard|ignore|forget|delete|remove|erase"
    r"|take out|bin|ditch|chuck|scrap|toss"
    r"|drop|wipe|scrub|clear|leave|out of|your|memory|memories|notes|file|keep|keeping|store"
    r"|storing|save|saving|remember|remembering|know|told|said|about|the|bit|part|thing"
    r"|stuff|info|anything|everything|on|from|of|any|anymore|more|and|also|too|either|it"
    r"|that|this|details?|pls|plz"
    # How a request is asked or softened: "would you mind forgetting whatever …, okay?"
    r"|forgetting|deleting|removing|erasing|dropping|wiping|clearing|mind|whatever|let's"
    r"|let us|okay|ok|alright|yeah|possibly|maybe|is it|possible|records?|track|things?|hang"
    r"|hold|onto|let go|get rid|forgot|appreciate|prefer)\b"
    r"|的那些|给我(?=[删清忘抹去])|请|麻烦|帮我|你|就|别|不要|不用|不想|再|记录|记住|记着|记下|记了|记|存着|存|保存|留着|留|删掉|删除"
    r"|删了|删|还有|也|一起|一并|那个|这个|那事儿|这事儿|那事|这事|事儿"
    r"|忘掉|忘记|忘了|忘|清掉|清除|抹掉|去掉|的事|的信息|那块|那条|这条|相关的|都|全|吧|了|啊|呀|可以"
    r"|能不能|要不|好吗|行吗|好不好|关于|有关|那些|那部分|的那|把|嘛|[…。，,？?！!]"
)


def topic_words(topic: str) -> str:
    """Return a topic's words without request words ("我健身卡那个事儿": 我健身卡)."""
    return " ".join(_REQUEST_WORDS.sub(" ", topic).strip(" \t\"'“”‘’。.,，!！").split())


def topic_clause(words: str) -> str:
    """Return what a request names without the reason said after it.

    "my paddling trips, I'm selling the boat anyway" names the paddling; "the stuff about
    my breathing machine at night? kinda private" the machine. A list ("my sister, my
    brother and my dad") is one topic.
    """
    head = _REASON_STARTS.split(words, maxsplit=1)[0]
    return head if head.strip() else words


# Words of a forget request that name no content: "forget EVERYTHING you KNOW about my X".
_FILLER = STOP_WORDS | frozenset(
    """
    like likes liked love loves enjoy enjoys prefer prefers please everything anything all
    know knew you your memory memories remember remembered fact facts said say saying told
    tell info information detail details stuff thing things part bit user users from
    mention mentioned just now earlier before anymore more any bring brought up got track
    whatever pls plz
    """.split()  # noqa: SIM905
)
_CJK = HAN_CHAR
# Leading words of a Chinese phrase that name the speaker or a relation, not content.
_ZH_HEAD = re.compile(r"^(?:关于|有关|我的|我们的|用户的|我们|用户|我|的)+")
_ZH_TAIL = re.compile(
    r"(?:的事情|的事|这件事|那件事|的信息|的资料|的记录|这条记录|这一条|这条|那条|这些|这个|那个"
    r"|哪里|哪儿|什么|的|了|吧|啊|呀|吗|呢|嘛|哦|哈|啦|咯|哟|呗)+$"
)
# Verbs that sit between the speaker and the thing: 我[喜欢]猫, 我[住在]成都.
_ZH_VERB = re.compile(
    r"^(?:不再|不|很|非常|特别|最|真的|现在|目前|已经|一直)*"
    r"(?:喜欢|讨厌|爱|热爱|住在|住|在|是|叫|对|用|使用|吃|喝|养|去|来自|搬到|搬去|做|当)"
)
# Characters that may stand right before / after a Chinese word without being part of it.
_ZH_LEFT = frozenset(
    "的了吗呢吧啊呀和与及跟同或也都就还又很把被给对在是到去住叫用吃喝养爱欢厌做当我你他她它们从于自"
)
_ZH_RIGHT = frozenset("的了吗呢吧啊呀和与及跟同或也都就还又很把被给对在是过着市省县区里上这那")


NOT_A_MODIFIER = (
    r"(?![a-z])(?!\s+(?!(?:stuff|things?|details?|info|life|related|history|situation|and|or"
    r"|too|either|please|anymore|any|as|now|at|for|in|with|since|then|i|is|was)\b)[a-z])"
)
"""After an English word: it is not a modifier of a noun after it ("my work van" is a van,
not work; "work stuff", "where I work now" are work)."""


@dataclass(frozen=True)
class Phrase:
    """What a phrase names, ready to match: English stems and Chinese words."""

    words: frozenset[str]
    """English (or other spaced-script) stems that must all appear."""
    zh: tuple[str, ...]
    """Chinese words; any one found as a whole word matches."""
    names: frozenset[str] = frozenset()
    """Words the user capitalised mid-sentence ("Mark", "Go"): names, which the same word
    in lower case ("I mark exams", "I go to Paris") is not."""
    exact: bool = False
    """`words` are words as said, not stems (a statement's, see `phrase_of`)."""

    def __bool__(self) -> bool:
        return bool(self.words or self.zh)


def _zh_core(run: str) -> str:
    core = _ZH_TAIL.sub("", _ZH_HEAD.sub("", run))
    verbless = _ZH_VERB.sub("", core)
    return verbless or core


def phrase_of(text: str, *, clause: bool = False, request: bool = False) -> Phrase:
    """Return what a user's phrase names ("that I like tea" → tea; "我喜欢猫" → 猫).

    Args:
        text: The words of a forget request, or a value to look for.
        clause: The words are a statement of the user's ("I love running", "我住在北京"),
            not a topic: its verbs are kept, so it names that statement ("I run a bakery"
            and 我在北京大学读书 do not say it).
        request: The words are cut from a user's request ("Forget about Mark."): a word
            capitalised there is a name, and only the capitalised word matches it.
    """
    # Chinese is matched in simplified characters, on both sides (`states`): a request in one
    # script reaches a record in the other.
    folded = simplified(unicodedata.normalize("NFKC", text))
    # A statement's words keep their -ing: "running" is not "run" ("I run a bakery").
    spell = _inflection if clause else stem
    words = frozenset(
        spell(w)
        for w in re.findall(r"[^\W_]+", _CJK.sub(" ", folded).casefold())
        if w not in _FILLER
    )
    core = _zh_clause if clause else _zh_core
    zh = tuple(dict.fromkeys(c for run in re.findall(f"[{HAN}]+", folded) if (c := core(run))))
    names = frozenset(
        w
        for w in re.findall(r"(?<![\w'])[A-Z][a-z]+(?![\w'])", folded if request else "")
        if w not in _NOT_NAMES and w.casefold() not in _FILLER
    )
    return Phrase(words, zh, names, exact=clause)


def _inflection(word: str) -> str:
    """Return a word without its plural or third-person ending ("works" → "work").

    -ing and -ed stay: they change what a word names ("running" is not "run").
    """
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "ches", "shes", "xes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def _zh_clause(run: str) -> str:
    """Return what a Chinese statement says.

    Its verb of place or being stays (住在北京 is not 在北京大学读书); a verb of liking goes
    (我喜欢猫 names 猫).
    """
    core = _ZH_TAIL.sub("", _ZH_HEAD.sub("", run))
    return _ZH_LIKING.sub("", core) or core


_ZH_LIKING = re.compile(r"^(?:很|非常|特别|最|真的)*(?:喜欢|热爱|爱|讨厌|不喜欢)")


# Capitalised for other reasons than being a name.
_NOT_NAMES = frozenset({"I", "Im", "Ive", "Id", "Ill", "My", "Me", "Forget", "Please", "That"})


def _has_zh_word(text: str, word: str) -> bool:
    """Return True if `word` is in `text` as a word of its own.

    A single character needs a boundary on both sides (猫 is not in 熊猫 or 猫头鹰); a
    longer word on one side at least, since a verb or measure word may stand right
    before it (配龙井茶, 一名护士) and a verb right after it (在阿里巴巴工作).
    """
    # A verb alone ("住在" of "我住在哪里") is not a thing: it must stand clear on both sides.
    one_side = len(word) > 1 and not _ZH_VERB.fullmatch(word)
    start = text.find(word)
    while start >= 0:
        end = start + len(word)
        before = text[start - 1] if start > 0 else ""
        after = text[end] if end < len(text) else ""
        left = not before or not _CJK.match(before) or before in _ZH_LEFT
        right = not after or not _CJK.match(after) or after in _ZH_RIGHT
        if (left and right) or (one_side and (left or right)):
            return True
        start = text.find(word, start + 1)
    return False


def states(text: str, phrase: Phrase) -> bool:
    """Return True if `text` says what `phrase` names, as whole words.

    Every English word of the phrase must appear (light stems), and, if the phrase has
    Chinese words, one of them must appear unglued to its neighbours.
    """
    if not phrase:
        return False
    if any(not re.search(rf"(?<![\w]){re.escape(n)}(?![a-z])", text) for n in phrase.names):
        return False
    if phrase.words:
        terms = tokenize(text, stemming=not phrase.exact, stop_words=frozenset())
        spell = _inflection if phrase.exact else (lambda t: t)
        have = {spell(t) for t in terms if not _CJK.match(t)}
        if not phrase.words <= have:
            return False
    if phrase.zh:
        folded = simplified(unicodedata.normalize("NFKC", text))
        return any(_has_zh_word(folded, w) for w in phrase.zh)
    return True


_GENERIC_VALUES = frozenset({"like", "dislike", "no", "yes", "true", "false", "item"})


def key_phrase(record: MemoryRecord) -> Phrase:
    """Return what a record is about: its value, else its subject's last part, else its words.

    Used to find the other copies of a record (a summary line, a reply that repeats it).
    """
    value = record.value if isinstance(record.value, str) else ""
    if normalize_text(value) and value.casefold() not in _GENERIC_VALUES:
        said = phrase_of(value)
        # A value in other words than the content ("vegetarian" for 用户吃素) finds no copy.
        if states(record.content, said):
            return said
    tail = record.subject.rsplit(".", 1)[-1]
    if record.kind != "episode" and normalize_text(tail) and tail not in _GENERIC_VALUES:
        if _CJK.search(tail):
            return Phrase(frozenset(), (_zh_core(tail) or tail,))
        # A slug joins words ("koreanfood"): match the content's words instead.
        if tail.isalpha() and re.search(rf"(?i)\b{re.escape(tail)}\b", record.content):
            return Phrase(frozenset({stem(tail.casefold())}), ())
    return phrase_of(record.content)


def said_phrase(record: MemoryRecord, topic: bool) -> Phrase:
    """Return what finds the other copies of a forgotten record.

    For a topic forget ("forget about Beijing") that is what the record is about
    (`key_phrase`: 北京, so 北京大学 goes too only if it says 北京 as a word); for a statement
    forget ("forget that I live in Beijing") it is what the record says (住在北京).
    """
    return key_phrase(record) if topic else phrase_of(record.content, clause=True)

"""Aliases of the people (and pets) a user names: one hop from "my sister" to "Lena" and back.

"My sister is called Lena." and then "Lena just got a job as a vet in Vienna.": a question
about "my sister" shares no word with the second statement, and one about Lena no word with
"My sister loves horses.". `hop` reads the user's naming statements (`aliases_in`: exact
forms only, zh and en: "my sister is called Lena", "Lena is my sister", "I have a sister
named Lena", 我妹妹叫小雨, 小雨是我妹妹, 我有个妹妹叫小雨) among the query's lexical hits and the
statements that name the relation the query names, and credits each record that mentions
the other side of a link as if it mentioned what the query said.

Nothing is stored: a link is read from the statement (raw turn or typed memory) that makes
it, each time, so it lives and dies with that statement. Forgetting the statement, a hard
forget or delete-user removes the link with it, and only the asking user's own records,
re-checked against the store and readable by the asking agent, are ever read.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from memory.lexical.bm25 import tokenize
from memory.text.language import HAN
from memory.text.statements import THE_USER

__all__ = [
    "KIN",
    "PEOPLE",
    "RELATIONS",
    "Alias",
    "Hop",
    "aliases_in",
    "filed_as",
    "hop",
    "relation_in",
    "relation_words",
    "relations_in",
]

RELATIONS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "sister": (("sister", "sis"), ()),
    "younger sister": ((), ("妹妹", "小妹", "老妹", "妹")),
    "older sister": ((), ("姐姐", "大姐", "姐")),
    "brother": (("brother", "bro", "kuya"), ()),
    "younger brother": ((), ("弟弟", "小弟", "弟")),
    "older brother": ((), ("哥哥", "大哥", "哥")),
    "sibling": (("sibling",), ("兄弟姐妹",)),
    "mother": (
        ("mother", "mom", "mum", "mommy", "mummy", "mama"),
        ("妈妈", "母亲", "老妈", "阿妈", "妈"),
    ),
    "father": (
        ("father", "dad", "daddy", "papa"),
        ("爸爸", "父亲", "老爸", "老汉儿", "老豆", "阿爸", "爸"),
    ),
    "parents": (("parents",), ("爸妈", "父母")),
    "wife": (("wife", "missus", "wifey"), ("老婆", "妻子", "太太", "爱人", "媳妇儿", "媳妇")),
    "husband": (("husband", "hubby"), ("老公", "丈夫", "我先生")),
    "partner": (
        ("partner", "spouse", "other half"),
        ("对象", "伴侣", "老伴儿", "老伴", "那口子", "另一半", "我家那位"),
    ),
    "girlfriend": (("girlfriend", "gf"), ("女朋友", "女友")),
    "boyfriend": (("boyfriend", "bf"), ("男朋友", "男友")),
    "fiance": (("fiance", "fiancé", "fiancee", "fiancée"), ("未婚夫", "未婚妻")),
    "son": (("son",), ("儿子", "个仔", "幺儿")),
    "daughter": (("daughter",), ("女儿", "闺女", "个女", "幺女", "囡囡")),
    "children": (("kid", "child", "children"), ("孩子",)),
    "grandson": (("grandson",), ("孙子", "外孙")),
    "granddaughter": (("granddaughter",), ("孙女", "外孙女")),
    "grandchild": (("grandchild", "grandchildren", "grandkid"), ("孙辈",)),
    "grandmother": (
        ("grandmother", "grandma", "granny", "gran", "nana", "lola", "abuela", "nonna"),
        ("奶奶", "外婆", "姥姥"),
    ),
    "grandfather": (
        ("grandfather", "grandpa", "grandad", "granddad", "lolo", "abuelo", "nonno"),
        ("爷爷", "外公", "姥爷"),
    ),
    "mother-in-law": (("mother-in-law",), ("婆婆", "岳母", "丈母娘")),
    "father-in-law": (("father-in-law",), ("公公", "岳父", "老丈人")),
    "sister-in-law": (("sister-in-law",), ("嫂子", "弟媳", "小姑子", "小姨子")),
    "brother-in-law": (("brother-in-law",), ("姐夫", "妹夫", "小舅子", "大舅哥")),
    "aunt": (("aunt", "auntie", "tita"), ("阿姨", "姑姑", "姨妈", "舅妈")),
    "uncle": (("uncle", "tito"), ("叔叔", "舅舅", "伯伯")),
    "cousin": (("cousin",), ("表哥", "表姐", "表弟", "表妹", "堂哥", "堂姐", "堂弟", "堂妹")),
    "niece": (("niece",), ("侄女", "外甥女")),
    "nephew": (("nephew",), ("侄子", "外甥")),
    "best friend": (("best friend", "bestie"), ("闺蜜", "死党", "好朋友", "最好的朋友")),
    "roommate": (("roommate", "flatmate", "housemate"), ("室友",)),
    "boss": (("boss", "manager"), ("老板", "领导", "上司")),
    "colleague": (("colleague", "coworker", "co-worker"), ("同事",)),
    "neighbour": (("neighbour", "neighbor"), ("邻居",)),
    "dog": (("dog", "puppy"), ("狗", "狗狗", "小狗")),
    "cat": (("cat", "kitten"), ("猫", "猫咪", "小猫")),
}
"""Each relation: its key, its English words (singular, with the words for kin that heritage
speakers use in English: "my lola", "my abuelo", "my tita") and its Chinese words, the one a
subject is filed under first (`relation_in`). Words of one relation are synonyms: "my mom"
and "my mother" are one person, filed under one subject."""

PEOPLE = frozenset(set(RELATIONS) - {"dog", "cat"})
"""The relations that are people: a statement about one is not the user's own."""
KIN = PEOPLE - {"children", "best friend", "roommate", "boss", "colleague", "neighbour"}
"""The relatives one can be filed under (`family.<relation>`). The children together are no
one relative: "带孩子去哪儿转转" asks about the outing, not about what is filed on them."""


def relation_words(zh: bool, relations: Iterable[str] = KIN) -> list[str]:
    """Return the words for some relations in one language, longest first (a regex's order)."""
    words = {w for r in relations for w in RELATIONS[r][1 if zh else 0]}
    return sorted(words, key=len, reverse=True)


_ZH_KIND_OF = frozenset(
    {"fiance", "cousin", "aunt", "uncle", "grandmother", "grandfather", "niece", "nephew"}
    | {"grandson", "granddaughter", "mother-in-law", "father-in-law"}
    | {"sister-in-law", "brother-in-law"}
)
"""Relations whose Chinese words are different people of one kind (外婆 is not 奶奶, 表姐 not
表哥): each is filed under its own word. The others' words are one person (妈, 老妈, 妈妈)."""
_KIN_WORD = {
    w: w if zh and r in _ZH_KIND_OF else words[0]
    for r in KIN
    for zh, words in enumerate(RELATIONS[r])
    for w in words
}
_KIN_OF = {w: r for r in KIN for words in RELATIONS[r] for w in words}
_AFTER_ONE = ("个女", "个仔")
"""Cantonese "my daughter", "my son" (我个女): after a count word, no relative (一个女同事)."""
_ZH_LONG = "|".join(
    re.escape(w) for w in relation_words(True) if len(w) > 1 and w not in _AFTER_ONE
)
_ZH_SHORT = "".join(w for w in relation_words(True) if len(w) == 1)
# One character (我姐, 他妈) is a relative after a pronoun or 的, or with no Han before it; after
# a surname it is how a colleague is called (王姐, 李哥), not a sister or brother.
_HERITAGE = frozenset(
    {"lola", "lolo", "abuela", "abuelo", "nonna", "nonno", "tita", "tito", "kuya"}
)
"""Words for kin that heritage speakers use in English ("my lola", "my abuelo"): each is a
name too ("Lola", "Tito"), so a text names the relative only in lower case."""
_EN_KIN = "|".join(re.escape(w) for w in relation_words(False) if w not in _HERITAGE)
_RELATION = re.compile(
    rf"\b((?i:{_EN_KIN})|{'|'.join(sorted(_HERITAGE, key=len, reverse=True))})(?:'?s)?\b"
    rf"|({_ZH_LONG}|(?:(?<=[我俺咱你他她的])|(?<![{HAN}]))(?:{'|'.join(_AFTER_ONE)}|[{_ZH_SHORT}]))"
)


SPOUSE = frozenset({"wife", "husband", "partner", "girlfriend", "boyfriend", "fiance"})
"""Relations that name the user's other half. "partner" (对象, 那口子, 我家那位) is any of them:
"我家那位生日快到了" is about "我媳妇儿叫林悦"; a husband is no boyfriend."""
GENERAL = {
    "partner": SPOUSE - {"partner"},
    "grandchild": frozenset({"grandson", "granddaughter"}),
    "parents": frozenset({"mother", "father"}),
    "sibling": frozenset(
        {"sister", "brother", "younger sister", "older sister", "younger brother", "older brother"}
    ),
}
"""A word for any of several relatives ("the grandkid", 另一半, 爸妈): what is said of each of
them is what it means. A specific word means that one, or the general word ("our grandson
Ollie" is "the grandkid"; a husband is a partner, never a boyfriend)."""
_GENERAL_OF = {r: g for g, these in GENERAL.items() for r in (g, *these)}


def filed_as(who: str) -> tuple[str, ...]:
    """Return the words what is said of a relative (`relation_in`) may be filed under."""
    of = _KIN_OF.get(who, who)
    general = _GENERAL_OF.get(of)
    if general is None:
        return (who,)
    reach = [of, *sorted(GENERAL[of])] if of == general else [of, general]
    return tuple(
        dict.fromkeys([who, *(_KIN_WORD[w] for r in reach for ws in RELATIONS[r] for w in ws)])
    )


# A relative the user owns ("my brother", 我弟弟): its words, and 我 with them, are no word for
# the user as one who eats or does something (`THE_USER`).
_OWNED = re.compile(rf"(?i)[我俺咱]?(?:{_RELATION.pattern.removeprefix('(?i)')})")


def names_the_user(text: str) -> bool:
    """Return True if a text speaks of the user besides any relative of theirs it names.

    "What does my brother like to eat?" is about the brother alone; "My brother's over for
    supper, what should I make?" and "老公不回来吃，就我一个人" are about the user too.
    """
    return bool(THE_USER.search(_OWNED.sub(" ", text)))


def relation_in(text: str) -> str | None:
    """Return the family member a text names ("my sister", 我老公), folded, or None.

    The offline path files what is said about a relative under `family.<relation>`, so a
    forget request about them ("don't keep anything about my husband") reaches it there.
    """
    found = _RELATION.search(text)
    return _KIN_WORD[(found[1] or found[2]).casefold()] if found else None


_EN_WORDS = {w: key for key, (en, _) in RELATIONS.items() for w in en}
_ZH_WORDS = {w: key for key, (_, zh) in RELATIONS.items() for w in zh}


def _words(spaced: str) -> list[str]:
    return spaced.split()


def _alternation(words: Iterable[str]) -> str:
    return "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))


_EN_REL = rf"(?i:(?P<rel>{_alternation(_EN_WORDS)}))"
_EN_MOD = r"(?i:(?:(?:older|younger|little|big|elder|baby|twin|step|)\s*)?)"
_EN_MY = r"(?i:\b(?:my|the\s+user's|user's|our)\s+)"
# A name is capitalised (English has capitals); a word that merely starts a clause is not.
_EN_NAME = r"(?P<name>[A-Z][a-zA-Z'\-]+(?:\s+[A-Z][a-zA-Z'\-]+)?)"
_EN_NOT_NAMES = frozenset(
    _words(
        "I I'm A An The And But So Then My Our He She They We It This That Who What Where When "
        "How Why Is Was Are Very Really Just Now Still Also Not Yes No Well Anyway However "
        # Words that open a clause before a comma ("Thankfully, my son's ok").
        "Thankfully Luckily Fortunately Unfortunately Sadly Hopefully Honestly Actually "
        "Basically Obviously Apparently Surprisingly Finally Recently Lately Besides Today "
        "Yesterday Tomorrow Tonight Meanwhile Otherwise Plus Oh Wow Sure Okay"
    )
)
_EN_FORMS = [
    re.compile(
        rf"{_EN_MY}{_EN_MOD}{_EN_REL}(?i:s?(?:'s)?\s+(?:name\s+is|is\s+called|is\s+named|"
        rf"goes\s+by|is))\s+{_EN_NAME}"
    ),
    # "my sister Lena …"; with a comma only when the name is set off: "my son, Tom, …".
    re.compile(rf"{_EN_MY}{_EN_MOD}{_EN_REL}\s+{_EN_NAME}\b"),
    re.compile(rf"{_EN_MY}{_EN_MOD}{_EN_REL},\s+{_EN_NAME}(?=[,.!?;]|$)"),
    re.compile(rf"\b{_EN_NAME}(?:\s+is|,)\s+{_EN_MY}{_EN_MOD}{_EN_REL}\b"),
    re.compile(
        rf"(?i:\b(?:have|has|got)\s+an?\s+){_EN_MOD}{_EN_REL}(?i:\s+(?:called|named))\s+{_EN_NAME}"
    ),
]

_ZH_REL = f"(?P<rel>{_alternation(_ZH_WORDS)})"
_ZH_MY = "(?:我|用户)(?:的)?"
# A Chinese name is two to four characters, ended by punctuation or a word that follows one.
_ZH_NAME = (
    f"(?P<name>[{HAN}]{{2,4}}?)"
    r"(?=$|[，。！？、,.!?；;\s）)]|在|是|的|和|也|今年|住|刚|现在|已经|去|从|很|特别|最近)"
)
_ZH_FORMS = [
    re.compile(f"{_ZH_MY}{_ZH_REL}(?:叫做|名叫|叫|名字叫|的名字是|名字是){_ZH_NAME}"),
    re.compile(f"{_ZH_MY}有(?:一)?(?:个|只|条)?{_ZH_REL}(?:叫做|名叫|叫){_ZH_NAME}"),
    re.compile(f"(?<![{HAN}])(?P<name>[{HAN}]{{2,4}}?)是{_ZH_MY}{_ZH_REL}"),
]
_ZH_NOT_NAMES = frozenset({"什么", "啥", "谁", "哪个", "他们", "她们", "我们", "这个", "那个"})
_SAID_PREFIX = re.compile(r"^\s*(?:User said:|用户说[:：])\s*", re.IGNORECASE)
_SUBJECT = re.compile(r"^\s*(?:I|User|The user|我|用户)\s*$")
_PUNCT = " \t\n.,!?;:，。！？；、：\"'“”‘’"


@dataclass(frozen=True)
class Alias:
    """One link a statement makes between a relation and a name.

    Attributes:
        relation: The relation's key in `RELATIONS` ("sister", "younger sister").
        name: The name as said ("Lena", "小雨").
        record_id: The record (raw statement or memory) that says it.
        pure: The statement says nothing but the link ("My sister is called Lena.").
    """

    relation: str
    name: str
    record_id: str
    pure: bool


def aliases_in(text: str) -> list[tuple[str, str, bool]]:
    """Return the `(relation, name, pure)` links a statement makes, by exact form only.

    Example:
        `aliases_in("My sister is called Lena.")` → `[("sister", "Lena", True)]`
    """
    body = _SAID_PREFIX.sub("", text).strip(_PUNCT)
    out: list[tuple[str, str, bool]] = []
    for pattern, words, stop in (
        *((p, _EN_WORDS, _EN_NOT_NAMES) for p in _EN_FORMS),
        *((p, _ZH_WORDS, _ZH_NOT_NAMES) for p in _ZH_FORMS),
    ):
        for m in pattern.finditer(body):
            name = m.group("name")
            if words is _EN_WORDS:
                name = " ".join(w for w in re.sub(r"['’]s$", "", name).split() if w not in stop)
            if not name or name in stop:
                continue
            relation = words[m.group("rel").casefold() if words is _EN_WORDS else m.group("rel")]
            before = _SUBJECT.sub("", body[: m.start()])
            pure = not (before + body[m.end() :]).strip(_PUNCT)
            if (relation, name) not in {(r, n) for r, n, _ in out}:
                out.append((relation, name, pure))
    return out


def relations_in(query: str) -> dict[str, str]:
    """Return `{relation: word as said}` for the user's own relations a query names.

    English asks "my sister"; Chinese often drops the 我 ("妹妹做什么工作？").
    """
    out: dict[str, str] = {}
    for m in re.finditer(rf"{_EN_MY}{_EN_MOD}{_EN_REL}(?i:s?\b)", query):
        out.setdefault(_EN_WORDS[m.group("rel").casefold()], m.group("rel"))
    for m in re.finditer(_ZH_REL, query):
        out.setdefault(_ZH_WORDS[m.group("rel")], m.group("rel"))
    return out


def _names_said(query: str, name: str) -> bool:
    if re.search(f"[{HAN}]", name):
        return name in query
    return re.search(rf"(?<![\w]){re.escape(name)}(?![\w])", query, re.IGNORECASE) is not None


_NAMING_WORDS = frozenset(tokenize("name named called call who"))
_ZH_NAMING = re.compile(f"我|的|叫|名字|什么|啥|谁|是|吗|呢|[^{HAN}]")


def _asks_beyond_naming(query: str, said: Sequence[str]) -> bool:
    """True if the query asks about the person more than who they are ("…do for work?")."""
    rest = query
    for s in said:
        rest = re.sub(re.escape(s), " ", rest, flags=re.IGNORECASE)
    if _ZH_NAMING.sub("", rest):
        return True
    # What is left of a Chinese question is naming words only; read the English words alone
    # (Chinese n-grams are no English naming word, so "我老公叫啥名字" asked "beyond").
    return bool(set(tokenize(re.sub(f"[{HAN}]", " ", rest))) - _NAMING_WORDS)


def _mentions(record: object, words: Sequence[str]) -> bool:
    """True if a record's content says one of `words` whole (case-insensitive)."""
    content = getattr(record, "content", None)
    if not isinstance(content, str):
        return False
    low = content.casefold()
    return any(w.casefold() in low for w in words)


def _terms(texts: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(t for text in texts for t in tokenize(text)))


def _without(terms: Iterable[str], entity: Sequence[str]) -> list[str]:
    """Query terms that are not about the entity (a Chinese n-gram touching it is)."""
    chars = {c for e in entity for c in e if re.match(f"[{HAN}]", c)}
    gone = set(_terms(entity))
    return [t for t in terms if t not in gone and not (chars & set(t))]


@dataclass(frozen=True)
class Hop:
    """What the aliases add to one query's lexical ranking.

    Attributes:
        aliases: The links followed.
        lexical: The query's lexical hits with the links' credit, best first.
        names: Names the query now means, for the ranking's name boost.
        queries: The query with each link resolved ("What does Lena do for work?"), for
            dense recall: a record's similarity is the best over the query and these.
        demoted: Defining statements that only name the person, for a query asking more.
            They answered "who", which the hop has used, yet the chat model needs them to
            connect the records it reached: their similarity is set just below the least
            of those records, so they come right after them.
        reached: The records credited through a link.
    """

    aliases: list[Alias]
    lexical: list[tuple[str, float]]
    names: list[str]
    queries: list[str]
    demoted: frozenset[str]
    reached: frozenset[str]

    def dense(
        self, dense: Sequence[tuple[str, float]], resolved: Sequence[Sequence[tuple[str, float]]]
    ) -> list[tuple[str, float]]:
        """Merge the query's dense hits with those of the resolved queries, best first."""
        best: dict[str, float] = {}
        for hits in (dense, *resolved):
            for i, s in hits:
                best[i] = max(best.get(i, s), s)
        below = [best[i] for i in self.reached if i in best]
        for i in self.demoted:
            if below:
                best[i] = min(below) - 1e-6
            else:
                best.pop(i, None)
        return sorted(best.items(), key=lambda kv: -kv[1])


Search = Callable[[list[str], int], list[tuple[str, float]]]


def hop(
    query: str,
    lexical: Sequence[tuple[str, float]],
    search: Search,
    records: Mapping[str, object],
    usable: Callable[[list[str]], set[str]],
    *,
    names: Iterable[str] = (),
    candidates: int = 200,
    seeds: int = 50,
) -> Hop | None:
    """Follow the user's aliases one hop from what a query names.

    A record that mentions the other side of a link ("Lena" for "my sister", "sister" for
    "Lena") gains the score the defining statement earned on what the query said, as if
    it had said it. The defining statement, when it says nothing but the link and the
    query asks more than who the person is, keeps only the score of the query's other
    words: it answered "who", which the hop has used.

    Args:
        query: The question.
        lexical: Its BM25 hits, best first.
        search: BM25 over the user's records: `(terms, k) -> [(id, score)]`.
        records: The user's records by id (read for `content`).
        usable: Of some record ids, those that may define a link (the store has them,
            recallable and readable by the asking agent).
        names: Names the query mentions (for the name boost), kept first.
        candidates: How many hits each hop search returns.
        seeds: How many of the query's lexical hits are read for naming statements.

    Returns:
        The credited hits, or None when no link applies.
    """
    asked = relations_in(query)
    seen = [i for i, _ in lexical[:seeds]]
    if asked:
        seen += [i for i, _ in search(_terms(asked.values()), seeds)]
    found: list[Alias] = []
    for rid in dict.fromkeys(seen):
        content = getattr(records.get(rid), "content", None)
        if not isinstance(content, str):
            continue
        for relation, name, pure in aliases_in(content):
            if relation in asked or _names_said(query, name):
                found.append(Alias(relation, name, rid, pure))
    if found:
        ok = usable(list(dict.fromkeys(a.record_id for a in found)))
        found = [a for a in found if a.record_id in ok]
    if not found:
        return None
    scores = {i: s for i, s in lexical if s > 0}
    out = dict(scores)
    query_terms = _terms([query])
    boosted = list(names)
    defining = {a.record_id for a in found}
    resolved: list[str] = []
    demoted: set[str] = set()
    reached: set[str] = set()
    for (relation, name), links in _grouped(found).items():
        en, zh = RELATIONS[relation]
        if relation in asked:
            said, other = [asked[relation]], [name]
            resolved.append(_resolve(query, asked[relation], name))
        else:
            said, other = [name], [*en, *zh]
            resolved.append(_resolve(query, name, _relation_phrase(relation, name)))
        by_said = dict(search(_terms(said), candidates))
        credit = max((by_said.get(a.record_id, 0.0) for a in links), default=0.0)
        found_here = False
        for i, _ in search(_terms(other), candidates):
            # The whole name, not a character of it: 周毅's 周 is in 每周六.
            if i not in defining and i not in by_said and _mentions(records.get(i), other):
                out[i] = scores.get(i, 0.0) + credit
                reached.add(i)
                found_here = True
        if found_here and relation in asked:
            boosted.append(name)  # the records that name her are about who was asked
        # A link that reaches nothing leaves its statement as it was: it is all there is.
        if found_here and _asks_beyond_naming(query, [*said, *other]):
            rest = dict(search(_without(query_terms, [*said, *other]), candidates))
            for a in links:
                if a.pure:
                    out[a.record_id] = rest.get(a.record_id, 0.0)
                    demoted.add(a.record_id)
    ranked = sorted(((i, s) for i, s in out.items() if s > 0), key=lambda kv: -kv[1])
    return Hop(
        found,
        ranked,
        list(dict.fromkeys(boosted)),
        list(dict.fromkeys(q for q in resolved if q != query)),
        frozenset(demoted),
        frozenset(reached),
    )


def _resolve(query: str, said: str, meant: str) -> str:
    """Return the query with what it said of a person replaced by the other side of a link."""
    if re.search(f"[{HAN}]", said):
        return re.sub(f"(?:{_ZH_MY})?{re.escape(said)}", meant, query, count=1)
    pattern = rf"(?i:\b(?:(?:my|our)\s+{_EN_MOD})?{re.escape(said)}s?\b)"
    return re.sub(pattern, meant, query, count=1)


def _relation_phrase(relation: str, name: str) -> str:
    """Return how the user says a relation, in the name's script ("my sister", "我妹妹")."""
    en, zh = RELATIONS[relation]
    if zh and (re.search(f"[{HAN}]", name) or not en):
        return f"我{zh[0]}"
    return f"my {en[0]}"


def _grouped(found: Sequence[Alias]) -> dict[tuple[str, str], list[Alias]]:
    out: dict[tuple[str, str], list[Alias]] = {}
    for a in found:
        out.setdefault((a.relation, a.name), []).append(a)
    return out

"""Which language a text is in: the one place that says what counts as Chinese.

Memory works in Chinese and in English. A turn's language (its notices, its prompt, its
markers) is decided once, by `language_of` on the user's message; `has_han` only says whether
a text holds Chinese characters at all (for tokenizing and matching words).
"""

from __future__ import annotations

import functools
import re
from typing import Any, Literal

HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003ffff"
"""Han characters: the CJK unified ideographs, their extensions and compatibility forms."""
HAN_CHAR = re.compile(f"[{HAN}]")
HAN_SPACE = f"(?<=[{HAN}])[ \t\u3000]+(?=[{HAN}])"
"""A space between Chinese characters: where chat writing puts a comma ("唉我有哮喘 换季就犯
出门得揣着喷雾"), so it breaks clauses as a comma does."""
_TITLES = ("Mr", "Mrs", "Ms", "Dr", "St", "Mt", "Jr", "Sr", "Prof", "vs", "Co", "Ave", "Rd", "Blvd")
NOT_AN_END = "".join(rf"(?<!\b{t}\.)" for t in _TITLES)
"""Lookbehinds: the full stop of an abbreviation ("St. Vincent's", "Dr. Chen", "Co. Wicklow")
ends no sentence."""
EMOJI = "\u2600-\u27bf\u2b00-\u2bff\ufe0f\U0001f000-\U0001faff"
"""Emoji and pictographs (with the variation selector that asks for their emoji form): in a
chat message one often stands where a full stop would ("Night shifts again 😴 being a nurse
is no joke"), so a sentence splitter may end a sentence at one."""
Lang = Literal["zh", "en"]
LETTERS_PER_HAN = 3
"""A Chinese character carries about as much as three Latin letters."""


def has_han(text: str) -> bool:
    """Return True if the text contains a Chinese character."""
    return bool(HAN_CHAR.search(text))


def in_letters(text: str) -> int:
    """Return how many Latin letters a text says as much as (`LETTERS_PER_HAN` per character)."""
    return len(text) + (LETTERS_PER_HAN - 1) * len(HAN_CHAR.findall(text))


def language_of(text: str) -> Lang:
    """Return the language a message is written in: `zh` or `en`.

    Chinese when it has Chinese characters and they are not swamped by Latin letters (a
    Chinese character carries about as much as `LETTERS_PER_HAN` letters): "Remind me where I bought
    the 寿司 last week" is English, "帮我查一下 Python 的版本" Chinese.
    """
    han = len(HAN_CHAR.findall(text))
    latin = sum(1 for ch in text if ch.isascii() and ch.isalpha())
    return "zh" if han > 0 and han >= latin / LETTERS_PER_HAN else "en"


@functools.cache
def _to_simplified() -> Any:
    from opencc import OpenCC  # its tables ship in the package: no download

    return OpenCC("t2s")


_DIALECT = str.maketrans({"嫑": "别", "覅": "别", "咥": "吃", "勿": "不", "侪": "都", "侬": "你"})
"""Dialect characters read as the one character of standard writing that says the same: 嫑
(Shaanxi, Gansu) and 覅 (Wu) fuse 不要 / 勿要 into one, read as 别; 咥 is "eat" in Shaanxi;
勿, 侪 and 侬 are Wu's 不, 都 and 你. No corpus line has any: unread, "嫑记着了" took 嫑 for
the topic of a forget request, and a meal asked with 咥 was about nothing."""
_WU = {
    "阿拉": "我们",
    "今朝": "今天",
    "事体": "事情",
    "欢喜": "喜欢",
    "辰光": "时候",
    "交关": "非常",
}
_WU_WORD = re.compile(
    r"阿拉(?![伯斯丁木善尔])|今朝|事体|欢喜|辰光|交关|(?<![步砍征讨采杀])伐(?=[？?]|$)"
)
"""Wu (Shanghai) words read as the standard words of as many characters: "阿拉囡囡的事体侬
也勿要记了" is "我们囡囡的事情你也不要记了" (阿拉伯, 阿拉斯加 keep theirs); 伐 ending a
question is 吗 (步伐, 砍伐 keep theirs)."""


_I_IN_DIALECT = re.compile(
    r"(?:^|(?<=[\s，,。！!？?；;：:、~～给让叫把被跟和对帮替问找请的是说都也连比]))"
    r"额(?![度头外定满角数，,。.…~～！!？?\s]|$)"
)
"""额 for 我 (Shaanxi, Gansu, Shanxi: "额妈在宝鸡", "嫑给额放香菜"), where 我 would stand: at the
start of a clause or after a word that comes before the one spoken of (给, 跟, 的, 都 …).
Elsewhere, and before 度, 头, 外 (额度, 额头, 额外), it is the 额 of an amount or the
forehead (金额, 名额, 余额 keep it); before a pause ("额，我想想") it is a filler."""


def simplified(text: str) -> str:
    """Return a text with its traditional Chinese characters in simplified form.

    Users in Taiwan and Hong Kong write traditional characters ("別記了", "我對芒果過敏"),
    which the understanding model and the request patterns, written in simplified ones, do
    not read; dialect characters and Wu words are read as their standard ones (`_DIALECT`,
    `_WU_WORD`, `_I_IN_DIALECT`), as many characters for as many.
    What is kept stays in the user's own characters; only how it is read changes.
    """
    if not has_han(text):
        return text
    read = str(_to_simplified().convert(text)).translate(_DIALECT)
    read = _I_IN_DIALECT.sub("我", _WU_WORD.sub(lambda m: _WU.get(m[0], "吗"), read))
    if len(read) != len(text):
        return read
    # Cantonese characters typed in simplified writing (嗰, 餸) have rare variants outside
    # the basic plane that no corpus line uses: they stay as typed.
    return "".join(own if ord(new) > 0xFFFF else new for own, new in zip(text, read, strict=True))


_SCOTS = {
    "dinnae": "don't", "dinna": "don't", "cannae": "can't", "canna": "can't",
    "didnae": "didn't", "doesnae": "doesn't", "isnae": "isn't", "wasnae": "wasn't",
    "arenae": "aren't", "werenae": "weren't", "havenae": "haven't", "havnae": "haven't",
    "hasnae": "hasn't", "couldnae": "couldn't", "wouldnae": "wouldn't",
    "shouldnae": "shouldn't", "mustnae": "mustn't", "willnae": "won't",
    "och": "oh", "ach": "oh", "aboot": "about", "oot": "out", "aff": "off", "doon": "down",
    "tae": "to", "wi": "with", "fae": "from", "frae": "from", "ye": "you", "yer": "your",
    "yersel": "yourself", "masel": "myself", "hame": "home", "heid": "head", "telt": "told",
    "whit": "what", "naw": "no", "bairn": "child", "bairns": "children", "weans": "children",
    "gonnae": "going to", "wannae": "want to", "tatties": "potatoes",
}  # fmt: skip
_CHAT = {
    "u": "you", "ur": "your", "abt": "about", "bc": "because", "cuz": "because",
    "coz": "because", "bday": "birthday", "thx": "thanks", "smth": "something",
    "sth": "something", "idk": "I don't know", "tmr": "tomorrow", "b4": "before",
    "ppl": "people", "didnt": "didn't", "wasnt": "wasn't", "couldnt": "couldn't",
    "wouldnt": "wouldn't", "shouldnt": "shouldn't", "thats": "that's",
}  # fmt: skip
"""Chat shorthand read in full words ("can u not remember the stuff abt my grandma?" was no
request; "can you not remember the stuff about my grandma?" is one): a closed list, of the
forms the corpus has not (or once or twice). Those it has ("pls", "im", "dont", "rn") are
read as typed: spelled out, "pls don't let me forget it" read as a forget request."""
SPELLING = {**_CHAT, **_SCOTS}
"""Each word of chat shorthand or Scots (`_CHAT`, `_SCOTS`) and the standard words it is read as."""
_SPELLED = re.compile(
    r"(?i)\b(" + "|".join(sorted(SPELLING, key=len, reverse=True)) + r")\b(?![-.]\w|['’][a-rt-z])"
)
_SCOTS_WORD = re.compile(r"(?i)\b(" + "|".join(sorted(_SCOTS, key=len, reverse=True)) + r")\b(?!-)")
_KIN_IN_SCOTS = re.compile(r"(?i)\b(the|my|our|your|his|her|their|wee) (wean|da|maw)\b")
_KIN = {"wean": "child", "da": "dad", "maw": "mum"}
"""Scots spelling read in the words of standard English, as 嫑 and 额 are read as 别 and 我:
"och scratch that last bit dinnae keep it" took "och" for a topic, and "the one that watches
the wean" was about no relative. A closed dialect word list (the verbs' "-nae" is "-n't");
"wean", "da" and "maw" only after a word that comes before a person ("wean off" is a verb).
Only how a message is read changes: what is kept stays as typed (`read_form`)."""


_MUM = re.compile(r"(?i)\b(my|your|yer|his|her|our|their|the|ma) ma\b")
_MY_AND = re.compile(r"(?i)\b(?:ma(?= [a-z])|an(?= [b-df-gj-np-tv-z]))\b")
"""Scots "ma" (my; after one's: mum) and "an" (and, before a consonant), read so only in a
text with a sure Scots word: elsewhere they are "Ma and Pa" and "an" of "an hour"."""


def read_form(text: str) -> str:
    """Return a text as the understanding model and the request patterns read it.

    Chinese in simplified characters (`simplified`), English chat shorthand and dialect
    spelling in standard words (`_CHAT`, `_SCOTS`). Unlike `simplified`, it may change a
    text's length: a value is never copied from what it returns.
    """
    if has_han(text):
        return simplified(text)
    if not _SPELLED.search(text) and not _KIN_IN_SCOTS.search(text):
        return text
    text = _KIN_IN_SCOTS.sub(lambda m: f"{m[1]} {_KIN[m[2].lower()]}", text)
    if _SCOTS_WORD.search(text):
        text = _MUM.sub(lambda m: f"{m[1]} mum", text)
        text = _MY_AND.sub(
            lambda m: _in_case_of(m[0], "my" if m[0].lower() == "ma" else "and"), text
        )
    return _SPELLED.sub(lambda m: _in_case_of(m[1], SPELLING[m[1].lower()]), text)


def _in_case_of(word: str, standard: str) -> str:
    if len(word) > 1 and word.isupper():
        return word  # an abbreviation ("Madison, WI")
    return standard[0].upper() + standard[1:] if word[0].isupper() else standard

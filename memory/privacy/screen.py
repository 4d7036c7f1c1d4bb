r"""Sensitive data that memory must not keep: detection and redaction.

Detected: passwords, PINs and one-time codes named by a keyword, also when words come between
("the password for my router is ...", "密码跟我生日一样是..."); API keys and tokens (vendor
formats, private-key blocks, JWTs and random-looking tokens through `detect-secrets`, see
`memory.privacy.secrets`, plus a value named as a key, token or bearer); payment card numbers
(Luhn, digits grouped by spaces, dashes or dots); national IDs (Chinese resident IDs with a real
birth date and a checksum, or written 6-8-4 or named as an ID; Hong Kong and Taiwan IDs by
their check digits; US SSNs, also named "my social"); passport numbers named as such; bank
accounts (IBANs with their mod-97 checksum, or digits named as an account); phone numbers
(Chinese mobiles always, other formats when `phonenumbers` finds them valid and they start
with `+` or sit near a word such as phone or 电话); email addresses; WeChat and QQ IDs named
as such; IP addresses; street addresses with a house number (zh and en). Numbers written out
digit by digit in words or Chinese numerals are read as digits first
(`memory.privacy.spoken_digits`).

Boundaries are spelled out as ASCII classes rather than `\b`: CJK characters count as `\w`,
so `\b` never fires between 邮箱 and an address glued to it.
"""

from __future__ import annotations

import ipaddress
import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from itertools import accumulate

import phonenumbers

from memory.privacy.checksums import (
    CN_PROVINCES,
    cn_id_date_ok,
    cn_id_ok,
    hk_id_ok,
    iban_ok,
    luhn_ok,
    tw_id_ok,
)
from memory.privacy.secrets import vendor_secret_spans
from memory.privacy.spoken_digits import spell_out
from memory.text.language import simplified

# Kinds, in the words used when telling the user what was not remembered.
LABELS = {
    "password": ("a password", "密码"),
    "secret": ("an API key or token", "密钥或令牌"),
    "card": ("a payment card number", "银行卡号"),
    "national_id": ("an ID number", "身份证号"),
    "bank_account": ("a bank account number", "银行账号"),
    "phone": ("a phone number", "电话号码"),
    "email": ("an email address", "电子邮箱"),
    "passport": ("a passport number", "护照号码"),
    "messaging_id": ("a WeChat or QQ ID", "微信号或QQ号"),
    "ip_address": ("an IP address", "IP 地址"),
    "address": ("a street address", "住址"),
}
# When two kinds claim the same span, the more specific check wins.
_PRIORITY = {
    k: i
    for i, k in enumerate(
        [
            "password",
            "secret",
            "national_id",
            "passport",
            "card",
            "bank_account",
            "phone",
            "messaging_id",
            "email",
            "ip_address",
            "address",
        ]  # fmt: skip
    )
}

# Chinese input methods often type full-width digits, letters and colons; folding them one
# character for one keeps every span valid in the original text.
_FOLD = {c: c - 0xFEE0 for c in range(0xFF01, 0xFF5F)} | {0x3000: 0x20, 0xA0: 0x20}
# Punctuation that ends a sentence rather than a value.
_TRAILING = ".,;:)]}'\""


def _keyed(first: str, pattern: str) -> re.Pattern[str]:
    """Compile a pattern led by a class of its possible first characters.

    Python's engine tries every position; a cheap class test there makes keyword patterns
    several times faster on long texts without keywords.
    """
    return re.compile(f"(?=[{first}])(?:{pattern})")


_UNREDACTED = r"(?!\[redacted )"  # markers from an earlier pass are not secrets

_PASSWORD_EN = _keyed(
    "PpOoVvSsLl2",
    r"(?i:(?<![A-Za-z])(?:password|passcode|passphrase|passwd|pwd|pw|pin|otp"
    r"|(?:verification|security|one[- ]time|2fa|sms|login) (?:code|password))"
    r"(?:\s*(?:code|number))?(?![A-Za-z])"
    r"(?:\s*[:=]|\s+(?:is|was)(?![A-Za-z])\s*:?|\s*[是为])\s*"
    # "password is required" talks about a password without giving one.
    r"(?!(?:required|incorrect|wrong|invalid|expired|correct|reset|changed|the|a|an|not|too"
    r"|my|your|same|set|strong|weak|also|still|now|ok|fine)(?![!-~])))"
    rf"{_UNREDACTED}([!-~]+)",
)
# Without 是/：, only a run of 3+ ASCII characters counts, so 密码错了 or 密码8位 are left alone.
_PASSWORD_ZH = _keyed(
    "密口验校动Pp",
    r"(?:密码|口令|验证码|校验码|动态码|(?i:pin)码)"
    rf"(?:\s*(?:[是为:=]\s*){{1,2}}|\s*)(?=[!-~]{{3}})(?![:=]){_UNREDACTED}([!-~]+)",
)
# Words between the keyword and the value ("the password for my router is X", "wifi pw: X",
# "I set my password to X"): the value must then look like one (a digit, a symbol or an inner
# capital), so "the password for the wifi is on the fridge" is left alone.
_PASSWORD_EN_INDIRECT = _keyed(
    "PpWwDdGgAaLlEeSs",
    r"(?i:(?<![A-Za-z])(?:password|passcode|passphrase|passwd|pwd|pw|pin|wi-?fi key"
    r"|(?:door|gate|alarm|lock|entry|safe) code)"
    r"(?:\s+(?:for|of|to|on|at)\s+[^.!?\n:=。！？]{1,40}?)?"
    r"(?:\s*[:=]|\s+(?:is|was|is now|to|into|as)(?![A-Za-z])\s*:?)\s*)"
    rf"{_UNREDACTED}((?=[!-~]*(?:[0-9!#$%&*+<=>?@^_|~]|[a-z][A-Z]))[!-~]{{4,}})",
)
_PASSWORD_ZH_INDIRECT = _keyed(
    "密口Pp",
    r"(?:密码|口令|(?i:pin)码)[^。！？!?\n]{0,15}?"
    r"(?:设置?[成为]了?|改[成为]了?|换成了?|设的是|用的是|是|为|[:=：])\s*"
    # The value may follow a description of it: 用的是我女儿名字加生日xiaoyu0601.
    rf"[\u4e00-\u9fff]{{0,12}}?{_UNREDACTED}([!-~]{{4,}})",
)
_PASSPORT = _keyed(
    "Pp护通",
    r"(?:(?i:(?<![A-Za-z])passport(?:\s*(?:number|no\.?|#))?(?![A-Za-z]))|护照(?:号码?)?|通行证(?:号码?)?)"
    r"[^.!?\n。！？0-9A-Z]{0,12}?"
    r"(?<![A-Za-z])((?=[A-Z]{0,2}[0-9]{6})[A-Z]{0,2}[0-9]{6,9})(?![A-Za-z0-9])",
)
_MESSAGING_ID = _keyed(
    "WwQqVv微加",
    r"(?:(?i:(?<![A-Za-z])(?:wechat|weixin|wx|vx|qq)(?:\s*(?:id|number|no\.?|account))?(?![A-Za-z]))"
    r"|微信号?|加我微信)"
    r"\s*(?:(?:is|:|=|是|号是|号码是|号|：)\s*)?"
    r"((?=[A-Za-z0-9_-]*[0-9_-])[A-Za-z][A-Za-z0-9_-]{5,19}(?![A-Za-z0-9_-])"
    r"|(?<![0-9])[1-9][0-9]{4,11}(?![0-9]))",
)
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])"
_IPV4 = re.compile(
    rf"(?<![0-9A-Za-z.])({_OCTET}(?:\.{_OCTET}){{3}})(?::[0-9]{{1,5}})?(?![0-9]|\.[0-9])"
)
_IPV6 = _keyed(
    "0-9A-Fa-f:",
    r"(?<![0-9A-Za-z:])(?=[0-9A-Fa-f]{0,4}:[0-9A-Fa-f]{0,4}:)"
    r"[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}(?![0-9A-Za-z:])",
)
# A dotted quad after a version word is a version ("version 1.2.3.4", "build 10.0.0.1").
_VERSION_WORD = re.compile(r"(?i:(?:version|ver\.?|v|build|release|python|node|版本号?|版本)\s*)$")
_IP_WORDS = re.compile(r"(?i:\bip\b|address|server|router|host|gateway|dns|ssh|ping|地址|服务器)")
_STREET_TYPES = (
    "Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr|Court|Ct|Way|Place|Pl|"
    "Terrace|Crescent|Close|Parkway|Pkwy|Highway|Hwy|Square|Sq|Circle|Cir|Trail|Row|Gardens"
)
# A house number, one to four capitalised words, a street type: "221B Baker Street".
# Lower-case names count only after an address word ("I live at 42 baker street"): "I ran 5
# miles down the road" has a number and a road but no address.
_ADDRESS_EN = _keyed(
    "0-9",
    r"(?<![A-Za-z0-9.,$#])[0-9]{1,5}[A-Za-z]?(?:-[0-9]{1,4})?,?\s+"
    r"(?:(?:N|S|E|W|North|South|East|West)\.?\s+)?"
    rf"(?:[A-Z][A-Za-z'.-]*\s+){{1,4}}(?:{_STREET_TYPES})(?![A-Za-z])\.?"
    r"|(?<![0-9])[0-9]{1,4},?\s+(?:rue|avenue|boulevard|bd|place|quai|via|calle|avenida)\s+"
    r"(?:d[eu']\s*|de la\s+|des\s+|del\s+)?[A-Z][A-Za-zéèàç'-]+",
)
_ADDRESS_EN_NAMED = _keyed(
    "LlAaSsDd",
    r"(?i:(?<![A-Za-z])(?:live at|lives at|living at|address is|address:|located at|ship it to"
    r"|send it to|deliver(?: it)? to)\s+)"
    rf"([0-9]{{1,5}}[A-Za-z]?\s+(?:[A-Za-z'.-]+\s+){{1,4}}(?i:{_STREET_TYPES})(?![A-Za-z])\.?)",
)
_ADDRESS_DE = _keyed(
    "A-Z",
    r"(?<![A-Za-z])[A-Z][a-zäöüß]+(?:straße|strasse|weg|gasse|platz|allee)\s+[0-9]{1,4}[a-z]?"
    r"(?![0-9])",
)
_ZH_NUM = "[0-9一二三四五六七八九十百千零〇]"
# A road and its house number ("中山路123号", "南锣鼓巷8号"), then maybe a building, unit and
# room; or a building and a room with no road ("3栋2单元501"). 5号线 is a metro line.
# The road's name is read backwards from the road word (see `_zh_addresses`): a pattern
# starting at every character would try eight lengths of name at each.
_ADDRESS_ZH = re.compile(
    rf"(?:路|街|大道|巷|弄|胡同){_ZH_NUM}{{1,5}}(?:号(?![线门])|弄)"
    rf"(?:{_ZH_NUM}{{1,3}}(?:栋|幢|号楼|座))?(?:{_ZH_NUM}{{1,2}}单元)?(?:[0-9]{{2,5}}(?:室|房|号)?)?"
    rf"|{_ZH_NUM}{{1,3}}(?:栋|幢|号楼|座)(?:{_ZH_NUM}{{1,2}}单元)?[0-9]{{2,5}}(?:室|房|号)?"
)
_ZH_ROAD_NAME = 8  # characters of a road's name, at most
_NOT_IN_ROAD_NAME = frozenset("住在到是于去的我你他她来回从和与及了个")
_DOTTED_CARD = re.compile(
    r"(?<![0-9.])[0-9]{4}(?:\.[0-9]{4}){2,3}(?:\.[0-9]{1,3})?(?![0-9]|\.[0-9])"
)
_HK_ID = _keyed(
    "A-Z", r"(?<![A-Za-z0-9])([A-Z]{1,2})([0-9]{6}) ?(?:\(([0-9A])\)|([0-9A]))(?![A-Za-z0-9])"
)
_TW_ID = _keyed("A-Z", r"(?<![A-Za-z0-9])[A-Z][12][0-9]{8}(?![A-Za-z0-9])")
_ID_WORDS = re.compile(
    r"(?i:(?<![A-Za-z])(?:id|hkid|identity|identification)(?![A-Za-z]))"
    r"|身份证|身分證|身份證|身分证|证件|字號|字号"
)
_ID_REACH = 24  # characters between an ID word and the number it names
_SECRET_PREFIXED = re.compile(
    r"(?<![A-Za-z0-9_-])(?:sk-(?=[A-Za-z_-]*[0-9])[A-Za-z0-9_-]{20,}"
    r"|[rsp]k_(?:live|test)_[A-Za-z0-9]{16,}|gh[pousr]_[A-Za-z0-9]{20,}"
    r"|github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_-]{20,}|hf_[A-Za-z0-9]{30,}"
    r"|(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Za-z0-9])|xox[abprs]-[A-Za-z0-9-]{10,}"
    r"|AIza[0-9A-Za-z_-]{30,}|eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{5,})"
)
# A value named as a key or token must be long and hold a digit: "a token of appreciation".
_SECRET_NAMED = _keyed(
    "AaSsPpCcRrTtBb密秘令",
    r"(?:(?i:(?<![A-Za-z0-9])(?:(?:api|access|secret|private|client|auth|refresh|session)[_ -]?"
    r"(?:access[_ -]?)?(?:key|token|secret)|token|secret|bearer)(?![A-Za-z0-9]))"
    r"|(?i:api)?密钥|秘钥|令牌)"
    rf"\s*(?:(?:is|was)\s+|[:=是为]\s*)?[\"']?{_UNREDACTED}"
    r"((?=[A-Za-z_.+/=~-]*[0-9])[A-Za-z0-9_.+/=~-]{16,})",
)
# The domain ends on a letter label, so a sentence's closing period stays outside.
_EMAIL = re.compile(
    r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*"
    r"\.[A-Za-z]{2,}(?![A-Za-z0-9-])"
)
_URL_USER = re.compile(r"://[^\s/@]*:$")
_IBAN = re.compile(
    r"(?<![A-Za-z0-9])[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?(?![A-Za-z0-9])"
)
_ACCOUNT_NAMED = _keyed(
    "BbAa银账帐卡",
    r"(?:(?i:(?<![A-Za-z])(?:(?:bank\s+)?account|acct|a/c)(?:\s*(?:number|no\.?|#))?(?![A-Za-z]))"
    r"|银行账[号户]|账[号户]|帐[号户]|银行卡号?|卡号)"
    r"\s*(?:(?:is|was)\s+|[:#=是为]\s*)?([0-9](?:[ -]?[0-9]){7,29})(?![0-9])",
)
_SSN = _keyed(
    "0-9Ss",
    r"(?<![A-Za-z0-9_-])(?!000|666|9)[0-9]{3}-(?!00)[0-9]{2}-(?!0000)[0-9]{4}(?![A-Za-z0-9_-])"
    r"|(?i:(?<![A-Za-z])(?:ssn|social security(?: number| no\.?)?|social(?: number| no\.?)?)"
    r"(?![A-Za-z]))"
    r"\s*(?:(?:is|was)\s+|[:#=]\s*)?([0-9]{3}[ -]?[0-9]{2}[ -]?[0-9]{4})(?![0-9])",
)
# Letters may touch it (ID110105...): the date and checksum keep this specific enough.
_CN_ID = re.compile(
    r"(?<![0-9])[1-9][0-9]{5}([ -]?)(?:18|19|20)[0-9]{2}\1?[0-9]{4}\1[0-9]{3}[0-9Xx](?![0-9])"
)
# An 11-digit 1[3-9]x number is a mobile in nearly every Chinese text, so no keyword is needed.
_CN_MOBILE = re.compile(r"(?<![0-9])(?:(?:\+|00)86[ -]?)?1[3-9][0-9](?:[ -]?[0-9]{4}){2}(?![0-9])")
# Digit groups joined by single spaces or dashes; a number after "0." is a decimal, not a card.
_DIGIT_RUN = re.compile(r"(?<![A-Za-z0-9_])(?<![0-9]\.)[0-9]+(?:[ -][0-9]+)*(?![A-Za-z0-9_])")
# Every separator is non-empty, so the digit groups split one way only and matching is linear.
_PHONE_RUN = re.compile(
    r"(?<![A-Za-z0-9_+.])(?:\+ ?)?\(?[0-9]+(?:(?:\) ?|[ .-] ?\(?|\()[0-9]+){0,7}"
)
_PHONE_WORDS = _keyed(
    "PpTtCcSsMmFfLlRrWwHh电手座固联号致打来热传",
    r"(?i:(?<![A-Za-z])(?:(?:tele|cell|smart)?phones?|mobile|cell|tel|fax|landline|calls?|called"
    r"|text me|reach me|whatsapp|contact|hotline|my number)(?![A-Za-z]))"
    r"|电话|手机|座机|固话|联系方式|号码|致电|打给|来电|热线|传真",
)
# An ISO date followed by an hour reads as a valid number in both regions.
_DATE = re.compile(r"(?:19|20)[0-9]{2}([-./])[01]?[0-9]\1[0-3]?[0-9](?![0-9])")
_PHONE_REACH = 48  # characters between a phone word (or a previous number) and a number
_MAX_LOOKUPS = 200  # phonenumbers calls per text; past this, numbers near phone words count


@dataclass(frozen=True)
class Finding:
    """A span of sensitive data.

    Attributes:
        kind: One of the keys of `LABELS`.
        start: Offset of the first sensitive character.
        end: Offset just past the last one; for keyword forms only the value is covered.
    """

    kind: str
    start: int
    end: int


def _id_word_before(text: str, start: int) -> bool:
    return _ID_WORDS.search(text, max(0, start - _ID_REACH), start) is not None


def _ids(text: str) -> list[Finding]:
    """Return Chinese, Hong Kong and Taiwan ID numbers.

    A Chinese ID needs a real birth date and either its checksum or, as people mistype, a
    province code with the 6-8-4 grouping or an ID word before it. A Hong Kong ID needs its
    check digit and either the brackets or an ID word; a Taiwan ID its check digit and an ID word.
    """
    found: list[Finding] = []
    for m in _CN_ID.finditer(text):
        number = m.group().replace(" ", "").replace("-", "")
        if not cn_id_date_ok(number):
            continue
        grouped = bool(m.group(1)) or _id_word_before(text, m.start())
        if cn_id_ok(number) or (grouped and number[:2] in CN_PROVINCES):
            found.append(Finding("national_id", *m.span()))
    for m in _HK_ID.finditer(text):
        letters, digits, bracketed, bare = m.groups()
        if (bracketed or _id_word_before(text, m.start())) and hk_id_ok(
            letters, digits, bracketed or bare
        ):
            found.append(Finding("national_id", *m.span()))
    for m in _TW_ID.finditer(text):
        if tw_id_ok(m.group()) and _id_word_before(text, m.start()):
            found.append(Finding("national_id", *m.span()))
    return found


def _ips(text: str) -> list[Finding]:
    """Return IPv4 and IPv6 addresses; a dotted quad of small numbers needs an IP word nearby."""
    found: list[Finding] = []
    for m in _IPV4.finditer(text):
        if _VERSION_WORD.search(text, max(0, m.start() - 10), m.start()):
            continue
        octets = [int(o) for o in m.group(1).split(".")]
        near = _IP_WORDS.search(text, max(0, m.start() - _ID_REACH * 2), m.start())
        if near or max(octets) >= 10 and octets[0] != 0:
            found.append(Finding("ip_address", *m.span()))
    for m in _IPV6.finditer(text):
        if sum(bool(g) for g in m.group().split(":")) >= 3:  # "a::b" is not an address
            try:
                ipaddress.IPv6Address(m.group())
            except ValueError:
                continue
            found.append(Finding("ip_address", *m.span()))
    return found


def _zh_addresses(text: str) -> list[Finding]:
    """Return Chinese addresses with a house number, the road's name included."""
    found: list[Finding] = []
    for m in _ADDRESS_ZH.finditer(text):
        start = m.start()
        if not text[start].isdigit() and text[start] not in _ZH_NUM:
            name = start
            while (
                name > 0
                and start - name < _ZH_ROAD_NAME
                and text[name - 1].isalnum()
                and text[name - 1] not in _NOT_IN_ROAD_NAME
            ):
                name -= 1
            if name == start:
                continue  # a road word with no name ("路3号") is not enough
            start = name
        found.append(Finding("address", start, m.end()))
    return found


def _dotted_cards(text: str) -> list[Finding]:
    """Return Luhn-valid card numbers written in groups of four joined by dots."""
    return [
        Finding("card", *m.span())
        for m in _DOTTED_CARD.finditer(text)
        if 13 <= len(m.group().replace(".", "")) <= 19 and luhn_ok(m.group().replace(".", ""))
    ]


def _emails(text: str) -> list[Finding]:
    """Return email addresses; in "https://alice:pass@host" the part before @ is a password."""
    return [
        Finding("email", *m.span())
        for m in _EMAIL.finditer(text)
        if not _URL_USER.search(text, max(0, m.start() - 80), m.start())
    ]


def _not_a_date(value: str) -> bool:
    return not _DATE.match(value)


_CHECKED: list[tuple[str, re.Pattern[str], Callable[[str], bool] | None]] = [
    ("password", _PASSWORD_EN, None),
    ("password", _PASSWORD_ZH, None),
    ("secret", _SECRET_PREFIXED, None),
    ("secret", _SECRET_NAMED, None),
    ("bank_account", _IBAN, iban_ok),
    ("bank_account", _ACCOUNT_NAMED, _not_a_date),
    ("national_id", _SSN, None),
    ("phone", _CN_MOBILE, None),
    ("password", _PASSWORD_EN_INDIRECT, None),
    ("password", _PASSWORD_ZH_INDIRECT, None),
    ("passport", _PASSPORT, None),
    ("messaging_id", _MESSAGING_ID, None),
    ("address", _ADDRESS_EN, None),
    ("address", _ADDRESS_EN_NAMED, None),
    ("address", _ADDRESS_DE, None),
]
# Words a keyword pattern cannot match without (lower case): a text holding none of them
# skips the pattern. `in` on a string is a fast scan; a case-insensitive regex over a long
# paste is not.
_NEEDS: dict[re.Pattern[str], tuple[str, ...]] = {
    _PASSWORD_EN: ("pass", "pw", "pin", "otp", "code"),
    _PASSWORD_ZH: ("密码", "口令", "验证码", "校验码", "动态码", "pin码"),
    _SECRET_NAMED: ("key", "token", "secret", "bearer", "密钥", "秘钥", "令牌"),
    _ACCOUNT_NAMED: ("account", "acct", "a/c", "账", "帐", "卡"),
    _PASSWORD_EN_INDIRECT: ("pass", "pw", "pin", "wifi", "wi-fi", "code"),
    _PASSWORD_ZH_INDIRECT: ("密码", "口令", "pin码"),
    _PASSPORT: ("passport", "护照", "通行证"),
    _MESSAGING_ID: ("wechat", "weixin", "wx", "vx", "qq", "微信"),
    _ADDRESS_EN_NAMED: ("live", "living", "address", "located", "ship", "send", "deliver"),
    _ADDRESS_DE: ("straße", "strasse", "weg", "gasse", "platz", "allee"),
}


def _cards(text: str) -> list[Finding]:
    """Return Luhn-valid card numbers: one 13-19 digit group, or card-style groups of 3-6."""
    found: list[Finding] = []
    for run in _DIGIT_RUN.finditer(text):
        if run.end() - run.start() < 13:
            continue
        groups = run.group().replace("-", " ").split(" ")
        offsets = list(accumulate((len(g) + 1 for g in groups), initial=run.start()))
        i = 0
        while i < len(groups):
            hit, digits = None, groups[i]
            if 13 <= len(digits) <= 19 and luhn_ok(digits):
                hit = i
            elif 3 <= len(digits) <= 6:
                for j in range(i + 1, len(groups)):
                    digits += groups[j]
                    if not 3 <= len(groups[j]) <= 6 or len(digits) > 19:
                        break
                    if len(digits) >= 13 and luhn_ok(digits):
                        hit = j  # keep going: a longer number may pass as well
            if hit is None:
                i += 1
                continue
            found.append(Finding("card", offsets[i], offsets[hit] + len(groups[hit])))
            i = hit + 1
    return found


@lru_cache(maxsize=4096)
def _valid_phones(chunk: str) -> tuple[tuple[int, int], ...]:
    spans = {
        (m.start, m.end)
        for region in ("CN", "US")
        for m in phonenumbers.PhoneNumberMatcher(chunk, region, phonenumbers.Leniency.VALID)
    }
    return tuple(sorted(spans))


def _phones(text: str) -> list[Finding]:
    """Return numbers `phonenumbers` accepts that start with + or sit near a phone word."""
    starts: list[int] | None = None
    ends: list[int] = []
    found: list[Finding] = []
    anchor = -_PHONE_REACH - 1  # a number listed right after another one is a phone too
    lookups = 0
    for m in _PHONE_RUN.finditer(text):
        s, e = m.span()
        if e - s < 7:
            continue
        n_digits = sum(c.isdigit() for c in m.group())
        if n_digits < 7 or _DATE.match(m.group().lstrip("(+ ")):
            continue
        if starts is None:  # most texts have no long number, so look for the words lazily
            words = [w.span() for w in _PHONE_WORDS.finditer(text)]
            starts, ends = [w[0] for w in words], [w[1] for w in words]
        i, j = bisect_right(ends, s), bisect_left(starts, e)
        near = (
            s - anchor <= _PHONE_REACH
            or (i > 0 and s - ends[i - 1] <= _PHONE_REACH)
            or (j < len(starts) and starts[j] - e <= _PHONE_REACH // 2)
        )
        if not (near or m.group().startswith("+")):
            continue
        if lookups >= _MAX_LOOKUPS:
            # Over budget, so stay on the safe side rather than slow down every write.
            if near and n_digits <= 15:
                found.append(Finding("phone", s, e))
                anchor = e
            continue
        lookups += 1
        # The next few characters let phonenumbers reject a time such as 10:30.
        for a, b in _valid_phones(text[s : e + 3]):
            found.append(Finding("phone", s + a, s + b))
            anchor = s + b
    return found


def _scan(folded: str) -> list[Finding]:
    """Return every finding of every detector in a folded text, overlaps included."""
    found: list[Finding] = []
    low = folded.lower()
    for kind, pattern, valid in _CHECKED:
        needs = _NEEDS.get(pattern)
        if needs is not None and not any(word in low for word in needs):
            continue
        for m in pattern.finditer(folded):
            start, end = m.span(m.lastindex or 0)
            while end > start + 1 and folded[end - 1] in _TRAILING:
                end -= 1
            if valid is None or valid(folded[start:end]):
                found.append(Finding(kind, start, end))
    found += [Finding("secret", s, e) for s, e in vendor_secret_spans(folded)]
    found += _cards(folded) + _dotted_cards(folded) + _ids(folded) + _ips(folded) + _emails(folded)
    found += _zh_addresses(folded)
    return found + _phones(folded)


def find_sensitive(text: str) -> list[Finding]:
    """Find the sensitive spans in a text.

    Args:
        text: Any text, in any language; full-width characters and traditional Chinese
            are understood, and so are numbers written out digit by digit ("four one one
            one ...", "幺三八...").

    Returns:
        The spans in order, without overlaps. Where two overlap, the earlier (then the longer)
        one is kept.
    """
    folded = text.translate(_FOLD)
    # Keywords in traditional characters (密碼, 身分證) are read as in simplified ones; a
    # conversion that keeps the length keeps every span where it was.
    read = simplified(folded)
    folded = read if len(read) == len(folded) else folded
    found = _scan(folded)
    spelled = spell_out(folded)
    if spelled is not None:
        for f in _scan(spelled.text):
            start, end = spelled.original(f.start, f.end)
            found.append(Finding(f.kind, start, end))
    found.sort(key=lambda f: (f.start, -f.end, _PRIORITY[f.kind]))
    out: list[Finding] = []
    for f in found:
        if not out or f.start >= out[-1].end:
            out.append(f)
    return out


def redact(text: str, findings: list[Finding] | None = None) -> str:
    """Replace each sensitive span with a `[redacted <kind>]` marker.

    Args:
        text: The text to clean.
        findings: Spans from `find_sensitive(text)`; found afresh when omitted.

    Returns:
        The text with the spans replaced. When the spans are found here, the result is screened
        again until nothing is left, because a marker can close a gap (two clauses joined, a
        value cut short) that hid something; so `redact(redact(x)) == redact(x)`.
    """
    for _ in range(1 if findings is not None else 4):
        spans = find_sensitive(text) if findings is None else findings
        if not spans:
            break
        for f in sorted(spans, key=lambda f: f.start, reverse=True):
            text = f"{text[: f.start]}[redacted {f.kind}]{text[f.end :]}"
    return text


def describe(kinds: list[str], zh: bool) -> str:
    """Return a sentence telling the user what was deliberately not remembered.

    Args:
        kinds: Kinds from `Finding.kind`; repeats are mentioned once.
        zh: Answer in Chinese rather than English.

    Returns:
        One sentence in parentheses.
    """
    names = [LABELS.get(k, (k, k))[1 if zh else 0] for k in dict.fromkeys(kinds)]
    if zh:
        return f"（隐私保护：我没有记住你提到的{'、'.join(names)}。）"
    return f"(Privacy: I did not remember {', '.join(names)} you mentioned.)"

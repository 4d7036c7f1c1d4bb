"""Sensitive data that memory must not keep: detection and redaction.

Passwords, API keys and tokens, payment card numbers (Luhn-checked), national ID numbers
(the 18-digit Chinese format with its checksum, US SSNs), bank accounts (IBAN, or digits
named as an account), phone numbers and email addresses.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Kinds, in the words used when telling the user what was not remembered.
LABELS = {
    "password": ("a password", "密码"),
    "secret": ("an API key or token", "密钥或令牌"),
    "card": ("a payment card number", "银行卡号"),
    "national_id": ("an ID number", "身份证号"),
    "bank_account": ("a bank account number", "银行账号"),
    "phone": ("a phone number", "电话号码"),
    "email": ("an email address", "电子邮箱"),
}

_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    (
        "password",
        re.compile(
            r"(?i)(?:password|passcode|passwd|pwd|pin)\s*(?:is|=|:|：)\s*\S+|密码\s*(?:是|为|:|：)?\s*\S+"
        ),
    ),
    (
        "secret",
        re.compile(
            r"\b(?:sk-[A-Za-z0-9_-]{16,}|ghp_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"
            r"|AKIA[0-9A-Z]{16}|xox[abprs]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{30,}"
            r"|eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{5,})"
            r"|(?i:(?:api[_ -]?key|secret|token|bearer)\s*(?:is|=|:|：)?\s*[A-Za-z0-9_\-.]{16,})"
        ),
    ),
    ("email", re.compile(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b")),
    ("bank_account", re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){3,7}(?: ?[A-Z0-9]{1,3})?\b")),
    (
        "bank_account",
        re.compile(
            r"(?i)(?:account(?: number)?|acct|账号|账户|卡号)\s*(?:is|=|:|：|是)?\s*[\d -]{8,30}\d"
        ),
    ),
    ("national_id", re.compile(r"\b\d{3}-\d{2}-\d{4}\b")),
]
_DIGIT_RUN = re.compile(r"(?<![\w-])\+?\d[\d -]{6,23}\d(?![\w-])")
_CN_ID = re.compile(r"(?<!\d)\d{17}[\dXx](?!\d)")
_CN_MOBILE = re.compile(r"(?<!\d)1[3-9]\d{9}(?!\d)")
_PHONE_WORDS = re.compile(r"(?i)phone|mobile|cell|tel\b|call me at|whatsapp|电话|手机|联系方式")


@dataclass(frozen=True)
class Finding:
    """A span of sensitive data."""

    kind: str
    start: int
    end: int


def luhn_ok(digits: str) -> bool:
    """Return True if a digit string passes the Luhn checksum (payment cards)."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2 == 1:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def cn_id_ok(number: str) -> bool:
    """Return True if an 18-character Chinese resident ID has a valid check character."""
    weights = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
    total = sum(int(c) * w for c, w in zip(number[:17], weights, strict=True))
    return "10X98765432"[total % 11] == number[17].upper()


def find_sensitive(text: str) -> list[Finding]:
    """Return the sensitive spans in text, in order, without overlaps."""
    found: list[Finding] = []
    for kind, pattern in _PATTERNS:
        found.extend(Finding(kind, m.start(), m.end()) for m in pattern.finditer(text))
    for m in _CN_ID.finditer(text):
        if cn_id_ok(m.group()):
            found.append(Finding("national_id", m.start(), m.end()))
    found.extend(Finding("phone", m.start(), m.end()) for m in _CN_MOBILE.finditer(text))
    phone_context = bool(_PHONE_WORDS.search(text))
    for m in _DIGIT_RUN.finditer(text):
        digits = re.sub(r"\D", "", m.group())
        if 13 <= len(digits) <= 19 and luhn_ok(digits):
            found.append(Finding("card", m.start(), m.end()))
        elif 10 <= len(digits) <= 15 and (phone_context or m.group().startswith("+")):
            found.append(Finding("phone", m.start(), m.end()))
    found.sort(key=lambda f: (f.start, -f.end))
    out: list[Finding] = []
    for f in found:
        if not out or f.start >= out[-1].end:
            out.append(f)
    return out


def redact(text: str, findings: list[Finding] | None = None) -> str:
    """Replace each sensitive span with a `[redacted <kind>]` marker."""
    findings = find_sensitive(text) if findings is None else findings
    for f in sorted(findings, key=lambda f: f.start, reverse=True):
        text = f"{text[: f.start]}[redacted {f.kind}]{text[f.end :]}"
    return text


def describe(kinds: list[str], zh: bool) -> str:
    """Return a sentence telling the user what was deliberately not remembered."""
    names = [LABELS.get(k, (k, k))[1 if zh else 0] for k in dict.fromkeys(kinds)]
    if zh:
        return f"（隐私保护：我没有记住你提到的{'、'.join(names)}。）"
    return f"(Privacy: I did not remember {', '.join(names)} you mentioned.)"

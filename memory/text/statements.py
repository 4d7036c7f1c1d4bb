"""What a user says, as statements: the unit that is archived, screened, scoped and forgotten.

A message often says several things ("I live in Berlin and I'm vegetarian", 我对花生过敏，
现在在杭州当护士). Forgetting, superseding, refusing or scoping one of them must not touch
the others, so the gate (`memory.turn`) splits every user message into statements first.

Splitting is by exact form only: sentence punctuation, Chinese clause commas, and an English
"and"/"but" that starts a new clause with its own subject ("… and I'm …"). It never splits
inside a number, an e-mail address or a list ("Python and Go" stays one statement).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memory.store.records import UserId, stable_id
from memory.text.language import HAN, HAN_SPACE, NOT_AN_END

_SENTENCE_END = re.compile(rf"(?<=[.!?]){NOT_AN_END}\s+(?=\S)|(?<=[。！？；;])\s*|\n+")
# A Chinese comma separates clauses; an enumeration comma (、) does not. A marker that
# replaced a value ("[redacted card]") ends a clause as the value did, and one that replaced
# a forgotten statement ("［已按用户要求忘记］", `memory.turn.FORGOTTEN_TEXT`) starts one as
# it did: the screened thread splits as the words did when they were said.
_CUT = r"\[forgotten |［已按"
"""The start of a forgotten statement's marker: a clause starts there as the statement did."""
_ZH_CLAUSE = re.compile(f"(?<=[{HAN}\\w\\]］])[，,](?=[{HAN}]|{_CUT})|{HAN_SPACE}")
# "me and my mates do the pub quiz" is one subject, not two clauses (a comma would say so);
# both splitters use it (`graphs.offline_rules`).
NOT_A_SUBJECT_END = r"(?<!\b[Mm]e)(?<!\b[Yy]ou)(?<!\b[Hh]im)(?<!\b[Hh]er)(?<!\b[Uu]s)(?<!\b[Tt]hem)"
THE_USER = re.compile(r"(?i)\b(?:i|i'm|im|i've|ive|i'll|me|we|we're|we've|us)\b|我(?![的们家])")
"""A word for the user as one who does or has something: "I", "me", "we", 我 (not 我的, 我们,
我家: the user as an owner)."""
# "Tomasz and I are doing the drive": "I" with a plural verb is the end of one subject.
I_ALONE = r"I(?!\s+(?:are|were)\b)"
_EN_CLAUSE = re.compile(
    rf"(?:,\s+|{NOT_A_SUBJECT_END}\s+)(?:and|but|while|whereas)\s+"
    rf"(?=(?:{I_ALONE}|I'm|I've|I'd|I'll|my|we|we're|our|he|she|they)\b|{_CUT})"
    rf"|,\s+(?=(?:I|I'm|I've|my)\s|{_CUT})",
)
MIN_CHARS = 4
"""A piece shorter than this (a bare time, "下周五", "OK") joins the statement after it."""


@dataclass(frozen=True)
class Statement:
    """One thing a user said.

    Attributes:
        id: Stable id of the statement (its raw archive item uses it as record id).
        message_id: The message it was said in.
        position: Its place in that message, from 0.
        text: What was said, as said (not yet screened).
    """

    id: str
    message_id: str
    position: int
    text: str


def split_text(text: str) -> list[str]:
    """Return the statements of a message's text, in order: exact, stripped pieces of it.

    Example:
        `split_text("I live in Berlin and I'm vegetarian.")` →
        `["I live in Berlin", "I'm vegetarian."]`
    """
    seps = sorted(
        (m.start(), m.end())
        for pattern in (_SENTENCE_END, _ZH_CLAUSE, _EN_CLAUSE)
        for m in pattern.finditer(text)
    )
    spans: list[list[int]] = []
    at = 0
    for a, b in seps:
        if a >= at:
            spans.append([at, a])
            at = b
    spans.append([at, len(text)])
    merged: list[list[int]] = []
    for span in (s for s in spans if _core(text[s[0] : s[1]])):
        if merged and len(_core(text[merged[-1][0] : merged[-1][1]])) < MIN_CHARS:
            merged[-1][1] = span[1]  # too short to stand alone: it belongs to what follows
        else:
            merged.append(span)
    if len(merged) > 1 and len(_core(text[merged[-1][0] : merged[-1][1]])) < MIN_CHARS:
        last = merged.pop()
        merged[-1][1] = last[1]
    return [text[a:b].strip() for a, b in merged]


def _core(piece: str) -> str:
    return piece.strip(" \t\n.,!?;:，。！？；、")


def split_message(user_id: UserId, thread_id: str, message_id: str, text: str) -> list[Statement]:
    """Return a message's statements with their stable ids.

    The first statement of a message keeps the id the whole message had as a raw turn
    before statements existed, so a replay writes nothing twice.
    """
    return [
        Statement(statement_id(user_id, thread_id, message_id, i), message_id, i, said)
        for i, said in enumerate(split_text(text))
    ]


def statement_id(user_id: str, thread_id: str, message_id: str, position: int) -> str:
    """Return the stable id of the statement at `position` of a message."""
    parts = (thread_id, message_id) if position == 0 else (thread_id, message_id, str(position))
    return stable_id(user_id, "turn", *parts)


# A Chinese clause that opens with its own subject starts a statement of its own; one that
# does not ("长得特别慢" after "阳台上种了几盆多肉") goes on with the one before. English
# is split only before a subject (`_EN_CLAUSE`), so each of its clauses stands alone.
_OWN_SUBJECT = re.compile(r"^(?:我|你|您|他|她|它|咱|俺|大家)")
_ENDS_SENTENCE = re.compile(r"[.!?。！？；;]\s*$")


def continues(before: str, clause: str) -> bool:
    """Return True if `clause`, said right after `before` in one message, goes on with it.

    Only within one sentence, and only a Chinese clause with no subject of its own: what
    "刚才那句" means is then the whole sentence, not its last clause.
    """
    if _ENDS_SENTENCE.search(before) or not re.match(f"[{HAN}]", clause.strip()):
        return False
    return not _OWN_SUBJECT.match(clause.strip())


_PART = re.compile(rf"[,;:，；：、—]+|\s+-\s+|{HAN_SPACE}")


def parts_of(sentence: str) -> list[str]:
    """Return the sentence and, if it has several, its parts (cut at any punctuation).

    What an update or a forget request means is often in one part of it, the rest is why
    ("…, the host's schedule changed", "my old bike, sold it last week anyway"): each
    part is weighed beside the whole, and the nearest counts.
    """
    parts = [p.strip() for p in _PART.split(sentence) if len(p.strip()) > 1]
    return [sentence, *parts] if len(parts) > 1 else [sentence]

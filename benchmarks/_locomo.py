"""The one LoCoMo reader of the benchmarks, and the product path they all measure.

LoCoMo (``locomo10*.json``) holds conversations of two speakers in dated sessions, and
questions about them with a category (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop,
5 adversarial) and the turns (``dia_id``) that answer them. `load` reads a file into
`Conversation`s; every benchmark that reads LoCoMo (`locomo.py`, `locomo_qa.py`,
`locomo_cv.py`, `peers.py`) uses it, so they read the same turns, dates and evidence.

`service_in` and `ingest_service` are the product path: a `MemoryService` of its own per
conversation, each session's turns archived with `MemoryService.archive_turns`.
"""

from __future__ import annotations

import json
import re
import sqlite3
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import _common  # noqa: F401  (sets the offline environment and the import path first)

from memory.lifecycle import Policy
from memory.store.records import Source

if TYPE_CHECKING:
    from memory.service import MemoryService

DEFAULT_DATA = _common.REPO / "../shared/data/locomo/locomo10_dev.json"
DEFAULT_AUDIT = _common.REPO / "../shared/data/locomo/locomo10_dev_audit_errors.json"
CATEGORIES = {1: "multi_hop", 2: "temporal", 3: "open_domain", 4: "single_hop"}
"""The categories the benchmarks ask (5, adversarial, is left out everywhere)."""
ADVERSARIAL = 5
# The service keeps raw turns for `Policy.turn_ttl` (365 days by default); LoCoMo's sessions
# are from 2022-2023, so the benchmarks' services keep them for a century.
SERVICE_TURN_TTL = timedelta(days=36500)


@dataclass
class Turn:
    """One raw dialogue turn, record-like for `retrieval.rank`."""

    id: str
    """The turn's ``dia_id``, e.g. ``D3:12``."""
    speaker: str
    text: str
    caption: str | None
    session: int
    position: int
    """Place in the whole conversation (0-based)."""
    said_at: datetime
    """The session's date (every turn of a session has it)."""
    kind: str = "episode"
    confidence: float = 1.0
    content: str = ""
    """What is stored: ``"<speaker>: <text> [shares a photo of <caption>]"``."""
    in_session: int = 0
    """Place in its session (0-based)."""


@dataclass
class Question:
    """One non-adversarial question of a conversation."""

    conv: int
    index: int
    """Position in the conversation's ``qa`` list (adversarial questions included)."""
    question: str
    category: int
    evidence: list[str]
    """dia_ids that answer it (split and repaired, or the audit's correction)."""
    corrected: bool = False
    answer: str | None = None
    """The gold answer (None when the data has none)."""


@dataclass
class Conversation:
    sample_id: str
    speakers: tuple[str, str]
    turns: list[Turn]
    questions: list[Question] = field(default_factory=list)
    """Questions with evidence: what the recall benchmarks ask."""
    asked: list[Question] = field(default_factory=list)
    """Every non-adversarial question, with evidence or not (answer grading needs no
    evidence)."""
    adversarial: int = 0
    """Category 5 questions left out."""
    questions_without_evidence: int = 0

    @property
    def now(self) -> datetime:
        """Questions are asked after the whole conversation."""
        return max(t.said_at for t in self.turns) + timedelta(days=1)

    def transcript(self) -> str:
        """Every turn of every session with the session's date, sessions a blank line apart."""
        lines: list[str] = []
        last = None
        for t in self.turns:
            if t.session != last:
                if lines:
                    lines.append("")
                lines.append(f"[session {t.session}, {t.said_at:%Y-%m-%d %H:%M}]")
                last = t.session
            lines.append(t.content)
        return "\n".join(lines)

    def neighbours(self, weights: list[float]) -> dict[str, list[tuple[str, float]]]:
        """Each turn's neighbours in its session: d turns away weighs ``weights[d - 1]``."""
        turns = self.turns
        out: dict[str, list[tuple[str, float]]] = {}
        for i, t in enumerate(turns):
            near = []
            for d, w in enumerate(weights, 1):
                for j in (i - d, i + d):
                    if w > 0 and 0 <= j < len(turns) and turns[j].session == t.session:
                        near.append((turns[j].id, float(w)))
            out[t.id] = near
        return out


def parse_session_date(text: str) -> datetime:
    """ "1:56 pm on 8 May, 2023" → an aware datetime (UTC)."""
    clean = " ".join(text.replace(",", ", ").split()).replace(" ,", ",")
    for fmt in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y"):
        try:
            return datetime.strptime(clean, fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    raise ValueError(f"unreadable session date {text!r}")


_EVIDENCE_RE = re.compile(r"D:?(\d+):(\d+)")


def parse_evidence(items: list[Any]) -> list[str]:
    """Split malformed evidence strings and repair "D:11:26"; drop pieces with no turn id."""
    out: list[str] = []
    for item in items:
        for piece in re.split(r"[;,\s]+", str(item)):
            m = _EVIDENCE_RE.fullmatch(piece.strip())
            if m:
                dia = f"D{int(m.group(1))}:{int(m.group(2))}"
                if dia not in out:
                    out.append(dia)
    return out


def turn_content(speaker: str, text: str, caption: str | None) -> str:
    """The text a turn is stored and shown as."""
    body = f"{speaker}: {text}"
    if caption:
        body += f" [shares a photo of {caption}]"
    return body


def _audit_fixes(audit: Path) -> dict[tuple[int, int], list[str]]:
    """(conversation, question) → the audit's correct evidence, where it differs."""
    fixes: dict[tuple[int, int], list[str]] = {}
    for row in json.loads(audit.read_text(encoding="utf-8")):
        m = re.fullmatch(r"locomo_(\d+)_qa(\d+)", row.get("question_id", ""))
        correct = parse_evidence(row.get("correct_evidence") or [])
        cited = parse_evidence(row.get("cited_evidence") or [])
        if m and correct and sorted(correct) != sorted(cited):
            fixes[(int(m.group(1)), int(m.group(2)))] = correct
    return fixes


def _turns(conv: dict[str, Any]) -> list[Turn]:
    turns: list[Turn] = []
    sessions = sorted(
        int(k.split("_")[1])
        for k, v in conv.items()
        if re.fullmatch(r"session_\d+", k) and isinstance(v, list)
    )
    for s in sessions:
        when = parse_session_date(conv[f"session_{s}_date_time"])
        for pos, t in enumerate(conv[f"session_{s}"]):
            caption = t.get("blip_caption")
            turns.append(
                Turn(
                    id=t["dia_id"],
                    speaker=t["speaker"],
                    text=t["text"],
                    caption=caption,
                    session=s,
                    position=len(turns),
                    said_at=when,
                    content=turn_content(t["speaker"], t["text"], caption),
                    in_session=pos,
                )
            )
    return turns


def load(
    data: Path, audit: Path | None = None, *, limit: int | None = None
) -> tuple[list[Conversation], dict[str, int]]:
    """Read a LoCoMo file (in place, never copied) into conversations.

    Args:
        data: the LoCoMo JSON file.
        audit: an audit file whose ``correct_evidence`` replaces the cited evidence.
        limit: read only the first `limit` conversations (None or 0: all).

    Returns:
        The conversations and counts over them (``evidence_corrections_applied``,
        ``questions_without_evidence``).
    """
    raw = json.loads(data.read_text(encoding="utf-8"))
    fixes = _audit_fixes(audit) if audit is not None else {}
    stats = {"evidence_corrections_applied": 0, "questions_without_evidence": 0}
    convs: list[Conversation] = []
    for ci, item in enumerate(raw[: limit or None]):
        conv = item["conversation"]
        c = Conversation(
            str(item.get("sample_id", ci)), (conv["speaker_a"], conv["speaker_b"]), _turns(conv)
        )
        for qi, qa in enumerate(item["qa"]):
            category = qa.get("category")
            if category == ADVERSARIAL:
                c.adversarial += 1
                continue
            evidence = parse_evidence(qa.get("evidence") or [])
            corrected = (ci, qi) in fixes
            if corrected:
                evidence = fixes[(ci, qi)]
                stats["evidence_corrections_applied"] += 1
            answer = qa.get("answer")
            q = Question(
                ci,
                qi,
                str(qa["question"]),
                int(category) if category is not None else 0,
                evidence,
                corrected,
                None if answer in (None, "") else str(answer),
            )
            c.asked.append(q)
            if evidence:
                c.questions.append(q)
            else:
                c.questions_without_evidence += 1
                stats["questions_without_evidence"] += 1
        convs.append(c)
    return convs, stats


# --- the product path -------------------------------------------------------------------------


def service_in(folder: Path, embedder: Any) -> MemoryService:
    """Return a memory service of its own (SQLite store + embedded Chroma) in a new folder."""
    from langgraph.store.sqlite import SqliteStore

    from memory.index.chroma import ChromaIndex
    from memory.service import MemoryService

    folder.mkdir()
    conn = sqlite3.connect(str(folder / "store.sqlite"), check_same_thread=False,
                           isolation_level=None)  # fmt: skip
    store = SqliteStore(conn)
    store.setup()
    index = ChromaIndex.open(embedder, path=str(folder / "chroma"))
    return MemoryService(store, index, policy=Policy(turn_ttl=SERVICE_TURN_TTL))


def close_service(service: MemoryService) -> None:
    """Close the SQLite connection `service_in` opened."""
    service.store.conn.close()  # type: ignore[attr-defined]


def ingest_service(service: MemoryService, user: str, conv: Conversation) -> int:
    """Archive every turn through `MemoryService.archive_turns`, one thread per session.

    Each turn's context is the two turns either side in its session. Returns how many
    turns were archived.
    """
    turns = conv.turns
    near = conv.neighbours([1.0, 1.0])
    by_id = {t.id: t for t in turns}
    written = 0
    for s in sorted({t.session for t in turns}):
        session = [t for t in turns if t.session == s]
        batch = [(t.id, t.content, [by_id[j].content for j, _ in near[t.id]]) for t in session]
        source = Source(thread_id=f"session_{s}", said_at=session[0].said_at, via="import")
        written += service.archive_turns(user, batch, source)
    return written

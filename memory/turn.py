"""The turn-level memory API: every word a user says enters once, screened and scoped.

A graph (or any app) calls `MemoryService.recall_turn` before answering and
`MemoryService.save_turn` after, and nothing else of memory. `save_turn` splits the turn's
user messages into statements (`memory.text.statements`), links each extracted memory to the
statement it came from, screens and scopes them, archives each statement as its own raw item
and returns one `TurnOutcome`. Every copy the caller keeps (the thread's messages, tool-call
arguments, summary items, working memory, the memory block, the `saved` lines, notices) is
derived from that outcome: `TurnOutcome.cuts` is the one rule that rewrites them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from memory.access import describe_refused
from memory.extraction import Extraction
from memory.lexical.bm25 import tokenize
from memory.lifecycle import Change, describe_forget, forget_phrase, is_clause, is_deictic
from memory.privacy.screen import describe as describe_withheld
from memory.privacy.screen import find_sensitive, redact
from memory.recall.search import Recalled
from memory.requests import asks_to_forget, is_question
from memory.store.records import MemoryRecord, Source, UserId, is_raw_turn, normalize_text
from memory.summary import ThreadSummary
from memory.text.asking import asks_by_form, only_asks_for_help, split_sentences
from memory.text.phrases import Phrase, key_phrase, said_phrase, states
from memory.text.statements import Statement, parts_of, split_message, split_text
from memory.understanding import read_utterance, read_utterances

LATEST_STATEMENTS = 6
"""How many of the user's earlier statements "forget that" may reach back to."""
FORGOTTEN_TEXT = ("[forgotten at the user's request]", "［已按用户要求忘记］")


@dataclass(frozen=True)
class Said:
    """One user message of a turn, as the thread holds it."""

    message_id: str
    text: str


@dataclass(frozen=True)
class TurnRecall:
    """What `recall_turn` found.

    Attributes:
        recalled: The user's memories for the message, best first (store-checked).
        new_thread: True if this turn claimed the thread (its first turn).
    """

    recalled: list[Recalled]
    new_thread: bool


@dataclass
class ThreadCuts:
    """How every copy of a thread is rewritten after a turn: one rule for every channel.

    Attributes:
        statements: Exact texts of forgotten statements (replaced by a marker wherever
            they appear).
        phrases: What forgotten memories and topic forgets name: a statement that states
            one is cut too, in any channel.
        redact: Sensitive values of this turn's copies are redacted (the policy's
            `redact_thread`, and something sensitive was said).
        statement_ids: Ids of the forgotten statements: a summary item that came from
            them goes, however it was worded.
    """

    statements: list[str] = field(default_factory=list)
    phrases: list[Phrase] = field(default_factory=list)
    redact: bool = False
    statement_ids: frozenset[str] = frozenset()

    @property
    def forgets(self) -> bool:
        """True if anything was forgotten this turn."""
        return bool(self.statements or self.phrases)

    def text(self, text: str, zh: bool, *, screen: bool = True) -> str:
        """Return a text with forgotten statements replaced by a marker (and redacted).

        Args:
            text: A message, a tool-call argument, a tool result.
            zh: The marker's language.
            screen: Redact sensitive values too (for this turn's copies).
        """
        marker = FORGOTTEN_TEXT[zh]
        # Redacted first: a value's pattern must not run on into a marker beside it. A
        # statement is then found as said or as its redacted copy (an earlier turn's).
        out = redact(text) if screen and self.redact else text
        for said in self.statements:
            bare = _unstopped(said)
            for form in dict.fromkeys((said, redact(said), bare, redact(bare))):
                if form and form in out:
                    out = out.replace(form, marker)
        if self.phrases:
            for piece in split_text(out):
                if piece != marker and any(states(piece, p) for p in self.phrases):
                    out = out.replace(piece, marker)
        return out

    def items(self, items: Sequence[str], *, screen: bool = True) -> list[str]:
        """Return list items (summary lines, plan steps) without what was forgotten.

        An item is cut statement by statement: "surprise Lena with a trip to Kyoto; never
        tell Lena before" keeps its second half when Kyoto is forgotten.
        """
        out = []
        # A forgotten statement quoted in an item ('- [episode · …] "我下个月要去上海出差。"').
        quoted = [b for said in self.statements if len(b := _unstopped(said)) >= 4]
        for item in items:
            kept = [
                s
                for s in split_text(str(item))
                if s not in self.statements
                and not any(b in s for b in quoted)
                and not any(states(s, p) for p in self.phrases)
            ]
            if kept:
                text = str(item) if len(kept) == len(split_text(str(item))) else " ".join(kept)
                out.append(redact(text) if screen and self.redact else text)
        return out

    def summary(self, summary: ThreadSummary) -> ThreadSummary:
        """Return a thread summary without what was forgotten, item by item.

        An item is cut statement by statement as `items` does; one that came from a
        forgotten statement and still reads the same (the summarizer reworded it) goes.
        """

        def cut(item: str, said: list[str]) -> str | None:
            gone = [sid in self.statement_ids for sid in said]
            kept = self.items([item]) if not (gone and all(gone)) else []
            if not kept or (kept[0] == item and any(gone)):
                return None
            return kept[0]

        return summary.rewritten(cut)

    def value(self, value: Any, zh: bool, *, screen: bool = True) -> Any:
        """Return a JSON-like value (tool-call arguments, working memory) rewritten."""
        if isinstance(value, str):
            return self.text(value, zh, screen=screen)
        if isinstance(value, list):
            if all(isinstance(v, str) for v in value):
                return self.items(value, screen=screen)
            return [self.value(v, zh, screen=screen) for v in value]
        if isinstance(value, dict):
            return {k: self.value(v, zh, screen=screen) for k, v in value.items()}
        return value

    def message(self, m: BaseMessage, zh: bool, *, screen: bool = True) -> BaseMessage | None:
        """Return a message rewritten (same id: it replaces the old), or None if unchanged."""
        if not m.id:
            return None
        update: dict[str, Any] = {}
        if isinstance(m.content, str):
            content = self.text(m.content, zh, screen=screen)
            if content != m.content:
                update["content"] = content
        if isinstance(m, AIMessage) and m.tool_calls:
            calls = [{**c, "args": self.value(c["args"], zh, screen=screen)} for c in m.tool_calls]
            if calls != m.tool_calls:
                update["tool_calls"] = calls
                # The provider's raw copy of the calls holds the same arguments.
                update["additional_kwargs"] = {
                    k: v for k, v in m.additional_kwargs.items() if k != "tool_calls"
                }
                update["invalid_tool_calls"] = []
        if not update or not isinstance(m, ToolMessage | HumanMessage | AIMessage):
            return None
        return m.model_copy(update=update)

    def rewrite_thread(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """`channels` for a thread outside a turn: nothing redacted, its own language."""
        return self.channels(values, len(values.get("messages") or []), values.get("lang") == "zh")

    def channels(self, state: Mapping[str, Any], turn_start: int, zh: bool) -> dict[str, Any]:
        """Return the thread channels this outcome changes, rewritten: one rule for all.

        Args:
            state: A thread's channel values (the graph's state, or a checkpoint's).
            turn_start: Index of the turn's first message: redaction reaches from there (the
                model saw the value for the one reply it was given for); forgetting reaches
                the whole thread.
            zh: The marker's language.

        Returns:
            Only the channels that change; `messages` holds the rewritten messages only
            (they keep their ids, so they replace the old ones).
        """
        if not self.forgets and not self.redact:
            return {}
        out: dict[str, Any] = {}
        changed = []
        for i, m in enumerate(state.get("messages") or []):
            new = self.message(m, zh, screen=i >= turn_start)
            if new is not None:
                changed.append(new)
        if changed:
            out["messages"] = changed
        if not self.forgets:
            if state.get("working"):
                out["working"] = self.value(state["working"], zh)
            return out
        block = state.get("memory_block") or ""
        out["memory_block"] = "\n".join(self.items(block.split("\n"), screen=False))
        out["recalled"] = [
            {**r, "said_with": self.items(r.get("said_with") or [], screen=False)}
            for r in state.get("recalled") or []
            if self.items([r["content"]])
        ]
        if state.get("summary"):
            summary = ThreadSummary.model_validate(state["summary"])
            out["summary"] = self.summary(summary).model_dump()
        if state.get("working"):
            working = {
                k: v for k, v in self.value(state["working"], zh).items() if v not in ("", [])
            }
            out["working"] = working or None
        return out


@dataclass
class TurnOutcome:
    """What one turn did to memory, and the text every copy of it takes.

    Attributes:
        changes: Every record change, in order.
        saved: One safe line per change: no value that was withheld, nothing forgotten
            quoted (the thread's `saved` channel).
        notices: What to tell the user, in the turn's language (withheld, refused, forget).
        cuts: How the thread's channels are rewritten.
        statements: The turn's statements (ids and positions), as archived or not.
    """

    changes: list[Change]
    saved: list[str]
    notices: list[str]
    cuts: ThreadCuts
    statements: list[Statement]


def statements_of(user_id: UserId, thread_id: str, said: Sequence[Said]) -> list[Statement]:
    """Return the statements of messages, in order."""
    return [st for m in said for st in split_message(user_id, thread_id, m.message_id, m.text)]


def link(extraction: Extraction, statements: Sequence[Statement]) -> list[tuple[str, ...]]:
    """Return, for each candidate, the ids of the statements it was extracted from.

    The statement sharing most of the candidate's words comes first (ties: the earlier); a
    turn of one statement links everything to it. Extraction paraphrases ("User works as a
    nurse." from "I work as a nurse."), so words, not spelling, decide. A candidate that
    keeps a whole sentence the gate cut at its commas ("我有哮喘，包里常年揣着一瓶沙丁胺醇
    喷雾") is linked to every statement all of whose words it says: forgetting it forgets
    each of them.
    """
    if not statements:
        return [() for _ in extraction.memories]
    terms = [set(tokenize(s.text)) for s in statements]
    out: list[tuple[str, ...]] = []
    for cand in extraction.memories:
        said = set(tokenize(f"{cand.content} {cand.value or ''}"))
        scores = [len(said & t) / (len(said) or 1) for t in terms]
        best = max(range(len(statements)), key=lambda i: scores[i])
        whole = [i for i, t in enumerate(terms) if i != best and t and t <= said]
        out.append(tuple(statements[i].id for i in [best, *whole]))
    return out


def describe(change: Change) -> str:
    """Return the `saved` line of a change: what happened, never a withheld or forgotten text."""
    r = change.record
    if change.action in ("withheld", "forgotten", "refused"):
        # A subject often names the value (`likes.chess`): only its family is shown.
        family = r.subject.split(".", 1)[0]
        kind = f"[{r.kind}]" if change.action == "withheld" else f"[{r.kind} {family}]"
        note = f" ({change.note})" if change.action != "forgotten" and change.note else ""
        return f"{change.action}: {kind}{note}"
    return change.describe()


def cuts_of(changes: Sequence[Change], extraction: Extraction, redact_thread: bool) -> ThreadCuts:
    """Return how the thread is rewritten after these changes (see `ThreadCuts`)."""
    forgotten = [c.record for c in changes if c.action == "forgotten"]
    statements = [r.content for r in forgotten if is_raw_turn(r)]
    asked = [q for q in extraction.forget if not is_deictic(q.query)]
    # What the forgotten memories are about reaches the thread only for a topic forget (see
    # `MemoryWriter.save`): "forget that I live in Beijing" must not cut 北京大学.
    topic = not asked or any(not is_clause(q.query) for q in asked)
    phrases = [said_phrase(r, topic) for r in forgotten if not is_raw_turn(r)]
    if forgotten:
        phrases += [forget_phrase(q)[0] for q in asked]
    return ThreadCuts(
        statements=statements,
        phrases=[p for p in phrases if p],
        redact=redact_thread,
        statement_ids=frozenset(r.id for r in forgotten if is_raw_turn(r)),
    )


def deletion_cuts(deleted: MemoryRecord, said: Iterable[MemoryRecord]) -> ThreadCuts:
    """Return how threads are rewritten when a memory is deleted outside a turn.

    The statements it was said in go as said; what states it (the assistant quoting it, a
    summary item, the memory block) goes by its key phrase, as a turn's forget does.
    """
    statements = [r.content for r in said]
    if is_raw_turn(deleted):
        return ThreadCuts(statements=[deleted.content, *statements])
    phrase = key_phrase(deleted)
    return ThreadCuts(statements=statements, phrases=[phrase] if phrase else [])


def notices(
    changes: Sequence[Change],
    remembered: Sequence[str],
    zh: bool,
    statements: Sequence[Statement] = (),
) -> list[str]:
    """Return what to tell the user about a turn's changes, in its language.

    A sensitive value is told about whether or not a memory was extracted from its
    statement: the raw copy of the statement was screened too.
    """
    out = []
    withheld = [c.note.removeprefix("sensitive: ") for c in changes if c.action == "withheld"]
    kinds = [k for n in withheld for k in n.split(",")]
    kinds += [f.kind for st in statements for f in find_sensitive(st.text)]
    if kinds:
        out.append(describe_withheld(kinds, zh))
    refused = [c.note for c in changes if c.action == "refused"]
    if refused:
        out.append(describe_refused(refused, zh))
    if any(c.action in ("forgotten", "unmatched") for c in changes):
        out.append(describe_forget(list(changes), list(remembered), zh))
    return out


def archivable(
    statements: Sequence[Statement],
    changes: Sequence[Change],
    extraction: Extraction | None = None,
    said: Sequence[Said] = (),
) -> list[Statement]:
    """Return the statements worth keeping raw.

    Questions, forget requests and small talk state nothing. A statement whose memory was refused to
    this agent is archived for no one, and one whose memory was withheld as sensitive is
    not kept either: the raw copy would hold what the decision kept out. Nor is one that
    names what a forget request of its message asks to forget (`extraction.forget`, by
    topic): "还有我头疼那个老毛病，你也别记着了" is cut at its comma, and its first part, kept
    raw, would keep the very topic. Nor is what follows a forget request with no memory
    taken from it: the request's reason.
    """
    asked = [q.query for q in extraction.forget if not is_deictic(q.query)] if extraction else []
    # A topic is its key words ("我头疼 老毛病"): a statement names it when it says them all.
    topics = [[w for w in map(normalize_text, q.split()) if w] for q in asked]
    topics = [words for words in topics if len("".join(words)) >= _TOPIC_CHARS]
    blocked = {
        sid
        for c in changes
        if c.action in ("withheld", "refused")
        for sid in c.record.source.statement_ids
    }
    requests = {st.id for st in statements if asks_to_forget(st.text)}
    kept = [
        st
        for st in statements
        if st.id not in blocked
        and st.id not in requests
        and not is_question(st.text)
        and not any(all(w in normalize_text(st.text) for w in words) for words in topics)
    ]
    # Small talk states nothing either ("Morning!", "lol ok", "晚安！"), nor does a request
    # to the assistant with no question mark ("Give me three tips for a job interview"):
    # kept raw, it would come back for any question its vector or words sit near ("What do
    # I do for a living?"). Only what the model is sure of, and only when no memory was
    # taken from it.
    stated = {sid for c in changes for sid in c.record.source.statement_ids}
    # What follows a forget request and states no memory says why ("…the old dog. we had to
    # have him put down Monday"): kept raw, the reason would keep what the request takes back.
    asks = [i for i, st in enumerate(statements) if st.id in requests]
    why = {st.id for st in statements[asks[0] + 1 :]} - stated if asks else set()
    # A request to the assistant states nothing, nor what it quotes after a colon ("帮我把这句
    # 翻成英文：明天的会改到三点"); what follows it after a comma may ("帮我想个店名，卖手工皂的").
    # A plan of the user's said as one ("帮我规划一下日本旅行") is the model's to tell apart.
    for m in said:
        mine = [st for st in statements if st.message_id == m.message_id]
        for sentence in split_sentences(m.text):
            inside = [st for st in mine if st.text.rstrip(" .。!！") in sentence]
            if inside and only_asks_for_help(sentence) and not read_utterance(sentence).plans:
                colon = min((sentence.find(c) for c in ":：" if c in sentence), default=-1)
                quoted = [st for st in inside[1:] if 0 <= colon < sentence.find(st.text[:4])]
                why |= {inside[0].id, *(st.id for st in quoted)} - stated
    # A message that asks as a whole states nothing by its clauses ("我妈下个月过生日，送她点
    # 啥好呢？", "周末去爬山穿哪种鞋好，鞋底软一点的那种"): kept raw, what
    # the question gives as its context would crowd out what the user said of themself.
    # Only one with a part that is a question by its form too: a request for help says what
    # follows it on its own ("help me pick a restaurant, I'm allergic to kiwi" keeps it).
    asking = {
        m.message_id for m, r in zip(said, read_utterances([m.text for m in said]), strict=True)
        if r.asks and any(asks_by_form(part) for part in parts_of(m.text))
    }  # fmt: skip
    why |= {st.id for st in statements if st.message_id in asking} - stated
    kept = [st for st in kept if st.id not in why]
    readings = read_utterances([st.text for st in kept]) if kept else []
    # Of a message no memory was taken from, what the model reads as small talk or a question
    # at all is no statement: "recipe for pancakes without eggs" (a question, at 0.38) kept
    # raw would come back for "what can't I eat?". Of a message that said
    # something, its asides stay with it ("…我爸生日是腊月初八，正好喝腊八粥"), and so does
    # a part read as asking that neither asks by its form nor asks for help: the heads read
    # sentences, and of a statement's parts they took "叫豆豆 会作揖" for one, kept nowhere.
    said_something = {st.message_id for st in statements if st.id in stated}
    return [
        st
        for st, r in zip(kept, readings, strict=True)
        if st.id in stated
        or not (
            r.small_talk
            or (
                (r.asks or r.asking)
                and (
                    st.message_id not in said_something
                    or asks_by_form(st.text)
                    or only_asks_for_help(st.text)
                )
            )
            or (st.message_id not in said_something and r.intent in ("chitchat", "question"))
        )
    ]


def _unstopped(statement: str) -> str:
    """Return a statement without its full stop, as it is quoted in a list ("…：…；…")."""
    return statement.rstrip("。.!！")


_TOPIC_CHARS = 2
"""The least letters a forget request's topic must have to keep a statement naming it out."""


def scopes(changes: Sequence[Change]) -> dict[str, str]:
    """Return the scope each statement takes from the memories extracted from it.

    A statement whose memory is private to an agent is private to it too: its raw copy
    must not show another agent what the memory's scope hides.
    """
    out: dict[str, str] = {}
    for c in changes:
        if c.action in ("added", "reinforced", "merged", "held") and not is_raw_turn(c.record):
            for sid in c.record.source.statement_ids:
                if out.get(sid, "user") == "user":
                    out[sid] = c.record.scope
    return out


def expiries(changes: Sequence[Change]) -> dict[str, datetime]:
    """Return when each statement stops being worth recalling, from its memories.

    "下周三我们上线" is over once its event is: its raw copy ends with it, or it would bring
    the past plan back after the event expired.
    """
    out: dict[str, datetime] = {}
    for c in changes:
        if c.action in ("added", "reinforced", "merged") and c.record.expires_at is not None:
            for sid in c.record.source.statement_ids:
                ends = c.record.expires_at
                out[sid] = min(out.get(sid, ends), ends)
    return out


def latest_statements(user_id: UserId, thread_id: str, earlier: Sequence[Said]) -> list[str]:
    """Return the ids of the user's latest statements before this turn, newest first.

    "That" / "刚才那句" / "当我没说" mean the newest of them that stated something.
    """
    said = [st for st in statements_of(user_id, thread_id, earlier) if not is_question(st.text)]
    # A statement to remember comes before a request or a remark ("推荐个餐馆" is not what
    # "this" means): the model's reading, which beat a first-person pattern on the corpus's
    # test split (`benchmarks/understanding.py`, `rules_check.first_person`).
    readings = read_utterances([st.text for st in said]) if said else []
    states = {st.id for st, r in zip(said, readings, strict=True) if r.intent in _STATES}
    about = [st for st in said if st.id in states]
    rest = [st for st in said if st.id not in states]
    return [st.id for st in [*reversed(about), *reversed(rest)]][:LATEST_STATEMENTS]


_STATES = ("remember", "update", "plan")
"""What "that" can point at: a plan ("这周末打算把厨房刷一遍") is the user's as much as a fact."""


def turn_source(thread_id: str | None, said: Sequence[Said], said_at: datetime, via: str) -> Source:
    """Return the provenance of a turn's memories."""
    return Source(
        thread_id=thread_id,
        message_ids=[m.message_id for m in said if m.message_id],
        said_at=said_at,
        via=via,
    )

"""Who may read and write which memories, when several agents share one user's memory.

Every memory records the agent that wrote it (`agent_id`) and a `scope`:

- `user`: shared with every agent of that user (the default);
- `agent`: private to the agent that wrote it;
- any other name, e.g. `payment`: a restricted category, readable only by the agents the
  policy admits to it (and by its writer).

An `AccessPolicy` maps agent ids to `AgentRules`: allow-lists (with exceptions) of subject
prefixes and kinds for reading and for writing, and the scope new writes get. Loaded from
the JSON file named by `MEMORY_AGENT_ACCESS_POLICY`, or built in code. With no policy every
agent may read and write everything, with scope `user`: single-agent behaviour is unchanged.

The functions are pure; `MemoryService` calls them at its entry points.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args

from memory.extraction import CandidateMemory
from memory.store.records import KINDS, MemoryRecord, subject_under

USER_SCOPE = "user"
AGENT_SCOPE = "agent"
ANY = "*"
KNOWN_KINDS = frozenset(KINDS) | frozenset(
    get_args(CandidateMemory.model_fields["kind"].annotation)
)
_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_\-]{0,63}$")
_PATTERN_RE = re.compile(r"^[^\s*]+$")


class AccessDenied(PermissionError):
    """An agent tried to write or change a memory its access policy does not allow."""


class PolicyError(ValueError):
    """An access policy (file or dict) that cannot be used."""


def _pattern(raw: object, where: str) -> str:
    """Normalize a subject pattern: `industry.`, `industry.*` and `industry` mean one subtree."""
    if not isinstance(raw, str) or not raw.strip():
        raise PolicyError(f"{where}: a subject pattern must be a non-empty string")
    p = raw.strip().lower()
    if p == ANY:
        return ANY
    p = p.removesuffix("*").removesuffix(".")
    if not p or not _PATTERN_RE.match(p):
        raise PolicyError(
            f"{where}: {raw!r} is not a subject pattern: use '*', or a prefix such as "
            "'industry.' (every subject under industry) or 'profile.city'"
        )
    return p


def _matches(pattern: str, subject: str) -> bool:
    return pattern == ANY or subject_under(subject, pattern)


def _shown(pattern: str, subject: str) -> str:
    """How a refusal names what was refused: `industry.*`, or the subject itself."""
    return subject if pattern in (ANY, subject) else f"{pattern}.*"


@dataclass(frozen=True)
class Grant:
    """An allow-list of subjects and kinds, with exceptions.

    Attributes:
        subjects: Subject patterns allowed: `*` (all), or prefixes such as `industry.`
            (`industry.`, `industry.*` and `industry` all mean `industry` and everything under it).
        kinds: Kinds allowed (`fact`, `preference`, `event`, ...), or `*`.
        exclude: Subject patterns refused even when `subjects` allows them (`except` in JSON).

    """

    subjects: tuple[str, ...] = (ANY,)
    kinds: tuple[str, ...] = (ANY,)
    exclude: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        """Normalize the patterns and check the kinds."""
        for name in ("subjects", "exclude"):
            raw = getattr(self, name)
            if isinstance(raw, str):
                raw = (raw,)
            object.__setattr__(self, name, tuple(_pattern(p, f"grant {name}") for p in raw))
        kinds = (self.kinds,) if isinstance(self.kinds, str) else tuple(self.kinds)
        unknown = sorted(set(kinds) - KNOWN_KINDS - {ANY})
        if unknown:
            raise PolicyError(
                f"unknown kind(s) {', '.join(unknown)}: use {', '.join(sorted(KNOWN_KINDS))} or '*'"
            )
        object.__setattr__(self, "kinds", kinds)

    def refusal(self, kind: str, subject: str) -> str | None:
        """Return what this grant does not cover (`industry.*`, `event`, a subject), or None."""
        for p in self.exclude:
            if _matches(p, subject):
                return _shown(p, subject)
        if ANY not in self.kinds and kind not in self.kinds:
            return kind
        if not any(_matches(p, subject) for p in self.subjects):
            return subject
        return None

    def allows(self, kind: str, subject: str) -> bool:
        """Return True if the grant covers a memory of this kind and subject."""
        return self.refusal(kind, subject) is None

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON shape of the grant."""
        out: dict[str, Any] = {"subjects": [_as_json_pattern(p) for p in self.subjects]}
        if self.kinds != (ANY,):
            out["kinds"] = list(self.kinds)
        if self.exclude:
            out["except"] = [_as_json_pattern(p) for p in self.exclude]
        return out


def _as_json_pattern(p: str) -> str:
    return p if p == ANY else f"{p}."


NOTHING = Grant(subjects=())


@dataclass(frozen=True)
class AgentRules:
    """What one agent may read and write, and the scope its writes get.

    Attributes:
        read: Which memories it may read (besides its own writes, always readable).
        write: Which memories it may write, or change when another agent wrote them.
        scope: Scope of its new memories: `user` (shared), `agent` (private) or a category.
        scopes: Per subject pattern, a scope that overrides `scope` (the longest match wins),
            e.g. `{"payment.": "payment", "notes.": "agent"}`.
        categories: Restricted categories it may read and write besides the ones its own
            writes go to; `*` for all.

    """

    read: Grant = field(default_factory=Grant)
    write: Grant = field(default_factory=Grant)
    scope: str = USER_SCOPE
    scopes: Mapping[str, str] = field(default_factory=dict)
    categories: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        """Normalize the scope map and check scope names."""
        _check_scope(self.scope, "scope")
        scopes = {}
        for raw, scope in dict(self.scopes).items():
            _check_scope(scope, f"scopes[{raw!r}]")
            scopes[_pattern(raw, "scopes")] = scope
        object.__setattr__(self, "scopes", scopes)
        cats = (self.categories,) if isinstance(self.categories, str) else tuple(self.categories)
        for c in cats:
            if c != ANY:
                _check_scope(c, "categories")
        object.__setattr__(self, "categories", cats)

    def scope_for(self, subject: str) -> str:
        """Return the scope a new memory on this subject gets."""
        best = max((p for p in self.scopes if _matches(p, subject)), key=len, default=None)
        return self.scopes[best] if best is not None else self.scope

    def admits(self, scope: str) -> bool:
        """Return True if memories of this scope (shared or a category) are open to it."""
        if scope == USER_SCOPE:
            return True
        return (
            ANY in self.categories
            or scope in self.categories
            or scope == self.scope
            or scope in self.scopes.values()
        )

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON shape of the rules."""
        out: dict[str, Any] = {"read": self.read.to_dict(), "write": self.write.to_dict()}
        if self.scope != USER_SCOPE:
            out["scope"] = self.scope
        if self.scopes:
            out["scopes"] = {_as_json_pattern(p): s for p, s in self.scopes.items()}
        if self.categories:
            out["categories"] = list(self.categories)
        return out


def _check_scope(scope: object, where: str) -> None:
    if not isinstance(scope, str) or not _NAME_RE.match(scope):
        raise PolicyError(
            f"{where}: {scope!r} is not a scope: use 'user' (shared), 'agent' (private) or a "
            "category name (lower case letters, digits, '_' or '-')"
        )


OPEN = AgentRules(categories=(ANY,))
"""Everything: read and write every subject, kind and category; new writes are `user`."""
NO_ACCESS = AgentRules(read=NOTHING, write=NOTHING)
"""Nothing but the agent's own writes (of which there can be none)."""


@dataclass(frozen=True)
class AccessPolicy:
    """Per agent, what it may read and write in a user's shared memory.

    Attributes:
        agents: Rules by agent id.
        default: Rules of agents not named in `agents`; None: they may read and write
            nothing. `AccessPolicy()` lets every agent do everything.
        source: Where the policy came from (a file path, or `built in`), for messages.

    """

    agents: Mapping[str, AgentRules] = field(default_factory=dict)
    default: AgentRules | None = OPEN
    source: str = "built in"

    def rules(self, agent_id: str) -> AgentRules:
        """Return the rules of one agent."""
        rules = self.agents.get(agent_id, self.default)
        return rules if rules is not None else NO_ACCESS

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, source: str = "built in") -> AccessPolicy:
        """Build a policy from its JSON shape (see the README); unknown keys are refused.

        Raises:
            PolicyError: If the shape is wrong; the message says where.

        """
        if not isinstance(data, Mapping):
            raise PolicyError(f"{source}: the policy must be a JSON object")
        _no_extra(data, {"agents", "default", "description"}, source)
        agents_raw = data.get("agents", {})
        if not isinstance(agents_raw, Mapping):
            raise PolicyError(f"{source}: 'agents' must be an object of agent id → rules")
        agents = {}
        for agent_id, raw in agents_raw.items():
            if not isinstance(agent_id, str) or not agent_id.strip() or len(agent_id) > 128:
                raise PolicyError(f"{source}: agent ids must be non-empty strings")
            agents[agent_id.strip()] = _rules(raw, f"{source}: agents[{agent_id!r}]")
        default = _rules(data["default"], f"{source}: default") if "default" in data else None
        return cls(agents=agents, default=default, source=source)

    @classmethod
    def load(cls, path: str | Path) -> AccessPolicy:
        """Read a policy from a JSON file.

        Raises:
            PolicyError: If the file is missing, not JSON, or not a valid policy.

        """
        p = Path(path)
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except FileNotFoundError as exc:
            raise PolicyError(f"access policy {p}: no such file") from exc
        except json.JSONDecodeError as exc:
            raise PolicyError(f"access policy {p}: not JSON ({exc})") from exc
        return cls.from_dict(data, source=str(p))

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON shape of the policy (`from_dict` reads it back)."""
        out: dict[str, Any] = {"agents": {a: r.to_dict() for a, r in self.agents.items()}}
        if self.default is not None:
            out["default"] = self.default.to_dict()
        return out


def _no_extra(data: Mapping[str, Any], allowed: set[str], where: str) -> None:
    extra = sorted(set(data) - allowed)
    if extra:
        raise PolicyError(
            f"{where}: unknown key(s) {', '.join(map(str, extra))}; "
            f"allowed: {', '.join(sorted(allowed))}"
        )


def _grant(raw: object, where: str) -> Grant:
    if isinstance(raw, str):
        raw = [raw]
    if isinstance(raw, list):
        return Grant(subjects=tuple(_pattern(p, where) for p in raw))
    if not isinstance(raw, Mapping):
        raise PolicyError(
            f"{where}: use a list of subject patterns, or "
            '{"subjects": [...], "kinds": [...], "except": [...]}'
        )
    _no_extra(raw, {"subjects", "kinds", "except"}, where)
    lists = {}
    for key in ("subjects", "kinds", "except"):
        value = raw.get(key, [ANY] if key != "except" else [])
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list):
            raise PolicyError(f"{where}: '{key}' must be a list")
        lists[key] = tuple(value)
    try:
        return Grant(subjects=lists["subjects"], kinds=lists["kinds"], exclude=lists["except"])
    except PolicyError as exc:
        raise PolicyError(f"{where}: {exc}") from exc


def _rules(raw: object, where: str) -> AgentRules:
    if not isinstance(raw, Mapping):
        raise PolicyError(f"{where}: rules must be an object")
    _no_extra(raw, {"read", "write", "scope", "scopes", "categories"}, where)
    scopes = raw.get("scopes", {})
    if not isinstance(scopes, Mapping):
        raise PolicyError(f"{where}: 'scopes' must be an object of subject pattern → scope")
    categories = raw.get("categories", [])
    if not isinstance(categories, list):
        raise PolicyError(f"{where}: 'categories' must be a list")
    try:
        return AgentRules(
            read=_grant(raw.get("read", [ANY]), f"{where}.read"),
            write=_grant(raw.get("write", [ANY]), f"{where}.write"),
            scope=raw.get("scope", USER_SCOPE),
            scopes=dict(scopes),
            categories=tuple(categories),
        )
    except PolicyError as exc:
        raise PolicyError(f"{where}: {exc}") from exc


# --- decisions -------------------------------------------------------------------------------


def _policy(policy: AccessPolicy | None) -> AccessPolicy:
    return policy if policy is not None else AccessPolicy()


def can_read(policy: AccessPolicy | None, agent_id: str, record: MemoryRecord) -> bool:
    """Return True if an agent may read a memory.

    Agent-private memories are read only by their writer; an agent always reads its own
    writes; a restricted category needs the agent's rules to admit it; then the read grant
    decides by kind and subject.
    """
    if record.scope == AGENT_SCOPE:
        return record.agent_id == agent_id
    if record.agent_id == agent_id:
        return True
    rules = _policy(policy).rules(agent_id)
    return rules.admits(record.scope) and rules.read.allows(record.kind, record.subject)


def check_write(
    policy: AccessPolicy | None, agent_id: str, target: CandidateMemory | MemoryRecord
) -> None:
    """Refuse a write the policy does not allow.

    Args:
        policy: The policy; None allows everything.
        agent_id: The agent that writes.
        target: A new candidate, or a record to write: new (written by this agent) or an
            existing one this write would change (reinforce, supersede, forget...).

    Raises:
        AccessDenied: Saying which agent may not write or change what, and whose it is,
            e.g. "agent after-sales may not change industry.* memories written by pre-sales".

    """
    rules = _policy(policy).rules(agent_id)
    owner = target.agent_id if isinstance(target, MemoryRecord) else agent_id
    scope = target.scope if isinstance(target, MemoryRecord) else rules.scope_for(target.subject)
    foreign = owner != agent_id

    def deny(what: str) -> AccessDenied:
        if foreign:
            return AccessDenied(
                f"agent {agent_id} may not change {what} memories written by {owner}"
            )
        return AccessDenied(f"agent {agent_id} may not write {what} memories")

    if scope == AGENT_SCOPE and foreign:
        raise AccessDenied(f"agent {agent_id} may not change agent-private memories of {owner}")
    if scope != AGENT_SCOPE and not rules.admits(scope):
        raise deny(f"{scope}-scoped")
    what = rules.write.refusal(target.kind, target.subject)
    if what is not None:
        raise deny(what)


def scope_for(policy: AccessPolicy | None, agent_id: str, subject: str) -> str:
    """Return the scope an agent's new memory on `subject` gets."""
    return _policy(policy).rules(agent_id).scope_for(subject)


def same_partition(a: MemoryRecord, b: MemoryRecord) -> bool:
    """Return True if two memories live in the same scope, so one may update the other.

    A private note never supersedes a shared memory (other agents would lose it), and a
    shared memory never supersedes another agent's private note.
    """
    if a.scope != b.scope:
        return False
    return a.scope != AGENT_SCOPE or a.agent_id == b.agent_id


_REFUSAL_ZH = (
    (
        re.compile(r"^agent (\S+) may not change agent-private memories of (\S+)$"),
        "{0} 不能修改 {1} 的私有记忆",
    ),
    (
        re.compile(r"^agent (\S+) may not change (\S+) memories written by (\S+)$"),
        "{0} 不能修改由 {2} 写入的 {1} 记忆",
    ),
    (re.compile(r"^agent (\S+) may not write (\S+) memories$"), "{0} 不能写入 {1} 记忆"),
)


def describe_refused(notes: Iterable[str], zh: bool) -> str:
    """Return a sentence telling the user what was not remembered, and why (the notes)."""
    reasons = list(dict.fromkeys(n for n in notes if n))
    if zh:
        out = []
        for note in reasons:
            for pattern, template in _REFUSAL_ZH:
                m = pattern.match(note)
                if m:
                    out.append(template.format(*m.groups()))
                    break
            else:
                out.append(note)
        return f"（记忆权限：这条信息没有保存——{'；'.join(out)}。）"
    return f"(Memory access: I did not save that: {'; '.join(reasons)}.)"

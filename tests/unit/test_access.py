"""Multi-agent scopes and the access policy: pure rules, then the memory service under them."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta

import pytest
from langgraph.store.memory import InMemoryStore

from graphs.settings import Settings
from memory.access import (
    AccessDenied,
    AccessPolicy,
    AgentRules,
    Grant,
    PolicyError,
    can_read,
    check_write,
    describe_refused,
    same_partition,
    scope_for,
)
from memory.extraction import CandidateMemory, Extraction, ForgetRequest
from memory.service import MemoryNotFound, MemoryService
from memory.store.records import MemoryRecord, Source

POLICY = AccessPolicy.from_dict(
    {
        "agents": {
            "pre-sales": {
                "read": {"subjects": ["*"], "except": ["payment."]},
                "write": {"subjects": ["*"], "except": ["payment."]},
            },
            "after-sales": {
                "read": {"subjects": ["*"], "except": ["payment."]},
                "write": {"subjects": ["*"], "except": ["industry.", "payment."]},
                "scopes": {"support.": "agent"},
            },
            "support": {"read": ["wishlist.", "profile.name"], "write": ["support."]},
            "billing": {"read": ["payment.", "profile."], "scopes": {"payment.": "payment"}},
            "auditor": {"read": ["*"], "write": [], "categories": ["payment"]},
        }
    }
)
T0 = datetime(2025, 3, 1, 12, tzinfo=UTC)


def rec(
    subject: str,
    *,
    agent: str = "pre-sales",
    scope: str = "user",
    kind: str = "fact",
    content: str = "x",
) -> MemoryRecord:
    return MemoryRecord(
        id=f"{agent}-{subject}",
        user_id="acme",
        agent_id=agent,
        scope=scope,
        kind=kind,  # type: ignore[arg-type]
        subject=subject,
        content=content,
    )


def cand(subject: str, kind: str = "fact", content: str = "x") -> CandidateMemory:
    return CandidateMemory(kind=kind, subject=subject, content=content)  # type: ignore[arg-type]


# --- the rules --------------------------------------------------------------------------------


@pytest.mark.parametrize("policy", [None, AccessPolicy()])
def test_without_a_policy_every_agent_reads_and_writes_everything_shared(policy) -> None:
    for r in (rec("payment.card"), rec("industry.sector"), rec("x", scope="payment")):
        assert can_read(policy, "anyone", r)
        check_write(policy, "anyone", r)
    check_write(policy, "anyone", cand("payment.card", "event"))
    assert scope_for(policy, "anyone", "payment.card") == "user"


@pytest.mark.parametrize("policy", [None, POLICY])
def test_agent_private_memories_are_read_and_changed_by_their_writer_only(policy) -> None:
    note = rec("support.ticket", agent="after-sales", scope="agent")
    assert can_read(policy, "after-sales", note)
    assert not can_read(policy, "pre-sales", note)
    private = "agent pre-sales may not change agent-private memories of after-sales"
    with pytest.raises(AccessDenied, match=private):
        check_write(policy, "pre-sales", note)


def test_seed_example_support_reads_the_wishlist_but_not_payment_data() -> None:
    assert can_read(POLICY, "support", rec("wishlist.items"))
    assert can_read(POLICY, "support", rec("profile.name"))
    assert not can_read(POLICY, "support", rec("profile.city"))
    assert not can_read(POLICY, "support", rec("payment.card", agent="billing", scope="payment"))
    assert not can_read(POLICY, "support", rec("payment.card"))
    with pytest.raises(AccessDenied, match="agent support may not write wishlist.items memories"):
        check_write(POLICY, "support", cand("wishlist.items"))
    check_write(POLICY, "support", cand("support.ticket_42"))


def test_pre_sales_writes_industry_after_sales_reads_it_but_may_not_change_it() -> None:
    industry = rec("industry.sector", content="User's company is in retail.")
    check_write(POLICY, "pre-sales", cand("industry.sector"))
    assert can_read(POLICY, "after-sales", industry)
    with pytest.raises(AccessDenied) as err:
        check_write(POLICY, "after-sales", industry)
    assert str(err.value) == (
        "agent after-sales may not change industry.* memories written by pre-sales"
    )
    with pytest.raises(AccessDenied, match=r"^agent after-sales may not write industry\.\* memor"):
        check_write(POLICY, "after-sales", cand("industry.size"))


def test_subject_patterns_name_subtrees_not_string_prefixes() -> None:
    for spelling in ("industry.", "industry.*", "industry", "INDUSTRY."):
        g = Grant(subjects=(spelling,))
        assert g.allows("fact", "industry") and g.allows("fact", "industry.sector.detail")
        assert not g.allows("fact", "industrial.design")
    exact = Grant(subjects=("profile.city",))
    assert exact.allows("fact", "profile.city") and not exact.allows("fact", "profile.citywide")


def test_kinds_and_exceptions_narrow_a_grant() -> None:
    g = Grant(subjects=("*",), kinds=("fact", "preference"), exclude=("payment.", "health.x"))
    assert g.allows("preference", "diet.type")
    assert g.refusal("event", "event.launch") == "event"
    assert g.refusal("fact", "payment.card") == "payment.*"
    assert g.refusal("fact", "health.x") == "health.x"
    assert Grant(subjects=("wishlist.",)).refusal("fact", "profile.city") == "profile.city"


def test_scopes_of_new_writes_longest_pattern_wins() -> None:
    rules = AgentRules(scope="agent", scopes={"payment.": "payment", "payment.public": "user"})
    assert rules.scope_for("notes.x") == "agent"
    assert rules.scope_for("payment.card") == "payment"
    assert rules.scope_for("payment.public.tier") == "user"
    assert scope_for(POLICY, "after-sales", "support.ticket") == "agent"
    assert scope_for(POLICY, "after-sales", "profile.city") == "user"


def test_restricted_categories_are_open_to_their_writers_and_admitted_agents() -> None:
    card = rec("payment.card", agent="billing", scope="payment")
    assert can_read(POLICY, "billing", card)
    assert can_read(POLICY, "auditor", card)  # categories: ["payment"]
    assert not can_read(POLICY, "pre-sales", card)
    with pytest.raises(AccessDenied, match="may not write payment-scoped memories"):
        check_write(POLICY, "pre-sales", rec("payment.card", agent="pre-sales", scope="payment"))
    with pytest.raises(AccessDenied, match="auditor may not change payment.card"):
        check_write(POLICY, "auditor", card)  # admitted to read, but writes nothing


def test_agents_a_configured_policy_does_not_name_get_its_default_or_nothing() -> None:
    closed = AccessPolicy.from_dict({"agents": {"a": {}}})
    assert not can_read(closed, "stranger", rec("profile.city"))
    with pytest.raises(AccessDenied, match="stranger may not write profile.city"):
        check_write(closed, "stranger", cand("profile.city"))
    assert can_read(closed, "stranger", rec("profile.city", agent="stranger"))  # its own
    assert can_read(closed, "a", rec("profile.city"))  # omitted read/write mean everything
    with_default = AccessPolicy.from_dict({"agents": {}, "default": {"read": ["profile."]}})
    assert can_read(with_default, "stranger", rec("profile.city"))
    assert not can_read(with_default, "stranger", rec("work.role"))


def test_same_partition() -> None:
    shared, shared2 = rec("a", agent="x"), rec("a", agent="y")
    mine, theirs = rec("a", agent="x", scope="agent"), rec("a", agent="y", scope="agent")
    assert same_partition(shared, shared2)
    assert not same_partition(shared, mine) and not same_partition(mine, theirs)
    assert same_partition(mine, rec("b", agent="x", scope="agent"))


@pytest.mark.parametrize(
    ("data", "match"),
    [
        ({"agents": {"a": {"reed": ["*"]}}}, r"agents\['a'\]: unknown key\(s\) reed"),
        ({"agent": {}}, "unknown key"),
        ({"agents": {"a": {"write": {"kinds": ["opinion"]}}}}, "unknown kind.*opinion"),
        ({"agents": {"a": {"read": ["pay ment."]}}}, "not a subject pattern"),
        ({"agents": {"a": {"read": 3}}}, "list of subject patterns"),
        ({"agents": {"a": {"scope": "Payment Data"}}}, "not a scope"),
        ({"agents": {"a": {"scopes": {"payment.": ""}}}}, "not a scope"),
        ({"agents": ["a"]}, "'agents' must be an object"),
        ([], "must be a JSON object"),
    ],
)
def test_bad_policies_are_refused_with_the_place_named(data, match: str) -> None:
    with pytest.raises(PolicyError, match=match):
        AccessPolicy.from_dict(data)


def test_policy_file_round_trips_and_settings_load_it(tmp_path, monkeypatch) -> None:
    path = tmp_path / "access.json"
    path.write_text(json.dumps(POLICY.to_dict()), encoding="utf-8")
    loaded = AccessPolicy.load(path)
    assert loaded.to_dict() == POLICY.to_dict() and loaded.source == str(path)
    monkeypatch.setenv("MEMORY_AGENT_ACCESS_POLICY", str(path))
    assert Settings.from_env().access is not None
    assert Settings.from_env().access.to_dict() == POLICY.to_dict()  # type: ignore[union-attr]
    monkeypatch.delenv("MEMORY_AGENT_ACCESS_POLICY")
    assert Settings.from_env().access is None


def test_unusable_policy_files_fail_at_start_with_the_variable_named(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("MEMORY_AGENT_ACCESS_POLICY", str(tmp_path / "missing.json"))
    with pytest.raises(ValueError, match="MEMORY_AGENT_ACCESS_POLICY: access policy .*no such"):
        Settings.from_env()
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    monkeypatch.setenv("MEMORY_AGENT_ACCESS_POLICY", str(bad))
    with pytest.raises(ValueError, match="not JSON"):
        Settings.from_env()


def test_refusals_are_told_in_the_users_language() -> None:
    note = "agent after-sales may not change industry.* memories written by pre-sales"
    assert (
        describe_refused([note, note], zh=False) == f"(Memory access: I did not save that: {note}.)"
    )
    zh = describe_refused([note], zh=True)
    assert "after-sales 不能修改由 pre-sales 写入的 industry.* 记忆" in zh


# --- the service under a policy ---------------------------------------------------------------


@pytest.fixture
def shared(index):
    store = InMemoryStore()

    def as_agent(agent: str, access: AccessPolicy | None = POLICY) -> MemoryService:
        return MemoryService(store, index, agent_id=agent, access=access)

    return as_agent


def said(days: int) -> Source:
    return Source(via="api", said_at=T0 + timedelta(days=days))


def test_no_policy_keeps_single_agent_behaviour_and_records_the_writer(shared) -> None:
    svc = shared("memory-agent", None)
    [change] = svc.add("acme", "User's card is on file.", subject="payment.note")
    assert change.action == "added"
    assert (change.record.agent_id, change.record.scope) == ("memory-agent", "user")
    assert [r.subject for r in shared("other", None).list("acme")] == ["payment.note"]


def test_reads_across_agents_and_refused_writes_leave_the_original_intact(shared) -> None:
    pre, after = shared("pre-sales"), shared("after-sales")
    [added] = pre.add("acme", "User's company is in retail.", subject="industry.sector")
    assert (added.record.agent_id, added.record.scope) == ("pre-sales", "user")
    # after-sales reads it: list, get, search, export
    assert [r.content for r in after.list("acme")] == ["User's company is in retail."]
    assert after.get("acme", added.record.id).agent_id == "pre-sales"
    assert [h.record.id for h in after.search("acme", "what industry is the company in?")] == [
        added.record.id
    ]
    assert [row["id"] for row in after.export("acme")] == [added.record.id]
    # ...but may not change it, by any write path
    refusal = re.escape("agent after-sales may not change industry.* memories written by pre-sales")
    with pytest.raises(AccessDenied, match=f"^{refusal}$"):
        after.add("acme", "User's company is in wholesale.", subject="industry.sector")
    with pytest.raises(AccessDenied, match="written by pre-sales"):
        after.forget("acme", added.record.id)
    with pytest.raises(AccessDenied, match="written by pre-sales"):
        after.forget("acme", added.record.id, hard=True)
    row = dict(added.record.to_store(), id="copy", content="User's company is in mining.")
    with pytest.raises(AccessDenied, match="record 1: .*written by pre-sales"):
        after.import_records("acme", [row])
    [still] = pre.list("acme", include_inactive=True)
    assert (still.content, still.status, still.history) == (added.record.content, "active", [])


def test_a_refused_candidate_does_not_fail_the_save_of_the_others(shared) -> None:
    pre, after = shared("pre-sales"), shared("after-sales")
    pre.add("acme", "User's company is in retail.", subject="industry.sector")
    changes = after.save(
        "acme",
        Extraction(
            memories=[
                cand("industry.sector", content="User's company is in wholesale."),
                cand("profile.city", content="User lives in Oslo."),
            ]
        ),
        said(1),
    )
    assert [c.action for c in changes] == ["refused", "added"]
    assert changes[0].note == (
        "agent after-sales may not change industry.* memories written by pre-sales"
    )
    assert changes[0].describe().startswith("refused: [fact industry.sector] User's company is in")
    assert sorted(r.content for r in pre.list("acme")) == [
        "User lives in Oslo.",
        "User's company is in retail.",
    ]


def test_a_restatement_in_another_subject_cannot_touch_a_protected_memory(shared) -> None:
    pre, after = shared("pre-sales"), shared("after-sales")
    pre.add("acme", "User's company is in retail.", subject="industry.sector")
    # Same sentence under a subject after-sales may write: reconciling it would reinforce
    # the pre-sales record, which after-sales may not change.
    changes = after.save(
        "acme",
        Extraction(memories=[cand("profile.business", content="User's company is in retail.")]),
        said(1),
    )
    assert [c.action for c in changes] == ["refused"]
    assert "written by pre-sales" in changes[0].note
    [r] = pre.list("acme")
    assert r.history == [] and r.subject == "industry.sector"


def test_forget_requests_the_agent_may_not_honour_are_refused(shared) -> None:
    pre, after = shared("pre-sales"), shared("after-sales")
    pre.add("acme", "User's company is in retail.", subject="industry.sector")
    pre.add("acme", "User lives in Oslo.", subject="profile.city")
    changes = after.save(
        "acme",
        Extraction(forget=[ForgetRequest(query="retail"), ForgetRequest(query="Oslo")]),
        said(1),
    )
    assert [(c.action, c.record.subject) for c in changes] == [
        ("refused", "industry.sector"),
        ("forgotten", "profile.city"),
    ]
    assert [r.subject for r in pre.list("acme")] == ["industry.sector"]


def test_agent_private_notes_are_invisible_to_other_agents(shared) -> None:
    pre, after = shared("pre-sales"), shared("after-sales")
    [note] = after.add("acme", "Ticket 42: screen flickers.", subject="support.ticket_42")
    assert note.record.scope == "agent"
    assert [r.id for r in after.list("acme")] == [note.record.id]
    assert pre.list("acme", include_inactive=True) == []
    assert pre.search("acme", "screen flickers ticket") == []
    assert pre.export("acme") == []
    with pytest.raises(MemoryNotFound):
        pre.get("acme", note.record.id)
    with pytest.raises(MemoryNotFound):
        pre.forget("acme", note.record.id)


def test_a_private_note_never_supersedes_a_shared_memory(shared) -> None:
    rules = {"read": ["*"], "write": ["*"]}
    policy = AccessPolicy.from_dict(
        {"agents": {"a": rules, "b": {**rules, "scopes": {"profile.": "agent"}}}}
    )
    a, b = shared("a", policy), shared("b", policy)
    a.add("acme", "User lives in Oslo.", subject="profile.city", source=said(0))
    [mine] = b.add("acme", "User lives in Bergen.", subject="profile.city", source=said(1))
    assert (mine.action, mine.record.scope, mine.record.supersedes) == ("added", "agent", None)
    assert [r.content for r in a.list("acme")] == ["User lives in Oslo."]
    assert sorted(r.content for r in b.list("acme")) == [
        "User lives in Bergen.",
        "User lives in Oslo.",
    ]


def test_restricted_category_is_read_only_by_its_writer_and_admitted_agents(shared) -> None:
    billing, support, auditor = shared("billing"), shared("support"), shared("auditor")
    [card] = billing.add("acme", "User pays by invoice.", subject="payment.method")
    assert card.record.scope == "payment"
    assert [r.id for r in billing.list("acme")] == [card.record.id]
    assert [r.id for r in auditor.list("acme")] == [card.record.id]
    assert support.list("acme") == [] and support.search("acme", "how does the user pay") == []


def test_maintenance_sees_every_memory_whatever_the_policy(shared) -> None:
    shared("after-sales").add("acme", "Ticket 42: screen flickers.", subject="support.ticket_42")
    shared("billing").add("acme", "User pays by invoice.", subject="payment.method")
    outsider = shared("support")
    assert outsider.reindex("acme") == {"acme": 2}
    assert outsider.consolidate("acme").users == 1
    assert outsider.delete_user("acme") == 2
    assert shared("billing").list("acme", include_inactive=True) == []


def test_newer_statement_from_another_agent_wins_with_writer_and_history_kept(shared) -> None:
    pre, after = shared("pre-sales"), shared("after-sales")
    [old] = pre.add("acme", "User lives in Oslo.", subject="profile.city", source=said(0))
    changes = after.add("acme", "User lives in Bergen.", subject="profile.city", source=said(5))
    assert [c.action for c in changes] == ["added", "superseded"]
    new = changes[0].record
    for reader in (pre, after):
        [active] = reader.list("acme")
        assert (active.content, active.agent_id, active.supersedes) == (
            "User lives in Bergen.",
            "after-sales",
            old.record.id,
        )
        loser = reader.get("acme", old.record.id)
        assert (loser.status, loser.agent_id, loser.superseded_by) == (
            "superseded",
            "pre-sales",
            new.id,
        )
        assert loser.valid_until is not None
    # The winner's history carries the loser's last state, pointing at the pre-sales record.
    assert [(h.action, h.content, h.record_id) for h in new.history] == [
        ("superseded", "User lives in Oslo.", old.record.id)
    ]
    assert {row["agent_id"] for row in after.export("acme")} == {"pre-sales", "after-sales"}


def test_an_older_statement_from_another_agent_does_not_silently_win(shared) -> None:
    pre, after = shared("pre-sales"), shared("after-sales")
    pre.add("acme", "User lives in Oslo.", subject="profile.city", source=said(5))
    # Said earlier (e.g. a backdated import), same confidence: both kept, flagged to ask.
    changes = after.add("acme", "User lives in Bergen.", subject="profile.city", source=said(0))
    assert [c.action for c in changes] == ["added", "conflict"]
    active = pre.list("acme")
    assert {r.agent_id for r in active} == {"pre-sales", "after-sales"}
    assert len({r.conflict_group for r in active}) == 1 and active[0].conflict_group

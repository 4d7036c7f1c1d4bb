"""Two agents, one user's memory: pre-sales and after-sales share it under an access policy.

```
                ┌──────────────────────────────────────────────────────┐
          ┌───▶ │ pre_sales:   load_memory → chat → extract → save → … │ ──┐
 START ─ route  └──────────────────────────────────────────────────────┘   ├─▶ END
          └───▶ │ after_sales: load_memory → chat → extract → save → … │ ──┘
                └──────────────────────────────────────────────────────┘
```

`route` picks the agent: the run context's `agent_id` if it names one, else a simple rule
(orders, deliveries, refunds, repairs... go to after-sales). Each agent is the memory agent's
own graph (`graphs/builder.py`) with its own `agent_id`, so everything it writes records
its writer, and the access policy decides what it may read and change:

- pre-sales records the customer's business (`industry.*`, `work.*`); after-sales reads it
  but may not change it: such a statement is refused and the user is told why;
- after-sales' own ticket notes (`support.*`) are private to it (`scope: agent`);
- neither reads nor writes `payment.*`.

This policy (`EXAMPLE_ACCESS`) applies unless `MEMORY_AGENT_ACCESS_POLICY` names a file, so
the graph works in Studio with no configuration. `agent/app.py` compiles the one
`langgraph dev` serves; apps call `build_graph(...)`.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore

from graphs.builder import make_builder
from graphs.context import Context
from graphs.memory_agent import make_deps
from graphs.messages import text_of
from graphs.nodes import AgentDeps
from graphs.settings import Settings
from graphs.state import InputState, State
from memory import AccessPolicy, ChromaIndex

PRE_SALES = "pre-sales"
AFTER_SALES = "after-sales"
AGENTS = (PRE_SALES, AFTER_SALES)

EXAMPLE_ACCESS = AccessPolicy.from_dict(
    {
        "agents": {
            PRE_SALES: {
                "read": {"subjects": ["*"], "except": ["payment."]},
                "write": {"subjects": ["*"], "except": ["payment.", "support."]},
            },
            AFTER_SALES: {
                "read": {"subjects": ["*"], "except": ["payment."]},
                "write": {"subjects": ["*"], "except": ["industry.", "work.", "payment."]},
                "scopes": {"support.": "agent"},
            },
        }
    },
    source="graphs/two_agents.py",
)
"""The example's policy; agents it does not name may read and write nothing."""

_AFTER_SALES_WORDS = re.compile(
    r"(?i)\b(?:orders?|deliver(?:y|ed|ies)?|shipp(?:ing|ed)|refunds?|returns?|broken|"
    r"repairs?|warranty|complaints?|invoices?|tickets?|defect(?:ive)?|replace(?:ment)?)\b"
    r"|订单|发货|物流|退货|退款|换货|售后|维修|保修|坏了|投诉|发票|工单"
)


class TwoAgentState(State, total=False):
    """The memory agent's state, plus which agent handled the latest turn."""

    agent: str
    """`pre-sales` or `after-sales`."""


def rule_router(state: State) -> str:
    """Send after-sales topics (orders, refunds, repairs; 订单、退货、维修…) to after-sales."""
    humans = [m for m in state.get("messages", []) if isinstance(m, HumanMessage)]
    text = text_of(humans[-1]) if humans else ""
    return AFTER_SALES if _AFTER_SALES_WORDS.search(text) else PRE_SALES


def node_name(agent_id: str) -> str:
    """Return the graph node of an agent (`pre-sales` → `pre_sales`)."""
    return re.sub(r"\W", "_", agent_id)


def make_two_agent_builder(
    deps: AgentDeps,
    *,
    agents: Sequence[str] = AGENTS,
    router: Callable[[State], str] = rule_router,
) -> StateGraph[TwoAgentState, Context, InputState, TwoAgentState]:
    """Return the uncompiled graph `route → <one agent's memory-agent graph>`.

    Args:
        deps: Shared dependencies (model, index, lifecycle and access policy); each agent
            gets a copy with its own `agent_id`.
        agents: The agent ids; the context's `agent_id` must be one of them (or unset).
        router: Picks the agent when the context does not name one.

    """
    if len(set(agents)) != len(agents) or not agents:
        raise ValueError("agents must be distinct, non-empty agent ids")

    async def route(state: TwoAgentState, runtime: Runtime[Context]) -> dict[str, Any]:
        ctx = runtime.context
        asked = ctx.get("agent_id") if isinstance(ctx, dict) else getattr(ctx, "agent_id", None)
        if asked:
            if asked not in agents:
                raise ValueError(
                    f"agent_id {asked!r} is not an agent of this graph: use "
                    f"{' or '.join(map(repr, agents))}, or leave it unset to route by message"
                )
            return {"agent": asked}
        chosen = router(state)
        if chosen not in agents:
            raise ValueError(f"the router chose {chosen!r}, which is not one of {agents}")
        return {"agent": chosen}

    builder = StateGraph(TwoAgentState, context_schema=Context, input_schema=InputState)
    builder.add_node("route", route)
    for agent_id in agents:
        sub = make_builder(
            dataclasses.replace(
                deps, settings=dataclasses.replace(deps.settings, agent_id=agent_id)
            )
        )
        # The agent subgraph gets the whole state (the rolling summary, working memory...),
        # not just the caller's input, so short-term memory carries over between turns.
        sub.input_schema = State
        builder.add_node(node_name(agent_id), sub.compile(name=node_name(agent_id)))
        builder.add_edge(node_name(agent_id), END)
    builder.add_edge(START, "route")
    builder.add_conditional_edges(
        "route",
        lambda state: node_name(state["agent"]),
        [node_name(a) for a in agents],
    )
    return builder


def build_graph(
    checkpointer: BaseCheckpointSaver[Any] | None = None,
    store: BaseStore | None = None,
    *,
    settings: Settings | None = None,
    model: BaseChatModel | None = None,
    index: ChromaIndex | None = None,
    access: AccessPolicy | None = None,
) -> CompiledStateGraph[TwoAgentState, Context, InputState, TwoAgentState]:
    """Compile the two-agent graph with persistence, for use from an app.

    Args:
        checkpointer: Keeps each thread's messages; both agents share the thread.
        store: Long-term memory's source of truth, shared by both agents.
        settings: Defaults to `Settings.from_env()`.
        model: A chat model to use for both agents instead of the configured spec.
        index: A Chroma index to use instead of opening the configured one.
        access: The access policy; defaults to `MEMORY_AGENT_ACCESS_POLICY`, else
            `EXAMPLE_ACCESS`.

    """
    cfg = settings or Settings.from_env()
    cfg = dataclasses.replace(cfg, access=access or cfg.access or EXAMPLE_ACCESS)
    builder = make_two_agent_builder(make_deps(cfg, model=model, index=index))
    return builder.compile(checkpointer=checkpointer, store=store, name="two_agents")

"""Builds the orchestration a document's `metadata.orchestration` describes over its
sub-agents, the document's own agent taking the mode's leading role where it has one."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import raf.orchestrations as o
from raf.core.errors import ConfigurationError
from raf.decl.documents.orchestration import (
    SELF,
    ConcurrentDecl,
    GroupChatDecl,
    HandoffDecl,
    MagenticDecl,
    OrchestrationDecl,
    SequentialDecl,
    VoteDecl,
)
from raf.orchestrations import Member, Orchestration


def build_orchestration(
    decl: OrchestrationDecl,
    *,
    name: str,
    description: str,
    members: Sequence[Member],
    lead: Member | None,
) -> Orchestration:
    """The orchestration `decl` describes, over `members` (the sub-agents) and `lead` (the
    document's own agent, when the mode gives it a role)."""
    by_name = {m.name: m for m in members}

    def pick(who: str | None) -> Member:
        if who == SELF:
            if lead is None:  # needs_lead() builds the lead wherever an option names it
                raise ConfigurationError("the document's own agent was not built")
            return lead
        return by_name[str(who)]

    common: dict[str, Any] = {"name": name, "description": description}
    own = [pick(SELF)] if getattr(decl, "include_self", False) else []
    if isinstance(decl, SequentialDecl):
        return o.SequentialOrchestration([*own, *members], pass_on=decl.pass_on, **common)
    if isinstance(decl, ConcurrentDecl):
        aggregator = pick(decl.aggregator) if decl.aggregator else None
        return o.ConcurrentOrchestration(
            [m for m in [*own, *members] if m is not aggregator],
            aggregator=aggregator,
            max_concurrency=decl.max_concurrency,
            **common,
        )
    if isinstance(decl, HandoffDecl):
        triage = pick(decl.triage)
        specialists = [m for m in members if m is not triage]
        if lead is not None and lead is not triage:  # a route names the document's agent
            specialists.append(lead)
        handoffs = None
        if decl.handoffs is not None:
            handoffs = {pick(k).name: [pick(t).name for t in v] for k, v in decl.handoffs.items()}
        return o.HandoffOrchestration(
            triage,
            specialists,
            handoffs=handoffs,
            routing_field=decl.routing_field,
            max_handoffs=decl.max_handoffs,
            **common,
        )
    if isinstance(decl, GroupChatDecl):
        selector: Any = decl.selector
        if selector == "coordinator":
            selector = pick(decl.coordinator)
        return o.GroupChatOrchestration(
            [m for m in members if m is not selector],
            selector=selector,
            order=decl.order,
            max_rounds=decl.max_rounds,
            termination_keywords=decl.termination_keywords,
            **common,
        )
    if isinstance(decl, MagenticDecl):
        manager = pick(decl.manager)
        return o.MagenticOrchestration(
            manager,
            [m for m in members if m is not manager],
            max_iterations=decl.max_iterations,
            max_stalls=decl.max_stalls,
            **common,
        )
    if isinstance(decl, VoteDecl):
        weights = decl.weights
        if weights is not None and own:
            weights = {(own[0].name if k == SELF else k): w for k, w in weights.items()}
        return o.VoteOrchestration(
            [*own, *members],
            method=decl.method,
            choices=decl.choices,
            weights=weights,
            rounds=decl.rounds,
            **common,
        )
    phases = [
        o.Phase(
            name=p.name,
            members=[pick(m) for m in p.members],
            mode=p.mode,
            aggregator=pick(p.aggregator) if p.aggregator else None,
            loop_back=(
                o.LoopBack(
                    to=p.loop_back.to, when=p.loop_back.when, max_loops=p.loop_back.max_loops
                )
                if p.loop_back
                else None
            ),
            pass_on=p.pass_on,
        )
        for p in decl.phases
    ]
    loop_from = decl.loop_from
    if loop_from is None and decl.max_iterations > 1:
        loop_from = decl.phases[0].name  # without loopFrom, the whole pipeline repeats
    return o.PipelineOrchestration(
        phases,
        pass_on=decl.pass_on,
        loop_from=loop_from,
        max_iterations=decl.max_iterations,
        until=decl.until,
        **common,
    )

"""Handoff: a triage agent answers or passes the conversation to a specialist, who may pass
it on in turn; the first member that does not hand off gives the answer."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from raf.agent.agent import Agent
from raf.core.errors import ConfigurationError
from raf.core.messages import ChatMessage
from raf.core.tools import BaseTool, ToolContext, ToolResult
from raf.workflow.orchestrations.base import Orchestration, Outcome
from raf.workflow.orchestrations.parsing import json_object
from raf.workflow.orchestrations.runtime import SIGNALS_KEY, Member, Runtime

HANDOFF_PREFIX = "handoff_to_"


class HandoffTool(BaseTool):
    """`handoff_to_<member>`: the model calls it to pass the conversation on; a successful
    call ends the member's run (its model is not asked again)."""

    ends_run = True

    parameters: dict[str, Any] = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "reason": {"type": "string", "description": "why this member should take over"}
        },
    }

    def __init__(self, target: str, description: str = "") -> None:
        self.target = target
        self.name = HANDOFF_PREFIX + target
        self.description = f"Hand the conversation to {target}" + (
            f": {description}" if description else "."
        )

    async def invoke(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        if context.session is None:
            return ToolResult.fail("a handoff needs a session to record it in")
        context.session.metadata.setdefault(SIGNALS_KEY, {})["handoff"] = self.target
        return ToolResult.ok(f"Handed off to {self.target}; they will answer next.")


class HandoffOrchestration(Orchestration):
    """`HandoffOrchestration(triage, [billing, tech])`.

    Members hand off by calling a `handoff_to_<name>` tool, offered to each of them for
    the members it may hand to, or, with `routing_field="route"`, by answering a JSON
    object whose `route` names the next member (no tools are added then). By default the
    triage agent may hand to every specialist and specialists answer; `handoffs` maps each
    member to those it may hand to. Each member gets the conversation so far, earlier
    members' answers included. After `max_handoffs` the last answer stands.
    """

    mode = "handoff"

    def __init__(
        self,
        triage: Member,
        specialists: Sequence[Member],
        *,
        name: str = "handoff",
        description: str = "",
        handoffs: Mapping[str, Sequence[str]] | None = None,
        routing_field: str | None = None,
        max_handoffs: int = 10,
    ) -> None:
        super().__init__([triage, *specialists], name=name, description=description)
        if not specialists:
            raise ConfigurationError(f"handoff orchestration {name!r} needs a specialist")
        if max_handoffs < 1:
            raise ConfigurationError("max_handoffs must be at least 1")
        names = [m.name for m in self.members]
        routes = {triage.name: [s.name for s in specialists]} if handoffs is None else handoffs
        for source, targets in routes.items():
            for who in (source, *targets):
                if who not in names:
                    raise ConfigurationError(
                        f"handoff orchestration {name!r}: no member is named {who!r} "
                        f"(members: {', '.join(names)})"
                    )
        self.routes: dict[str, list[str]] = {k: list(v) for k, v in routes.items()}
        self.routing_field = routing_field
        self.max_handoffs = max_handoffs
        self._speakers: dict[str, Member] = {
            m.name: m if routing_field else self._with_handoff_tools(m) for m in self.members
        }

    def _with_handoff_tools(self, member: Member) -> Member:
        targets = self.routes.get(member.name, [])
        if not targets:
            return member
        if not isinstance(member, Agent) or type(member) is not Agent:
            raise ConfigurationError(
                f"handoff orchestration {self.name!r}: member {member.name!r} is not a plain "
                "Agent, so it cannot be given handoff tools; use routing_field instead"
            )
        tools = [HandoffTool(t, self.member(t).description) for t in targets]
        return Agent(
            chat_client=member.leaf_client,
            instructions=member.instructions,
            tools=[*member.tools, *tools],
            context_providers=member.context_providers,
            history=None,  # the member's providers already hold its history, if any
            name=member.name,
            description=member.description,
            max_tool_rounds=member.max_tool_rounds,
            max_repeated_calls=member.max_repeated_calls,
            default_options=member.default_options,
            instructions_template=member.instructions_template,
            output_type=member.output_type,
            output_retries=member.output_retries,
        )

    async def orchestrate(self, rt: Runtime, conversation: list[ChatMessage]) -> Outcome:
        current = self.members[0].name
        given = list(conversation)
        path = [current]
        while True:
            result = await rt.turn(
                self._speakers[current], given, instructions=self._routing_help(current)
            )
            target = self._target(current, result.signals, result.text)
            if target is None or len(path) > self.max_handoffs:
                return Outcome(answer=result.message, details={"path": path})
            rt.note(f"{current} hands off to {target}")
            if result.message.text:  # what it said before handing off, if anything
                given = [*given, result.message]
            current = target
            path.append(current)

    def _routing_help(self, current: str) -> str | None:
        """With a routing field, how a member hands off and to whom (tools say it otherwise)."""
        targets = self.routes.get(current, [])
        if not self.routing_field or not targets:
            return None
        names = "; ".join(
            f"{t} ({self.member(t).description})" if self.member(t).description else t
            for t in targets
        )
        return (
            "To hand the conversation to another member, answer only with a JSON object "
            f'{{"{self.routing_field}": "<member name>"}}. Members you may hand to: {names}. '
            "Otherwise answer yourself."
        )

    def _target(self, current: str, signals: dict[str, Any], text: str) -> str | None:
        allowed = self.routes.get(current, [])
        target: Any = signals.get("handoff")
        if self.routing_field:
            parsed = json_object(text)
            target = parsed.get(self.routing_field) if parsed else None
        if isinstance(target, str):
            for name in allowed:
                if name.lower() == target.strip().lower():
                    return name
        return None

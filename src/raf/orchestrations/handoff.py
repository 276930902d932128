"""Handoff: a triage agent answers or passes the conversation to a specialist, who may pass
it on in turn; the first member that does not hand off gives the answer. The next run in
the same session starts with the member that answered last."""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from raf.agent.agent import Agent
from raf.core.errors import ConfigurationError
from raf.core.messages import ChatMessage
from raf.core.tools import BaseTool, ToolContext, ToolResult
from raf.orchestrations.base import Orchestration, Outcome
from raf.orchestrations.parsing import json_object
from raf.orchestrations.runtime import SIGNALS_KEY, Member, Runtime

HANDOFF_PREFIX = "handoff_to_"
LAST_SPEAKER_PREFIX = "handoff:"
"""Key prefix, in the orchestration session's provider state, of the member that answered
last (the next run starts with it)."""
ANNOUNCED_KEY = "handoffs_announced"
"""The journal's count of handoffs whose `on_handoff` callback ran (a resumed run replays
the handoffs before the pause without calling it again)."""


@dataclass(kw_only=True, slots=True)
class Handoff:
    """What an `on_handoff` callback is told: who passes the conversation to whom, why,
    and the run's dependencies."""

    source: str
    target: str
    reason: str = ""
    """What the model gave as the reason (empty when none, or with a routing field)."""
    deps: Any = None
    """The dependencies the run was given (`run(..., deps=...)`)."""


OnHandoff = Callable[[Handoff], Awaitable[None] | None]
"""A callback run when a member hands off (sync or async), before the target answers."""


def handoff_tool_names(targets: Sequence[str]) -> dict[str, str]:
    """A valid, distinct tool name for handing off to each target: `handoff_to_` and the
    name in lower case, every run of other characters one `_` (`Seat Booking Agent` →
    `handoff_to_seat_booking_agent`), at most 64 characters, `_2`, `_3`, … on a clash."""
    names: dict[str, str] = {}
    taken: set[str] = set()
    for target in targets:
        slug = re.sub(r"[^a-z0-9_-]+", "_", target.lower()).strip("_-") or "member"
        base = (HANDOFF_PREFIX + slug)[:64]
        name, n = base, 1
        while name in taken:
            n += 1
            name = f"{base[: 64 - len(str(n)) - 1]}_{n}"
        taken.add(name)
        names[target] = name
    return names


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

    def __init__(self, target: str, description: str = "", *, name: str | None = None) -> None:
        self.target = target
        self.name = name or handoff_tool_names([target])[target]
        self.description = f"Hand the conversation to {target}" + (
            f": {description}" if description else "."
        )

    async def invoke(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        if context.session is None:
            return ToolResult.fail("a handoff needs a session to record it in")
        signals = context.session.metadata.setdefault(SIGNALS_KEY, {})
        signals["handoff"] = self.target
        reason = arguments.get("reason")
        if isinstance(reason, str) and reason:
            signals["handoff_reason"] = reason
        return ToolResult.ok(f"Handed off to {self.target}; they will answer next.")


class HandoffOrchestration(Orchestration):
    """`HandoffOrchestration(triage, [billing, tech])`.

    Members hand off by calling a `handoff_to_<name>` tool (the name made valid:
    `Seat Booking Agent` → `handoff_to_seat_booking_agent`), offered to each of them for
    the members it may hand to, or, with `routing_field="route"`, by answering a JSON
    object whose `route` names the next member (no tools are added then). By default the
    triage agent may hand to every specialist and specialists answer; `handoffs` maps each
    member to those it may hand to. Each member gets the conversation so far, earlier
    members' answers included. After `max_handoffs` the last answer stands.

    `on_handoff` (a callback, or a mapping of target names to callbacks) runs when a
    member hands off, before the target answers, with a `Handoff` (source, target,
    reason, the run's deps). With `stay_with_last` (the default), the next run in the
    same session starts with the member that answered last, as a conversation with a
    specialist goes on with that specialist; the session keeps who it was, so it holds
    across processes. `stay_with_last=False` starts every run with the triage agent.
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
        on_handoff: OnHandoff | Mapping[str, OnHandoff] | None = None,
        stay_with_last: bool = True,
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
        self.stay_with_last = stay_with_last
        self.on_handoff: dict[str, OnHandoff] = {}
        """The callback for a handoff to each target (every target: the one callback)."""
        if isinstance(on_handoff, Mapping):
            for target, callback in on_handoff.items():
                if target not in names:
                    raise ConfigurationError(
                        f"handoff orchestration {name!r}: on_handoff names {target!r}, who "
                        f"is no member (members: {', '.join(names)})"
                    )
                self.on_handoff[target] = _checked_callback(callback, name)
        elif on_handoff is not None:
            callback = _checked_callback(on_handoff, name)
            self.on_handoff = {n: callback for n in names}
        self._speakers: dict[str, Member] = {
            m.name: m if routing_field else self._with_handoff_tools(m) for m in self.members
        }

    def _with_handoff_tools(self, member: Member) -> Member:
        targets = self.routes.get(member.name, [])
        if not targets:
            return member
        if not isinstance(member, Agent):
            raise ConfigurationError(
                f"handoff orchestration {self.name!r}: member {member.name!r} is not an "
                "Agent, so it cannot be given handoff tools; use routing_field instead"
            )
        names = handoff_tool_names(targets)
        tools = [HandoffTool(t, self.member(t).description, name=names[t]) for t in targets]
        # the member itself, with the handoff tools beside its own: its guardrails,
        # middleware, validators, limits and deps type all hold in the orchestration
        return member.with_tools(tools)

    async def orchestrate(self, rt: Runtime, conversation: list[ChatMessage]) -> Outcome:
        current = self._first(rt)
        given = list(conversation)
        path = [current]
        announced = int(rt.state.get(ANNOUNCED_KEY, 0))
        while True:
            result = await rt.turn(
                self._speakers[current], given, instructions=self._routing_help(current)
            )
            target = self._target(current, result.signals, result.text)
            if target is None or len(path) > self.max_handoffs:
                self._remember(rt, current)
                return Outcome(answer=result.message, details={"path": path})
            callback = self.on_handoff.get(target)
            if callback is not None and len(path) > announced:
                reason = result.signals.get("handoff_reason")
                handoff = Handoff(
                    source=current,
                    target=target,
                    reason=reason if isinstance(reason, str) else "",
                    deps=rt.deps,
                )
                outcome = callback(handoff)
                if inspect.isawaitable(outcome):
                    await outcome
                announced = len(path)
                rt.state[ANNOUNCED_KEY] = announced
            rt.note(f"{current} hands off to {target}")
            if result.message.text:  # what it said before handing off, if anything
                given = [*given, result.message]
            current = target
            path.append(current)

    def _first(self, rt: Runtime) -> str:
        """Who starts: the member that answered the session's last run, else the triage."""
        triage = self.members[0].name
        if not self.stay_with_last or rt.session is None:
            return triage
        last = rt.session.provider_state.get(LAST_SPEAKER_PREFIX + self.name)
        return last if isinstance(last, str) and last in self._speakers else triage

    def _remember(self, rt: Runtime, member: str) -> None:
        if self.stay_with_last and rt.session is not None:
            rt.session.provider_state[LAST_SPEAKER_PREFIX + self.name] = member

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


def _checked_callback(callback: Any, name: str) -> OnHandoff:
    if not callable(callback):
        raise ConfigurationError(
            f"handoff orchestration {name!r}: on_handoff must be a function (handoff) -> "
            f"None, sync or async, got {callback!r}"
        )
    return callback  # type: ignore[no-any-return]

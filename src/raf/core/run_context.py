"""The state of one run apart from model settings: who runs, where, and what it may use."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, cast

from typing_extensions import TypeVar

from raf.core.call_approval import RunApprovals
from raf.core.errors import UsageLimitExceeded
from raf.core.middleware_set import NO_MIDDLEWARE, MiddlewareSet
from raf.core.usage import UsageDetails, UsageLimits, UsageTotals

if TYPE_CHECKING:
    from raf.core.cancellation import CancellationToken
    from raf.core.sessions import AgentSession


DepsT = TypeVar("DepsT", default=Any)
"""The type of the dependencies a run carries to its tools (`AgentBuilder(deps_type=)`)."""


@dataclass(kw_only=True, slots=True)
class RunContext(Generic[DepsT]):
    """Agent, session, approvals, cancellation, usage so far and limits of one run, and
    the dependencies passed to it.

    The tool loop and every middleware read it; tools reach it as `ToolContext.run`, or
    by declaring a parameter of type `RunContext[Deps]` (kept out of the schema the model
    sees). Model clients never see it: `ChatOptions` carries only what a model reads.
    """

    deps: DepsT = field(default=cast(Any, None))
    """The services this run's tools use (a database, a client, settings), as passed to
    `agent.run(..., deps=)`; None when none were passed."""
    agent: Any = None
    session: AgentSession | None = None
    approvals: RunApprovals = field(default_factory=RunApprovals)
    cancellation: CancellationToken | None = None
    usage: UsageTotals = field(default_factory=UsageTotals)
    """What this run used so far."""
    limits: UsageLimits | None = None
    """Caps on this run."""
    session_limits: UsageLimits | None = None
    """Caps on the session's totals (`session.usage`), this run included."""
    middleware: MiddlewareSet = NO_MIDDLEWARE
    tool_timeout: float | None = None
    """Seconds a tool call may take when its tool declares no `timeout`; None: no limit."""
    _run_id: str = field(default="", init=False, repr=False)

    @property
    def run_id(self) -> str:
        """This run's random id (32 hex digits), drawn the first time it is read: the
        scope of the idempotency keys of a run without a session, unique to every run."""
        if not self._run_id:
            self._run_id = secrets.token_hex(16)
        return self._run_id

    @property
    def agent_name(self) -> str:
        return str(getattr(self.agent, "name", "") or "")

    @property
    def cancelled(self) -> bool:
        token = self.cancellation
        return token is not None and token.cancelled

    @property
    def has_limits(self) -> bool:
        return self.limits is not None or self.session_limits is not None

    # -- usage ------------------------------------------------------------------------

    def check_request(self) -> None:
        """Before a model call: refuse it when it would pass a request limit."""
        self._check("requests", 1)

    def allowed_tool_calls(self, wanted: int) -> int:
        """How many of `wanted` tool calls the limits let run (all when there are none)."""
        allowed = wanted
        for limits, totals in self._scopes():
            cap = limits.tool_calls
            if cap is not None:
                allowed = min(allowed, max(0, cap - totals.tool_calls))
        return allowed

    def tool_call_limit_error(self, wanted: int) -> UsageLimitExceeded:
        """The error for a batch of `wanted` calls that the limits cut short."""
        for scope, (limits, totals) in zip(("run", "session"), self._pairs(), strict=True):
            if limits is None or limits.tool_calls is None:
                continue
            if totals.tool_calls + wanted > limits.tool_calls:
                return UsageLimitExceeded(
                    limit="tool_calls",
                    scope=scope,
                    maximum=limits.tool_calls,
                    figure=totals.tool_calls + wanted,
                )
        raise AssertionError("no tool-call limit was passed")  # pragma: no cover

    def count_request(self, usage: UsageDetails | None) -> None:
        """After a model call: count it and its tokens (run and session)."""
        self.usage.requests += 1
        if usage is not None:
            self.usage.add_tokens(usage)
        session = self.session
        if session is not None:
            session.usage.requests += 1
            if usage is not None:
                session.usage.add_tokens(usage)

    def count_tool_calls(self, count: int) -> None:
        self.usage.tool_calls += count
        if self.session is not None:
            self.session.usage.tool_calls += count

    def check_tokens(self) -> None:
        """After a model call: stop when the tokens used passed a limit."""
        for name in ("input_tokens", "output_tokens", "total_tokens"):
            self._check(name, 0)

    def _pairs(self) -> tuple[tuple[UsageLimits | None, UsageTotals], ...]:
        session_totals = self.session.usage if self.session is not None else self.usage
        return ((self.limits, self.usage), (self.session_limits, session_totals))

    def _scopes(self) -> list[tuple[UsageLimits, UsageTotals]]:
        return [(limits, totals) for limits, totals in self._pairs() if limits is not None]

    def _check(self, name: str, adding: int) -> None:
        for scope, (limits, totals) in zip(("run", "session"), self._pairs(), strict=True):
            if limits is None:
                continue
            cap = getattr(limits, name)
            figure = getattr(totals, name) + adding
            if cap is not None and figure > cap:
                raise UsageLimitExceeded(limit=name, scope=scope, maximum=cap, figure=figure)

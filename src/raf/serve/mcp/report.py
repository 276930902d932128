"""What an MCP client hears while `ask` runs: progress per step, log messages at the level
the client chose, and each approval the agent needs offered as an elicitation.

A run may take minutes (several model calls and tools), so every step of the streamed run
becomes a progress notification (when the client sent a progress token) and a log
message; a client that never set a level hears `info` and above. A call waiting for a
human is asked of the client's user as a form (approve, and an optional reason) when the
client declared elicitation; otherwise, or when the form is cancelled, it is denied.
"""

from __future__ import annotations

import json
import warnings
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from raf.core.contents import ApprovalRequestContent
from raf.core.options import ToolApprovalResponse
from raf.core.responses import AgentResponseUpdate, UpdateKind

LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
"""MCP log levels, least severe first."""

DEFAULT_LEVEL = "info"

APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "approve": {
            "type": "boolean",
            "title": "Approve",
            "description": "let the agent make this call",
            "default": False,
        },
        "reason": {
            "type": "string",
            "title": "Reason",
            "description": "why (passed on to the agent)",
        },
    },
    "required": ["approve"],
}
"""The form an approval is asked with."""


class LogLevels:
    """The level each connected client asked for with `logging/setLevel`, by its MCP
    session id over HTTP (stdio has one client); the least recently set go first."""

    def __init__(self, limit: int = 1000) -> None:
        self._by_client: OrderedDict[str, str] = OrderedDict()
        self._limit = limit

    @staticmethod
    def client_of(ctx: Any) -> str:
        request = getattr(ctx, "request", None)
        headers = getattr(request, "headers", None)
        if headers is not None:
            return str(headers.get("mcp-session-id") or "")
        return ""

    def set(self, ctx: Any, level: str) -> None:
        key = self.client_of(ctx)
        self._by_client[key] = level
        self._by_client.move_to_end(key)
        while len(self._by_client) > self._limit:
            self._by_client.popitem(last=False)

    def get(self, ctx: Any) -> str:
        return self._by_client.get(self.client_of(ctx), DEFAULT_LEVEL)


def describe_call(request: ApprovalRequestContent) -> str:
    args = json.dumps(request.arguments, ensure_ascii=False, default=str)
    why = f" ({request.reason})" if request.reason else ""
    return f"{request.name}({args}){why}"


@dataclass(kw_only=True, slots=True)
class RunReporter:
    """Reports one `ask` to the client that sent it; every send is best effort."""

    ctx: Any
    """The SDK's request context (its session is the back channel to the client)."""
    level: str = DEFAULT_LEVEL
    logger: str = "raf"
    steps: int = 0

    @property
    def _session(self) -> Any:
        return self.ctx.session

    async def log(self, level: str, text: str) -> None:
        if LEVELS.index(level) < LEVELS.index(self.level):
            return
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the SDK marks logging as old
                await self._session.send_log_message(
                    level, text, logger=self.logger, related_request_id=self.ctx.request_id
                )
        except Exception:  # a client gone deaf must not fail the run
            return

    async def progress(self, message: str) -> None:
        """One more step done; sent only when the client's request asked for progress."""
        self.steps += 1
        try:
            await self._session.report_progress(float(self.steps), None, message)
        except Exception:
            return

    async def step(self, update: AgentResponseUpdate) -> None:
        """One update of the streamed run, told as progress and a log line."""
        match update.kind:
            case UpdateKind.TOOL_CALLING:
                text = f"calling tool {update.tool_name}"
                await self.progress(text)
                await self.log("info", text)
            case UpdateKind.TOOL_CALLED:
                text = f"tool {update.tool_name} answered"
                await self.progress(text)
                await self.log("debug", text)
            case UpdateKind.APPROVAL_REQUEST:
                await self.log("notice", f"waiting for approval of {update.tool_name}")
            case _:
                return

    def can_elicit(self) -> bool:
        import mcp_types

        try:
            return bool(
                self._session.check_client_capability(
                    mcp_types.ClientCapabilities(elicitation=mcp_types.ElicitationCapability())
                )
            )
        except Exception:  # an unknown capability shape means no
            return False

    def can_ask_now(self) -> bool:
        """The client takes elicitations on this request's stream (handshake protocol)."""
        return self.can_elicit() and bool(getattr(self._session, "can_send_request", True))

    def can_ask_later(self) -> bool:
        """The client takes elicitations in an input-required result, to send back with
        its retry (the newest protocol, where a server cannot send requests mid-call)."""
        return self.can_elicit() and not getattr(self._session, "can_send_request", True)

    async def ask_approval(self, request: ApprovalRequestContent) -> ToolApprovalResponse:
        """Ask the client's user to approve one call; anything but an explicit yes denies."""
        try:
            result = await self._session.elicit_form(
                approval_message(request), APPROVAL_SCHEMA, related_request_id=self.ctx.request_id
            )
        except Exception as exc:  # the client failed: nobody approved
            return ToolApprovalResponse(
                call_id=request.call_id,
                approved=False,
                reason=f"the approval could not be asked: {exc}",
            )
        decision = decision_from(request, result)
        verdict = "approved" if decision.approved else f"denied ({result.action})"
        await self.log("notice", f"{request.name} {verdict} by the client's user")
        return decision


def approval_message(request: ApprovalRequestContent) -> str:
    return f"The agent asks to call {describe_call(request)}. Approve?"


def approval_input_request(request: ApprovalRequestContent) -> Any:
    """The elicitation asking about one call, to embed in an input-required result."""
    import mcp_types

    return mcp_types.ElicitRequest(
        params=mcp_types.ElicitRequestFormParams(
            message=approval_message(request), requested_schema=APPROVAL_SCHEMA
        )
    )


def decision_from(request: ApprovalRequestContent, result: Any) -> ToolApprovalResponse:
    """The decision an elicitation result gives: only an accepted form saying approve."""
    action = getattr(result, "action", None)
    content = getattr(result, "content", None) or {}
    reason = content.get("reason")
    reason_text = reason if isinstance(reason, str) and reason.strip() else None
    if action == "accept" and content.get("approve") is True:
        return ToolApprovalResponse(call_id=request.call_id, approved=True, reason=reason_text)
    return ToolApprovalResponse(
        call_id=request.call_id,
        approved=False,
        reason=reason_text
        or f"the person answering for the MCP client did not approve ({action or 'no answer'})",
    )

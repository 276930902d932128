"""One agent for an editor over the Agent Client Protocol on stdio (`raf acp FILE`).

Text, reasoning and tool calls stream as session updates; a call that needs approval
becomes a permission request to the editor, and its answer resumes the run. Sessions
are raf sessions, so `session/load` replays a stored conversation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from raf.core.agent_like import AgentLike, close_agent_like
from raf.core.call_approval import answerable_requests
from raf.core.contents import (
    ApprovalRequestContent,
    ApprovalResponseContent,
    FunctionCallContent,
    FunctionResultContent,
)
from raf.core.errors import RafError
from raf.core.messages import ChatMessage, Role
from raf.core.responses import AgentResponseUpdate, FinishReason, UpdateKind
from raf.core.sessions import SessionStore
from raf.serve.errors import ServeError, require_extra
from raf.serve.hosting import ANONYMOUS, AgentHost
from raf.serve.requests import error_for

if TYPE_CHECKING:
    import acp
    from acp import schema

STOP_REASONS: dict[FinishReason | None, str] = {
    FinishReason.LENGTH: "max_tokens",
    FinishReason.CONTENT_FILTER: "refusal",
    FinishReason.CANCELLED: "cancelled",
}
ALLOW, REJECT = "allow_once", "reject_once"


def _acp_error(exc: BaseException) -> Exception:
    """A failure as a JSON-RPC error the editor shows."""
    from acp import RequestError

    error = error_for(exc)
    return RequestError(-32000 if error.status >= 500 else -32602, error.message, error.body())


class RafAcpAgent:
    """The agent side of ACP over one hosted raf agent (sessions owned by the editor)."""

    def __init__(self, agent: AgentLike, store: SessionStore | None = None) -> None:
        require_extra("acp", "serving an agent over ACP")
        self.host = AgentHost([agent], store=store)
        self.name = agent.name
        self.client: acp.Client | None = None
        self.calls: dict[str, set[str]] = {}
        """Per session, the tool calls the editor has been told of (`tool_call` sent)."""
        self.turns: dict[str, bool] = {}
        """Sessions with a prompt in progress, and whether the editor cancelled it (a
        cancel can arrive before the run has started)."""

    def on_connect(self, conn: acp.Client) -> None:
        self.client = conn

    def _client(self) -> acp.Client:
        if self.client is None:  # pragma: no cover - the SDK connects before any request
            raise RuntimeError("no editor is connected")
        return self.client

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: Any = None,
        client_info: Any = None,
        **_: Any,
    ) -> schema.InitializeResponse:
        from acp import PROTOCOL_VERSION
        from acp.schema import AgentCapabilities, Implementation, InitializeResponse

        from raf._version import __version__

        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(load_session=True),
            agent_info=Implementation(name=self.name, title=self.name, version=__version__),
        )

    async def new_session(self, cwd: str, **_: Any) -> schema.NewSessionResponse:
        from acp.schema import NewSessionResponse

        session = await self.host.create_session(self.name, ANONYMOUS)
        return NewSessionResponse(session_id=session.id)

    async def load_session(self, cwd: str, session_id: str, **_: Any) -> schema.LoadSessionResponse:
        from acp import update_agent_message_text, update_user_message_text
        from acp.schema import LoadSessionResponse

        try:
            session = await self.host.session(self.name, session_id, ANONYMOUS)
        except ServeError as exc:
            raise _acp_error(exc) from None
        for message in session.messages:
            if not message.text:
                continue
            if message.role is Role.USER:
                await self._client().session_update(
                    session_id, update_user_message_text(message.text)
                )
            elif message.role is Role.ASSISTANT:
                await self._client().session_update(
                    session_id, update_agent_message_text(message.text)
                )
        return LoadSessionResponse()

    async def prompt(self, session_id: str, prompt: list[Any], **_: Any) -> schema.PromptResponse:
        from acp.schema import PromptResponse

        text = "\n".join(getattr(block, "text", "") for block in prompt if block.type == "text")
        messages = [ChatMessage.user(text)]
        approvals: list[ApprovalResponseContent] = []
        self.turns[session_id] = False
        try:
            while True:
                finish = await self._run(session_id, messages, approvals)
                if finish is not FinishReason.AWAITING_APPROVAL:
                    return PromptResponse(stop_reason=STOP_REASONS.get(finish, "end_turn"))  # type: ignore[arg-type]
                session = await self.host.session(self.name, session_id, ANONYMOUS)
                waiting = answerable_requests(session)
                if not waiting:  # another run claimed them all: nothing for the editor
                    return PromptResponse(stop_reason="end_turn")
                decided = await self._ask(session_id, waiting)
                if decided is None or self.turns.get(session_id):
                    return PromptResponse(stop_reason="cancelled")
                messages, approvals = [], decided
        except RafError as exc:
            raise _acp_error(exc) from None
        finally:
            self.turns.pop(session_id, None)

    async def _run(
        self,
        session_id: str,
        messages: list[ChatMessage],
        approvals: list[ApprovalResponseContent],
    ) -> FinishReason | None:
        active, updates = await self.host.stream(
            self.name, session_id, ANONYMOUS, messages, approvals
        )
        if self.turns.get(session_id):
            active.token.cancel("cancelled by the editor")
        finish: FinishReason | None = None
        async for update in updates:
            if update.kind is UpdateKind.FINISHED:
                finish = update.finish_reason
            else:
                await self._send(session_id, update)
        return finish

    async def _send(self, session_id: str, update: AgentResponseUpdate) -> None:
        """One raf update as ACP session updates (those with no ACP form are skipped).
        The editor hears of each tool call (`tool_call`) before any update of it: when
        the call is first seen, whether its arguments are in, it waits for approval,
        it starts, or (refused) it already has its result."""
        from acp import (
            start_tool_call,
            update_agent_message_text,
            update_agent_thought_text,
            update_tool_call,
        )

        sent: list[Any] = []
        content = update.content
        known = self.calls.setdefault(session_id, set())

        def announce(call_id: str, name: str, arguments: Any, status: Any) -> None:
            if call_id not in known:
                known.add(call_id)
                sent.append(
                    start_tool_call(call_id, name, kind="other", status=status, raw_input=arguments)
                )

        if update.kind is UpdateKind.TEXT_DELTA and update.text:
            sent.append(update_agent_message_text(update.text))
        elif update.kind is UpdateKind.REASONING_DELTA and update.text:
            sent.append(update_agent_thought_text(update.text))
        elif update.kind in (UpdateKind.TOOL_CALL_ENDED, UpdateKind.APPROVAL_REQUEST) and (
            isinstance(content, FunctionCallContent | ApprovalRequestContent)
        ):
            announce(content.call_id, content.name, content.arguments, "pending")
        elif update.kind is UpdateKind.TOOL_CALLING and update.call_id:
            arguments = content.arguments if isinstance(content, FunctionCallContent) else None
            if update.call_id in known:
                sent.append(update_tool_call(update.call_id, status="in_progress"))
            else:
                announce(update.call_id, update.tool_name, arguments, "in_progress")
        elif update.kind is UpdateKind.TOOL_CALLED and isinstance(content, FunctionResultContent):
            announce(content.call_id, content.name or update.tool_name, None, "pending")
            failed = content.error is not None
            sent.append(
                update_tool_call(
                    content.call_id,
                    status="failed" if failed else "completed",
                    raw_output=content.error if failed else content.result,
                )
            )
        for item in sent:
            await self._client().session_update(session_id, item)

    async def _ask(
        self, session_id: str, pending: list[ApprovalRequestContent]
    ) -> list[ApprovalResponseContent] | None:
        """The editor's decision on each pending call; None when the editor cancelled."""
        from acp.schema import PermissionOption, ToolCallUpdate

        options = [
            PermissionOption(option_id=ALLOW, name="Allow", kind="allow_once"),
            PermissionOption(option_id=REJECT, name="Reject", kind="reject_once"),
        ]
        decided: list[ApprovalResponseContent] = []
        for request in pending:
            title = request.name + (f": {request.reason}" if request.reason else "")
            call = ToolCallUpdate(
                tool_call_id=request.call_id,
                title=title,
                kind="other",
                status="pending",
                raw_input=request.arguments,
            )
            answer = await self._client().request_permission(
                session_id=session_id, tool_call=call, options=options
            )
            outcome = answer.outcome
            if outcome.outcome != "selected":
                return None
            approved = getattr(outcome, "option_id", None) == ALLOW
            decided.append(
                ApprovalResponseContent(
                    call_id=request.call_id,
                    approved=approved,
                    reason=None if approved else "rejected in the editor",
                )
            )
        return decided

    async def cancel(self, session_id: str, **_: Any) -> None:
        if session_id in self.turns:
            self.turns[session_id] = True
        active = self.host.active_run(self.name, session_id, ANONYMOUS)
        if active is not None:
            active.token.cancel("cancelled by the editor")


async def serve_acp_stdio(agent: AgentLike, store: SessionStore | None = None) -> None:
    """Speak ACP on this process's stdin/stdout until the editor closes them."""
    require_extra("acp", "serving an agent over ACP")
    from acp import run_agent

    try:
        # The SDK answers "method not found" for the optional methods left out here.
        await run_agent(cast("acp.Agent", RafAcpAgent(agent, store)))
    finally:
        await close_agent_like(agent)

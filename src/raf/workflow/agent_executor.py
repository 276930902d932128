"""An agent as a node: it answers each message in its own conversation (kept in
checkpoints), streams its updates as `NodeStreaming` events, and turns tool calls that
wait for approval into requests for input; answering them resumes the agent."""

from __future__ import annotations

from typing import Any

from raf.core.agent_like import AgentLike
from raf.core.contents import ApprovalRequestContent, ApprovalResponseContent
from raf.core.messages import ChatMessage
from raf.core.options import AgentRunOptions
from raf.core.responses import AgentResponse, ResponseFolder, UpdateKind
from raf.core.sessions import AgentSession
from raf.workflow.context import InputResponse, WorkflowContext
from raf.workflow.events import NodeStreaming
from raf.workflow.executor import Executor, handler

__all__ = ["AgentExecutor", "AgentInput", "AgentLike"]  # AgentLike is imported from here too


AgentInput = str | ChatMessage | list[ChatMessage] | AgentResponse
"""What an agent node accepts: text, a message, a conversation, or another agent's answer."""


class AgentExecutor(Executor):
    """Runs an agent for each message; sends on its `AgentResponse`."""

    def __init__(self, agent: AgentLike, *, id: str | None = None, stream: bool = True) -> None:
        super().__init__(id or agent.name)
        self.agent = agent
        self.stream = stream
        self.session: AgentSession = agent.create_session()
        self._answers: dict[str, bool] = {}

    @handler
    async def on_message(self, message: AgentInput, ctx: WorkflowContext[AgentResponse]) -> None:
        """Answer a message in this node's conversation."""
        await self._run(_to_messages(message), None, ctx)

    @handler
    async def on_approval(
        self, answer: InputResponse[bool], ctx: WorkflowContext[AgentResponse]
    ) -> None:
        """Record a human decision; once every pending call is decided, resume the agent."""
        request = answer.data
        if not isinstance(request, ApprovalRequestContent):
            raise TypeError(f"node {self.id!r} got an answer to a request it did not make")
        self._answers[request.call_id] = bool(answer.response)
        pending = [p.call_id for p in self.session.pending_approvals]
        if any(call_id not in self._answers for call_id in pending):
            return
        decisions = [
            ApprovalResponseContent(call_id=call_id, approved=self._answers[call_id])
            for call_id in pending
        ]
        self._answers.clear()
        await self._run([], AgentRunOptions(tool_approval_responses=decisions), ctx)

    async def _run(
        self,
        messages: list[ChatMessage],
        options: AgentRunOptions | None,
        ctx: WorkflowContext[AgentResponse],
    ) -> None:
        if self.stream:
            folder = ResponseFolder()
            async for update in self.agent.run_stream(messages, self.session, options):
                folder.add(update)
                if update.kind is not UpdateKind.FINISHED:
                    ctx.emit(NodeStreaming(node=self.id, update=update))
            folded = folder.response()
            response = AgentResponse(
                messages=folded.messages,
                finish_reason=folded.finish_reason,
                usage=folded.usage,
                model_id=folded.model_id,
                session_id=self.session.id,
            )
        else:
            response = await self.agent.run(messages, self.session, options)
        pending = response.pending_approvals
        if pending:
            for request in pending:
                await ctx.request_input(request, response_type=bool)
            return
        await ctx.send_message(response)

    def snapshot_state(self) -> Any:
        return {"session": self.session.to_dict(), "answers": dict(self._answers)}

    def restore_state(self, state: Any) -> None:
        if not state or not state.get("session", {}).get("messages"):
            self.session = self.agent.create_session()
        else:
            self.session = AgentSession.from_dict(state["session"])
        self._answers = dict((state or {}).get("answers") or {})


def _to_messages(message: AgentInput) -> list[ChatMessage]:
    if isinstance(message, str):
        return [ChatMessage.user(message)]
    if isinstance(message, ChatMessage):
        return [message]
    if isinstance(message, AgentResponse):
        return [ChatMessage.user(message.text)]
    return list(message)

"""A workflow behind the agent interface: `run`/`run_stream` take messages and a
session, return or stream the workflow's outputs as assistant messages, and turn
requests for input into approval requests that the next run answers.

A paused run's checkpoint id is kept in the session's metadata, so the next turn (even
in another process, with a persistent checkpoint store) resumes it: answer with
`AgentRunOptions(tool_approval_responses=[...])` (approved/denied for yes-or-no
requests, `reason` as the text of other answers), or, when one text request is pending,
with a plain user message.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from raf.core.agent_like import AgentLike
from raf.core.call_approval import RunApprovals
from raf.core.contents import ApprovalRequestContent, TextContent
from raf.core.errors import ApprovalError
from raf.core.messages import ChatMessage, MessageInput, Role, new_id, to_messages
from raf.core.options import AgentRunOptions
from raf.core.responses import (
    AgentResponse,
    AgentResponseUpdate,
    ChatResponse,
    FinishReason,
    ResponseFolder,
    UpdateKind,
    message_to_updates,
)
from raf.core.sessions import AgentSession
from raf.workflow.codec import encode
from raf.workflow.edges import EdgeGroup
from raf.workflow.events import InputRequested, NodeStreaming, OutputEvent, WorkflowEvent
from raf.workflow.executor import Executor
from raf.workflow.typeinfo import matches

SESSION_KEY = "raf.workflow"
"""Session metadata key holding a paused run: checkpoint id and pending requests."""

_YES = {"yes", "y", "true", "approve", "approved", "ok"}
_NO = {"no", "n", "false", "deny", "denied", "reject"}


class StreamingWorkflow(Protocol):
    """What a `WorkflowAgent` needs of its workflow (a `Workflow` is one): its name, its
    graph's start and ends, and its events as a run makes them."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def start(self) -> str: ...

    @property
    def nodes(self) -> Mapping[str, Executor]: ...

    @property
    def outgoing(self) -> Mapping[str, list[EdgeGroup]]: ...

    def run_stream(
        self,
        input: Any = None,
        *,
        checkpoint_id: str | None = None,
        responses: Mapping[str, Any] | None = None,
    ) -> AsyncIterator[WorkflowEvent]: ...


class WorkflowAgent:
    """A `Workflow` usable wherever an agent is: as a node, a tool, or in `raf chat`."""

    def __init__(
        self,
        workflow: StreamingWorkflow,
        *,
        name: str | None = None,
        description: str | None = None,
    ) -> None:
        self.workflow = workflow
        self.name = name or workflow.name
        self.description = description if description is not None else workflow.description
        self.session_store = None
        self._terminal = {n for n in workflow.nodes if not workflow.outgoing.get(n)}

    def create_session(self, session_id: str | None = None) -> AgentSession:
        return AgentSession(id=session_id) if session_id else AgentSession()

    async def run(
        self,
        messages: MessageInput = None,
        session: AgentSession | None = None,
        options: AgentRunOptions | None = None,
    ) -> AgentResponse:
        """Run (or resume) the workflow; its outputs are the response's messages."""
        session = session if session is not None else self.create_session()
        folder = ResponseFolder()
        async for update in self.run_stream(messages, session, options):
            folder.add(update)
        folded = folder.response()
        return AgentResponse(
            messages=folded.messages, finish_reason=folded.finish_reason, session_id=session.id
        )

    async def run_stream(
        self,
        messages: MessageInput = None,
        session: AgentSession | None = None,
        options: AgentRunOptions | None = None,
    ) -> AsyncIterator[AgentResponseUpdate]:
        """The same, streaming: updates of agents at the graph's ends as they come, other
        outputs as whole messages, requests for input as approval requests."""
        session = session if session is not None else self.create_session()
        options = options if options is not None else AgentRunOptions()
        request = to_messages(messages)
        paused = session.metadata.get(SESSION_KEY)
        if paused:
            responses = _answers(paused["requests"], request, options)
            stream = self.workflow.run_stream(
                checkpoint_id=paused["checkpoint_id"], responses=responses
            )
        else:
            stream = self.workflow.run_stream(self._input(request))
        streamed: set[str] = set()
        asked: dict[str, dict[str, Any]] = {}
        approvals: list[ApprovalRequestContent] = []
        produced: list[ChatMessage] = []
        checkpoint_id: str | None = None
        async for event in stream:
            if isinstance(event, NodeStreaming) and event.node in self._terminal:
                if event.update.kind is UpdateKind.APPROVAL_REQUEST:
                    continue  # surfaced below as the workflow's own request, by its id
                if event.update.message_id:
                    streamed.add(event.update.message_id)
                yield event.update
            elif isinstance(event, OutputEvent):
                for message in _to_messages(event.data, event.node):
                    produced.append(message)
                    if message.message_id and message.message_id in streamed:
                        continue
                    for update in message_to_updates(message, message.message_id or new_id("msg")):
                        yield update
            elif isinstance(event, InputRequested):
                approval = _as_approval(event)
                approvals.append(approval)
                asked[event.request_id] = {"response_type": event.response_type}
                yield AgentResponseUpdate(
                    kind=UpdateKind.APPROVAL_REQUEST,
                    message_id=new_id("msg"),
                    content=approval,
                    call_id=approval.call_id,
                    tool_name=approval.name,
                )
            checkpoint_id = getattr(event, "checkpoint_id", checkpoint_id) or checkpoint_id
        if paused:
            remaining = {k: v for k, v in paused["requests"].items() if k not in (responses or {})}
            asked = {**remaining, **asked}
            approvals = [*_kept(session, remaining), *approvals]
        session.messages.extend(request)
        session.messages.extend(produced)
        RunApprovals.wait_on(session, approvals)
        if asked:
            session.metadata[SESSION_KEY] = {"checkpoint_id": checkpoint_id, "requests": asked}
        else:
            session.metadata.pop(SESSION_KEY, None)
        yield AgentResponseUpdate(
            kind=UpdateKind.FINISHED,
            finish_reason=FinishReason.AWAITING_APPROVAL if asked else FinishReason.COMPLETED,
        )

    def _input(self, request: list[ChatMessage]) -> Any:
        """The request in the form the start node accepts."""
        start = self.workflow.nodes[self.workflow.start]
        if start.find_handler(request) is not None:
            return request
        last = request[-1] if request else ChatMessage.user("")
        if start.find_handler(last) is not None:
            return last
        return "\n".join(m.text for m in request)

    def __repr__(self) -> str:
        return f"WorkflowAgent(name={self.name!r}, workflow={self.workflow.name!r})"


def _as_approval(event: InputRequested) -> ApprovalRequestContent:
    data = event.data
    if isinstance(data, ApprovalRequestContent):
        return ApprovalRequestContent(
            call_id=event.request_id, name=data.name, arguments=data.arguments, reason=data.reason
        )
    text = data if isinstance(data, str) else json.dumps(encode(data, strict=False))
    return ApprovalRequestContent(
        call_id=event.request_id,
        name="request_input",
        arguments={"node": event.node, "data": encode(data, strict=False)},
        reason=f"{event.node} asks ({event.response_type}): {text}",
    )


def _kept(session: AgentSession, remaining: dict[str, Any]) -> list[ApprovalRequestContent]:
    return [a for a in session.pending_approvals if a.call_id in remaining]


def _answers(
    pending: dict[str, dict[str, Any]], request: Sequence[ChatMessage], options: AgentRunOptions
) -> dict[str, Any]:
    """The answers this turn gives to the paused run's requests."""
    answers: dict[str, Any] = {}
    for decision in options.tool_approval_responses:
        if decision.call_id not in pending:
            raise ApprovalError(
                f"no pending request {decision.call_id!r}; pending: {', '.join(pending)}"
            )
        kind = pending[decision.call_id]["response_type"]
        answers[decision.call_id] = decision.approved if kind == "bool" else (decision.reason or "")
    if answers:
        return answers
    text = "\n".join(m.text for m in request if m.role is Role.USER).strip()
    if text and len(pending) == 1:
        ((request_id, info),) = pending.items()
        kind = info["response_type"]
        if kind in ("str", "Any"):
            return {request_id: text}
        if kind == "bool" and text.lower() in _YES | _NO:
            return {request_id: text.lower() in _YES}
    raise ApprovalError(
        f"the workflow waits for input ({', '.join(pending)}): answer with "
        "AgentRunOptions(tool_approval_responses=[...])"
        + (" or a plain message" if len(pending) == 1 else "")
    )


def _to_messages(data: Any, node: str) -> list[ChatMessage]:
    """A workflow output as assistant messages."""
    if isinstance(data, ChatMessage):
        return [data]
    if isinstance(data, ChatResponse):
        return [m for m in data.messages if m.role is Role.ASSISTANT]
    if isinstance(data, list) and all(matches(d, ChatMessage | ChatResponse | str) for d in data):
        return [m for d in data for m in _to_messages(d, node)]
    text = data if isinstance(data, str) else json.dumps(encode(data, strict=False))
    return [
        ChatMessage(
            role=Role.ASSISTANT,
            contents=[TextContent(text=text)],
            author_name=node,
            message_id=new_id("msg"),
        )
    ]


if TYPE_CHECKING:
    _WORKFLOW_AGENT_IS_AGENT_LIKE: type[AgentLike] = WorkflowAgent
    """Checked by mypy: a workflow run as an agent has the shape of every agent."""

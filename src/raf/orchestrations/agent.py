"""An orchestration run as an agent: sessions, history, streaming, approvals.

`OrchestrationAgent` is `AgentLike` (a name, a description, sessions, `run` and
`run_stream`) without being an `Agent`: it has no model, tools or context providers of its
own, its members do.

The agent keeps the conversation in its session like any agent: each run hands the
orchestration the session's transcript plus the new request, and stores the request (at
once, like an agent whose run pauses) and every visible turn, author-tagged, when the run
ends. Like an agent's, a resumed run's response holds what is new since the pause: the
answers given before it were in the paused run's response. A member's tool approval pauses the
run: the pending calls are on the response and on `session.pending_approvals`, and
`run([], session=s, options=AgentRunOptions(tool_approval_responses=[...]))` resumes it,
in this process or another one that loads the session.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from raf.core.agent_like import AgentLike, load_saved_session, run_outside_a_loop
from raf.core.approvals import refuse_messages_with_answers
from raf.core.errors import ConfigurationError
from raf.core.messages import ChatMessage, MessageInput, Role, new_id, to_messages
from raf.core.options import AgentRunOptions, ChatOptions
from raf.core.responses import (
    AgentResponse,
    AgentResponseUpdate,
    ChatResponse,
    FinishReason,
    UpdateKind,
)
from raf.core.sessions import AgentSession, SessionStore
from raf.orchestrations.runtime import EventKind

if TYPE_CHECKING:
    from raf.orchestrations.runtime import OrchestrationResult, RunnableOrchestration

log = logging.getLogger("raf.workflow")


class OrchestrationAgent:
    """`orchestration.as_agent()`: an agent whose turn is a whole orchestration run."""

    def __init__(
        self,
        orchestration: RunnableOrchestration,
        *,
        name: str | None = None,
        description: str | None = None,
        session_store: SessionStore | None = None,
    ) -> None:
        self.orchestration = orchestration
        self.name: str = name or orchestration.name
        self.description: str = description or orchestration.description
        self.session_store = session_store
        """Where each run's session is saved when it ends (or pauses); None keeps it in
        memory only."""

    def create_session(self, session_id: str | None = None) -> AgentSession:
        """A new session for this agent's conversations."""
        return AgentSession(id=session_id) if session_id else AgentSession()

    async def load_session(self, session_id: str) -> AgentSession:
        """A session saved by an earlier run (a paused one resumes from it)."""
        return await load_saved_session(self.session_store, self.name, session_id)

    def iter(self, *args: Any, **kwargs: Any) -> Any:
        """Not offered: an orchestration's steps are its members' turns, which
        `orchestration.run_stream(...)` reports as events."""
        raise ConfigurationError(
            f"{self.name!r} is an orchestration run as an agent: it has no model steps to "
            "step through; read orchestration.run_stream(...) events instead"
        )

    async def run(
        self,
        messages: MessageInput = None,
        session: AgentSession | None = None,
        options: AgentRunOptions | None = None,
        *,
        output_type: Any = None,
        variables: Mapping[str, Any] | None = None,
        deps: Any = None,
    ) -> AgentResponse:
        """One orchestration run on the session's conversation and `messages`; `deps`
        reach every member's run."""
        _refuse_run_arguments(options, output_type, variables)
        session = session if session is not None else self.create_session()
        results: list[OrchestrationResult] = []
        async for _ in self._stream(messages, session, options, results, deps):
            pass
        result = results[0]
        return AgentResponse(
            messages=_response_messages(result),
            finish_reason=result.finish_reason,
            usage=result.usage,
            session_id=session.id,
        )

    def run_sync(
        self,
        messages: MessageInput = None,
        session: AgentSession | None = None,
        options: AgentRunOptions | None = None,
        *,
        deps: Any = None,
    ) -> AgentResponse:
        """`run` for scripts: starts an event loop (not callable inside one)."""
        return run_outside_a_loop(
            lambda: self.run(messages, session=session, options=options, deps=deps)
        )

    async def run_stream(
        self,
        messages: MessageInput = None,
        session: AgentSession | None = None,
        options: AgentRunOptions | None = None,
        *,
        output_type: Any = None,
        variables: Mapping[str, Any] | None = None,
        deps: Any = None,
    ) -> AsyncIterator[AgentResponseUpdate]:
        """`run`, streaming the visible members' text as they write it."""
        _refuse_run_arguments(options, output_type, variables)
        session = session if session is not None else self.create_session()
        async for update in self._stream(messages, session, options, [], deps):
            yield update

    async def _stream(
        self,
        messages: MessageInput,
        session: AgentSession,
        options: AgentRunOptions | None,
        results: list[OrchestrationResult],
        deps: Any = None,
    ) -> AsyncIterator[AgentResponseUpdate]:
        options = options if options is not None else AgentRunOptions()
        if deps is None:
            deps = options.deps
        request = to_messages(messages)
        approvals = list(options.tool_approval_responses)
        if approvals:
            refuse_messages_with_answers(request)
        task = [] if approvals else [*session.messages, *request]
        streamed: set[str] = set()
        result: OrchestrationResult | None = None
        async for event in self.orchestration.run_stream(
            task,
            session=session,
            approvals=approvals,
            cancellation=options.cancellation,
            deps=deps,
        ):
            update = event.update
            if event.kind is EventKind.UPDATE and event.visible and update is not None:
                if update.kind is UpdateKind.TEXT_DELTA:
                    streamed.add(event.message_id)
                    yield AgentResponseUpdate(
                        kind=UpdateKind.TEXT_DELTA, message_id=event.message_id, text=update.text
                    )
                elif update.kind is UpdateKind.USAGE:
                    yield update
            elif event.kind is EventKind.TURN_COMPLETED and event.visible and event.message:
                if event.replayed:  # shown by the run that paused
                    streamed.add(event.message_id)
                elif event.message_id not in streamed:  # a member that streamed no text
                    streamed.add(event.message_id)
                    yield AgentResponseUpdate(
                        kind=UpdateKind.TEXT_DELTA,
                        message_id=event.message_id,
                        text=event.message.text,
                    )
            elif event.kind in (EventKind.COMPLETED, EventKind.PAUSED):
                result = event.result
        assert result is not None  # the orchestration's stream always ends with its result
        for message in _response_messages(result):
            if message.message_id in streamed:
                continue
            message_id = message.message_id or new_id("msg")
            if message.text:
                yield AgentResponseUpdate(
                    kind=UpdateKind.TEXT_DELTA, message_id=message_id, text=message.text
                )
            for approval in message.approval_requests:
                yield AgentResponseUpdate(
                    kind=UpdateKind.APPROVAL_REQUEST,
                    message_id=message_id,
                    content=approval,
                    call_id=approval.call_id,
                    tool_name=approval.name,
                )
        session.messages.extend(request)
        if result.finish_reason is not FinishReason.AWAITING_APPROVAL:
            session.messages.extend(result.messages)
        session.touch_request_hash(request)
        if self.session_store is not None:
            await self.session_store.save(session)
        results.append(result)
        yield AgentResponseUpdate(kind=UpdateKind.FINISHED, finish_reason=result.finish_reason)

    async def aclose(self) -> None:
        """Close every agent taking part (their providers' connections and background work)."""
        for member in self.orchestration.agents():
            close = getattr(member, "aclose", None)
            if not callable(close):
                continue
            try:
                await close()
            except Exception as exc:  # closing is best effort; the others still close
                log.error("closing member %r failed: %s", member.name, exc)

    async def __aenter__(self) -> OrchestrationAgent:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"OrchestrationAgent({self.name!r}, {self.orchestration!r})"


def _response_messages(result: OrchestrationResult) -> list[ChatMessage]:
    """What a run answers: the answers not given before a pause, the requests it waits for."""
    shown = set(result.replayed)
    messages = [m for m in result.messages if m.message_id not in shown]
    if result.pending_approvals:
        messages.append(
            ChatMessage(
                role=Role.ASSISTANT,
                contents=list(result.pending_approvals),
                message_id=new_id("msg"),
            )
        )
    return messages


class OrchestrationChatClient:
    """The orchestration as a model (a `ChatClient`), for code that wants one: each request
    is one run on the messages given, with no session (a run that needs an approval ends
    with the requests, and cannot resume here). `OrchestrationAgent` does not use it."""

    def __init__(self, orchestration: RunnableOrchestration) -> None:
        self.orchestration = orchestration

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        # A cancelled run cancels this call (the tool loop races every model call against
        # the run's token), which stops the members.
        task = [m for m in messages if m.role is not Role.SYSTEM]
        result = await self.orchestration.run(task)
        return ChatResponse(
            messages=_response_messages(result),
            finish_reason=result.finish_reason,
            usage=result.usage,
        )

    async def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[AgentResponseUpdate]:
        agent = OrchestrationAgent(self.orchestration)
        task = [m for m in messages if m.role is not Role.SYSTEM]
        async for update in agent.run_stream(task, options=AgentRunOptions()):
            yield update


def _refuse_run_arguments(
    options: AgentRunOptions | None,
    output_type: Any,
    variables: Mapping[str, Any] | None,
) -> None:
    """An orchestration's answer is its members' text: no output type, no template
    (dependencies pass through to every member's run)."""
    if output_type is not None or (options is not None and options.output_type is not None):
        raise ConfigurationError(
            "an orchestration run as an agent has no output type; give one to its members"
        )
    if variables or (options is not None and options.template_variables):
        raise ConfigurationError(
            "an orchestration run as an agent has no instructions template to fill"
        )


if TYPE_CHECKING:
    _ORCHESTRATION_AGENT_IS_AGENT_LIKE: type[AgentLike] = OrchestrationAgent
    """Checked by mypy: an orchestration run as an agent has the shape of every agent."""

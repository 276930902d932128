"""Hosted agents over AG-UI (the ag-ui-protocol package): one run endpoint per agent.

`POST /agui/NAME` takes AG-UI's `RunAgentInput` and answers with AG-UI events as
server-sent events. An AG-UI thread is a raf session owned by the caller's token, made
on first use; the session keeps the conversation, so a run takes only the user messages
at the end of the input (a new thread takes the client's text history as it is). A run
that stops for a person's approval finishes with an interrupt outcome, one interrupt
per pending call (`reason: "tool_call"`, payload `{"approved": bool, "reason"?: str}`);
the next input on the thread answers every one of them in `resume`. Text, reasoning,
tool calls and their results stream as AG-UI's events for them. The state raf keeps
for a thread (its context providers' state) is sent merged into the client's state: a
STATE_SNAPSHOT holds the client's own keys (those no context provider of the agent owns)
beside raf's, and a STATE_DELTA is a JSON Patch against that merged state, so a key the
front end set itself survives. State a client sends is not written into the session:
its own keys are shown to the model as instructions for that run, so the agent sees what
the application shows. Tools a client declares (frontend tools) are not offered to the
model: the agent runs its own.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Collection, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import StreamingResponse

from raf.core.agent_like import own_providers
from raf.core.call_approval import answerable_requests, session_approvals
from raf.core.contents import (
    ApprovalRequestContent,
    ApprovalResponseContent,
    FunctionCallContent,
    FunctionResultContent,
)
from raf.core.messages import ChatMessage
from raf.core.responses import AgentResponseUpdate, AnswerCheck, FinishReason, UpdateKind
from raf.core.sessions import AgentSession
from raf.core.usage import UsageDetails
from raf.serve.answer_text import StreamedText
from raf.serve.double_texting import check_if_busy
from raf.serve.errors import ServeError, require_extra
from raf.serve.hosting import AgentHost
from raf.serve.native.routes import SSE_HEADERS
from raf.serve.requests import error_for, parse_body
from raf.serve.security import owner_of_request

if TYPE_CHECKING:
    from ag_ui.core import BaseEvent, Interrupt, ResumeEntry, RunAgentInput

INTERRUPT_PREFIX = "int-"
"""An approval's interrupt id is this prefix and the tool call's id."""

APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "approved": {"type": "boolean"},
        "reason": {"type": "string", "description": "Why, when the call is refused."},
    },
    "required": ["approved"],
}
"""What a resume entry's payload for an approval must look like."""


def interrupt_id(call_id: str) -> str:
    """The interrupt id of the approval of tool call `call_id`."""
    return INTERRUPT_PREFIX + call_id


def _text_of(content: Any, where: str) -> str:
    """A message's text: a string, or the text parts of a list of input parts."""
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    parts: list[str] = []
    for index, part in enumerate(content):
        kind = getattr(part, "type", None)
        if kind != "text":
            raise ServeError(
                422,
                "unsupported_content",
                f"{where}.content.{index}: only text parts are taken here, not {kind!r}",
            )
        parts.append(str(part.text))
    return "".join(parts)


def run_messages(body: RunAgentInput, session: AgentSession) -> list[ChatMessage]:
    """The messages to run: the user messages at the end of the input for a thread that
    has a history, the whole text conversation for a new one."""
    given = list(body.messages)
    if session.messages:
        start = len(given)
        while start > 0 and given[start - 1].role == "user":
            start -= 1
        return [
            ChatMessage.user(_text_of(m.content, f"messages.{start + i}"))
            for i, m in enumerate(given[start:])
        ]
    out: list[ChatMessage] = []
    for index, message in enumerate(given):
        where = f"messages.{index}"
        role = message.role
        if role == "user":
            out.append(ChatMessage.user(_text_of(message.content, where)))
        elif role in ("system", "developer"):
            out.append(ChatMessage.system(_text_of(message.content, where)))
        elif role == "assistant" and not getattr(message, "tool_calls", None):
            out.append(ChatMessage.assistant(_text_of(message.content, where)))
        elif role in ("activity", "reasoning"):
            continue  # what a UI showed, not part of what the model is told
        else:
            raise ServeError(
                422,
                "unsupported_message",
                f"{where}: a new thread takes text messages only, not a {role} message "
                "with tool calls or results (the agent runs its own tools)",
            )
    return out


def context_instructions(body: RunAgentInput) -> str | None:
    """The input's context entries as instructions for this run."""
    items = list(body.context or [])
    if not items:
        return None
    lines = ["Context from the application:"]
    lines += [f"- {item.description}: {item.value}" for item in items]
    return "\n".join(lines)


def state_instructions(state: Any, own: Collection[str]) -> str | None:
    """The client's state as instructions for this run, less the keys raf owns (its
    context providers' state, which raf sent and the client echoes back)."""
    if state is None:
        return None
    if isinstance(state, dict):
        state = {key: value for key, value in state.items() if key not in own}
        if not state:
            return None
    shown = json.dumps(state, ensure_ascii=False, sort_keys=True, default=str)
    return f"The application's current state (JSON, as the user sees it):\n{shown}"


def run_instructions(body: RunAgentInput, own: Collection[str]) -> str | None:
    """Instructions for this run: the input's context entries and the client's state."""
    parts = [context_instructions(body), state_instructions(body.state, own)]
    return "\n\n".join(p for p in parts if p) or None


def resume_answers(
    resume: Sequence[ResumeEntry], pending: Sequence[ApprovalRequestContent]
) -> list[ApprovalResponseContent]:
    """The approval answers in a resume list, which must answer every open interrupt
    once; only `{"approved": true}` approves."""
    waiting = {interrupt_id(p.call_id): p for p in pending}
    answers: list[ApprovalResponseContent] = []
    seen: set[str] = set()
    for index, entry in enumerate(resume):
        where = f"resume.{index}"
        request = waiting.get(entry.interrupt_id)
        if request is None:
            raise ServeError(
                409,
                "unknown_interrupt",
                f"{where}: interrupt {entry.interrupt_id!r} is not open on this thread "
                "(answered already, or never asked); open: "
                + (", ".join(sorted(waiting)) or "none"),
            )
        if entry.interrupt_id in seen:
            raise ServeError(
                400,
                "duplicate_resume",
                f"{where}: interrupt {entry.interrupt_id!r} is answered twice",
            )
        seen.add(entry.interrupt_id)
        if entry.status == "cancelled":
            answers.append(
                ApprovalResponseContent(
                    call_id=request.call_id, approved=False, reason="cancelled by the user"
                )
            )
            continue
        payload = entry.payload
        if not isinstance(payload, dict) or not isinstance(payload.get("approved"), bool):
            raise ServeError(
                422,
                "invalid_resume_payload",
                f"{where}.payload: give an object with a boolean 'approved', as the "
                "interrupt's responseSchema says",
            )
        if "editedArgs" in payload:
            raise ServeError(
                422,
                "edited_arguments_unsupported",
                f"{where}.payload.editedArgs: a call's arguments cannot be changed by its "
                "approval; refuse it and say what to do instead",
            )
        reason = payload.get("reason")
        answers.append(
            ApprovalResponseContent(
                call_id=request.call_id,
                approved=payload["approved"],
                reason=reason if isinstance(reason, str) else None,
            )
        )
    missing = sorted(set(waiting) - seen)
    if missing:
        raise ServeError(
            409,
            "interrupts_unanswered",
            "resume must answer every open interrupt of the thread; not answered: "
            + ", ".join(missing),
        )
    return answers


def approval_interrupt(request: ApprovalRequestContent) -> Interrupt:
    """The AG-UI interrupt that asks for the approval of one tool call."""
    from ag_ui.core import Interrupt

    shown = json.dumps(request.arguments, ensure_ascii=False)
    message = f"Allow {request.name}({shown})?"
    if request.reason:
        message += f" {request.reason}"
    return Interrupt(
        id=interrupt_id(request.call_id),
        reason="tool_call",
        message=message,
        tool_call_id=request.call_id,
        response_schema=APPROVAL_SCHEMA,
        metadata={"tool": request.name, "arguments": request.arguments},
    )


def merged_state(client: Any, own: dict[str, Any], owned: Collection[str]) -> dict[str, Any]:
    """The state a client holds once raf's is in: the client's keys that raf does not own,
    then raf's (so raf's win). A client state that is not an object cannot take raf's
    keys beside its own, and gives way to raf's."""
    if not isinstance(client, dict):
        return dict(own)
    kept = {key: value for key, value in client.items() if key not in owned}
    return {**kept, **own}


def state_patch(before: dict[str, Any], after: dict[str, Any]) -> list[dict[str, Any]]:
    """A JSON Patch (RFC 6902) from one state to the next, key by key at the top."""

    def path(key: str) -> str:
        return "/" + key.replace("~", "~0").replace("/", "~1")

    ops: list[dict[str, Any]] = []
    for key in before:
        if key not in after:
            ops.append({"op": "remove", "path": path(key)})
    for key, value in after.items():
        if key not in before:
            ops.append({"op": "add", "path": path(key), "value": value})
        elif before[key] != value:
            ops.append({"op": "replace", "path": path(key), "value": value})
    return ops


@dataclass(kw_only=True, slots=True)
class EventMapper:
    """Turns one run's raf stream updates into AG-UI events, in an order AG-UI accepts:
    a text message is closed before a tool call opens, and every call is started once."""

    known_calls: set[str] = field(default_factory=set)
    """Calls whose TOOL_CALL_START was sent (in this run or the one it resumes)."""
    text_id: str | None = None
    reasoning_id: str | None = None
    streaming: set[str] = field(default_factory=set)
    """Calls started whose arguments are still arriving."""
    finish: FinishReason | None = None
    usage: UsageDetails | None = None
    joined: StreamedText = field(default_factory=StreamedText)
    """The run's text so far: a model call's text after another's starts with the blank
    line that joins them, as on every surface."""

    def events(self, update: AgentResponseUpdate) -> list[BaseEvent]:
        """The AG-UI events one update becomes (none for those AG-UI has no form for)."""
        from ag_ui.core import (
            TextMessageContentEvent,
            TextMessageStartEvent,
            ToolCallArgsEvent,
            ToolCallEndEvent,
        )

        kind = update.kind
        content = update.content
        if kind is UpdateKind.REASONING_DELTA:
            return self._reasoning(update) if update.reasoning else []
        out: list[BaseEvent] = self.close_reasoning()
        text = self.joined.piece(update)
        if text:
            message_id = update.message_id or self.text_id or uuid.uuid4().hex
            if self.text_id != message_id:
                out += self.close_text()
                self.text_id = message_id
                out.append(TextMessageStartEvent(message_id=message_id, role="assistant"))
            out.append(TextMessageContentEvent(message_id=message_id, delta=text))
        elif kind is UpdateKind.TOOL_CALL_STARTED and update.call_id:
            if update.call_id not in self.known_calls:
                out += self._start(update.call_id, update.tool_name, update.message_id)
                self.streaming.add(update.call_id)
        elif kind is UpdateKind.TOOL_CALL_ARGUMENTS_DELTA and update.call_id in self.streaming:
            if update.arguments_delta:
                out.append(
                    ToolCallArgsEvent(tool_call_id=update.call_id, delta=update.arguments_delta)
                )
        elif kind is UpdateKind.TOOL_CALL_ENDED and update.call_id in self.streaming:
            self.streaming.discard(update.call_id)
            out.append(ToolCallEndEvent(tool_call_id=update.call_id))
        elif kind in (UpdateKind.TOOL_CALL_ENDED, UpdateKind.TOOL_CALLING) and isinstance(
            content, FunctionCallContent
        ):
            out += self._whole_call(content.call_id, content.name, content.arguments, update)
        elif kind is UpdateKind.TOOL_CALLING and update.call_id:
            out += self._whole_call(update.call_id, update.tool_name, None, update)
        elif kind is UpdateKind.APPROVAL_REQUEST and isinstance(content, ApprovalRequestContent):
            out += self._whole_call(content.call_id, content.name, content.arguments, update)
        elif kind is UpdateKind.TOOL_CALLED and isinstance(content, FunctionResultContent):
            out += self._result(content)
        elif kind is UpdateKind.USAGE and update.usage is not None:
            self.usage = update.usage
        elif kind is UpdateKind.FINISHED:
            self.finish = update.finish_reason
            self.usage = update.usage or self.usage
        return out

    def _reasoning(self, update: AgentResponseUpdate) -> list[BaseEvent]:
        """A piece of the model's reasoning, in a reasoning message of its own."""
        from ag_ui.core import (
            ReasoningMessageContentEvent,
            ReasoningMessageStartEvent,
            ReasoningStartEvent,
        )

        out: list[BaseEvent] = []
        if update.message_id:
            message_id = f"{update.message_id}-reasoning"
        else:
            message_id = self.reasoning_id or f"{uuid.uuid4().hex}-reasoning"
        if self.reasoning_id != message_id:
            out += [*self.close_reasoning(), *self.close_text()]
            self.reasoning_id = message_id
            out.append(ReasoningStartEvent(message_id=message_id))
            out.append(ReasoningMessageStartEvent(message_id=message_id, role="reasoning"))
        out.append(ReasoningMessageContentEvent(message_id=message_id, delta=update.reasoning))
        return out

    def close_reasoning(self) -> list[BaseEvent]:
        """The ends of the reasoning message open, if any."""
        from ag_ui.core import ReasoningEndEvent, ReasoningMessageEndEvent

        if self.reasoning_id is None:
            return []
        message_id, self.reasoning_id = self.reasoning_id, None
        return [
            ReasoningMessageEndEvent(message_id=message_id),
            ReasoningEndEvent(message_id=message_id),
        ]

    def _start(self, call_id: str, name: str, parent: str) -> list[BaseEvent]:
        from ag_ui.core import ToolCallStartEvent

        self.known_calls.add(call_id)
        return [
            *self.close_text(),
            ToolCallStartEvent(
                tool_call_id=call_id, tool_call_name=name, parent_message_id=parent or None
            ),
        ]

    def _whole_call(
        self,
        call_id: str,
        name: str,
        arguments: dict[str, Any] | None,
        update: AgentResponseUpdate,
    ) -> list[BaseEvent]:
        """START, ARGS and END for a call seen whole, unless it was started already."""
        from ag_ui.core import ToolCallArgsEvent, ToolCallEndEvent

        if call_id in self.known_calls:
            return []
        out = self._start(call_id, name, update.message_id)
        if arguments is not None:
            delta = json.dumps(arguments, ensure_ascii=False)
            out.append(ToolCallArgsEvent(tool_call_id=call_id, delta=delta))
        out.append(ToolCallEndEvent(tool_call_id=call_id))
        return out

    def _result(self, result: FunctionResultContent) -> list[BaseEvent]:
        from ag_ui.core import ToolCallResultEvent

        out = self.close_text()
        if result.call_id in self.streaming:  # a result ends a call whose END was missed
            out += self.end_calls()
        out.append(
            ToolCallResultEvent(
                message_id=f"result-{result.call_id}",
                tool_call_id=result.call_id,
                content=result.as_text(),
                role="tool",
            )
        )
        return out

    def close_text(self) -> list[BaseEvent]:
        """TEXT_MESSAGE_END for the text message open, if any."""
        from ag_ui.core import TextMessageEndEvent

        if self.text_id is None:
            return []
        ended = TextMessageEndEvent(message_id=self.text_id)
        self.text_id = None
        return [ended]

    def end_calls(self) -> list[BaseEvent]:
        """TOOL_CALL_END for every call whose arguments were still arriving."""
        from ag_ui.core import ToolCallEndEvent

        ended: list[BaseEvent] = [ToolCallEndEvent(tool_call_id=c) for c in sorted(self.streaming)]
        self.streaming.clear()
        return ended


def token_usage(usage: UsageDetails | None) -> list[Any] | None:
    """A run's usage in AG-UI's accounting (cache counts are parts of the input)."""
    from ag_ui.core import TokenUsage

    if usage is None or not (usage.input_tokens or usage.output_tokens or usage.total_tokens):
        return None
    return [
        TokenUsage(
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            total_tokens=usage.total_tokens or usage.input_tokens + usage.output_tokens,
            reasoning_tokens=usage.reasoning_tokens or None,
            cached_input_tokens=usage.cache_read_tokens or None,
            cache_write_input_tokens=usage.cache_write_tokens or None,
        )
    ]


@dataclass(kw_only=True, slots=True)
class AguiRun:
    """One AG-UI run of a hosted agent in the caller's thread."""

    host: AgentHost
    agent: str
    owner: str
    body: RunAgentInput
    if_busy: str | None = None
    """What the run does when the thread is busy (`forwardedProps.if_busy`; the
    server's default when None)."""

    async def thread(self) -> AgentSession:
        """The thread's session, made for this owner on first use."""
        thread_id = self.body.thread_id
        try:
            return await self.host.session(self.agent, thread_id, self.owner)
        except ServeError as exc:
            if exc.status != 404:
                raise
        try:
            return await self.host.create_session(self.agent, self.owner, thread_id)
        except ServeError as exc:
            if exc.status != 409:
                raise
        try:  # made by a request running at the same time, or for another agent
            return await self.host.session(self.agent, thread_id, self.owner)
        except ServeError as exc:
            if exc.status != 404:
                raise
        raise ServeError(
            409,
            "thread_of_another_agent",
            f"thread {thread_id!r} is a conversation with another agent; "
            "start a new thread for this one",
        )

    async def events(self, session: AgentSession) -> AsyncIterator[BaseEvent]:
        """The run's AG-UI events, RUN_STARTED to RUN_FINISHED or RUN_ERROR."""
        from ag_ui.core import (
            PROTOCOL_VERSION,
            RunErrorEvent,
            RunStartedEvent,
        )

        body = self.body
        yield RunStartedEvent(
            thread_id=body.thread_id, run_id=body.run_id, protocol_version=PROTOCOL_VERSION
        )
        before = dict(session.provider_state)
        owned = self._own_state_keys(before)
        shown = merged_state(body.state, before, owned)
        if before:
            yield self._snapshot(shown)
        pending = [a.request for a in session_approvals(session) if a.request is not None]
        mapper = EventMapper(known_calls={p.call_id for p in pending})
        check = AnswerCheck()
        active = None
        try:
            if body.resume:
                answers = resume_answers(body.resume, pending)
                messages = run_messages(body, session) if session.messages else []
            else:
                answers = []
                messages = run_messages(body, session)
            active, updates = await self.host.stream(
                self.agent,
                body.thread_id,
                self.owner,
                messages,
                answers,
                instructions=run_instructions(body, owned),
                if_busy=self.if_busy,
            )
            async for update in updates:
                check.see(update)
                for event in mapper.events(update):
                    yield event
            for event in [*mapper.close_reasoning(), *mapper.close_text(), *mapper.end_calls()]:
                yield event
            after = await self.host.session(self.agent, body.thread_id, self.owner)
        except Exception as exc:  # the stream has begun: a failure is the run's last event
            for event in [*mapper.close_reasoning(), *mapper.close_text(), *mapper.end_calls()]:
                yield event
            error = error_for(exc)
            yield RunErrorEvent(message=error.message, code=error.code)
            return
        finally:
            if active is not None:
                await self.host.release(active)
        state = dict(after.provider_state)
        if state != before:  # a delta from the snapshot sent, or the first snapshot
            merged = merged_state(body.state, state, owned | set(state))
            yield self._delta(shown, merged) if before else self._snapshot(merged)
        problem = check.problem
        if problem is not None:  # recorded, but no whole answer: the run ends in an error
            yield RunErrorEvent(message=problem.message, code=problem.code)
            return
        yield self._finished(mapper, after)

    def _own_state_keys(self, state: dict[str, Any]) -> set[str]:
        """The state keys raf owns for this agent: its context providers' names."""
        providers = own_providers(self.host.agent(self.agent))
        return set(state) | {provider.name for provider in providers}

    def _snapshot(self, state: dict[str, Any]) -> BaseEvent:
        from ag_ui.core import StateSnapshotEvent

        return StateSnapshotEvent(snapshot=state)

    def _delta(self, before: dict[str, Any], after: dict[str, Any]) -> BaseEvent:
        from ag_ui.core import StateDeltaEvent

        return StateDeltaEvent.model_validate({"delta": state_patch(before, after)})

    def _finished(self, mapper: EventMapper, session: AgentSession) -> BaseEvent:
        from ag_ui.core import (
            RunFinishedCancelledOutcome,
            RunFinishedEvent,
            RunFinishedInterruptOutcome,
            RunFinishedSuccessOutcome,
        )

        outcome: Any
        waiting = answerable_requests(session)
        if mapper.finish is FinishReason.AWAITING_APPROVAL and waiting:
            interrupts = [approval_interrupt(p) for p in waiting]
            outcome = RunFinishedInterruptOutcome(interrupts=interrupts)
        elif mapper.finish is FinishReason.CANCELLED:
            outcome = RunFinishedCancelledOutcome()
        else:
            outcome = RunFinishedSuccessOutcome()
        return RunFinishedEvent(
            thread_id=self.body.thread_id,
            run_id=self.body.run_id,
            outcome=outcome,
            usage=token_usage(mapper.usage),
        )


def if_busy_of(body: RunAgentInput) -> str | None:
    """The double-texting strategy a client forwarded (`forwardedProps.if_busy`, raf's
    extension of AG-UI); a 422 naming the field for one that is not a strategy."""
    props = body.forwarded_props
    if not isinstance(props, dict) or props.get("if_busy") is None:
        return None
    return check_if_busy(props["if_busy"], "forwardedProps.if_busy")


async def run(agent: str, request: Request) -> Response:
    """Run an agent for an AG-UI client (events streamed; approvals are interrupts)."""
    from ag_ui.core import RunAgentInput
    from ag_ui.encoder import EventEncoder

    host = host_of(request)
    host.agent(agent)
    body = parse_body(await request.body(), RunAgentInput)
    owner = owner_of_request(request.scope)
    one = AguiRun(host=host, agent=agent, owner=owner, body=body, if_busy=if_busy_of(body))
    session = await one.thread()
    encoder = EventEncoder(accept=request.headers.get("accept", "text/event-stream"))

    async def stream() -> AsyncIterator[str]:
        async for event in one.events(session):
            yield encoder.encode(event)

    return StreamingResponse(stream(), media_type=encoder.get_content_type(), headers=SSE_HEADERS)


@dataclass(frozen=True)
class AguiPlace:
    """The host the AG-UI endpoint serves from; a router's dependency puts it in each
    request's state."""

    host: AgentHost

    def attach(self, request: Request) -> None:
        """Make this the place of `request` (the router's dependency)."""
        request.state.raf_agui = self


def host_of(request: Request) -> AgentHost:
    """The host the router serves this request from."""
    return cast(AguiPlace, request.state.raf_agui).host


def agui_router(host: AgentHost) -> APIRouter:
    """The AG-UI run route of every agent of `host`."""
    require_extra("ag_ui", "serving agents over AG-UI")
    router = APIRouter(dependencies=[Depends(AguiPlace(host).attach)])
    router.add_api_route("/agui/{agent}", run, methods=["POST"])
    return router

"""Responses of chat clients and agents, their stream updates, and the fold between them."""

from __future__ import annotations

from collections.abc import AsyncIterable, Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from raf.core import builders
from raf.core.contents import (
    ApprovalRequestContent,
    Content,
    DataContent,
    FunctionResultContent,
    ReasoningContent,
    TextContent,
    content_from_dict,
    content_to_dict,
)
from raf.core.messages import ROLE_ASSISTANT, ChatMessage, Role
from raf.core.usage import UsageDetails


class FinishReason(StrEnum):
    """Why a response ended."""

    STOP = "stop"
    LENGTH = "length"
    TOOL_CALLS = "tool_calls"
    CONTENT_FILTER = "content_filter"
    AWAITING_APPROVAL = "awaiting_approval"
    CANCELLED = "cancelled"
    COMPLETED = "completed"
    """A workflow run as an agent ran to its end: no model gave this answer, so an
    answer with no message is what the workflow did, not a model's failure."""
    OTHER = "other"


# The finish reasons the run sets on its hot path, bound once beside their enum (as
# the update kinds below).
FINISH_STOP = FinishReason.STOP
FINISH_TOOL_CALLS = FinishReason.TOOL_CALLS
FINISH_OTHER = FinishReason.OTHER
FINISH_CANCELLED = FinishReason.CANCELLED
FINISH_AWAITING_APPROVAL = FinishReason.AWAITING_APPROVAL


class UpdateKind(StrEnum):
    """What one stream update says."""

    TEXT_DELTA = "text_delta"
    REASONING_DELTA = "reasoning_delta"
    TOOL_CALL_STARTED = "tool_call_started"
    TOOL_CALL_ARGUMENTS_DELTA = "tool_call_arguments_delta"
    TOOL_CALL_ENDED = "tool_call_ended"
    TOOL_CALLING = "tool_calling"
    TOOL_CALLED = "tool_called"
    APPROVAL_REQUEST = "approval_request"
    CONTENT = "content"
    USAGE = "usage"
    FINISHED = "finished"


# The kinds read for every update on the hot path (the fold, the update constructor,
# the run's stream), bound once beside their enum: Python 3.11 reads a member off its
# class in about 70 ns, a module name in about 6 (3.13: 20 and 8); see the speed
# decision record and benchmarks/run_instructions.py.
KIND_TEXT_DELTA = UpdateKind.TEXT_DELTA
KIND_REASONING_DELTA = UpdateKind.REASONING_DELTA
KIND_TOOL_CALL_ARGUMENTS_DELTA = UpdateKind.TOOL_CALL_ARGUMENTS_DELTA
KIND_TOOL_CALLING = UpdateKind.TOOL_CALLING
KIND_TOOL_CALLED = UpdateKind.TOOL_CALLED
KIND_APPROVAL_REQUEST = UpdateKind.APPROVAL_REQUEST
KIND_CONTENT = UpdateKind.CONTENT
KIND_USAGE = UpdateKind.USAGE
KIND_FINISHED = UpdateKind.FINISHED
_KEPT_AS_CONTENT = (
    UpdateKind.TOOL_CALL_ENDED,
    UpdateKind.TOOL_CALLED,
    UpdateKind.APPROVAL_REQUEST,
    UpdateKind.CONTENT,
)
"""The updates whose `content` joins the message as it is."""


@dataclass(kw_only=True, slots=True, init=False)
class AgentResponseUpdate:
    """One event of a streamed response.

    `text` is only visible assistant text, so printing every update's `text` prints the
    answer; reasoning deltas carry `reasoning` and tool-call argument deltas carry
    `arguments_delta`. Events that complete a content (a call whose arguments are all
    in, a tool result, an approval request, an error or data) carry it in `content`, and
    that content joins the message `message_id` when the stream is folded.
    """

    kind: UpdateKind
    message_id: str = ""
    role: Role = Role.ASSISTANT
    text: str = ""
    content: Content | None = None
    call_id: str = ""
    tool_name: str = ""
    usage: UsageDetails | None = None
    finish_reason: FinishReason | None = None
    reasoning: str = ""
    """A piece of the model's reasoning (REASONING_DELTA)."""
    arguments_delta: str = ""
    """A piece of a tool call's JSON arguments (TOOL_CALL_ARGUMENTS_DELTA)."""
    partial_value: Any = None
    """With an output type, on TEXT_DELTA: the JSON answer parsed so far (dicts, lists,
    scalars), growing as the answer does."""
    value: Any = None
    """With an output type, on FINISHED: the validated result (as `AgentResponse.value`)."""
    model_id: str = ""
    """The model that answered, when known (on a stream's FINISHED update)."""

    # Written by hand, not generated: the dataclass __init__ would call a separate
    # __post_init__ for every update, and a stream is made of many. The fields (and so
    # fields(), replace(), ==, repr and pickling) are the dataclass's.
    def __init__(
        self,
        *,
        kind: UpdateKind,
        message_id: str = "",
        role: Role = Role.ASSISTANT,
        text: str = "",
        content: Content | None = None,
        call_id: str = "",
        tool_name: str = "",
        usage: UsageDetails | None = None,
        finish_reason: FinishReason | None = None,
        reasoning: str = "",
        arguments_delta: str = "",
        partial_value: Any = None,
        value: Any = None,
        model_id: str = "",
    ) -> None:
        # Clients written before `reasoning` and `arguments_delta` existed put those
        # pieces in `text`; move them so `text` stays the visible answer.
        if text and kind is not KIND_TEXT_DELTA:
            if kind is KIND_REASONING_DELTA:
                reasoning += text
            elif kind is KIND_TOOL_CALL_ARGUMENTS_DELTA:
                arguments_delta += text
            text = ""
        self.kind = kind
        self.message_id = message_id
        self.role = role
        self.text = text
        self.content = content
        self.call_id = call_id
        self.tool_name = tool_name
        self.usage = usage
        self.finish_reason = finish_reason
        self.reasoning = reasoning
        self.arguments_delta = arguments_delta
        self.partial_value = partial_value
        self.value = value
        self.model_id = model_id

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form, as `raf run --json` prints it."""
        out: dict[str, Any] = {"kind": self.kind.value}
        if self.message_id:
            out["message_id"] = self.message_id
        if self.kind not in (UpdateKind.USAGE, UpdateKind.FINISHED):
            out["role"] = self.role.value
        if self.text:
            out["text"] = self.text
        if self.reasoning:
            out["reasoning"] = self.reasoning
        if self.arguments_delta:
            out["arguments_delta"] = self.arguments_delta
        if self.content is not None:
            out["content"] = content_to_dict(self.content)
        if self.call_id:
            out["call_id"] = self.call_id
        if self.tool_name:
            out["tool_name"] = self.tool_name
        if self.usage is not None:
            out["usage"] = self.usage.to_dict()
        if self.finish_reason is not None:
            out["finish_reason"] = self.finish_reason.value
        if self.partial_value is not None:
            out["partial_value"] = self.partial_value
        if self.value is not None:  # a typed answer: pydantic is loaded already
            from pydantic_core import to_jsonable_python

            out["value"] = to_jsonable_python(self.value)
        if self.model_id:
            out["model_id"] = self.model_id
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AgentResponseUpdate:
        return cls(
            kind=UpdateKind(data["kind"]),
            message_id=data.get("message_id", ""),
            role=Role(data.get("role", "assistant")),
            text=data.get("text", ""),
            content=content_from_dict(data["content"]) if "content" in data else None,
            call_id=data.get("call_id", ""),
            tool_name=data.get("tool_name", ""),
            usage=UsageDetails.from_dict(data["usage"]) if "usage" in data else None,
            finish_reason=FinishReason(data["finish_reason"]) if "finish_reason" in data else None,
            reasoning=data.get("reasoning", ""),
            arguments_delta=data.get("arguments_delta", ""),
            partial_value=data.get("partial_value"),
            value=data.get("value"),
            model_id=data.get("model_id", ""),
        )


ChatResponseUpdate = AgentResponseUpdate
"""Chat clients stream the same updates agents do."""


@dataclass(kw_only=True, slots=True)
class ChatResponse:
    """What a chat client returns for one request (possibly after a tool loop)."""

    messages: list[ChatMessage] = field(default_factory=list)
    finish_reason: FinishReason | None = None
    usage: UsageDetails | None = None
    model_id: str | None = None
    response_id: str | None = None

    @property
    def text(self) -> str:
        """Text of the last assistant message that has any."""
        for message in reversed(self.messages):
            if message.role is ROLE_ASSISTANT:
                text = message.text
                if text:
                    return text
        return ""

    @property
    def pending_approvals(self) -> list[ApprovalRequestContent]:
        """Approval requests whose calls have no result yet."""
        # Plain loops: this is read at the end of every run, and a comprehension is a
        # function call of its own.
        requests = []
        for message in self.messages:
            for content in message.contents:
                if isinstance(content, ApprovalRequestContent):
                    requests.append(content)
        if not requests:  # the common case: no set of answered calls to build
            return requests
        answered = {
            c.call_id
            for m in self.messages
            for c in m.contents
            if isinstance(c, FunctionResultContent)
        }
        return [c for c in requests if c.call_id not in answered]

    def __str__(self) -> str:
        """The answer's text, so `print(response)` prints the answer (`repr` keeps the
        whole response)."""
        return self.text

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"messages": [m.to_dict() for m in self.messages]}
        if self.finish_reason is not None:
            out["finish_reason"] = self.finish_reason.value
        if self.usage is not None:
            out["usage"] = self.usage.to_dict()
        if self.model_id is not None:
            out["model_id"] = self.model_id
        return out


@dataclass(kw_only=True, slots=True)
class AgentResponse(ChatResponse):
    """What an agent run returns; `session_id` names the session it ran in."""

    session_id: str | None = None
    value: Any = None
    """With an output type: the answer as that type, validated (None without one)."""

    @property
    def answer_problem(self) -> AnswerProblem | None:
        """Why the run has no whole answer (the model answered nothing, was cut off or
        filtered), or None: the same rule by which `raf run` exits 4 and the served APIs
        report a failed answer. A run that waits for approval or was cancelled has none."""
        return answer_problem(self)


_TRY_LARGER = "try a larger model, or ask in fewer words"
ANSWER_PROBLEMS: dict[str, str] = {
    "empty_answer": "the model finished without an answer (no text, no structured output, "
    f"no approval request); {_TRY_LARGER}",
    "cut_off": "the answer was cut off at the model's output limit; raise the limit "
    "(--max-tokens, or maxTokens in the agent document) or ask for less",
    "content_filter": "the provider's content filter stopped the answer; rephrase the "
    "request or use another model",
}
"""The problems `AnswerCheck` reports, by code, with what happened and what to try."""


@dataclass(kw_only=True, slots=True)
class AnswerProblem:
    """Why a finished run has no whole answer: every surface reports it in its own shape
    (an exit code, an error object, a finish reason), never as a silent success."""

    code: str
    """`empty_answer`, `cut_off` or `content_filter` (the keys of `ANSWER_PROBLEMS`)."""
    message: str
    """What happened and what to try, one sentence for a person."""

    def to_dict(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}


class AnswerCheck:
    """Watches one run's updates (or reads its response) and says whether the answer is
    missing or incomplete: the one rule the CLI and every served surface apply."""

    __slots__ = ("_answered", "finish_reason")

    def __init__(self) -> None:
        self._answered = False
        self.finish_reason: FinishReason | None = None

    def see(self, update: AgentResponseUpdate) -> None:
        """Take one update of the run's stream."""
        kind = update.kind
        if kind is UpdateKind.TEXT_DELTA:
            self._answered = self._answered or bool(update.text.strip())
        elif kind is UpdateKind.APPROVAL_REQUEST:
            self._answered = True
        elif kind is UpdateKind.CONTENT and isinstance(update.content, DataContent):
            self._answered = True  # an image or a document the model gave as its answer
        elif kind is UpdateKind.FINISHED:
            self.finish_reason = update.finish_reason
            self._answered = self._answered or update.value is not None

    def see_response(self, response: ChatResponse) -> None:
        """Take a finished run's response (the non-streaming path)."""
        self.finish_reason = response.finish_reason
        value = getattr(response, "value", None)
        self._answered = (
            bool(response.text.strip())
            or value is not None
            or bool(response.pending_approvals)
            or any(
                isinstance(content, DataContent)
                for message in response.messages
                if message.role is ROLE_ASSISTANT
                for content in message.contents
            )
        )

    @property
    def answered(self) -> bool:
        """Whether the run gave anything to show: text, a structured value, data or an
        approval request."""
        return self._answered

    @property
    def problem(self) -> AnswerProblem | None:
        """The problem with the answer seen, or None when it is whole (or the run was
        cancelled, waits for approval, or was a workflow that completed: outcomes of their
        own)."""
        finish = self.finish_reason
        if finish in (
            FinishReason.CANCELLED,
            FinishReason.AWAITING_APPROVAL,
            FinishReason.COMPLETED,  # a workflow's end: no model answered
            FinishReason.TOOL_CALLS,  # calls handed back to the caller: its turn
        ):
            return None
        if finish is FinishReason.LENGTH:
            code = "cut_off"
        elif finish is FinishReason.CONTENT_FILTER:
            code = "content_filter"
        elif not self._answered:
            code = "empty_answer"
        else:
            return None
        return AnswerProblem(code=code, message=ANSWER_PROBLEMS[code])


def answer_problem(response: ChatResponse) -> AnswerProblem | None:
    """The problem with a finished run's answer (see `AnswerCheck`), or None."""
    check = AnswerCheck()
    check.see_response(response)
    return check.problem


class ResponseFolder:
    """Folds stream updates into messages, exactly as the non-streaming path builds them."""

    __slots__ = ("_by_id", "_order", "finish_reason", "model_id", "usage")

    def __init__(self) -> None:
        self._by_id: dict[str, ChatMessage] = {}
        self._order: list[ChatMessage] = []
        self.usage: UsageDetails | None = None
        self.finish_reason: FinishReason | None = None
        self.model_id: str | None = None

    def _message(self, update: AgentResponseUpdate) -> ChatMessage:
        key = update.message_id
        message = self._by_id.get(key)
        if message is None:
            role = update.role
            if type(role) is Role:  # nothing to normalise
                message = builders.message(role, [], key or None)
            else:
                message = ChatMessage(role=role, contents=[], message_id=key or None)
            self._by_id[key] = message
            self._order.append(message)
        return message

    def add(self, update: AgentResponseUpdate) -> None:
        kind = update.kind
        if update.model_id:
            self.model_id = update.model_id
        if kind is KIND_TEXT_DELTA:
            contents = self._message(update).contents
            if contents and isinstance(contents[-1], TextContent):
                contents[-1].text += update.text
            else:
                contents.append(TextContent(text=update.text))
        elif kind is KIND_REASONING_DELTA:
            contents = self._message(update).contents
            last_reasoning = contents[-1] if contents else None
            # A block that is signed or encrypted is complete: new text starts a new block.
            if (
                isinstance(last_reasoning, ReasoningContent)
                and last_reasoning.signature is None
                and last_reasoning.protected_data is None
            ):
                last_reasoning.text += update.reasoning
            else:
                contents.append(ReasoningContent(text=update.reasoning))
            # A signature (Anthropic thinking, an OpenAI reasoning item's id) and the
            # encrypted reasoning that goes with it arrive as the last delta of its block.
            if isinstance(update.content, ReasoningContent) and update.content.signature:
                last = contents[-1]
                if isinstance(last, ReasoningContent):
                    last.signature = update.content.signature
                    if update.content.protected_data is not None:
                        last.protected_data = update.content.protected_data
        elif kind in _KEPT_AS_CONTENT:
            if update.content is not None:
                self._message(update).contents.append(update.content)
        elif kind is KIND_USAGE:
            if update.usage is not None:
                self.usage = update.usage if self.usage is None else self.usage + update.usage
        elif kind is KIND_FINISHED and update.finish_reason is not None:
            self.finish_reason = update.finish_reason
        # started, argument deltas and calling are progress only: nothing to keep.

    def messages(self) -> list[ChatMessage]:
        out = []
        for message in self._order:
            if message.contents:
                out.append(message)
        return out

    def response(self) -> ChatResponse:
        """The response the updates so far stand for."""
        return ChatResponse(
            messages=self.messages(),
            finish_reason=self.finish_reason,
            usage=self.usage,
            model_id=self.model_id,
        )


def fold_updates(updates: Iterable[AgentResponseUpdate]) -> ChatResponse:
    """The response a sequence of updates stands for."""
    folder = ResponseFolder()
    for update in updates:
        folder.add(update)
    return folder.response()


async def fold_stream(updates: AsyncIterable[AgentResponseUpdate]) -> ChatResponse:
    """Consume a stream and return the response it stands for."""
    folder = ResponseFolder()
    async for update in updates:
        folder.add(update)
    return folder.response()


def message_to_updates(message: ChatMessage, message_id: str) -> list[AgentResponseUpdate]:
    """The updates that fold back into `message` (used to stream whole messages)."""
    out: list[AgentResponseUpdate] = []
    role = message.role
    for content in message.contents:
        if isinstance(content, TextContent):
            out.append(
                AgentResponseUpdate(
                    kind=KIND_TEXT_DELTA, message_id=message_id, role=role, text=content.text
                )
            )
        elif (
            isinstance(content, ReasoningContent)
            and content.signature is None
            and content.protected_data is None
        ):
            out.append(
                AgentResponseUpdate(
                    kind=KIND_REASONING_DELTA,
                    message_id=message_id,
                    role=role,
                    reasoning=content.text,
                )
            )
        else:
            out.append(
                AgentResponseUpdate(
                    kind=KIND_CONTENT, message_id=message_id, role=role, content=content
                )
            )
    return out

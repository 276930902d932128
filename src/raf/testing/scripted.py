"""Chat clients for tests: a scripted queue of replies, or a function that answers."""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from raf.core.contents import DataContent, FunctionCallContent, TextContent
from raf.core.errors import ConfigurationError, RafError
from raf.core.messages import ChatMessage, Role, new_id
from raf.core.options import ChatOptions
from raf.core.responses import (
    AgentResponseUpdate,
    ChatResponse,
    FinishReason,
    UpdateKind,
    message_to_updates,
)
from raf.core.usage import UsageDetails

ScriptItem = ChatMessage | ChatResponse | str | BaseException


class ScriptExhaustedError(RafError):
    """The scripted model was called more times than the script has replies."""


@dataclass(kw_only=True, slots=True)
class RecordedRequest:
    """One call the model received: the messages, the tools offered and the options."""

    messages: list[ChatMessage]
    tools: list[Any]
    options: ChatOptions
    stream: bool

    @property
    def tool_names(self) -> list[str]:
        return [t.name for t in self.tools]

    @property
    def system(self) -> str:
        return "\n".join(m.text for m in self.messages if m.role is Role.SYSTEM)


def call(
    tool_name: str,
    arguments: dict[str, Any] | None = None,
    /,
    *,
    call_id: str | None = None,
    **kwargs: Any,
) -> FunctionCallContent:
    """A function call for a script: `call("add", a=2, b=3)` or `call("add", {"a": 2})`."""
    args = dict(arguments or {})
    args.update(kwargs)
    return FunctionCallContent(call_id=call_id or new_id("call"), name=tool_name, arguments=args)


def reply(text: str = "", *calls: FunctionCallContent) -> ChatMessage:
    """An assistant message for a script: text and/or function calls."""
    return ChatMessage.assistant(text, calls=calls)


def _finish_reason(message: ChatMessage) -> FinishReason:
    return FinishReason.TOOL_CALLS if message.function_calls else FinishReason.STOP


def _as_response(item: ChatMessage | ChatResponse | str) -> ChatResponse:
    if isinstance(item, str):
        message = ChatMessage(role=Role.ASSISTANT, contents=[TextContent(text=item)])
        return ChatResponse(messages=[message], finish_reason=FinishReason.STOP)
    if isinstance(item, ChatMessage):
        message = ChatMessage(
            role=item.role,
            contents=list(item.contents),
            author_name=item.author_name,
            message_id=item.message_id,
        )
        return ChatResponse(messages=[message], finish_reason=_finish_reason(message))
    messages = [
        ChatMessage(role=m.role, contents=list(m.contents), message_id=m.message_id)
        for m in item.messages
    ]
    return ChatResponse(
        messages=messages,
        finish_reason=item.finish_reason,
        usage=item.usage,
        model_id=item.model_id,
    )


def stream_response(response: ChatResponse, chunk_size: int) -> list[AgentResponseUpdate]:
    """The updates a streaming model would send for `response`, text cut in chunks and
    call arguments streamed as JSON deltas."""
    updates: list[AgentResponseUpdate] = []
    for message in response.messages:
        message_id = message.message_id or new_id("msg")
        message.message_id = message_id
        for update in message_to_updates(message, message_id):
            content = update.content
            if update.kind in (UpdateKind.TEXT_DELTA, UpdateKind.REASONING_DELTA):
                reasoning = update.kind is UpdateKind.REASONING_DELTA
                text = update.reasoning if reasoning else update.text
                step = max(1, chunk_size)
                for start in range(0, len(text), step):
                    piece = text[start : start + step]
                    updates.append(
                        AgentResponseUpdate(
                            kind=update.kind,
                            message_id=message_id,
                            role=update.role,
                            text="" if reasoning else piece,
                            reasoning=piece if reasoning else "",
                        )
                    )
            elif isinstance(content, FunctionCallContent):
                raw = content.raw_arguments or json.dumps(content.arguments)
                step = max(1, chunk_size)
                pieces: list[tuple[UpdateKind, str, FunctionCallContent | None]] = [
                    (UpdateKind.TOOL_CALL_STARTED, "", None)
                ]
                pieces += [
                    (UpdateKind.TOOL_CALL_ARGUMENTS_DELTA, raw[i : i + step], None)
                    for i in range(0, len(raw), step)
                ]
                pieces.append((UpdateKind.TOOL_CALL_ENDED, "", content))
                for kind, text, done in pieces:
                    updates.append(
                        AgentResponseUpdate(
                            kind=kind,
                            message_id=message_id,
                            role=update.role,
                            arguments_delta=text,
                            content=done,
                            call_id=content.call_id,
                            tool_name=content.name,
                        )
                    )
            else:
                updates.append(update)
    if response.usage is not None:
        updates.append(AgentResponseUpdate(kind=UpdateKind.USAGE, usage=response.usage))
    updates.append(
        AgentResponseUpdate(
            kind=UpdateKind.FINISHED,
            finish_reason=response.finish_reason,
            model_id=response.model_id or "",
        )
    )
    return updates


class ScriptedChatClient:
    """A model that answers from a script: one item per call, in order.

    Items are assistant messages (text and/or function calls), plain strings, full
    `ChatResponse`s, or exceptions to raise. Every request is recorded in `.requests`.
    `media_types` plays a model that takes only those data contents (`()`: text only),
    as a real one declares them; None (the default) takes any.
    """

    def __init__(
        self,
        responses: Iterable[ScriptItem] = (),
        *,
        chunk_size: int = 8,
        usage: UsageDetails | None = None,
        delay: float = 0.0,
        media_types: Iterable[str] | None = None,
    ) -> None:
        self._script: list[ScriptItem] = list(responses)
        self._next = 0
        self.chunk_size = chunk_size
        self.usage = usage
        self.delay = delay
        self.media_types: tuple[str, ...] | None = (
            None if media_types is None else tuple(media_types)
        )
        """The data content types this model takes; None: any."""
        self.requests: list[RecordedRequest] = []

    def _check_media(self, messages: Sequence[ChatMessage]) -> None:
        """Refuse data of a type this model does not take, as a real one would."""
        if self.media_types is None:
            return
        for message in messages:
            for content in message.contents:
                if isinstance(content, DataContent) and content.media_type not in self.media_types:
                    takes = ", ".join(self.media_types) or "text only"
                    raise ConfigurationError(
                        f"the scripted model does not take {content.media_type} (it takes {takes})"
                    )

    def add(self, *items: ScriptItem) -> ScriptedChatClient:
        """Append replies to the script."""
        self._script.extend(items)
        return self

    @property
    def remaining(self) -> int:
        return len(self._script) - self._next

    def _take(
        self, messages: Sequence[ChatMessage], options: ChatOptions, stream: bool
    ) -> ChatResponse:
        self._check_media(messages)
        self.requests.append(
            RecordedRequest(
                messages=list(messages), tools=list(options.tools), options=options, stream=stream
            )
        )
        if self._next >= len(self._script):
            raise ScriptExhaustedError(
                f"ScriptedChatClient ran out of replies: the script has {len(self._script)} "
                f"and call {self._next + 1} was made; add more replies to the script"
            )
        item = self._script[self._next]
        self._next += 1
        if isinstance(item, BaseException):
            raise item
        response = _as_response(item)
        if response.usage is None and self.usage is not None:
            response.usage = self.usage
        return response

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        options = options if options is not None else ChatOptions()
        response = self._take(messages, options, stream=False)
        if self.delay:  # after taking the reply: a cancelled call uses it up, as a real one
            await asyncio.sleep(self.delay)
        return response

    async def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[AgentResponseUpdate]:
        options = options if options is not None else ChatOptions()
        response = self._take(messages, options, stream=True)
        if self.delay:
            await asyncio.sleep(self.delay)
        for update in stream_response(response, self.chunk_size):
            yield update

    def __repr__(self) -> str:
        return f"ScriptedChatClient({self.remaining} of {len(self._script)} replies left)"


ReplyFunction = Callable[
    [Sequence[ChatMessage], ChatOptions],
    ChatMessage | str | ChatResponse | Awaitable[ChatMessage | str | ChatResponse],
]


class FunctionChatClient:
    """A model whose every reply comes from `fn(messages, options)` (sync or async)."""

    def __init__(self, fn: ReplyFunction, *, chunk_size: int = 8) -> None:
        self.fn = fn
        self.chunk_size = chunk_size
        self.requests: list[RecordedRequest] = []

    async def _answer(
        self, messages: Sequence[ChatMessage], options: ChatOptions, stream: bool
    ) -> ChatResponse:
        self.requests.append(
            RecordedRequest(
                messages=list(messages), tools=list(options.tools), options=options, stream=stream
            )
        )
        result = self.fn(messages, options)
        if inspect.isawaitable(result):
            result = await result
        return _as_response(result)

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        options = options if options is not None else ChatOptions()
        return await self._answer(messages, options, stream=False)

    async def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[AgentResponseUpdate]:
        options = options if options is not None else ChatOptions()
        response = await self._answer(messages, options, stream=True)
        for update in stream_response(response, self.chunk_size):
            yield update

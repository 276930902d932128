"""The one request path and the one stream skeleton every leaf chat client runs on.

A leaf client is a `Provider` (key, base URL, connection, error table) joined to a
`WireFormat` (request body, content translation, parsing). What they share lives here
once: options defaulting, error translation, the interrupted-stream rule (a stream that
breaks after data arrived raises `StreamInterruptedError`, nothing of it is kept), the
checks that a stream was the protocol and ended properly, and closing in `finally`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from typing import Any, Generic, TypeVar

from raf.clients.errors import ClientError, InvalidResponseError, mask_key, stream_interrupted
from raf.clients.provider import Provider
from raf.clients.wire import WireFormat
from raf.core.messages import ChatMessage, new_id
from raf.core.options import ChatOptions
from raf.core.output import OutputSchema
from raf.core.responses import AgentResponseUpdate, ChatResponse, UpdateKind, fold_updates

W = TypeVar("W", bound=WireFormat)


class ModelClient(Generic[W]):
    """A chat client made of a provider and a wire format; subclasses only configure them."""

    reports_model = True
    """Whether the answer names its model (`model_id`); if not, the client's `model` does."""

    def __init__(self, model: str, api: Provider, wire: W) -> None:
        self.model = model
        self.api = api
        """Where the model lives and how it is reached."""
        self.wire = wire
        """How requests and answers are shaped."""

    @property
    def provider(self) -> str:
        """The provider's name, as errors and model strings spell it."""
        return self.api.name

    @property
    def base_url(self) -> str | None:
        """Where requests go, as shown in messages (credentials cut out)."""
        return self.api.base_url

    @property
    def timeout(self) -> float | None:
        return self.api.timeout

    def __repr__(self) -> str:
        where = f", base_url={self.base_url!r}" if self.base_url else ""
        return (
            f"{type(self).__name__}(model={self.model!r}, provider={self.provider!r}{where}, "
            f"api_key={mask_key('set' if self.api.has_key else None)})"
        )

    async def aclose(self) -> None:
        await self.api.aclose()

    def check_output_schema(self, output: OutputSchema) -> None:
        """Refuse, before any request, an output schema this API cannot express."""
        check = getattr(self.wire, "check_output_schema", None)
        if check is not None:
            check(output)

    async def _prepare(
        self, messages: Sequence[ChatMessage], options: ChatOptions, *, stream: bool
    ) -> tuple[WireFormat, dict[str, Any]]:
        """The wire format and request body of one call (a client may pick a format per call)."""
        model = options.model_id or self.model
        wire: Any = self.wire
        narrow = getattr(wire, "for_options", None)
        if narrow is not None:  # a format that needs to know this call's options to parse
            wire = narrow(options)
        return wire, wire.request(messages, options, model=model, stream=stream)

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        options = options if options is not None else ChatOptions()
        model = options.model_id or self.model
        wire, body = await self._prepare(messages, options, stream=False)
        try:
            data = await self.api.complete(body)
        except Exception as exc:
            raise self.api.translate(exc, model) from None
        if not isinstance(data, dict):  # SDKs hand back a body that is not JSON as text
            raise self.api.not_the_api(f"something else ({str(data)[:80]!r})", model)
        updates = wire.parse(data, new_id("msg"))
        if updates is None:
            raise self.api.not_the_api("JSON of another shape", model)
        response = fold_updates(updates)
        response.model_id = (data.get("model") or model) if self.reports_model else self.model
        response.response_id = data.get("id")
        return response

    async def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[AgentResponseUpdate]:
        options = options if options is not None else ChatOptions()
        model = options.model_id or self.model
        wire, body = await self._prepare(messages, options, stream=True)
        assembler = wire.assembler(new_id("msg"))
        try:
            stream = await self.api.open_stream(body)
        except Exception as exc:
            raise self.api.translate(exc, model) from None
        yielded = False
        try:
            async for event in stream:
                for update in assembler.feed(event):
                    yielded = True
                    yield update
                if getattr(assembler, "stop_reading", False):
                    break  # the answer is whole (the local model looped): closing stops it
        except Exception as exc:
            error = self.api.translate(exc, model)
            # A transport failure after data is a broken answer; an error the server or
            # the client itself named (raf errors, bad protocol) keeps its own words.
            broken = not isinstance(exc, ClientError) and not isinstance(
                error, InvalidResponseError
            )
            if yielded and broken:
                raise stream_interrupted(self.provider, model, exc, self.api.hidden()) from None
            raise error from None
        finally:  # on errors, cancellation and a consumer that stops early alike
            await stream.aclose()
        if assembler.events == 0:
            raise self.api.not_the_api("a stream without any event", model)
        if not assembler.finished:
            raise stream_interrupted(
                self.provider, model, EOFError("the stream ended before its end marker")
            )
        answered_by = (assembler.model_id or model) if self.reports_model else self.model
        for update in assembler.finish():
            if update.kind is UpdateKind.FINISHED and answered_by and not update.model_id:
                update = replace(update, model_id=answered_by)
            yield update

"""What a wire format does: raf messages and options to a request body, answers to updates.

A wire format knows nothing of keys, URLs or SDKs (that is the provider's job), so one
format serves every provider that speaks it: chat completions serves OpenAI, Gemini's
compatible endpoint and the embedded llama.cpp alike.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Protocol

from raf.core.messages import ChatMessage
from raf.core.options import ChatOptions
from raf.core.responses import AgentResponseUpdate


class StreamAssembler(Protocol):
    """Turns one answer's stream events (dicts) into updates under one message id.

    One that sets a true `stop_reading` after a `feed` has the whole answer already (the
    local model's repetition stop): the client stops reading and closes the stream.
    """

    @property
    def events(self) -> int:
        """Events fed so far (a stream without any was not this protocol)."""
        ...

    @property
    def response_id(self) -> str | None: ...

    @property
    def model_id(self) -> str | None: ...

    def feed(self, event: dict[str, Any]) -> list[AgentResponseUpdate]: ...

    @property
    def finished(self) -> bool:
        """Whether the stream's own end marker arrived (one without it was cut)."""
        ...

    def finish(self) -> list[AgentResponseUpdate]:
        """What completes the answer: whole tool calls, usage, the finish reason."""
        ...


class WireFormat(Protocol):
    """Request building, content translation and parsing for one API shape."""

    def request(
        self, messages: Sequence[ChatMessage], options: ChatOptions, *, model: str, stream: bool
    ) -> dict[str, Any]:
        """The JSON body of one request (model settings only; no run state)."""
        ...

    def assembler(self, message_id: str) -> StreamAssembler:
        """A fresh assembler for one streamed answer."""
        ...

    def parse(self, data: dict[str, Any], message_id: str) -> list[AgentResponseUpdate] | None:
        """A whole answer as the updates its stream would fold from; None if not the format."""
        ...


def parse_arguments(raw: str | None) -> tuple[dict[str, Any], str | None]:
    """A tool call's arguments as a dict; bad or non-object JSON gives `{}` and the raw text."""
    if raw is None or raw.strip() == "":
        return {}, None
    try:
        value = json.loads(raw)
    except ValueError:
        return {}, raw
    if not isinstance(value, dict):
        return {}, raw
    return value, None

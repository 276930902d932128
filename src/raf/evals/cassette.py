"""A cassette: model responses recorded once in a JSON file and replayed by request, so a
regression suite runs again (in CI, offline) at no model cost."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any, Literal

from raf.core.chat_client import ChatClient
from raf.core.errors import ConfigurationError, ModelError
from raf.core.messages import ChatMessage, new_id
from raf.core.options import ChatOptions
from raf.core.private_files import atomic_write_text
from raf.core.responses import (
    AgentResponseUpdate,
    ChatResponse,
    FinishReason,
    ResponseFolder,
    UpdateKind,
    message_to_updates,
)
from raf.core.usage import UsageDetails

CASSETTE_FORMAT = "raf.evals.cassette/1"
CassetteMode = Literal["replay", "record", "once"]
_OPTION_FIELDS = (
    "model_id",
    "temperature",
    "max_tokens",
    "top_p",
    "stop",
    "seed",
    "tool_choice",
    "response_format",
)


class CassetteMissError(ModelError):
    """Replaying, a request came that the cassette holds no response for."""


def request_fingerprint(messages: Sequence[ChatMessage], options: ChatOptions) -> str:
    """A hash of what the model is asked: the messages (without their ids), the tools
    offered and the settings a model reads."""
    payload: dict[str, Any] = {
        "messages": [{k: v for k, v in m.to_dict().items() if k != "message_id"} for m in messages],
        "tools": [
            {"name": t.name, "description": t.description, "parameters": t.parameters}
            for t in options.tools
        ],
        "options": {f: getattr(options, f) for f in _OPTION_FIELDS},
    }
    if options.output_schema is not None:
        payload["output_schema"] = repr(options.output_schema)
    text = json.dumps(payload, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def response_to_dict(response: ChatResponse) -> dict[str, Any]:
    return {
        "messages": [m.to_dict() for m in response.messages],
        "finish_reason": response.finish_reason.value if response.finish_reason else None,
        "usage": response.usage.to_dict() if response.usage else None,
        "model_id": response.model_id,
    }


def response_from_dict(data: dict[str, Any]) -> ChatResponse:
    usage = data.get("usage")
    reason = data.get("finish_reason")
    return ChatResponse(
        messages=[ChatMessage.from_dict(m) for m in data.get("messages", [])],
        finish_reason=FinishReason(reason) if reason else None,
        usage=UsageDetails.from_dict(usage) if usage else None,
        model_id=data.get("model_id"),
    )


class CassetteChatClient:
    """Wraps a chat client: `record` calls the model and stores every response, `replay`
    answers only from the file (a request it lacks is a `CassetteMissError`), `once`
    replays what is there and records what is not."""

    def __init__(
        self, path: str | Path, inner: ChatClient | None = None, *, mode: CassetteMode = "once"
    ) -> None:
        if mode not in ("replay", "record", "once"):
            raise ConfigurationError(f"cassette mode must be replay, record or once, got {mode!r}")
        if mode != "replay" and inner is None:
            raise ConfigurationError(f"a cassette in {mode!r} mode needs the model to record")
        self.path = Path(path)
        self.inner = inner
        self.mode = mode
        self._entries: dict[str, dict[str, Any]] = self._load()
        self._lock = asyncio.Lock()
        self.hits = 0
        self.recorded = 0

    def _load(self) -> dict[str, dict[str, Any]]:
        if self.mode == "record" or not self.path.exists():
            if self.mode == "replay":
                raise ConfigurationError("no cassette to replay", file=str(self.path))
            return {}
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ConfigurationError(
                f"JSON syntax error: {exc.msg}",
                file=str(self.path),
                line=exc.lineno,
                column=exc.colno,
            ) from None
        if not isinstance(data, dict) or data.get("format") != CASSETTE_FORMAT:
            raise ConfigurationError(
                f'not a cassette (no "format": "{CASSETTE_FORMAT}")', file=str(self.path)
            )
        entries = data.get("responses")
        if not isinstance(entries, dict):
            raise ConfigurationError(
                "a cassette's responses must be an object",
                file=str(self.path),
                key_path="responses",
            )
        return entries

    def __len__(self) -> int:
        return len(self._entries)

    def _save(self) -> None:
        data = {"format": CASSETTE_FORMAT, "responses": self._entries}
        text = json.dumps(data, indent=1, ensure_ascii=False, sort_keys=True)
        # a new one is private: it holds replies
        atomic_write_text(self.path, text, keep_mode=True)

    def _stored(self, key: str, messages: Sequence[ChatMessage]) -> ChatResponse | None:
        if self.mode != "record" and key in self._entries:
            self.hits += 1
            return response_from_dict(self._entries[key]["response"])
        if self.mode == "replay":
            last = next((m.text for m in reversed(messages) if m.text), "")
            raise CassetteMissError(
                f"cassette {self.path} has no response for request {key[:12]} "
                f"(last message: {last[:80]!r}); record it again with mode='record' or 'once'"
            )
        return None

    async def _keep(
        self, key: str, messages: Sequence[ChatMessage], response: ChatResponse
    ) -> None:
        last = next((m.text for m in reversed(messages) if m.text), "")
        async with self._lock:
            self._entries[key] = {
                "last_message": last[:200],
                "response": response_to_dict(response),
            }
            self.recorded += 1
            await asyncio.to_thread(self._save)

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions
    ) -> ChatResponse:
        key = request_fingerprint(messages, options)
        stored = self._stored(key, messages)
        if stored is not None:
            return stored
        assert self.inner is not None
        response = await self.inner.get_response(messages, options)
        await self._keep(key, messages, response)
        return response

    async def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions
    ) -> AsyncIterator[AgentResponseUpdate]:
        key = request_fingerprint(messages, options)
        stored = self._stored(key, messages)
        if stored is not None:
            for message in stored.messages:
                for update in message_to_updates(message, message.message_id or new_id("msg")):
                    yield update
            if stored.usage is not None:
                yield AgentResponseUpdate(kind=UpdateKind.USAGE, usage=stored.usage)
            yield AgentResponseUpdate(
                kind=UpdateKind.FINISHED,
                finish_reason=stored.finish_reason or FinishReason.STOP,
                model_id=stored.model_id or "",
            )
            return
        assert self.inner is not None
        folder = ResponseFolder()
        async for update in self.inner.get_streaming_response(messages, options):
            folder.add(update)
            yield update
        await self._keep(key, messages, folder.response())

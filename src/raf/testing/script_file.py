"""A scripted model read from a JSON file: what `--model scripted:FILE.json` plays in the
programs, and what examples and users' own scripts load to run with no model and no key.

The file is a list of replies, one per model call, or `{"replies": [...], "chunkSize": n,
"mediaTypes": [...]}` (`mediaTypes`: the only data content types the model takes, `[]`
for a model that reads text only).
A reply is a string, or `{"text": ..., "calls": [{"name", "arguments", "id"}], "delay":
seconds, "pace": seconds, "finish": reason}`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from raf.core.errors import ConfigurationError
from raf.core.messages import ChatMessage
from raf.core.options import ChatOptions
from raf.core.responses import AgentResponseUpdate, ChatResponse, FinishReason
from raf.testing.scripted import ScriptedChatClient, call, reply

SCRIPTED_PREFIX = "scripted:"
"""The model-string prefix that names a script file (`scripted:replies.json`)."""


_REPLY_KEYS = {"text", "calls", "delay", "pace", "finish"}
_FINISHES = ("stop", "length", "content_filter")
"""The finish reasons a reply may give (`finish`): an answer cut at the token limit or
stopped by a filter, for tests of what raf does then."""
_CALL_KEYS = {"name", "arguments", "id"}


def _check_reply(path: Path, index: int, item: Any) -> None:
    """A reply of a scripted model file has the shape the file format says, or the error
    names the reply and what is wrong with it."""
    where = f"{path}: reply {index + 1}"
    if not isinstance(item, dict):
        raise ConfigurationError(
            f"{where} is {type(item).__name__}: a reply is a string or "
            '{"text": ..., "calls": [{"name": ..., "arguments": {...}}]}'
        )
    unknown = sorted(set(item) - _REPLY_KEYS)
    if unknown:
        raise ConfigurationError(
            f"{where}: unknown keys {', '.join(unknown)} "
            f"(a reply has {', '.join(sorted(_REPLY_KEYS))})"
        )
    calls = item.get("calls", [])
    if not isinstance(calls, list):
        raise ConfigurationError(f"{where}: 'calls' is a list of {{name, arguments, id}}")
    for number, found in enumerate(calls, 1):
        if (
            not isinstance(found, dict)
            or not isinstance(found.get("name"), str)
            or set(found) - _CALL_KEYS
            or not isinstance(found.get("arguments") or {}, dict)
        ):
            raise ConfigurationError(
                f'{where}: call {number} must be {{"name": ..., "arguments": {{...}}, '
                f'"id": ...}} with a name, not {json.dumps(found)[:80]}'
            )
    if item.get("finish", "stop") not in _FINISHES:
        raise ConfigurationError(
            f"{where}: 'finish' is one of {', '.join(_FINISHES)}, not {item['finish']!r}"
        )
    for key in ("delay", "pace"):
        value = item.get(key, 0)
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise ConfigurationError(f"{where}: {key!r} is a number of seconds, not {value!r}")


class ScriptFileClient:
    """A scripted model read from a JSON file, for tests and demos of the programs.

    The file is a list of replies (or `{"replies": [...], "chunkSize": n}`). A reply is a
    string, or `{"text": ..., "calls": [{"name", "arguments", "id"}], "delay": seconds,
    "pace": seconds, "finish": reason}`; `delay` waits before answering (cancellable, so a
    test can interrupt a run), `pace` between streamed pieces (so a test sees text arrive
    in pieces) and `finish` (`stop`, `length`, `content_filter`) says why the reply ended.
    """

    def __init__(self, path: Path) -> None:

        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigurationError(
                f"cannot read the scripted model {str(path)!r}: {exc}"
            ) from exc
        chunk = 4
        media: list[str] | None = None
        if isinstance(data, dict):
            unknown = sorted(set(data) - {"replies", "chunkSize", "mediaTypes"})
            if unknown or not isinstance(data.get("replies"), list):
                raise ConfigurationError(
                    f"{path}: a scripted model is a JSON list of replies, or "
                    '{"replies": [...], "chunkSize": n}'
                    + (f" (unknown keys: {', '.join(unknown)})" if unknown else "")
                )
            chunk = int(data.get("chunkSize", chunk))
            media = data.get("mediaTypes")
            if media is not None and (
                not isinstance(media, list) or not all(isinstance(t, str) for t in media)
            ):
                raise ConfigurationError(
                    f"{path}: 'mediaTypes' is a list of media types (image/png, ...), "
                    f"not {json.dumps(media)[:80]}"
                )
            data = data["replies"]
        if not isinstance(data, list):
            raise ConfigurationError(f"{path}: a scripted model is a JSON list of replies")
        items: list[Any] = []
        self.delays: list[float] = []
        self.paces: list[float] = []
        for index, item in enumerate(data):
            if isinstance(item, str):
                items.append(item)
                self.delays.append(0.0)
                self.paces.append(0.01)
                continue
            _check_reply(path, index, item)
            calls = [
                call(c["name"], dict(c.get("arguments") or {}), call_id=c.get("id"))
                for c in item.get("calls", [])
            ]
            message = reply(str(item.get("text", "")), *calls)
            if "finish" in item:
                items.append(
                    ChatResponse(messages=[message], finish_reason=FinishReason(item["finish"]))
                )
            else:
                items.append(message)
            self.delays.append(float(item.get("delay", 0.0)))
            self.paces.append(float(item.get("pace", 0.01)))
        self.inner = ScriptedChatClient(items, chunk_size=chunk, media_types=media)
        self._calls = 0

    async def _wait(self) -> float:
        """Wait as the reply about to be given asks; returns its pace."""
        index = self._calls
        self._calls += 1
        if index >= len(self.delays):
            return 0.0
        if self.delays[index]:
            await asyncio.sleep(self.delays[index])
        return self.paces[index]

    # The reply is taken from the script before waiting, as a real model has the request
    # once it is sent: a cancelled call uses its reply up.
    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        options = options if options is not None else ChatOptions()
        response = await self.inner.get_response(messages, options)
        await self._wait()
        return response

    async def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[AgentResponseUpdate]:
        options = options if options is not None else ChatOptions()
        updates = [u async for u in self.inner.get_streaming_response(messages, options)]
        pace = await self._wait()
        for update in updates:
            await asyncio.sleep(pace)
            yield update

    def __repr__(self) -> str:
        return f"ScriptFileClient({self.inner!r})"

"""An embedded local model: a GGUF file run in-process on llama.cpp (`xllamacpp`), no key.

Small models whose chat template has no tool-call format still call tools: decoding is
constrained by a JSON Schema built from the tools' schemas, so every answer is either
`{"tool": <name>, "arguments": {...}}` for one of the tools or `{"answer": "<text>"}`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import struct
import threading
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any, Literal

from raf.clients.errors import (
    BadRequestError,
    ClientError,
    ContextOverflowError,
    is_context_overflow,
)
from raf.clients.local_threads import THREADS_ENV, default_threads
from raf.clients.local_tools import ConstrainedStream, text_messages, tool_schema
from raf.clients.model_store import DEFAULT_MODEL, is_pulled, model_path, pull_model
from raf.clients.openai_wire import (
    ChunkAssembler,
    completion_to_updates,
    to_openai_messages,
    to_openai_tool_choice,
    to_openai_tools,
)
from raf.core.errors import ConfigurationError, MissingExtraError
from raf.core.messages import ChatMessage, new_id
from raf.core.options import ChatOptions
from raf.core.responses import (
    AgentResponseUpdate,
    ChatResponse,
    fold_updates,
)

log = logging.getLogger("raf.clients.local")

__all__ = ["THREADS_ENV", "LocalChatClient", "default_threads", "read_chat_template"]

ToolMode = Literal["auto", "grammar", "native"]
DEFAULT_CONTEXT = 4096
DEFAULT_MAX_TOKENS = 512
_TEMPLATE_KEY = b"tokenizer.chat_template"
_SCAN_BYTES = 48 << 20


def read_chat_template(path: Path) -> str | None:
    """The chat template stored in a GGUF file's metadata, if any."""
    with path.open("rb") as handle:
        data = handle.read(_SCAN_BYTES)
    index = data.find(_TEMPLATE_KEY)
    if index < 0:
        return None
    at = index + len(_TEMPLATE_KEY)
    try:
        (kind,) = struct.unpack_from("<I", data, at)
        (length,) = struct.unpack_from("<Q", data, at + 4)
    except struct.error:
        return None
    if kind != 8:  # GGUF string
        return None
    return data[at + 12 : at + 12 + length].decode("utf-8", errors="replace")


class _Engine:
    """One loaded model (a llama.cpp server object living in this process)."""

    def __init__(self, path: Path, n_ctx: int, threads: int, verbose: bool) -> None:
        try:
            import xllamacpp  # type: ignore[import-untyped,unused-ignore]
        except ImportError:
            raise MissingExtraError("the embedded local model", "local", "xllamacpp") from None
        with path.open("rb") as handle:
            magic = handle.read(4)
        if magic != b"GGUF":
            raise ConfigurationError(
                f"{path} is not a GGUF model file (it starts with {magic!r}, not b'GGUF'); "
                "give the path of a .gguf file, or use `local` for the default model"
            )
        params = xllamacpp.CommonParams()
        params.model.path = str(path)
        params.n_ctx = n_ctx
        params.n_parallel = 1
        params.cpuparams.n_threads = threads
        params.cpuparams_batch.n_threads = threads
        params.warmup = False
        params.verbosity = 3 if verbose else -1
        try:
            self.server = xllamacpp.Server(params)
        except RuntimeError as exc:
            raise ConfigurationError(
                f"llama.cpp could not load {path}: {exc}; the file may be damaged or cut "
                "short, or hold a model this llama.cpp does not know (the default model "
                "is fetched again by `raf models pull --force`)"
            ) from None
        self.template = read_chat_template(path)


_ENGINES: dict[tuple[str, int, int], _Engine] = {}
_ENGINES_LOCK = threading.Lock()


def _engine(path: Path, n_ctx: int, threads: int, verbose: bool) -> _Engine:
    key = (str(path.resolve()), n_ctx, threads)
    with _ENGINES_LOCK:
        engine = _ENGINES.get(key)
        if engine is None:
            engine = _Engine(path, n_ctx, threads, verbose)
            _ENGINES[key] = engine
        return engine


class LocalChatClient:
    """A GGUF model run in this process; the default model is pulled on first use.

    `tool_mode="auto"` uses the chat template's own tool format when it has one and a
    grammar otherwise; `"grammar"` and `"native"` force either. Inference runs in a
    worker thread, never on the event loop; models are loaded once per process.
    """

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        n_ctx: int = DEFAULT_CONTEXT,
        threads: int | None = None,
        tool_mode: ToolMode = "auto",
        max_tokens: int = DEFAULT_MAX_TOKENS,
        temperature: float | None = None,
        seed: int | None = None,
        auto_pull: bool = True,
        verbose: bool = False,
    ) -> None:
        for name, value in (("n_ctx", n_ctx), ("threads", threads), ("max_tokens", max_tokens)):
            if value is not None and (not isinstance(value, int) or value < 1):
                raise ConfigurationError(
                    f"LocalChatClient({name}={value!r}): give a whole number >= 1"
                )
        if tool_mode not in ("auto", "grammar", "native"):
            raise ConfigurationError(
                f"LocalChatClient(tool_mode={tool_mode!r}): use 'auto', 'grammar' or 'native'"
            )
        self.path = Path(model_path).expanduser() if model_path else None
        self.n_ctx = n_ctx
        self.threads = threads if threads is not None else default_threads()
        self.tool_mode = tool_mode
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.seed = seed
        self.auto_pull = auto_pull
        self.verbose = verbose
        self.model = self.path.stem if self.path else DEFAULT_MODEL.name
        self.provider = "local"
        self._engine: _Engine | None = None
        self._load_lock = asyncio.Lock()

    def __repr__(self) -> str:
        where = str(self.path) if self.path else f"{DEFAULT_MODEL.name} (default)"
        return f"LocalChatClient({where}, threads={self.threads}, n_ctx={self.n_ctx})"

    async def load(self) -> None:
        """Load the model now (pulling the default one if needed) instead of on first use."""
        await self._load()

    async def _load(self) -> _Engine:
        async with self._load_lock:
            if self._engine is not None:
                return self._engine
            path = self.path
            if path is None:
                path = model_path()
                if not is_pulled():
                    if not self.auto_pull:
                        raise ConfigurationError(
                            f"the default local model is not downloaded yet: run "
                            f"`raf models pull` (it goes to {path})"
                        )
                    log.info("fetching the default local model (once) into %s", path.parent)
                    path = await pull_model(progress=log.info)
            elif not path.is_file():
                raise ConfigurationError(
                    f"local model file {path} does not exist; give the path of a .gguf file "
                    "(local:/path/model.gguf) or use `local` for the default model"
                )
            self._engine = await asyncio.to_thread(
                _engine, path, self.n_ctx, self.threads, self.verbose
            )
            return self._engine

    def _native(self, engine: _Engine) -> bool:
        """Whether the chat template formats tool calls itself."""
        if self.tool_mode == "auto":
            return bool(engine.template and "tools" in engine.template)
        return self.tool_mode == "native"

    def _grammar(self, engine: _Engine, options: ChatOptions) -> bool:
        if not options.tools or options.tool_choice == "none":
            return False
        return not self._native(engine)

    def _body(
        self, engine: _Engine, messages: Sequence[ChatMessage], options: ChatOptions, grammar: bool
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"max_tokens": options.max_tokens or self.max_tokens}
        if grammar:
            body["messages"] = text_messages(messages, options.tools)
            choice = options.tool_choice if isinstance(options.tool_choice, str) else None
            names = [t.name for t in options.tools]
            if choice not in (None, "auto", "required", *names):
                raise BadRequestError(
                    f"tool_choice {choice!r} names no tool offered to the local model "
                    f"(offered: {', '.join(names)}); name one of them, or use 'auto'",
                    provider="local",
                    model=self.model,
                )
            body["json_schema"] = tool_schema(options.tools, choice)
        elif not self._native(engine):
            body["messages"] = text_messages(messages)
        else:
            body["messages"] = [
                {**m, "content": m.get("content") or ""} for m in to_openai_messages(messages)
            ]
            if options.tools and options.tool_choice != "none":
                body["tools"] = to_openai_tools(options.tools)
                if options.tool_choice is not None:
                    body["tool_choice"] = to_openai_tool_choice(options.tool_choice)
        temperature = options.temperature if options.temperature is not None else self.temperature
        if temperature is not None:
            body["temperature"] = temperature
        seed = options.seed if options.seed is not None else self.seed
        if seed is not None:
            body["seed"] = seed
        if options.top_p is not None:
            body["top_p"] = options.top_p
        if options.stop:
            body["stop"] = list(options.stop)
        if options.response_format is not None and not grammar:
            body["response_format"] = options.response_format
        body.update(options.additional)
        return body

    def _check(self, result: Any) -> dict[str, Any]:
        if not isinstance(result, dict):
            raise ClientError(
                f"the local model answered {type(result).__name__}, not a dict",
                provider="local",
                model=self.model,
            )
        error = result.get("error")
        if error:
            message = str(error.get("message") if isinstance(error, dict) else error)
            if is_context_overflow(message) or "context size" in message:
                raise ContextOverflowError(
                    f"the conversation does not fit the local model's context of {self.n_ctx} "
                    f"tokens: {message}; start a new session, shorten the history, or raise "
                    "n_ctx (LocalChatClient(n_ctx=...))",
                    provider="local",
                    model=self.model,
                )
            raise ClientError(
                f"the local model failed: {message}", provider="local", model=self.model
            )
        return result

    def _call(self, engine: _Engine, body: dict[str, Any], on_chunk: Any) -> Any:
        """One request to llama.cpp (in a worker thread); its refusals become raf errors."""
        try:
            if on_chunk is None:
                return engine.server.handle_chat_completions(body)
            return engine.server.handle_chat_completions(body, on_chunk)
        except (ValueError, RuntimeError) as exc:
            raise BadRequestError(
                f"the local model refused the request: {exc}; if a tool's JSON Schema is the "
                "cause, simplify it (no $ref to missing definitions) or pass tool_mode='native'",
                provider="local",
                model=self.model,
            ) from None

    async def _complete(self, engine: _Engine, body: dict[str, Any]) -> dict[str, Any]:
        result = await asyncio.to_thread(self._call, engine, body, None)
        return self._check(result)

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        options = options if options is not None else ChatOptions()
        engine = await self._load()
        grammar = self._grammar(engine, options)
        data = await self._complete(engine, self._body(engine, messages, options, grammar))
        message_id = new_id("msg")
        if grammar:
            choice = (data.get("choices") or [{}])[0]
            constrained = ConstrainedStream(message_id)
            updates = constrained.feed((choice.get("message") or {}).get("content") or "")
            updates += constrained.finish(choice.get("finish_reason"), data.get("usage"))
        else:
            updates = completion_to_updates(data, message_id)
        response = fold_updates(updates)
        response.model_id = self.model
        return response

    async def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[AgentResponseUpdate]:
        options = options if options is not None else ChatOptions()
        engine = await self._load()
        grammar = self._grammar(engine, options)
        body = self._body(engine, messages, options, grammar)
        message_id = new_id("msg")
        if not grammar:
            assembler = ChunkAssembler(message_id)
            async for chunk in self._chunks(engine, body):
                for update in assembler.feed(chunk):
                    yield update
            for update in assembler.finish():
                yield update
            return
        # Constrained JSON: the answer's text streams as it is decoded; a call when whole.
        constrained = ConstrainedStream(message_id)
        finish: str | None = None
        usage: dict[str, Any] | None = None
        async for chunk in self._chunks(engine, body):
            usage = chunk.get("usage") or usage
            for choice in chunk.get("choices") or ():
                finish = choice.get("finish_reason") or finish
                piece = (choice.get("delta") or {}).get("content")
                if piece:
                    for update in constrained.feed(piece):
                        yield update
        for update in constrained.finish(finish, usage):
            yield update

    async def _chunks(self, engine: _Engine, body: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        """Stream chunks from llama.cpp's worker thread; stops it when the consumer stops."""
        body = {**body, "stream": True, "stream_options": {"include_usage": True}}
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[Any] = asyncio.Queue()
        stop = threading.Event()
        done = object()

        def on_chunk(chunk: Any) -> bool:
            loop.call_soon_threadsafe(queue.put_nowait, chunk)
            return stop.is_set()

        def run() -> Any:
            try:
                return self._call(engine, body, on_chunk)
            finally:
                loop.call_soon_threadsafe(queue.put_nowait, done)

        worker = asyncio.ensure_future(asyncio.to_thread(run))
        try:
            while True:
                chunk = await queue.get()
                if chunk is done:
                    break
                if isinstance(chunk, str):
                    chunk = json.loads(chunk)
                yield self._check(chunk)
            result = await worker
            if isinstance(result, dict) and result.get("error"):
                self._check(result)
        finally:
            stop.set()
            if not worker.done():
                await asyncio.shield(worker)

"""An embedded local model: a GGUF file run in-process on llama.cpp (`xllamacpp`), no key.

Small models whose chat template has no tool-call format still call tools: decoding is
constrained by a JSON Schema, so a call is `{"tool": <name>, "arguments": {...}}` for one
of the tools; by default the tool is chosen first and its arguments drawn from the live
context (`local.choice`), and the answer is written in plain text after.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import logging
import os
import struct
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from raf.clients.base import ModelClient
from raf.clients.errors import (
    BadRequestError,
    ClientError,
    ContextOverflowError,
    is_context_overflow,
)
from raf.clients.local.choice import (
    MIN_SIMILARITY,
    Embed,
    LiveContext,
    answer_messages,
    choice_schema,
    first_named,
    named_steps,
    rank_by_meaning,
    relevant_tools,
    tool_text,
    turn_start,
    user_text,
)
from raf.clients.local.facts import (
    Fact,
    answer_schema,
    facts_prompt,
    not_said,
    pointed,
    turn_facts,
)
from raf.clients.local.model_store import (
    DEFAULT_MODEL,
    ModelPullError,
    is_pulled,
    model_path,
    pull_model,
)
from raf.clients.local.threads import THREADS_ENV, default_threads
from raf.clients.local.tools import call_updates, parse_constrained, text_updates, usage_of
from raf.clients.local.wire import LocalWire, refuse_media
from raf.clients.provider import ChunkStream, Provider
from raf.core.contents import FunctionCallContent
from raf.core.errors import ConfigurationError, MissingExtraError
from raf.core.messages import ChatMessage, new_id
from raf.core.options import ChatOptions
from raf.core.responses import AgentResponseUpdate, ChatResponse, UpdateKind, fold_stream
from raf.core.tools import argument_candidates
from raf.core.usage import UsageDetails

log = logging.getLogger("raf.clients.local")

__all__ = [
    "MAX_TOKENS_ENV",
    "THREADS_ENV",
    "LocalChatClient",
    "LocalProvider",
    "default_max_tokens",
    "default_threads",
    "read_chat_template",
]

ToolMode = Literal["auto", "staged", "grammar", "native"]
DEFAULT_CONTEXT = 4096
DEFAULT_MAX_TOKENS = 512
MAX_TOKENS_ENV = "RAF_LOCAL_MAX_TOKENS"
"""Environment variable: the most tokens an answer of the embedded model takes when the
request sets no limit (`DEFAULT_MAX_TOKENS` unless set; `max_tokens=` overrides it)."""
CHOICE_TOKENS = 160
"""Tokens the choice of a call may take (a call's JSON; an answer is written after)."""
ANSWER_TOKENS = 200
"""Tokens the choice of a fact as the answer may take (the longest fact, as JSON)."""
DEFAULT_TEMPERATURE = 0.0
"""Greedy decoding unless a temperature is given: on the shipped small-model eval the
default model gave the same right answer to `raf ask`'s question 11 times in 11 at 0, and
a wrong one in 11 at llama.cpp's own default (0.8); see README, Models, for the table."""
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


class LocalProvider(Provider):
    """A GGUF file run in this process: loaded (and the default pulled) on first use, each
    request in a worker thread, its refusals as raf errors; there is no key and no URL."""

    protocol = "llama.cpp's chat completions"

    def __init__(
        self,
        path: Path | None,
        *,
        model: str,
        n_ctx: int,
        threads: int,
        auto_pull: bool,
        verbose: bool,
    ) -> None:
        super().__init__("local")
        self.path = path
        self.model = model
        self.n_ctx = n_ctx
        self.threads = threads
        self.auto_pull = auto_pull
        self.verbose = verbose
        self._engine: _Engine | None = None
        self._load_lock = asyncio.Lock()

    async def load(self) -> _Engine:
        """The loaded model, pulling the default one first if needed."""
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

    def _call(self, body: dict[str, Any], on_chunk: Callable[[Any], bool] | None) -> Any:
        """One request to llama.cpp (in a worker thread); its refusals become raf errors."""
        assert self._engine is not None, "load() runs before any request"
        server = self._engine.server
        try:
            if on_chunk is None:
                return server.handle_chat_completions(body)
            return server.handle_chat_completions(body, on_chunk)
        except (ValueError, RuntimeError) as exc:
            raise BadRequestError(
                f"the local model refused the request: {exc}; if a tool's JSON Schema is the "
                "cause, simplify it (no $ref to missing definitions) or pass tool_mode='native'",
                provider="local",
                model=self.model,
            ) from None

    async def complete(self, body: dict[str, Any]) -> Any:
        return self._check(await asyncio.to_thread(self._call, body, None))

    async def open_stream(self, body: dict[str, Any]) -> ChunkStream:
        return _ThreadStream(self, body)


class _ThreadStream(ChunkStream):
    """Chunks from llama.cpp's worker thread; closing stops generation and waits for it."""

    def __init__(self, provider: LocalProvider, body: dict[str, Any]) -> None:
        self._provider = provider
        self._body = body
        self._stop = threading.Event()
        self._worker: asyncio.Future[Any] | None = None

    async def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[Any] = asyncio.Queue()
        done = object()
        stop = self._stop

        def on_chunk(chunk: Any) -> bool:
            loop.call_soon_threadsafe(queue.put_nowait, chunk)
            return stop.is_set()

        def run() -> Any:
            try:
                return self._provider._call(self._body, on_chunk)
            finally:
                loop.call_soon_threadsafe(queue.put_nowait, done)

        self._worker = worker = asyncio.ensure_future(asyncio.to_thread(run))
        while True:
            chunk = await queue.get()
            if chunk is done:
                break
            if isinstance(chunk, str):
                chunk = json.loads(chunk)
            yield self._provider._check(chunk)
        result = await worker
        if isinstance(result, dict) and result.get("error"):
            self._provider._check(result)

    async def aclose(self) -> None:
        self._stop.set()
        if self._worker is not None and not self._worker.done():
            await asyncio.shield(self._worker)


_MAX_TOOL_VECTORS = 1024
"""Tool texts whose vectors a client keeps; past that the cache starts again."""


def _dot(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity of two unit-length vectors."""
    return sum(x * y for x, y in zip(a, b, strict=True))


def default_max_tokens() -> int:
    """The most tokens an answer takes when the request sets no limit: $RAF_LOCAL_MAX_TOKENS
    when set (a slow machine's cap), else `DEFAULT_MAX_TOKENS`."""
    explicit = os.environ.get(MAX_TOKENS_ENV, "").strip()
    if not explicit:
        return DEFAULT_MAX_TOKENS
    try:
        value = int(explicit)
    except ValueError:
        value = 0
    if value < 1:
        raise ConfigurationError(
            f"{MAX_TOKENS_ENV}={explicit!r}: give a whole number of tokens >= 1"
        )
    return value


class LocalChatClient(ModelClient[LocalWire]):
    """A GGUF model run in this process; the default model is pulled on first use.

    `tool_mode="auto"` uses the chat template's own tool format when it has one and the
    staged choice otherwise (`"staged"`, see `local.choice`: the tools the message is
    about, the call decoded from the live context, the answer in plain text);
    `"grammar"` (one grammar for a call or an answer) and `"native"` force the others.
    Inference runs in a worker thread, never on the event loop; models are loaded once
    per process. An
    answer that writes the same passage twice in a row (16 characters or more; a shorter
    one over 160; three times inside a call) ends after the first copy and generation
    stops there, unless `stop_repeats=False` (for prompts that ask for repetition).
    """

    reports_model = False  # one file, one model: its stem names it, whatever options say
    media_types: tuple[str, ...] = ()
    """The data content types the model takes: none, it reads text only (raf loads no
    vision projector)."""

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        n_ctx: int = DEFAULT_CONTEXT,
        threads: int | None = None,
        tool_mode: ToolMode = "auto",
        max_tokens: int | None = None,
        temperature: float | None = None,
        seed: int | None = None,
        stop_repeats: bool = True,
        auto_pull: bool = True,
        verbose: bool = False,
        embedder: Embed | Literal["local"] | None = "local",
        tool_threshold: float = MIN_SIMILARITY,
    ) -> None:
        if max_tokens is None:
            max_tokens = default_max_tokens()
        for name, value in (("n_ctx", n_ctx), ("threads", threads), ("max_tokens", max_tokens)):
            if value is not None and (not isinstance(value, int) or value < 1):
                raise ConfigurationError(
                    f"LocalChatClient({name}={value!r}): give a whole number >= 1"
                )
        if tool_mode not in ("auto", "staged", "grammar", "native"):
            raise ConfigurationError(
                f"LocalChatClient(tool_mode={tool_mode!r}): use 'auto', 'staged', 'grammar' "
                "or 'native'"
            )
        path = Path(model_path).expanduser() if model_path else None
        model = path.stem if path else DEFAULT_MODEL.name
        api = LocalProvider(
            path,
            model=model,
            n_ctx=n_ctx,
            threads=threads if threads is not None else default_threads(),
            auto_pull=auto_pull,
            verbose=verbose,
        )
        if temperature is None:
            temperature = DEFAULT_TEMPERATURE
        wire = LocalWire(
            max_tokens=max_tokens, temperature=temperature, seed=seed, stop_repeats=stop_repeats
        )
        super().__init__(model, api, wire)
        self.api: LocalProvider = api
        self.tool_mode = tool_mode
        self.embedder = embedder
        """Texts to vectors: the staged choice ranks tools by meaning with it. `"local"`:
        the packaged embedder (`local.embedder`), or the words when it cannot run (no
        ONNX Runtime, its model not fetched); None: the words the question shares with
        each tool."""
        self.tool_threshold = tool_threshold
        """The least similarity of meaning a tool needs to the question to be called."""
        self._tool_vectors: dict[str, list[float]] = {}
        self._no_embedder = False

    @property
    def path(self) -> Path | None:
        """The GGUF file; None: the default model."""
        return self.api.path

    @property
    def n_ctx(self) -> int:
        """The context window it is loaded with, in tokens."""
        return self.api.n_ctx

    @property
    def threads(self) -> int:
        """Threads llama.cpp generates with."""
        return self.api.threads

    @property
    def auto_pull(self) -> bool:
        """Whether the default model is pulled on first use."""
        return self.api.auto_pull

    @property
    def verbose(self) -> bool:
        """Whether llama.cpp logs."""
        return self.api.verbose

    @property
    def max_tokens(self) -> int:
        """Answer limit when the options set none."""
        return self.wire.max_tokens

    @property
    def temperature(self) -> float | None:
        """Temperature when the options set none."""
        return self.wire.temperature

    @property
    def stop_repeats(self) -> bool:
        """Whether an answer that repeats a passage is stopped after its first copy."""
        return self.wire.stop_repeats

    @property
    def seed(self) -> int | None:
        """Seed when the options set none."""
        return self.wire.seed

    def __repr__(self) -> str:
        where = str(self.path) if self.path else f"{DEFAULT_MODEL.name} (default)"
        return f"LocalChatClient({where}, threads={self.threads}, n_ctx={self.n_ctx})"

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        """The answer, streamed underneath: a model that repeats itself is stopped at the
        second copy instead of writing to the token limit (see `local.repeats`)."""
        return await fold_stream(self.get_streaming_response(messages, options))

    async def load(self) -> None:
        """Load the model now (pulling the default one if needed) instead of on first use."""
        await self.api.load()

    def _native(self, engine: _Engine) -> bool:
        """Whether the chat template formats tool calls itself."""
        if self.tool_mode == "auto":
            return bool(engine.template and "tools" in engine.template)
        return self.tool_mode == "native"

    async def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[AgentResponseUpdate]:
        """With tools offered and `staged` decoding (the default for a template without a
        tool format): first the choice, a call or the decision to answer, decoded under a
        grammar drawn from the live context (`local.choice`); then, if it is to answer,
        the answer in plain text, as without tools."""
        options = options if options is not None else ChatOptions()
        refuse_media(messages, self.model)  # before the model is loaded, or fetched
        engine = await self.api.load()
        staged = self.tool_mode == "staged" or (
            self.tool_mode == "auto" and not self._native(engine)
        )
        if not staged or not options.tools or options.tool_choice == "none":
            async for update in super().get_streaming_response(messages, options):
                yield update
            return
        call, usage = await self._choose(messages, options)
        message_id = new_id("msg")
        if call is not None:
            for update in call_updates(call, message_id, usage):
                yield update
            return
        if usage is not None:
            yield AgentResponseUpdate(kind=UpdateKind.USAGE, message_id=message_id, usage=usage)
        plain = replace(options, tools=[], tool_choice=None)
        facts = turn_facts(messages)
        if facts is not None:
            text, usage = await self._answer_from(messages, plain, facts)
            for update in text_updates(text, message_id, usage):
                yield update
            return
        async for update in super().get_streaming_response(answer_messages(messages), plain):
            yield update

    async def _choose(
        self, messages: Sequence[ChatMessage], options: ChatOptions
    ) -> tuple[FunctionCallContent | None, UsageDetails | None]:
        """The call the model chooses under the live grammar, or None to answer."""
        choice = options.tool_choice if isinstance(options.tool_choice, str) else None
        names = [t.name for t in options.tools]
        if choice not in (None, "auto", "required", *names):
            raise BadRequestError(
                f"tool_choice {choice!r} names no tool offered to the local model "
                f"(offered: {', '.join(names)}); name one of them, or use 'auto'",
                provider="local",
                model=self.model,
            )
        tools = list(options.tools)
        known = [v for t in tools for vs in argument_candidates(t).values() for v in vs]
        live = LiveContext(messages, known=known)
        if choice in (None, "auto"):
            # the tools the question is about, not yet called in this turn; none: answer
            called = {c.name for c in live.calls}
            question = user_text(messages)
            if called:  # after a result, only a further step the question names
                relevant = named_steps(tools, question, tools)
            else:
                named = {t.name for t in tools if live.acts_on_named(t)}
                relevant = await self._relevant(tools, question, named)
            tools = first_named([t for t in relevant if t.name not in called], question)
        elif choice != "required":
            tools = [t for t in tools if t.name == choice]
        offered: list[tuple[Any, dict[str, Any]]] = []
        for t in tools:
            parameters = live.parameters(t)
            if parameters is not None and (
                choice not in (None, "auto") or live.callable(parameters)
            ):
                offered.append((t, parameters))
        if not offered:
            return None, None
        wire = replace(self.wire, native=False, grammar=True)
        shown = [t for t, _ in offered]  # the prompt describes only the tools offered
        body = wire.request(
            messages,
            replace(options, tools=shown, output_schema=None),
            model=self.model,
            stream=False,
        )
        body["json_schema"] = choice_schema(offered, may_answer=False)
        body["max_tokens"] = CHOICE_TOKENS
        data = await self.api.complete(body)
        message = (data.get("choices") or [{}])[0].get("message") or {}
        contents, _ = parse_constrained(str(message.get("content") or ""))
        usage = usage_of(data.get("usage"))
        call = next((c for c in contents if isinstance(c, FunctionCallContent)), None)
        if call is not None and choice in (None, "auto"):
            if live.repeats(call):
                return None, usage  # the same call again: its result is there, so answer
            tool = next((t for t in shown if t.name == call.name), None)
            if tool is not None and live.confused(call, tool):
                return None, usage  # one value for two arguments: the message lacks one
        return call, usage

    async def _answer_from(
        self, messages: Sequence[ChatMessage], options: ChatOptions, found: list[Fact]
    ) -> tuple[str, UsageDetails | None]:
        """The answer from this turn's file results: that the file does not mention what
        was asked, the one fact there is, or the fact the model chooses under a grammar
        (`local.facts`)."""
        missing = not_said(messages)
        if missing is not None:
            return missing, None
        facts = pointed(found, user_text(messages))
        if len(facts) == 1:
            return facts[0], None
        start = turn_start(messages)
        asked = [*messages[:start], ChatMessage.user(facts_prompt(facts, user_text(messages)))]
        wire = replace(self.wire, native=False, grammar=True)
        body = wire.request(
            asked, replace(options, output_schema=None), model=self.model, stream=False
        )
        body["json_schema"] = answer_schema(facts)
        body["max_tokens"] = ANSWER_TOKENS
        data = await self.api.complete(body)
        message = (data.get("choices") or [{}])[0].get("message") or {}
        try:
            chosen = json.loads(str(message.get("content") or ""))["answer"]
        except (ValueError, KeyError, TypeError):
            chosen = None  # cut at the token limit: the first fact, the result's own summary
        return (chosen if chosen in facts else facts[0]), usage_of(data.get("usage"))

    async def _relevant(
        self, tools: list[Any], question: str, named: set[str] | None = None
    ) -> list[Any]:
        """The tools the question is about, closest first (none: no tool fits); `named`:
        the tools that act on something the question names, considered first."""
        embed = self._embed()
        if embed is None:
            return relevant_tools(tools, question)
        if not tools or not question.strip():
            return []
        try:
            scores = await asyncio.to_thread(self._similarities, embed, question, tools)
        except (MissingExtraError, ModelPullError, OSError) as exc:
            if self.embedder != "local":
                raise
            log.warning("tools are chosen by their words: the local embedder cannot run (%s)", exc)
            self._no_embedder = True
            return relevant_tools(tools, question)
        return rank_by_meaning(
            tools, question, scores, threshold=self.tool_threshold, named=named or set()
        )

    def _embed(self) -> Embed | None:
        """The embedder to rank tools with (None: rank by words)."""
        if self.embedder != "local":
            return self.embedder
        if self._no_embedder:
            return None
        if importlib.util.find_spec("onnxruntime") is None:
            log.info("tools are chosen by their words: ONNX Runtime is not installed")
            self._no_embedder = True
            return None
        from raf.clients.local.embedder import default_embedder

        return default_embedder()

    def _similarities(self, embed: Embed, question: str, tools: list[Any]) -> list[float]:
        """The question's similarity to each tool; a tool's vector is computed once."""
        texts = [tool_text(t) for t in tools]
        missing = list(dict.fromkeys(t for t in texts if t not in self._tool_vectors))
        vectors = embed([question, *missing])
        if len(self._tool_vectors) + len(missing) > _MAX_TOOL_VECTORS:
            self._tool_vectors.clear()
        self._tool_vectors.update(zip(missing, vectors[1:], strict=True))
        asked = vectors[0]
        return [_dot(asked, self._tool_vectors[t]) for t in texts]

    async def _prepare(
        self, messages: Sequence[ChatMessage], options: ChatOptions, *, stream: bool
    ) -> tuple[LocalWire, dict[str, Any]]:
        refuse_media(messages, self.model)
        engine = await self.api.load()
        wire = replace(self.wire, native=self._native(engine))
        wire.grammar = wire.wants_grammar(options)
        return wire, wire.request(messages, options, model=self.model, stream=stream)

"""A streamed run starts few async generators of raf's run path: the one the caller
iterates, the one that drives the steps in the caller's task, and one per model call (its
stream, whose deltas are relayed straight to the caller), with or without chat
middleware; a caller that stops early stops the model call where it waits, its client
stream closed at once."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

import raf
from raf import AgentBuilder, AgentResponseUpdate, UpdateKind, tool
from raf.core.middleware import CallNext, ChatContext
from raf.testing import ScriptedChatClient, call, reply

RAF = Path(raf.__file__).resolve().parent
RUN_PATH = (RAF / "agent", RAF / "core")
"""Where the run path's own generators live (the scripted model's are in `testing`)."""


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def passing(context: ChatContext, call_next: CallNext) -> None:
    await call_next()


def _started_generators(chat_middleware: bool) -> tuple[list[str], str]:
    """The run path's async generators started during one streamed run, and its text."""
    model = ScriptedChatClient([reply("", call("add", a=1, b=2)), "3"])
    builder = AgentBuilder("adder").with_chat_client(model).with_tool(add)
    if chat_middleware:
        builder = builder.use_chat_middleware(passing)
    agent = builder.build()
    started: list[str] = []

    async def stream() -> str:
        firstiter, finalizer = sys.get_asyncgen_hooks()

        def seen(generator: Any) -> None:
            code = generator.ag_code
            where = Path(code.co_filename).resolve()
            if any(where.is_relative_to(folder) for folder in RUN_PATH):
                started.append(code.co_qualname)
            if firstiter is not None:
                firstiter(generator)

        sys.set_asyncgen_hooks(firstiter=seen, finalizer=finalizer)
        try:
            return "".join([u.text async for u in agent.run_stream("1 + 2?")])
        finally:
            sys.set_asyncgen_hooks(firstiter=firstiter, finalizer=finalizer)

    return started, asyncio.run(stream())


@pytest.mark.parametrize("chat_middleware", [False, True])
def test_a_streamed_run_starts_one_generator_per_model_call_and_two_per_run(
    chat_middleware: bool,
) -> None:
    started, text = _started_generators(chat_middleware)
    assert text == "3"
    # two model calls; chat middleware adds no generator of its own
    assert started == ["run_stream", "handed_out", "_leaf_stream", "_leaf_stream"], started


class _CountingModel:
    """A model whose stream notes when it is closed."""

    def __init__(self) -> None:
        self.closed = False

    async def get_response(self, messages: Any, options: Any) -> Any:
        raise AssertionError("the run streams")

    async def get_streaming_response(self, messages: Any, options: Any) -> Any:
        try:
            for index in range(5):
                yield AgentResponseUpdate(kind=UpdateKind.TEXT_DELTA, text=str(index))
        finally:
            self.closed = True


def test_a_caller_that_stops_early_closes_the_model_stream_at_once() -> None:
    model = _CountingModel()
    agent = AgentBuilder("early").with_chat_client(model).build()

    async def stop_after_one() -> bool:
        updates = agent.run_stream("hi")
        async for _ in updates:
            break
        await updates.aclose()  # type: ignore[attr-defined]
        return model.closed  # before the loop would finalize what was left open

    assert asyncio.run(stop_after_one())

"""What the middleware seam costs: one agent run with no middleware, and with one
pass-through middleware of each kind (agent, chat, function), in one process.

The run is three model turns with three tool calls (one parallel pair) against a
scripted model, as in `overhead.py`; `run` and `run_stream` are both measured.
With nothing registered no chain is built, so "none" is the loop's own cost.

    python benchmarks/middleware_overhead.py [--runs 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

from raf import AgentBuilder, ChatOptions, ChatResponse, tool
from raf.core.middleware import AgentRunContext, CallNext, ChatContext, FunctionInvocationContext
from raf.testing import ScriptedChatClient, call, reply


async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def upper(text: str) -> str:
    """Upper-case a text."""
    return text.upper()


async def lookup(key: str) -> str:
    """Look a key up."""
    return {"k": "value"}.get(key, "missing")


class CyclingModel(ScriptedChatClient):
    """The scripted model, replaying its three turns forever."""

    def __init__(self) -> None:
        super().__init__(
            [
                reply("", call("add", a=2, b=3, call_id="c1")),
                reply("", call("upper", text="x", call_id="c2"), call("lookup", key="k")),
                "done",
            ]
        )

    def _cycle(self) -> None:
        if self.remaining == 0:
            self._next = 0
        self.requests.clear()

    async def get_response(self, messages: Any, options: ChatOptions | None = None) -> ChatResponse:
        self._cycle()
        return await super().get_response(messages, options)

    async def get_streaming_response(self, messages: Any, options: Any = None) -> Any:
        self._cycle()
        async for update in super().get_streaming_response(messages, options):
            yield update


async def through_agent(context: AgentRunContext, call_next: CallNext) -> None:
    await call_next()


async def through_chat(context: ChatContext, call_next: CallNext) -> None:
    await call_next()


async def through_function(context: FunctionInvocationContext, call_next: CallNext) -> None:
    await call_next()


def _agent(*middleware: Any) -> Any:
    builder = AgentBuilder().with_chat_client(CyclingModel())
    builder.with_tools([tool(add), tool(upper), tool(lookup)])
    return builder.use_middleware(*middleware).build()


PLAIN = _agent()
WRAPPED = _agent(through_agent, through_chat, through_function)


async def _run(agent: Any) -> str:
    return str((await agent.run("go")).text)


async def _stream(agent: Any) -> str:
    return "".join([u.text async for u in agent.run_stream("go")])


async def measure(
    fns: dict[str, Callable[[], Awaitable[str]]], runs: int, batches: int = 10
) -> dict[str, float]:
    """Median microseconds per run of each function, batches interleaved."""
    for fn in fns.values():
        for _ in range(50):
            assert await fn() == "done"
    samples: dict[str, list[float]] = {name: [] for name in fns}
    per_batch = max(1, runs // batches)
    for _ in range(batches):
        for name, fn in fns.items():
            started = time.perf_counter()
            for _ in range(per_batch):
                await fn()
            samples[name].append((time.perf_counter() - started) / per_batch * 1e6)
    return {name: statistics.median(values) for name, values in samples.items()}


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=2000)
    args = parser.parse_args()
    got = await measure(
        {
            "run, no middleware": lambda: _run(PLAIN),
            "run, 3 pass-through": lambda: _run(WRAPPED),
            "stream, no middleware": lambda: _stream(PLAIN),
            "stream, 3 pass-through": lambda: _stream(WRAPPED),
        },
        args.runs,
    )
    for name, micros in got.items():
        print(f"{name:24}: {micros:8.1f} us/run")


if __name__ == "__main__":
    asyncio.run(main())

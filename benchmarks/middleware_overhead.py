"""What the middleware seam costs: one agent run with no middleware, and with one
pass-through middleware of each kind (agent, chat, function), in one process.

The run is three model turns with three tool calls (one parallel pair) against a
scripted model, as in `overhead.py`; `run` and `run_stream` are both measured, on raf's
own code. With nothing registered no chain is built (a test checks it: the seam is one
`if` per model call, tool call and run), so "no middleware" is the run's own cost; the
difference to "3 pass-through" is what one pass-through middleware of each kind costs,
printed with the spread of the batch-pair differences.

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


# -- timing ----------------------------------------------------------------------------


async def measure(
    cases: dict[str, Callable[[], Awaitable[str]]], runs: int, batches: int = 10
) -> dict[str, list[float]]:
    """Microseconds per run of each case in every batch, batches interleaved."""
    for fn in cases.values():
        for _ in range(50):
            assert await fn() == "done"
    samples: dict[str, list[float]] = {name: [] for name in cases}
    per_batch = max(1, runs // batches)
    for _ in range(batches):
        for name, fn in cases.items():
            started = time.perf_counter()
            for _ in range(per_batch):
                await fn()
            samples[name].append((time.perf_counter() - started) / per_batch * 1e6)
    return samples


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--batches", type=int, default=20)
    args = parser.parse_args()
    got = await measure(
        {
            "run, no middleware": lambda: _run(PLAIN),
            "run, 3 pass-through": lambda: _run(WRAPPED),
            "stream, no middleware": lambda: _stream(PLAIN),
            "stream, 3 pass-through": lambda: _stream(WRAPPED),
        },
        args.runs,
        args.batches,
    )
    for name, samples in got.items():
        print(f"{name:24}: {statistics.median(samples):8.1f} us/run")
    for kind in ("run", "stream"):
        pairs = zip(got[f"{kind}, 3 pass-through"], got[f"{kind}, no middleware"], strict=True)
        diffs = sorted(a - b for a, b in pairs)
        low, high = diffs[len(diffs) // 10], diffs[-1 - len(diffs) // 10]
        print(
            f"{kind}: one pass-through middleware of each kind costs "
            f"{statistics.median(diffs):+.1f} us/run (batch pairs, 10th-90th percentile "
            f"{low:+.1f} to {high:+.1f})"
        )


if __name__ == "__main__":
    asyncio.run(main())

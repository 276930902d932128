"""What each delta of a streamed answer costs: raf's `run_stream` against a plain loop.

A model that streams one answer of N text deltas (no tools) is run through
`agent.run_stream`, with no middleware and with one pass-through chat middleware, beside
a floor written by hand over plain dicts: an async generator of N chunk dicts, consumed
by a loop that passes each chunk on and joins the text. Batches of each are interleaved
in one process and timed in CPU time; the medians are printed per run and per delta,
for a short answer and a long one (the per-delta figure is the difference between the
two, divided by the deltas between them, so the run's fixed cost drops out).

    python benchmarks/stream_deltas.py [--short 20] [--long 400] [--batches 9]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from raf import (
    AgentBuilder,
    AgentResponseUpdate,
    ChatOptions,
    ChatResponse,
    FinishReason,
    UpdateKind,
)
from raf.core.middleware import CallNext, ChatContext


class TextModel:
    """A model that streams `deltas` one-character text deltas, then finishes."""

    def __init__(self, deltas: int) -> None:
        self.deltas = deltas

    async def get_response(self, messages: Any, options: ChatOptions) -> ChatResponse:
        raise AssertionError("this benchmark streams")

    async def get_streaming_response(
        self, messages: Any, options: ChatOptions
    ) -> AsyncIterator[AgentResponseUpdate]:
        for _ in range(self.deltas):
            yield AgentResponseUpdate(kind=UpdateKind.TEXT_DELTA, message_id="m", text="x")
        yield AgentResponseUpdate(kind=UpdateKind.FINISHED, finish_reason=FinishReason.STOP)


async def passing(context: ChatContext, call_next: CallNext) -> None:
    await call_next()


async def _floor_model(deltas: int) -> AsyncIterator[dict[str, Any]]:
    for _ in range(deltas):
        yield {"type": "text", "delta": "x"}
    yield {"type": "finish"}


async def _floor_stream(deltas: int) -> AsyncIterator[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    text: list[str] = []
    async for chunk in _floor_model(deltas):
        if chunk["type"] == "text":
            text.append(chunk["delta"])
        yield chunk
    messages.append({"role": "assistant", "content": "".join(text)})


async def _text_deltas(agent: Any) -> int:
    count = 0
    async for update in agent.run_stream("go"):
        if update.kind == UpdateKind.TEXT_DELTA:
            count += 1
    return count


def cases(deltas: int) -> dict[str, Callable[[], Awaitable[int]]]:
    plain = AgentBuilder().with_chat_client(TextModel(deltas)).build()
    chained = AgentBuilder().with_chat_client(TextModel(deltas)).use_chat_middleware(passing)
    through = chained.build()

    async def floor() -> int:
        count = 0
        async for chunk in _floor_stream(deltas):
            if chunk["type"] == "text":
                count += 1
        return count

    async def raf_stream() -> int:
        return await _text_deltas(plain)

    async def raf_chat_middleware() -> int:
        return await _text_deltas(through)

    return {
        "plain floor": floor,
        "raf run_stream": raf_stream,
        "raf run_stream, 1 chat middleware": raf_chat_middleware,
    }


async def per_run(deltas: int, batches: int, seconds: float) -> dict[str, float]:
    """CPU µs per run of each case (median of interleaved batches)."""
    measured = cases(deltas)
    sizes: dict[str, int] = {}
    for name, run in measured.items():
        started, runs = time.process_time(), 0
        while runs < 5 or time.process_time() - started < seconds:
            if await run() != deltas:
                raise AssertionError(f"{name}: a run did not stream {deltas} deltas")
            runs += 1
        sizes[name] = max(1, round(seconds / ((time.process_time() - started) / runs)))
    samples: dict[str, list[float]] = {name: [] for name in measured}
    for _ in range(batches):
        for name, run in measured.items():
            started = time.process_time()
            for _ in range(sizes[name]):
                await run()
            samples[name].append((time.process_time() - started) / sizes[name] * 1e6)
    return {name: statistics.median(values) for name, values in samples.items()}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--short", type=int, default=20, help="deltas of the short answer")
    parser.add_argument("--long", type=int, default=400, help="deltas of the long answer")
    parser.add_argument("--batches", type=int, default=9)
    parser.add_argument("--batch-ms", type=float, default=100.0)
    args = parser.parse_args()
    seconds = args.batch_ms / 1000
    short = await per_run(args.short, args.batches, seconds)
    long = await per_run(args.long, args.batches, seconds)
    between = args.long - args.short
    print(f"CPU µs per run (median of {args.batches} interleaved batches) and per delta")
    print(f"{'':36}{args.short:>8} deltas{args.long:>8} deltas{'per delta':>12}")
    floor_delta = (long["plain floor"] - short["plain floor"]) / between
    for name in short:
        delta = (long[name] - short[name]) / between
        ratio = "" if name == "plain floor" else f"  ({delta / floor_delta:.1f}x the floor's)"
        print(f"{name:36}{short[name]:>14.1f}{long[name]:>14.1f}{delta:>12.3f}{ratio}")


if __name__ == "__main__":
    asyncio.run(main())

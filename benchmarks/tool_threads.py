"""What a sync tool call's trip to raf's tool pool costs, old way and new, in one process.

A trivial function is run on the pool: through `run_in_executor` (how each sync tool call
went before), through `run_in_tool_thread` alone (one `call_soon_threadsafe` from the
worker), and as a pair, with `asyncio.gather` over two `run_in_executor` calls against
one `ThreadBatch` (both on the pool at once, one wake-up of the loop). Batches of each
are interleaved; the median microseconds per call or pair are printed.

    python benchmarks/tool_threads.py [--batches 15] [--runs 300]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor

from raf.core import tool_threads

# The old way: a standard pool of the same size (raf's own pool has daemon workers now).
_EXECUTOR = ThreadPoolExecutor(max_workers=tool_threads.tool_threads())


def trivial() -> int:
    return 1


async def executor_one() -> int:
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(_EXECUTOR, trivial)


async def tool_thread_one() -> int:
    return await tool_threads.run_in_tool_thread(trivial)


async def executor_pair() -> int:
    first, second = await asyncio.gather(executor_one(), executor_one())
    return first + second


async def batch_pair() -> int:
    batch = tool_threads.ThreadBatch()
    first, second = batch.submit(trivial), batch.submit(trivial)
    sealed = batch.seal()
    if sealed is not None:
        await sealed
    return first.result() + second.result()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--batches", type=int, default=15)
    parser.add_argument("--runs", type=int, default=300)
    args = parser.parse_args()
    cases: dict[str, tuple[Callable[[], Awaitable[int]], int]] = {
        "one call, run_in_executor": (executor_one, 1),
        "one call, run_in_tool_thread": (tool_thread_one, 1),
        "pair, gather of run_in_executor": (executor_pair, 2),
        "pair, one ThreadBatch": (batch_pair, 2),
    }
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(args.batches):
        for name, (fn, expected) in cases.items():
            started = time.perf_counter()
            for _ in range(args.runs):
                if await fn() != expected:
                    raise AssertionError(f"{name}: a wrong result")
            samples[name].append((time.perf_counter() - started) / args.runs * 1e6)
    for name, values in samples.items():
        print(f"{name:34}: {statistics.median(values):7.1f} us")


if __name__ == "__main__":
    asyncio.run(main())

"""MCP tool-call overhead: raf's McpTool against the `mcp` SDK's own client, same server.

Both call the `add` tool of tests/tools/mcp/mcp_py_server.py (a Python SDK server over
stdio), one call after another. Prints the median and p95 latency per call for each
path and raf's added cost per call.

    python benchmarks/mcp_overhead.py [--calls 300]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

import mcp
from mcp.client.stdio import StdioServerParameters, stdio_client

from raf.core.tools import ToolContext
from raf.tools.mcp import McpToolset

SERVER = Path(__file__).resolve().parents[1] / "tests" / "tools" / "mcp" / "mcp_py_server.py"


def summary(times: list[float]) -> tuple[float, float]:
    ordered = sorted(times)
    return statistics.median(ordered), ordered[max(0, int(len(ordered) * 0.95) - 1)]


async def sdk_direct(calls: int) -> list[float]:
    params = StdioServerParameters(command=sys.executable, args=[str(SERVER)])
    async with mcp.Client(stdio_client(params), cache=None) as client:
        await client.call_tool("add", {"a": 1, "b": 2})  # warm up
        times = []
        for i in range(calls):
            t0 = time.perf_counter()
            await client.call_tool("add", {"a": i, "b": 2})
            times.append((time.perf_counter() - t0) * 1e6)
        return times


async def through_raf(calls: int) -> list[float]:
    toolset = McpToolset({"command": sys.executable, "args": [str(SERVER)], "name": "bench"})
    try:
        add = next(t for t in await toolset.load() if t.name == "add")
        ctx = ToolContext()
        await add.invoke({"a": 1, "b": 2}, ctx)
        times = []
        for i in range(calls):
            t0 = time.perf_counter()
            result = await add.invoke({"a": i, "b": 2}, ctx)
            times.append((time.perf_counter() - t0) * 1e6)
            assert not result.is_error
        return times
    finally:
        await toolset.aclose()


async def main(calls: int) -> None:
    direct = summary(await sdk_direct(calls))
    raf = summary(await through_raf(calls))
    print(f"{calls} sequential calls of 'add' over stdio")
    print(f"mcp SDK directly : median {direct[0]:8.0f} us, p95 {direct[1]:8.0f} us")
    print(f"raf McpTool      : median {raf[0]:8.0f} us, p95 {raf[1]:8.0f} us")
    print(
        f"raf overhead     : {raf[0] - direct[0]:+8.0f} us per call "
        f"({(raf[0] / direct[0] - 1) * 100:+.1f}% of the median)"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=300)
    asyncio.run(main(parser.parse_args().calls))

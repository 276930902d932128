"""What tracing costs: one agent run untraced, traced with OpenTelemetry's no-op provider
(the global one when the app configured none), and traced into the SDK with the
in-memory exporter and `InMemoryTraces`, in one process.

The run is the one of `middleware_overhead.py`: three model turns, three tool calls (one
parallel pair), 4 + 3 = 8 spans when traced.

    python benchmarks/tracing_overhead.py [--runs 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NoOpTracerProvider

from benchmarks.middleware_overhead import CyclingModel, add, lookup, measure, upper
from raf import AgentBuilder, tool
from raf.observability import InMemoryTraces, instrument


def _builder() -> AgentBuilder:
    return (
        AgentBuilder()
        .with_chat_client(CyclingModel())
        .with_tools([tool(add), tool(upper), tool(lookup)])
    )


EXPORTER = InMemorySpanExporter()
SDK = TracerProvider()
SDK.add_span_processor(SimpleSpanProcessor(EXPORTER))
PLAIN = _builder().build()
NOOP = instrument(_builder(), tracer_provider=NoOpTracerProvider()).build()
RECORDED = instrument(
    _builder(), tracer_provider=SDK, traces=InMemoryTraces(max_traces=100)
).build()


async def _run(agent: Any) -> str:
    EXPORTER.clear()
    return str((await agent.run("go")).text)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=2000)
    args = parser.parse_args()
    got = await measure(
        {
            "untraced": lambda: _run(PLAIN),
            "traced, no-op provider": lambda: _run(NOOP),
            "traced, SDK + in-memory": lambda: _run(RECORDED),
        },
        args.runs,
    )
    for name, samples in got.items():
        print(f"{name:26}: {statistics.median(samples):8.1f} us/run (median of batches)")


if __name__ == "__main__":
    asyncio.run(main())

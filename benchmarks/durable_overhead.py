"""What a durable step costs: the time DBOS adds to each model call and each tool call of
a run, on a SQLite and on a PostgreSQL system database, against the same run not durable.

One agent, a scripted model that asks for a trivial tool CALLS times (so CALLS + 1 model
calls and CALLS tool calls a run). Inside one DBOS workflow the run goes with no step
middleware, with only the model-call steps, with only the tool-call steps and with both;
the differences, divided by the number of calls, are the cost per step. The whole durable
run (queued workflow, session load and save as steps) is compared with `agent.run`.
PostgreSQL is a private server (fsync on, PostgreSQL's defaults) on loopback.

    python benchmarks/durable_overhead.py [--runs 20] [--calls 20] [--no-postgres]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the test servers' helpers live in tests/servers.py

from dbos import DBOS, SetWorkflowID  # noqa: E402
from tests.servers import start_postgres  # noqa: E402

from raf import Agent, tool  # noqa: E402
from raf.core.contents import FunctionResultContent  # noqa: E402
from raf.core.messages import ChatMessage  # noqa: E402
from raf.core.middleware import MiddlewareSet  # noqa: E402
from raf.core.options import AgentRunOptions, ChatOptions  # noqa: E402
from raf.core.sessions import SessionStore  # noqa: E402
from raf.durable import (  # noqa: E402
    DurableChatMiddleware,
    DurableFunctionMiddleware,
    DurableRuntime,
    sqlite_url,
)
from raf.stores.postgres_sessions import PostgresSessionStore  # noqa: E402
from raf.stores.sessions import SqliteSessionStore  # noqa: E402
from raf.testing import FunctionChatClient, call, reply  # noqa: E402

CALLS = 20
MODES: dict[str, MiddlewareSet] = {
    "none": MiddlewareSet(),
    "model": MiddlewareSet(chat=(DurableChatMiddleware(),)),
    "tool": MiddlewareSet(function=(DurableFunctionMiddleware(),)),
    "both": MiddlewareSet(chat=(DurableChatMiddleware(),), function=(DurableFunctionMiddleware(),)),
}


def build_agent() -> Agent:
    @tool
    def lookup(key: str) -> str:
        """Look a key up."""
        return f"value of {key}"

    def model(messages: Sequence[ChatMessage], options: ChatOptions) -> ChatMessage | str:
        done = sum(1 for m in messages for c in m.contents if isinstance(c, FunctionResultContent))
        if done < CALLS:
            return reply("", call("lookup", key=f"k{done}", call_id=f"c{done}"))
        return "done"

    return Agent(
        name="bench",
        chat_client=FunctionChatClient(model),
        tools=[lookup],
        max_tool_rounds=CALLS + 1,
    )


AGENT = build_agent()


@DBOS.workflow(name="bench.durable_modes")
async def run_in_workflow(mode: str) -> str:
    """One run inside a workflow, with the step middleware `mode` names."""
    options = AgentRunOptions(middleware=MODES[mode])
    response = await AGENT.run([ChatMessage.user("go")], options=options)
    return response.text


async def timed_workflow(mode: str, runs: int) -> float:
    """Seconds per run of `run_in_workflow(mode)` (after one warm-up run)."""
    start = 0.0
    for i in range(runs + 1):
        if i == 1:
            start = time.perf_counter()
        with SetWorkflowID(f"bench-{mode}-{time.time_ns()}"):
            handle = await DBOS.start_workflow_async(run_in_workflow, mode)
        result = await handle.get_result()
        assert result == "done", result
    return (time.perf_counter() - start) / runs


async def timed_plain(runs: int) -> float:
    start = time.perf_counter()
    for _ in range(runs):
        assert (await AGENT.run([ChatMessage.user("go")])).text == "done"
    return (time.perf_counter() - start) / runs


async def timed_durable_run(runtime: DurableRuntime, runs: int) -> float:
    start = 0.0
    for i in range(runs + 1):
        if i == 1:
            start = time.perf_counter()
        outcome = await runtime.run("bench", [ChatMessage.user("go")], session_id=f"s{i}")
        assert outcome.response.text == "done"
    return (time.perf_counter() - start) / runs


async def measure(database: str, store: SessionStore, runs: int) -> dict[str, float]:
    runtime = DurableRuntime([AGENT], store=store, database=database, queue_polling=0.01)
    await runtime.launch()
    try:
        times = {mode: await timed_workflow(mode, runs) for mode in MODES}
        times["plain"] = await timed_plain(runs)
        times["durable run"] = await timed_durable_run(runtime, runs)
    finally:
        runtime.shutdown()
    return times


def report(name: str, times: dict[str, float]) -> None:
    per_model = (times["model"] - times["none"]) / (CALLS + 1)
    per_tool = (times["tool"] - times["none"]) / CALLS
    print(f"\n{name} ({CALLS + 1} model calls, {CALLS} tool calls a run)")
    print(f"  agent.run, not durable          {times['plain'] * 1000:8.2f} ms/run")
    print(f"  in a workflow, no steps         {times['none'] * 1000:8.2f} ms/run")
    print(f"  in a workflow, every call a step{times['both'] * 1000:8.2f} ms/run")
    print(f"  DurableRuntime.run (queued)     {times['durable run'] * 1000:8.2f} ms/run")
    print(f"  per model call step             {per_model * 1000:8.3f} ms")
    print(f"  per tool call step              {per_tool * 1000:8.3f} ms")


async def main(runs: int, postgres: bool) -> None:
    with tempfile.TemporaryDirectory() as folder:
        here = Path(folder)
        times = await measure(
            sqlite_url(here / "dbos.sqlite"), SqliteSessionStore(here / "s.sqlite"), runs
        )
        report("SQLite system database", times)
        if postgres:
            server = start_postgres(durable=True)
            try:
                times = await measure(server.url, PostgresSessionStore(server.url), runs)
                report("PostgreSQL system database", times)
            finally:
                server.stop()


def _args(argv: list[str] | None = None) -> Any:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--calls", type=int, default=CALLS)
    parser.add_argument("--no-postgres", action="store_true")
    return parser.parse_args(argv)


if __name__ == "__main__":
    args = _args()
    CALLS = args.calls
    AGENT = build_agent()
    asyncio.run(main(args.runs, not args.no_postgres))

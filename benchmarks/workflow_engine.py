"""The workflow engine's overhead against a hand-written asyncio version of the same
graphs, and against Microsoft Agent Framework's workflow engine when it is installed.

Two 20-node graphs whose nodes do trivial work, so the engine is all that is measured:
- fan: start -> fan-out to 18 workers -> fan-in to join (3 supersteps, 36 messages
  along edges); the hand-written version is `asyncio.gather` between two awaits;
- chain: 20 nodes in a line (20 supersteps, 19 messages); by hand, 20 awaits.
raf runs with its default in-memory checkpoint store (a checkpoint per superstep).
A declarative workflow's engine is measured too: a RepeatUntil loop of 100 rounds, each
setting a counter, branching and filling a text (about 650 instructions a run), and the
same loop with an IsMatch formula in each round (a formula that matches is tried on the
event loop and moves to a worker thread only when its matches take long, so this one
shows what the try costs).
Prints CPU microseconds per run (the process's CPU time, steadier than wall time on a
shared machine), the overhead per superstep and per message routed, and the ratio to
the hand-written version (target for the fan graph: at most 5x).

    python benchmarks/workflow_engine.py [--runs 300]
    python benchmarks/workflow_engine.py --setup     # once: a venv with agent-framework-core
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from raf.workflow import FunctionExecutor, Workflow, WorkflowBuilder

WORKERS = 18
CHAIN = 20
MAF_VENV = Path(__file__).resolve().parent / ".venvs" / "maf"


async def start_fn(text: str) -> str:
    return text


def worker_fn(i: int) -> Callable[[str], Awaitable[str]]:
    async def work(text: str) -> str:
        return f"{text}{i}"

    return work


async def join_fn(parts: list[str]) -> str:
    return ",".join(parts)


def raf_fan() -> Workflow:
    start = FunctionExecutor(start_fn, id="start")
    workers = [FunctionExecutor(worker_fn(i), id=f"w{i}") for i in range(WORKERS)]
    join = FunctionExecutor(join_fn, id="join")
    return (
        WorkflowBuilder("fan", start=start)
        .add_fan_out(start, workers)
        .add_fan_in(workers, join)
        .with_max_concurrency(WORKERS)
        .build()
    )


def raf_chain() -> Workflow:
    nodes = [FunctionExecutor(worker_fn(i), id=f"n{i}") for i in range(CHAIN)]
    return WorkflowBuilder("chain", start=nodes[0]).add_chain(nodes).build()


ROUNDS = 100
DECLARATIVE = """
kind: Workflow
actions:
  - {kind: SetVariable, variable: Local.i, value: 0}
  - kind: RepeatUntil
    condition: =Local.i >= ROUNDS
    actions:
      - {kind: SetVariable, variable: Local.i, value: =Local.i + 1}
      - kind: If
        condition: =Mod(Local.i, 2) = 0
        then: [{kind: SetVariable, variable: Local.even, value: =Local.i}]
      - {kind: SetTextVariable, variable: Local.said, value: "round {Local.i}"}
      - CHECK
  - {kind: SendActivity, activity: "{Local.i}"}
"""


def raf_declarative(check: str) -> Workflow:
    from raf.decl.workflow import DeclWorkflowBuilder

    doc = DECLARATIVE.replace("ROUNDS", str(ROUNDS)).replace("CHECK", check)
    return DeclWorkflowBuilder().from_yaml_str(doc).build()


PLAIN_CHECK = "{kind: SetVariable, variable: Local.ok, value: =Len(Local.said) > 3}"
PATTERN_CHECK = (
    "{kind: SetVariable, variable: Local.ok, value: '=IsMatch(Local.said, \"round [0-9]+\")'}"
)


WORK = [worker_fn(i) for i in range(max(WORKERS, CHAIN))]


async def hand_fan(text: str) -> str:
    started = await start_fn(text)
    parts = await asyncio.gather(*(WORK[i](started) for i in range(WORKERS)))
    return await join_fn(list(parts))


async def hand_chain(text: str) -> str:
    for i in range(CHAIN):
        text = await WORK[i](text)
    return text


MAF_SCRIPT = r"""
import asyncio, json, statistics, sys, time
from agent_framework import Executor, WorkflowBuilder, WorkflowContext, handler

WORKERS, CHAIN, RUNS = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])

class Start(Executor):
    @handler
    async def run(self, text: str, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(text)

class Worker(Executor):
    def __init__(self, i: int, last: bool = False) -> None:
        super().__init__(id=f"w{i}")
        self.i, self.last = i, last
    @handler
    async def run(self, text: str, ctx: WorkflowContext[str, str]) -> None:
        if self.last:
            await ctx.yield_output(f"{text}{self.i}")
        else:
            await ctx.send_message(f"{text}{self.i}")

class Join(Executor):
    @handler
    async def run(self, parts: list[str], ctx: WorkflowContext[str, str]) -> None:
        await ctx.yield_output(",".join(parts))

def builder(start):
    try:
        return WorkflowBuilder(start_executor=start)
    except TypeError:
        return WorkflowBuilder().set_start_executor(start)

def fan():
    start, workers, join = Start(id="start"), [Worker(i) for i in range(WORKERS)], Join(id="join")
    return builder(start).add_fan_out_edges(start, workers).add_fan_in_edges(workers, join).build()

def chain():
    nodes = [Worker(i, last=(i == CHAIN - 1)) for i in range(CHAIN)]
    b = builder(nodes[0])
    for a, c in zip(nodes, nodes[1:]):
        b = b.add_edge(a, c)
    return b.build()

async def measure(make):
    wf = make()
    for _ in range(20):
        await wf.run("x")
    samples = []
    for _ in range(10):
        t = time.process_time()
        for _ in range(max(1, RUNS // 10)):
            await wf.run("x")
        samples.append((time.process_time() - t) / max(1, RUNS // 10) * 1e6)
    return statistics.median(samples)

async def main():
    from importlib.metadata import version
    print(json.dumps({"version": version("agent-framework-core"),
                      "fan": await measure(fan), "chain": await measure(chain)}))

asyncio.run(main())
"""


async def measure(
    fns: dict[str, Callable[[], Awaitable[object]]], runs: int, batches: int = 10
) -> dict[str, float]:
    """Median CPU microseconds per run (this process's CPU time, so other programs on a
    busy machine weigh less), batches interleaved so load changes hit all alike."""
    for fn in fns.values():
        for _ in range(20):
            await fn()
    samples: dict[str, list[float]] = {name: [] for name in fns}
    per_batch = max(1, runs // batches)
    for _ in range(batches):
        for name, fn in fns.items():
            started = time.process_time()
            for _ in range(per_batch):
                await fn()
            samples[name].append((time.process_time() - started) / per_batch * 1e6)
    return {name: statistics.median(values) for name, values in samples.items()}


def maf(runs: int) -> dict[str, float | str] | None:
    python = MAF_VENV / "bin" / "python"
    if not python.exists():
        return None
    done = subprocess.run(
        [str(python), "-c", MAF_SCRIPT, str(WORKERS), str(CHAIN), str(runs)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode != 0:
        print(f"Microsoft Agent Framework run failed:\n{done.stderr[-2000:]}")
        return None
    result: dict[str, float | str] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def setup() -> None:
    """A separate venv with agent-framework-core (never the project's environment)."""
    subprocess.run([sys.executable, "-m", "venv", str(MAF_VENV)], check=True)
    subprocess.run(
        [str(MAF_VENV / "bin" / "pip"), "install", "-q", "agent-framework-core"], check=True
    )


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--setup", action="store_true", help="install the MAF venv first")
    args = parser.parse_args()
    if args.setup:
        setup()
    fan, chain = raf_fan(), raf_chain()
    expected = ",".join(f"x{i}" for i in range(WORKERS))
    assert (await fan.run("x")).outputs == [expected]
    assert (await hand_fan("x")) == expected

    async def raf_fan_run() -> object:
        return await fan.run("x")

    async def raf_chain_run() -> object:
        return await chain.run("x")

    async def hand_fan_run() -> object:
        return await hand_fan("x")

    async def hand_chain_run() -> object:
        return await hand_chain("x")

    plain, pattern = raf_declarative(PLAIN_CHECK), raf_declarative(PATTERN_CHECK)
    assert (await plain.run("x")).outputs == [str(ROUNDS)]
    assert (await pattern.run("x")).outputs == [str(ROUNDS)]

    async def declarative_run() -> object:
        return await plain.run("x")

    async def pattern_run() -> object:
        return await pattern.run("x")

    us = await measure(
        {
            "declarative": declarative_run,
            "declarative_pattern": pattern_run,
            "hand_fan": hand_fan_run,
            "raf_fan": raf_fan_run,
            "hand_chain": hand_chain_run,
            "raf_chain": raf_chain_run,
        },
        args.runs,
    )
    fan_over = us["raf_fan"] - us["hand_fan"]
    chain_over = us["raf_chain"] - us["hand_chain"]
    print(f"20-node fan-out/fan-in (3 supersteps, {2 * WORKERS} messages along edges)")
    print(f"  hand-written asyncio : {us['hand_fan']:9.1f} us/run")
    print(f"  raf workflow         : {us['raf_fan']:9.1f} us/run")
    print(f"  ratio                : {us['raf_fan'] / us['hand_fan']:9.2f}x  (target <= 5x)")
    print(f"  overhead per message : {fan_over / (2 * WORKERS):9.1f} us")
    print(f"20-node chain ({CHAIN} supersteps, {CHAIN - 1} messages)")
    print(f"  hand-written asyncio : {us['hand_chain']:9.1f} us/run")
    print(f"  raf workflow         : {us['raf_chain']:9.1f} us/run")
    print(f"  overhead per superstep: {chain_over / CHAIN:8.1f} us")
    print(f"declarative RepeatUntil, {ROUNDS} rounds (about 650 instructions)")
    print(f"  plain formulas       : {us['declarative']:9.1f} us/run")
    print(f"  per round            : {us['declarative'] / ROUNDS:9.1f} us")
    print(f"  with IsMatch a round : {us['declarative_pattern']:9.1f} us/run")
    per_pattern = (us["declarative_pattern"] - us["declarative"]) / ROUNDS
    print(f"  IsMatch's extra cost : {per_pattern:9.1f} us a formula")
    other = maf(args.runs)
    if other is None:
        print("Microsoft Agent Framework: not installed (run with --setup once)")
        return
    print(f"Microsoft Agent Framework {other['version']} on the same graphs")
    print(f"  fan-out/fan-in       : {float(other['fan']):9.1f} us/run")
    print(f"  chain                : {float(other['chain']):9.1f} us/run")


if __name__ == "__main__":
    asyncio.run(main())

"""CPU time per run of raf on the overhead scenario, several source trees interleaved.

On a loaded machine wall time mostly measures the others' work; the CPU time of this
process (every thread: the tool pool's too) moves much less. Each tree is measured in a
process of its own (`PYTHONPATH=<tree>/src`), the trees one after another in each
round, so a change in the load hits them alike; per tree and case the median of the
rounds' medians is printed, in µs per run. Compare trees with `git worktree add` or
`git archive <commit> src | tar -x -C <dir>`.

    python benchmarks/cpu_per_run.py --tree before=/tmp/old --tree after=. [--rounds 5]

The cases: the hand-written floor (async tools), sync tools on threads, async tools, the
stream, and the stream through one pass-through agent middleware.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent


async def measure(batches: int, runs: int) -> dict[str, float]:
    """In this process: each case's median CPU µs per run over `batches` interleaved
    batches of `runs` runs (the floor 20 times as many)."""
    sys.path.insert(0, str(HERE.parent))
    from benchmarks import overhead_scenario as scenario
    from benchmarks.overhead import build_raf

    sync_agent, async_agent, _, through_agent, _ = build_raf()

    async def sync_tools() -> None:
        await sync_agent.run(scenario.QUESTION)

    async def async_tools() -> None:
        await async_agent.run(scenario.QUESTION)

    async def stream() -> None:
        async for _ in async_agent.run_stream(scenario.QUESTION):
            pass

    async def stream_middleware() -> None:
        async for _ in through_agent.run_stream(scenario.QUESTION):
            pass

    cases: dict[str, Callable[[], Awaitable[object]]] = {
        "floor": scenario.FLOORS["async tools"],
        "sync tools": sync_tools,
        "async tools": async_tools,
        "stream": stream,
        "stream, 1 agent middleware": stream_middleware,
    }
    for case in cases.values():
        for _ in range(200):
            await case()
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(batches):
        for name, case in cases.items():
            count = runs * (20 if name == "floor" else 1)
            started = time.process_time()
            for _ in range(count):
                await case()
            samples[name].append((time.process_time() - started) / count * 1e6)
    return {name: statistics.median(values) for name, values in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--tree", action="append", default=[], help="NAME=PATH (repeat)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds over the trees (5)")
    parser.add_argument("--batches", type=int, default=5, help="batches per process (5)")
    parser.add_argument("--runs", type=int, default=300, help="runs per batch (300)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(asyncio.run(measure(args.batches, args.runs))))
        return
    trees = dict(spec.split("=", 1) for spec in args.tree) or {"this tree": str(HERE.parent)}
    results: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    for _ in range(args.rounds):
        for name, path in trees.items():
            env = {**os.environ, "PYTHONPATH": str(Path(path).resolve() / "src")}
            done = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--child",
                    "--batches",
                    str(args.batches),
                    "--runs",
                    str(args.runs),
                ],
                check=True,
                capture_output=True,
                text=True,
                env=env,
            )
            results[name].append(json.loads(done.stdout.splitlines()[-1]))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"CPU µs per run, median of {args.rounds} rounds (load average now {load:.1f})")
    cases = list(next(iter(results.values()))[0])
    width = max(len(name) for name in trees) + 2
    print(" " * width + "".join(f"{case:>28}" for case in cases))
    for name, rounds in results.items():
        cells = [statistics.median(r[case] for r in rounds) for case in cases]
        print(f"{name:<{width}}" + "".join(f"{cell:>28.1f}" for cell in cells))


if __name__ == "__main__":
    main()

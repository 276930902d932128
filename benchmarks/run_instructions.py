"""Instructions one run costs (Valgrind's callgrind), for raf's overhead scenarios and
their plain-dict floor: a count that does not move with what else the machine is doing,
so a change to the run path can be judged by a few thousand instructions.

Each figure is measured as a difference: one process warms up and runs a scenario
`--runs` times, another only warms up; the difference in instructions over the runs is
the cost of one run (import, build and warm-up cancel out). The scenarios are those of
`overhead.py` (three tools, three model turns, a zero-cost scripted model), plus a run
of an agent without tools.

    python benchmarks/run_instructions.py [--runs 300] [--python PATH] [--cases raf-async,...]

`--python` runs the children under another interpreter (a virtualenv with raf installed,
e.g. one made with Python 3.13), so both versions can be compared. Needs valgrind
(Debian: `apt-get install -y valgrind`).
"""

from __future__ import annotations

import argparse
import asyncio
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
WARM_UP = 30

CASES = {
    "floor-async": "floor_async",
    "floor-stream": "floor_stream",
    "raf-plain": "raf_plain",
    "raf-async": "raf_async",
    "raf-stream": "raf_stream",
    "raf-inline": "raf_inline",
}
"""What each row runs (a function of `_runs` below, by name): the floor with async tools
and streamed; raf with no tools, async tools, streamed, and sync tools run inline."""

FLOORS = {
    "raf-plain": "floor-async",
    "raf-async": "floor-async",
    "raf-inline": "floor-async",
    "raf-stream": "floor-stream",
}


def _runs() -> dict[str, Any]:
    """The scenarios, each a coroutine function that makes one run (child process only)."""
    sys.path.insert(0, str(HERE.parent))
    from benchmarks import overhead_scenario as scenario
    from benchmarks.overhead import build_raf
    from raf import (
        AgentBuilder,
        AgentResponseUpdate,
        ChatMessage,
        ChatResponse,
        FinishReason,
        UpdateKind,
    )

    class Done:
        """A model that answers "done" at once and keeps nothing."""

        async def get_response(self, messages: Any, options: Any) -> ChatResponse:
            reply = ChatMessage.assistant(scenario.ANSWER)
            return ChatResponse(messages=[reply], finish_reason=FinishReason.STOP)

        async def get_streaming_response(self, messages: Any, options: Any) -> Any:
            yield AgentResponseUpdate(kind=UpdateKind.TEXT_DELTA, text=scenario.ANSWER)
            yield AgentResponseUpdate(kind=UpdateKind.FINISHED, finish_reason=FinishReason.STOP)

    _, async_agent, inline_agent, _, scripts = build_raf()
    plain = AgentBuilder().with_instructions(scenario.INSTRUCTIONS).with_chat_client(Done()).build()

    async def raf_plain() -> None:
        await plain.run(scenario.QUESTION)

    async def raf_async() -> None:
        await async_agent.run(scenario.QUESTION)

    async def raf_inline() -> None:
        await inline_agent.run(scenario.QUESTION)

    async def raf_stream() -> None:
        async for _ in async_agent.run_stream(scenario.QUESTION):
            pass

    async def floor_async() -> None:
        await scenario.floor_run_async_tools()

    async def floor_stream() -> None:
        await scenario.floor_run_stream()

    del scripts  # each Script wraps around: no reset between runs is needed
    return {
        "raf_plain": raf_plain,
        "raf_async": raf_async,
        "raf_inline": raf_inline,
        "raf_stream": raf_stream,
        "floor_async": floor_async,
        "floor_stream": floor_stream,
    }


def child(name: str, runs: int) -> None:
    """Warm up, then make `runs` runs of scenario `name` (under callgrind)."""
    run = _runs()[name]

    async def main() -> None:
        for _ in range(WARM_UP):
            await run()
        for _ in range(runs):
            await run()

    asyncio.run(main())


def instructions(python: str, name: str, runs: int) -> int:
    """Instructions a child process executed in all."""
    done = subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            "--callgrind-out-file=/dev/null",
            python,
            str(Path(__file__).resolve()),
            "--child",
            name,
            str(runs),
        ],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"the {name} child failed:\n{done.stderr[-3000:]}")
    return int(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--python", default=sys.executable, help="interpreter of the children")
    parser.add_argument("--cases", default="", help="comma-separated row names (default: all)")
    parser.add_argument("--child", nargs=2, metavar=("NAME", "RUNS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]))
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("needs valgrind (Debian: apt-get install -y valgrind)")
    wanted = [c.strip() for c in args.cases.split(",") if c.strip()] or list(CASES)
    for name in wanted:
        if name not in CASES:
            raise SystemExit(f"unknown case {name!r}; cases: {', '.join(CASES)}")
    needed = list(dict.fromkeys([*(FLOORS[w] for w in wanted if w in FLOORS), *wanted]))
    version = subprocess.run(
        [args.python, "-c", "import sys; print(sys.version.split()[0])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    per_run: dict[str, float] = {}
    for name in needed:
        warm = instructions(args.python, CASES[name], 0)
        full = instructions(args.python, CASES[name], args.runs)
        per_run[name] = (full - warm) / args.runs
    print(f"Instructions per run (callgrind), Python {version}, {args.runs} runs after warm-up")
    for name in needed:
        floor = FLOORS.get(name)
        ratio = f"   {per_run[name] / per_run[floor]:5.1f}x the floor" if floor else ""
        print(f"  {name:<14} {per_run[name] / 1000:9.1f}k{ratio}")


if __name__ == "__main__":
    main()

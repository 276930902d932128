"""What raf.evals costs: 100 cases against a scripted agent at concurrency 10, next to a
hand-written loop that runs the same agent on the same prompts (the difference is raf's
overhead: targets, evaluators, reports), and the HTML report of 1 000 cases: its size,
the time to write it, and the time Debian's chromium takes to load it (when present).

    python benchmarks/evals.py [--cases 100] [--concurrency 10] [--html-cases 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from raf import Agent, tool
from raf.core.messages import ChatMessage, Role
from raf.core.options import ChatOptions
from raf.evals import Case, Contains, Dataset, ExpectedCall, Limits, ToolCalls, report_html
from raf.testing import FunctionChatClient, call, reply

CHROMIUM = "/usr/bin/chromium"


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def model(messages: Sequence[ChatMessage], options: ChatOptions) -> Any:
    last = messages[-1]
    if last.role is Role.TOOL:
        return f"The sum is {last.function_results[0].result}."
    _, a, b = last.text.split()
    return reply("", call("add", a=int(a), b=int(b)))


def agent() -> Agent:
    return Agent(chat_client=FunctionChatClient(model), tools=[add], name="calc")


def dataset(n: int) -> Dataset:
    return Dataset(
        name="sums",
        cases=[
            Case(
                name=f"sum-{i}",
                input=f"sum {i} {i + 1}",
                expected_output=str(2 * i + 1),
                expected_tool_calls=[ExpectedCall(name="add", arguments={"a": i})],
                tags=["tool"],
            )
            for i in range(n)
        ],
        evaluators=[Contains(), ToolCalls(), Limits(requests=3)],
    )


async def hand_loop(target: Agent, prompts: list[str], concurrency: int) -> float:
    gate = asyncio.Semaphore(concurrency)

    async def one(prompt: str) -> str:
        async with gate:
            return (await target.run(prompt)).text

    started = time.perf_counter()
    await asyncio.gather(*(one(p) for p in prompts))
    return time.perf_counter() - started


async def with_evals(target: Agent, data: Dataset, concurrency: int) -> float:
    started = time.perf_counter()
    report = await data.evaluate(target, concurrency=concurrency, progress=False)
    elapsed = time.perf_counter() - started
    assert report.pass_rate == 1.0, report.table()
    return elapsed


def load_in_chromium(path: Path) -> float | None:
    """Seconds from navigation to the load event, in a fresh headless chromium."""
    if not Path(CHROMIUM).exists():
        return None
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"]
        )
        page = browser.new_page()
        page.goto(path.as_uri())  # warm the browser once
        started = time.perf_counter()
        page.goto(path.as_uri(), wait_until="load")
        elapsed = time.perf_counter() - started
        browser.close()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=100)
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--html-cases", type=int, default=1000)
    args = parser.parse_args()

    data = dataset(args.cases)
    prompts = [str(c.input) for c in data.cases]
    loop_times, eval_times = [], []
    for _ in range(args.rounds):
        loop_times.append(asyncio.run(hand_loop(agent(), prompts, args.concurrency)))
        eval_times.append(asyncio.run(with_evals(agent(), data, args.concurrency)))
    loop_s, eval_s = statistics.median(loop_times), statistics.median(eval_times)
    print(f"{args.cases} cases, concurrency {args.concurrency}, median of {args.rounds}:")
    print(f"  hand-written loop  {loop_s * 1000:8.1f} ms")
    print(f"  dataset.evaluate   {eval_s * 1000:8.1f} ms")
    print(f"  raf.evals overhead {(eval_s - loop_s) * 1000:8.1f} ms")

    big = dataset(args.html_cases)
    report = asyncio.run(big.evaluate(agent(), concurrency=args.concurrency, progress=False))
    started = time.perf_counter()
    page = report_html(report)
    write_s = time.perf_counter() - started
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "report.html"
        path.write_text(page, encoding="utf-8")
        load_s = load_in_chromium(path)
    print(f"HTML report of {args.html_cases} cases:")
    print(f"  size {len(page.encode()) / 1024:8.0f} KiB, written in {write_s * 1000:.0f} ms")
    if load_s is None:
        print("  load in chromium: skipped (no /usr/bin/chromium)")
    else:
        print(f"  load in chromium {load_s * 1000:8.0f} ms")


if __name__ == "__main__":
    main()

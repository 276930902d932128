"""Where an async-tool run's time goes: raf's types against raf's run machinery.

Three loops over the overhead scenario (`overhead_scenario.py`), interleaved in one
process, medians of the batches in µs per run:

- the plain floor: the hand-written loop over dicts and functions (`overhead.py`'s);
- a hand loop over raf's own types, and nothing else: the same scripted model as raf's
  run (its replies converted to `ChatMessage`s), the agent's `FunctionTool`s invoked one
  after the other, `FunctionResultContent`s in tool messages, a new `AgentSession` that
  keeps the turn and an `AgentResponse`;
- `agent.run`, which does all of that plus the run's own work (its context, approvals,
  providers, limits and checks, the steps, the parallel pair, the stored turn).

This is a diagnostic, not a reference: the reference for raf's speed stays the plain
floor and the peers in `overhead.py`. What it shows is the share of a run that raf's
types cost, which no change to the run's machinery can remove.

    python benchmarks/typed_loop.py [--batches 7] [--runs 3000]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import overhead
from benchmarks import overhead_scenario as scenario
from raf.core import builders
from raf.core.contents import Content, FunctionCallContent
from raf.core.messages import ROLE_SYSTEM, ROLE_TOOL, ChatMessage, new_id
from raf.core.responses import AgentResponse
from raf.core.sessions import AgentSession
from raf.core.tools import ToolContext


def typed_loop(agent: Any) -> Callable[[], Awaitable[str]]:
    """The hand loop over raf's types, on the agent's own model and tools."""
    model = agent.leaf_client
    tools = {t.name: t for t in agent.tools}
    options = agent.default_options
    context = ToolContext()

    async def run() -> str:
        session = AgentSession()
        request = [ChatMessage.user(scenario.QUESTION)]
        conversation = [builders.text_message(ROLE_SYSTEM, scenario.INSTRUCTIONS), *request]
        produced: list[ChatMessage] = []
        while True:
            response = await model.get_response(conversation, options)
            for message in response.messages:
                if message.message_id is None:
                    message.message_id = new_id("msg")
            conversation.extend(response.messages)
            produced.extend(response.messages)
            calls = [
                c for c in response.messages[-1].contents if isinstance(c, FunctionCallContent)
            ]
            if not calls:
                break
            results: list[Content] = []
            for call in calls:
                outcome = await tools[call.name].invoke(call.arguments, context)
                results.append(builders.function_result(call.call_id, call.name, outcome.value))
            message = builders.message(ROLE_TOOL, results, new_id("msg"))
            conversation.append(message)
            produced.append(message)
        session.messages.extend(request)
        session.messages.extend(produced)
        answer = AgentResponse(
            messages=produced, finish_reason=response.finish_reason, session_id=session.id
        )
        return answer.text

    return run


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--batches", type=int, default=7)
    parser.add_argument("--runs", type=int, default=3000)
    args = parser.parse_args()
    _, async_agent, _, _, scripts = overhead.build_raf()

    async def raf_run() -> str:
        text: str = (await async_agent.run(scenario.QUESTION)).text
        return text

    cases: dict[str, Callable[[], Awaitable[str]]] = {
        "plain floor (dicts and functions)": scenario.floor_run_async_tools,
        "hand loop over raf's types": typed_loop(async_agent),
        "raf, agent.run": raf_run,
    }
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for name, case in cases.items():  # warm up, and check each answers
        for _ in range(200):
            if await case() != scenario.ANSWER:
                raise AssertionError(f"{name}: a wrong answer")
    for _ in range(args.batches):
        for name, case in cases.items():
            started = time.perf_counter()
            for _ in range(args.runs):
                await case()
            samples[name].append((time.perf_counter() - started) / args.runs * 1e6)
    for script in scripts:
        script.check()
    floor = statistics.median(samples["plain floor (dicts and functions)"])
    for name, values in samples.items():
        us = statistics.median(values)
        print(f"{name:36} {us:7.1f} us  ({us / floor:4.1f}x the floor)")


if __name__ == "__main__":
    asyncio.run(main())

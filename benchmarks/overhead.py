"""raf's per-run overhead against a hand-written minimal tool loop, in one process.

Both drive the same scripted model through three turns: turn 1 calls add(2, 3), turn 2
calls upper("x") and lookup("k") in one message, turn 3 answers "done". Prints
microseconds per run for each, and their ratio (target: raf at most 2x), plus the time
of `python -c "import raf"` (target: under 150 ms).

    python benchmarks/overhead.py [--runs 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from raf import (
    AgentBuilder,
    ChatMessage,
    ChatOptions,
    ChatResponse,
    FunctionResultContent,
    Role,
    tool,
)
from raf.testing import ScriptedChatClient, call, reply


async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def upper(text: str) -> str:
    """Upper-case a text."""
    return text.upper()


async def lookup(key: str) -> str:
    """Look a key up."""
    return {"k": "value"}.get(key, "missing")


def script() -> list[Any]:
    return [
        reply("", call("add", a=2, b=3, call_id="c1")),
        reply("", call("upper", text="x", call_id="c2"), call("lookup", key="k", call_id="c3")),
        "done",
    ]


RAF_TOOLS = [tool(add), tool(upper), tool(lookup)]
PLAIN_TOOLS: dict[str, Callable[..., Awaitable[Any]]] = {
    "add": add,
    "upper": upper,
    "lookup": lookup,
}


class CyclingModel(ScriptedChatClient):
    """The scripted model, replaying its three turns forever (built once, like an agent)."""

    def __init__(self) -> None:
        super().__init__(script() * 1)

    async def get_response(self, messages: Any, options: ChatOptions | None = None) -> ChatResponse:
        if self.remaining == 0:
            self._next = 0
        self.requests.clear()
        return await super().get_response(messages, options)


HAND_MODEL = CyclingModel()
RAF_AGENT = (
    AgentBuilder()
    .with_instructions("You are a calculator.")
    .with_chat_client(CyclingModel())
    .with_tools(RAF_TOOLS)
    .build()
)


async def hand_written_run() -> str:
    """The loop a developer would write by hand: no providers, no validation, no session."""
    model = HAND_MODEL
    messages = [ChatMessage.system("You are a calculator."), ChatMessage.user("go")]
    options = ChatOptions(tools=list(RAF_TOOLS))
    while True:
        response = await model.get_response(messages, options)
        message = response.messages[0]
        messages.append(message)
        calls = message.function_calls
        if not calls:
            return message.text
        values = await asyncio.gather(*(PLAIN_TOOLS[c.name](**c.arguments) for c in calls))
        messages.append(
            ChatMessage(
                role=Role.TOOL,
                contents=[
                    FunctionResultContent(call_id=c.call_id, result=v)
                    for c, v in zip(calls, values, strict=True)
                ],
            )
        )


async def raf_run() -> str:
    """A full agent run: history provider, session, validation, the tool loop."""
    response = await RAF_AGENT.run("go")
    text: str = response.text
    return text


async def measure(
    fns: dict[str, Callable[[], Awaitable[str]]], runs: int, batches: int = 10
) -> dict[str, list[float]]:
    """Microseconds per run of each function, batches interleaved so that a change in
    the machine's load hits both alike."""
    for fn in fns.values():
        for _ in range(50):
            assert await fn() == "done"
    samples: dict[str, list[float]] = {name: [] for name in fns}
    per_batch = max(1, runs // batches)
    for _ in range(batches):
        for name, fn in fns.items():
            started = time.perf_counter()
            for _ in range(per_batch):
                await fn()
            samples[name].append((time.perf_counter() - started) / per_batch * 1e6)
    return samples


def import_time_ms(repeats: int = 5) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import raf"], check=True)
        times.append((time.perf_counter() - started) * 1000)
    baseline = []
    for _ in range(repeats):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        baseline.append((time.perf_counter() - started) * 1000)
    return min(times) - min(baseline) + min(baseline)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=2000)
    args = parser.parse_args()
    samples = await measure({"hand": hand_written_run, "raf": raf_run}, args.runs)
    hand_us, raf_us = statistics.median(samples["hand"]), statistics.median(samples["raf"])
    print(f"hand-written loop : {hand_us:8.1f} us/run (median of 10 interleaved batches)")
    print(f"raf Agent.run     : {raf_us:8.1f} us/run (new session each run)")
    print(f"ratio             : {raf_us / hand_us:8.2f}x   (target <= 2x)")
    print(f"python -c 'import raf': {import_time_ms():.0f} ms wall (target < 150 ms)")


if __name__ == "__main__":
    asyncio.run(main())

"""The overhead scenario, its plain floor and the timing harness; standard library only.

Imported by `overhead.py` (raf) and by every runner in `peers/` (each in its own
virtualenv), so every framework is compared against the same floor, measured in its own
process.

The scenario: three tools; the model's turn 1 calls add(a=2, b=3), turn 2 calls
upper(text="x") and lookup(key="k") in one message (a parallel pair), turn 3 answers
"done". The model is a script of plain dict replies that costs nothing.

The floor is the loop a developer writes by hand over plain dicts and functions, with no
framework type: call the model, append its reply, run the calls it asks for, append their
results, repeat until it answers. It awaits async tools one after the other: running the
pair concurrently (`asyncio.gather`) would cost the floor two tasks and a trip through the
event loop, ten times its own cost, and hide that much of every framework's overhead.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

INSTRUCTIONS = "You are a calculator."
QUESTION = "go"
ANSWER = "done"

_TABLE = {"k": "value"}
CALLS = [0]
"""Tool calls made so far, by every framework and the floor: proves the tools ran."""


def add(a: int, b: int) -> int:
    """Add two integers."""
    CALLS[0] += 1
    return a + b


def upper(text: str) -> str:
    """Upper-case a text."""
    CALLS[0] += 1
    return text.upper()


def lookup(key: str) -> str:
    """Look a key up."""
    CALLS[0] += 1
    return _TABLE.get(key, "missing")


async def add_async(a: int, b: int) -> int:
    """Add two integers."""
    CALLS[0] += 1
    return a + b


async def upper_async(text: str) -> str:
    """Upper-case a text."""
    CALLS[0] += 1
    return text.upper()


async def lookup_async(key: str) -> str:
    """Look a key up."""
    CALLS[0] += 1
    return _TABLE.get(key, "missing")


SYNC_TOOLS: dict[str, Callable[..., Any]] = {"add": add, "upper": upper, "lookup": lookup}
ASYNC_TOOLS: dict[str, Callable[..., Awaitable[Any]]] = {
    "add": add_async,
    "upper": upper_async,
    "lookup": lookup_async,
}
"""The async tools, by the name the model calls them (frameworks register them so)."""

REPLIES: list[dict[str, Any]] = [
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "c1", "name": "add", "arguments": {"a": 2, "b": 3}}],
    },
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": "c2", "name": "upper", "arguments": {"text": "x"}},
            {"id": "c3", "name": "lookup", "arguments": {"key": "k"}},
        ],
    },
    {"role": "assistant", "content": ANSWER, "tool_calls": []},
]
"""The model's three turns, as plain dicts (arguments already decoded)."""

ARGUMENTS_JSON = {
    call["id"]: json.dumps(call["arguments"]) for reply in REPLIES for call in reply["tool_calls"]
}
"""Each call's arguments as the JSON text a wire format carries, for models that need it."""


class Script:
    """The scripted model's position: it replays the three replies, in order, forever.

    A run uses exactly three turns, so every run starts at turn 1; `check()` after a
    batch proves that no framework made a call more or less.
    """

    __slots__ = ("turn",)

    def __init__(self) -> None:
        self.turn = 0

    def next(self) -> dict[str, Any]:
        reply = REPLIES[self.turn % 3]
        self.turn += 1
        return reply

    def check(self) -> None:
        if self.turn % 3:
            raise AssertionError(f"the model was called {self.turn} times, not a multiple of 3")


def stream_chunks(reply: dict[str, Any]) -> list[dict[str, Any]]:
    """The chunks a streaming model sends for `reply`: one per tool call, the text, the end."""
    chunks: list[dict[str, Any]] = [{"type": "tool_call", "call": c} for c in reply["tool_calls"]]
    if reply["content"]:
        chunks.append({"type": "text", "delta": reply["content"]})
    chunks.append({"type": "finish"})
    return chunks


FLOOR_SCRIPT = Script()


async def _floor_model(messages: list[dict[str, Any]]) -> dict[str, Any]:
    return FLOOR_SCRIPT.next()


async def floor_run_sync_tools() -> str:
    """The hand-written loop with plain (sync) functions as tools."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": INSTRUCTIONS},
        {"role": "user", "content": QUESTION},
    ]
    while True:
        reply = await _floor_model(messages)
        messages.append(reply)
        calls = reply["tool_calls"]
        if not calls:
            content: str = reply["content"]
            return content
        for call in calls:
            value = SYNC_TOOLS[call["name"]](**call["arguments"])
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": str(value)})


async def floor_run_sync_tools_on_threads() -> str:
    """The hand-written loop as a careful server would write it: each sync tool call on a
    worker thread (`asyncio.to_thread`), the calls of one reply at once, so that a tool
    that blocks never holds the event loop. The price of that thread hop is the
    operating system's, whoever pays it."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": INSTRUCTIONS},
        {"role": "user", "content": QUESTION},
    ]
    while True:
        reply = await _floor_model(messages)
        messages.append(reply)
        calls = reply["tool_calls"]
        if not calls:
            content: str = reply["content"]
            return content
        values = await asyncio.gather(
            *(asyncio.to_thread(SYNC_TOOLS[c["name"]], **c["arguments"]) for c in calls)
        )
        for call, value in zip(calls, values, strict=True):
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": str(value)})


def _run_batch(calls: list[dict[str, Any]]) -> list[Any]:
    return [SYNC_TOOLS[c["name"]](**c["arguments"]) for c in calls]


async def floor_run_sync_tools_one_hop() -> str:
    """The hand-written loop with the fewest thread hops that still never holds the event
    loop with a sync tool: each reply's calls run together on one worker thread, one
    `asyncio.to_thread` per batch (two per run here). What a run costs on top of the
    plain loop when it keeps its sync tools off the event loop, whoever writes it."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": INSTRUCTIONS},
        {"role": "user", "content": QUESTION},
    ]
    while True:
        reply = await _floor_model(messages)
        messages.append(reply)
        calls = reply["tool_calls"]
        if not calls:
            content: str = reply["content"]
            return content
        values = await asyncio.to_thread(_run_batch, calls)
        for call, value in zip(calls, values, strict=True):
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": str(value)})


async def floor_run_async_tools() -> str:
    """The hand-written loop with async functions as tools."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": INSTRUCTIONS},
        {"role": "user", "content": QUESTION},
    ]
    while True:
        reply = await _floor_model(messages)
        messages.append(reply)
        calls = reply["tool_calls"]
        if not calls:
            content: str = reply["content"]
            return content
        for call in calls:
            value = await ASYNC_TOOLS[call["name"]](**call["arguments"])
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": str(value)})


async def _floor_stream_model(messages: list[dict[str, Any]]) -> AsyncIterator[dict[str, Any]]:
    for chunk in stream_chunks(FLOOR_SCRIPT.next()):
        yield chunk


async def floor_stream() -> AsyncIterator[dict[str, Any]]:
    """The hand-written streaming loop (async tools): every chunk and every tool result is
    passed on to the caller as it comes."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": INSTRUCTIONS},
        {"role": "user", "content": QUESTION},
    ]
    while True:
        text: list[str] = []
        calls: list[dict[str, Any]] = []
        async for chunk in _floor_stream_model(messages):
            if chunk["type"] == "text":
                text.append(chunk["delta"])
            elif chunk["type"] == "tool_call":
                calls.append(chunk["call"])
            yield chunk
        messages.append({"role": "assistant", "content": "".join(text), "tool_calls": calls})
        if not calls:
            return
        for call in calls:
            value = await ASYNC_TOOLS[call["name"]](**call["arguments"])
            result = {"role": "tool", "tool_call_id": call["id"], "content": str(value)}
            messages.append(result)
            yield {"type": "tool_result", "result": result}


async def floor_run_stream() -> str:
    """Consume the floor's stream as a caller printing text would; returns the text."""
    text = []
    async for chunk in floor_stream():
        if chunk["type"] == "text":
            text.append(chunk["delta"])
    return "".join(text)


FLOORS: dict[str, Callable[[], Awaitable[str]]] = {
    "sync tools": floor_run_sync_tools,
    "async tools": floor_run_async_tools,
    "stream": floor_run_stream,
    "sync tools, threaded floor": floor_run_sync_tools_on_threads,
    "sync tools, one-hop floor": floor_run_sync_tools_one_hop,
}
"""The floor of each measured case, by case name."""


CLOCK: Callable[[], float] = (
    time.process_time if os.environ.get("RAF_BENCH_CLOCK") == "cpu" else time.perf_counter
)
"""What a batch is timed with: wall time, or with `RAF_BENCH_CLOCK=cpu` the CPU time of
the whole process (every thread), which moves less with a loaded machine's other work."""


async def _warm(name: str, candidate: Callable[[], Awaitable[str]], seconds: float) -> float:
    """Run `candidate` for at least 20 runs and `seconds`, checking every run's answer and
    tool calls; returns its seconds per run, to size the batches."""
    runs = 0
    started = time.perf_counter()
    while runs < 20 or time.perf_counter() - started < seconds:
        calls = CALLS[0]
        text = await candidate()
        if text != ANSWER:
            raise AssertionError(f"{name}: a run answered {text!r}, not {ANSWER!r}")
        if CALLS[0] != calls + 3:
            raise AssertionError(f"{name}: a run made {CALLS[0] - calls} tool calls, not 3")
        runs += 1
    return (time.perf_counter() - started) / runs


async def measure(
    cases: dict[str, Callable[[], Awaitable[str]]],
    *,
    batches: int,
    batch_seconds: float,
    scripts: list[Script],
) -> dict[str, dict[str, float]]:
    """Time each framework case against the floor of the same case.

    Each batch runs one candidate for about `batch_seconds` (the floor many more times
    than a framework). Batches are interleaved (floor, framework, floor, framework, …)
    so that a change in the machine's load hits both alike; each pair gives a ratio, and
    the result holds, per case, the median microseconds per run of both and the median,
    lowest and highest of the per-pair ratios.
    """
    sizes: dict[tuple[str, int], int] = {}
    for name, fn in cases.items():
        for index, candidate in enumerate((FLOORS[name], fn)):
            per_run = await _warm(name, candidate, 2 * batch_seconds)
            sizes[name, index] = max(1, round(batch_seconds / per_run))
    out: dict[str, dict[str, float]] = {}
    for name, fn in cases.items():
        samples: tuple[list[float], list[float]] = ([], [])
        for _ in range(batches):
            for index, candidate in enumerate((FLOORS[name], fn)):
                runs = sizes[name, index]
                started = CLOCK()
                for _ in range(runs):
                    await candidate()
                samples[index].append((CLOCK() - started) / runs * 1e6)
        for script in scripts:
            script.check()
        floor_us, framework_us = samples
        ratios = [f / b for f, b in zip(framework_us, floor_us, strict=True)]
        out[name] = {
            "floor_us": statistics.median(floor_us),
            "us": statistics.median(framework_us),
            "ratio": statistics.median(ratios),
            "ratio_low": min(ratios),
            "ratio_high": max(ratios),
        }
    return out


def emit(framework: str, version: str, results: dict[str, dict[str, float]]) -> None:
    """Print one runner's results as one JSON line (read by overhead.py)."""
    line = {"framework": framework, "version": version, "cases": results}
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()


# -- memory: what a kept conversation costs --------------------------------------------

MEMORY_SESSIONS = 1_000
MEMORY_TURNS = 10
MEMORY_ANSWER = "ok"
"""The memory scenario: this many sessions each take this many turns of a short user
message and a short answer (no tool call; the agent still has the three tools)."""

KEPT: list[Any] = []
"""Every measured set of sessions, alive to the process's end."""


def rss_bytes() -> int:
    """The process's resident set size now, after two full collections (Linux /proc)."""
    import gc
    import os

    gc.collect()
    gc.collect()
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


async def bytes_per_stored_message(
    new_session: Callable[[], Any],
    turn: Callable[[Any, str], Awaitable[Any]],
    count: Callable[[Any], int],
    *,
    sessions: int = MEMORY_SESSIONS,
    turns: int = MEMORY_TURNS,
) -> dict[str, float]:
    """RSS growth while `sessions` sessions (`new_session()`) each take `turns` turns
    (`turn(session, text)`), divided by the messages they keep (`count(session)` each).
    One warm-up session runs first and is dropped, so lazy caches are not counted."""
    warm = new_session()
    for index in range(turns):
        await turn(warm, f"warm {index}")
    del warm
    before = rss_bytes()
    kept = [new_session() for _ in range(sessions)]
    for index in range(turns):
        for number, session in enumerate(kept):
            await turn(session, f"question {number}.{index}")
    after = rss_bytes()
    messages = sum(count(session) for session in kept)
    KEPT.append(kept)  # freed pages would be reused by the next measurement: keep them
    return {"bytes": (after - before) / messages, "messages": messages}


class FloorSession:
    """The hand-written loop's conversation: plain dicts in a list."""

    __slots__ = ("messages",)

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": INSTRUCTIONS}]


async def floor_turn(session: FloorSession, text: str) -> str:
    """One turn of the hand-written loop: the user's message and the model's short answer
    kept as plain dicts."""
    session.messages.append({"role": "user", "content": text})
    reply = {"role": "assistant", "content": MEMORY_ANSWER}
    session.messages.append(reply)
    return reply["content"]


def floor_count(session: FloorSession) -> int:
    return len(session.messages) - 1  # the system message is not a turn's

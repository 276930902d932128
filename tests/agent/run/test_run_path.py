"""One run reads top to bottom: its messages pass through few modules and seldom climb
back from the core to the layers above it, and every step it takes is in one file.

A run's messages are followed call by call: every call into raf that receives the request
list, a message of it, the conversation the model is sent, or an object holding one of
them (the run itself, a middleware's context) is a visit to that function's module.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import sys
from collections.abc import Awaitable, Callable
from types import FrameType
from typing import Any

import pytest

from raf import AgentBuilder, ChatMessage, tool
from raf.agent.run import steps as run_steps
from raf.testing import ScriptedChatClient, call, reply

LOWER = ("raf.core.", "raf.stores.")


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _agent() -> Any:
    model = ScriptedChatClient([reply("", call("add", a=1, b=2)), "3"])
    builder = AgentBuilder("adder").with_instructions("Add.").with_chat_client(model)
    return builder.with_tool(add).build()


def follow(start: Callable[[list[ChatMessage]], Awaitable[None]]) -> list[str]:
    """The modules a run's messages visit, in order (a module twice in a row is one visit)."""
    request = [ChatMessage.user("1 + 2?")]
    tracked = {id(request), id(request[0])}
    kept: list[Any] = [request]
    visits: list[str] = []

    def carries(value: Any, nested: bool = False) -> bool:
        if id(value) in tracked:
            return True
        if isinstance(value, list | tuple):
            if value and any(id(item) in tracked for item in value[:64]):
                tracked.add(id(value))
                kept.append(value)  # alive, so its id is not reused
                return True
            return False
        if nested or isinstance(value, str | dict):
            return False
        for name in ("messages", "conversation", "request"):
            inner = getattr(value, name, None)
            if inner is not None and not callable(inner) and carries(inner, True):
                return True
        return False

    def watch(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        module = str(frame.f_globals.get("__name__", ""))
        if not module.startswith("raf.") or module.startswith("raf.testing"):
            return
        code = frame.f_code
        names = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
        carried = any(carries(frame.f_locals.get(name)) for name in names)
        if carried and (not visits or visits[-1] != module):
            visits.append(module)

    async def traced() -> None:
        sys.setprofile(watch)
        try:
            await start(request)
        finally:
            sys.setprofile(None)

    asyncio.run(traced())
    return visits


def climbs(visits: list[str]) -> int:
    """How often the messages go from the core (or the stores) back up to a layer above."""
    return sum(
        1
        for before, after in itertools.pairwise(visits)
        if before.startswith(LOWER) and not after.startswith(LOWER)
    )


def _run(request: list[ChatMessage]) -> Awaitable[None]:
    async def go() -> None:
        await _agent().run(request)

    return go()


def _stream(request: list[ChatMessage]) -> Awaitable[None]:
    async def go() -> None:
        async for _ in _agent().run_stream(request):
            pass

    return go()


@pytest.mark.parametrize("start", [_run, _stream], ids=["run", "run_stream"])
def test_a_runs_messages_pass_through_few_modules(
    start: Callable[[list[ChatMessage]], Awaitable[None]],
) -> None:
    visits = follow(start)
    assert visits[0] == "raf.agent.agent"
    assert len(set(visits)) <= 10, sorted(set(visits))
    assert climbs(visits) <= 3, visits


def test_every_step_a_run_takes_is_in_the_steps_module() -> None:
    async def stepped() -> list[Any]:
        async with _agent().iter("1 + 2?") as run_steps_:
            return [step.step async for step in run_steps_ if step.name != "end"]

    taken = asyncio.run(stepped())
    assert taken, "no step was taken"
    for step in taken:
        assert inspect.getmodule(step) is run_steps, step


def test_run_run_stream_and_iter_take_their_steps_in_one_loop() -> None:
    """The pumps differ only in what they do with a step: one loop takes the steps of
    all three, with agent middleware as a layer around it (no loop of its own)."""
    import ast

    from raf.agent.run import pumps

    tree = ast.parse(inspect.getsource(pumps))
    loops = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.While) and "step" in ast.unparse(node.test)
    ]
    assert len(loops) == 1, [ast.unparse(node.test) for node in loops]

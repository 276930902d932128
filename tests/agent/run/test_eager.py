"""`run_all`: calls that finish at once cost no task; the rest keep asyncio's semantics."""

from __future__ import annotations

import asyncio
import contextvars
import types
from typing import Any

import pytest

from raf.agent.run.eager import run_all

SEEN: contextvars.ContextVar[str] = contextvars.ContextVar("seen", default="")


def _count_tasks(loop: asyncio.AbstractEventLoop) -> list[int]:
    made = [0]

    def factory(loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> asyncio.Task[Any]:
        made[0] += 1
        return asyncio.Task(coro, loop=loop, **kwargs)

    loop.set_task_factory(factory)
    return made


async def _at_once(value: str) -> str:
    return value


async def _waits(value: str, seconds: float = 0.01) -> str:
    await asyncio.sleep(seconds)
    return value


async def test_calls_that_finish_at_once_make_no_task_and_keep_order() -> None:
    loop = asyncio.get_running_loop()
    made = _count_tasks(loop)
    try:
        results = await run_all([_at_once("a"), _at_once("b"), _at_once("c")])
    finally:
        loop.set_task_factory(None)
    assert results == ["a", "b", "c"]
    assert made[0] == 0


async def test_waiting_calls_run_concurrently_and_keep_order() -> None:
    started = asyncio.Event()
    order: list[str] = []

    async def first() -> str:
        order.append("first starts")
        await started.wait()  # set by the third: deadlocks unless they run concurrently
        return "first"

    async def third() -> str:
        order.append("third starts")
        started.set()
        await asyncio.sleep(0)
        return "third"

    results = await asyncio.wait_for(run_all([first(), _at_once("second"), third()]), 5)
    assert results == ["first", "second", "third"]
    assert order == ["first starts", "third starts"]


async def test_a_timeout_inside_the_waiting_call_fires_in_that_call() -> None:
    async def bounded() -> str:
        try:
            async with asyncio.timeout(0.01):
                await asyncio.sleep(5)
        except TimeoutError:
            return "timed out"
        return "finished"

    results = await asyncio.wait_for(run_all([bounded(), _waits("other", 0.05)]), 5)
    assert results == ["timed out", "other"]


async def test_each_of_several_calls_gets_its_own_context() -> None:
    async def sets(value: str) -> str:
        SEEN.set(value)
        await asyncio.sleep(0)
        return SEEN.get()

    results = await run_all([sets("a"), sets("b"), sets("c")])
    assert results == ["a", "b", "c"]
    assert SEEN.get() == ""


async def test_a_failing_later_call_cancels_the_waiting_one_at_once() -> None:
    cancelled: list[str] = []

    async def slow() -> str:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append("slow")
            raise
        return "slow"

    async def fails() -> str:
        await asyncio.sleep(0.01)
        raise ValueError("broken")

    with pytest.raises(ValueError, match="broken"):
        await asyncio.wait_for(run_all([slow(), fails()]), 5)
    assert cancelled == ["slow"]
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0


async def test_a_call_failing_at_once_closes_the_calls_not_started() -> None:
    async def fails() -> str:
        raise ValueError("at once")

    never = _waits("never")
    assert isinstance(never, types.CoroutineType)
    with pytest.raises(ValueError, match="at once"):
        await run_all([fails(), never])
    assert never.cr_frame is None  # closed, not left to warn "never awaited"


async def test_cancelling_the_run_cancels_every_call() -> None:
    cancelled: list[str] = []

    async def slow(name: str) -> str:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append(name)
            raise
        return name

    task = asyncio.ensure_future(run_all([slow("a"), slow("b")]))
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert sorted(cancelled) == ["a", "b"]

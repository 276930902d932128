"""Values handed out from inside a coroutine to whoever iterates it, in the same task."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest

from raf.core.errors import RafError
from raf.core.hand_out import hand_out, handed_out, relay
from raf.core.middleware import Around


async def _deep(out: list[str]) -> None:
    async def inner() -> None:
        await hand_out("a")
        await asyncio.sleep(0)  # a real wait goes to the event loop
        await hand_out("b")

    await inner()
    out.append("done")


async def test_values_handed_out_however_deep_reach_the_iterator_in_order() -> None:
    done: list[str] = []
    got = [value async for value in handed_out(_deep(done))]
    assert got == ["a", "b"] and done == ["done"]


async def test_the_coroutine_runs_in_the_iterating_task() -> None:
    tasks: list[asyncio.Task[object] | None] = []

    async def where() -> None:
        tasks.append(asyncio.current_task())
        await hand_out(1)
        await asyncio.sleep(0.001)
        tasks.append(asyncio.current_task())

    [value async for value in handed_out(where())]
    assert tasks == [asyncio.current_task()] * 2


async def test_an_error_rises_to_the_iterator() -> None:
    async def fails() -> None:
        await hand_out(1)
        raise ValueError("broken")

    got = []
    with pytest.raises(ValueError, match="broken"):
        async for value in handed_out(fails()):
            got.append(value)
    assert got == [1]


async def test_closing_early_cancels_the_coroutine_where_it_waits_and_lets_it_clean_up() -> None:
    seen: list[str] = []

    async def long() -> None:
        try:
            await hand_out(1)
            await hand_out(2)
        except asyncio.CancelledError:
            seen.append("cancelled")
            await asyncio.sleep(0)  # clean-up may wait
            seen.append("cleaned up")
            raise

    values = handed_out(long())
    async with contextlib.aclosing(values):
        async for _ in values:
            break
    assert seen == ["cancelled", "cleaned up"]


async def test_cancelling_the_iterating_task_reaches_the_coroutine() -> None:
    seen: list[str] = []
    started = asyncio.Event()

    async def waits() -> None:
        try:
            started.set()
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise

    async def iterate() -> None:
        async for _ in handed_out(waits()):
            pass

    task = asyncio.ensure_future(iterate())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert seen == ["cancelled"]


async def test_a_chain_around_work_hears_how_the_work_ended() -> None:
    heard: list[str] = []

    async def outer(context: dict[str, str], call_next: object) -> None:
        heard.append("before")
        try:
            await call_next()  # type: ignore[operator]
            heard.append(f"after {context['result']}")
        except ValueError as exc:
            heard.append(f"error {exc}")
            raise

    context: dict[str, str] = {}
    layer = Around([outer], context)
    assert await layer.enter()
    context["result"] = "ok"
    await layer.leave()
    assert heard == ["before", "after ok"]

    layer = Around([outer], context)
    assert await layer.enter()
    with pytest.raises(ValueError, match="work failed"):
        await layer.leave(ValueError("work failed"))
    assert heard[-1] == "error work failed"


async def test_a_chain_that_answers_alone_does_not_ask_for_the_work() -> None:
    async def alone(context: dict[str, str], call_next: object) -> None:
        context["result"] = "cached"

    context: dict[str, str] = {}
    assert not await Around([alone], context).enter()
    assert context == {"result": "cached"}


async def test_calling_call_next_twice_around_work_is_an_error() -> None:
    async def twice(context: object, call_next: object) -> None:
        await call_next()  # type: ignore[operator]
        await call_next()  # type: ignore[operator]

    layer: Around[object] = Around([twice], {})
    assert await layer.enter()
    with pytest.raises(RafError, match="call_next twice"):
        await layer.leave()


async def _letters(closed: list[str], *, fail_after: int | None = None) -> AsyncIterator[str]:
    try:
        for index, letter in enumerate("xyz"):
            if index == fail_after:
                raise ValueError("the stream broke")
            await asyncio.sleep(0)  # a real wait goes to the event loop
            yield letter
    finally:
        closed.append("closed")


async def test_a_relayed_iterator_comes_out_item_by_item_between_the_values_around_it() -> None:
    closed: list[str] = []
    seen: list[str] = []

    async def steps() -> None:
        await hand_out("before")
        await relay(_letters(closed))
        seen.append("resumed")
        await hand_out("after")

    got = [value async for value in handed_out(steps())]
    assert got == ["before", "x", "y", "z", "after"]
    assert seen == ["resumed"] and closed == ["closed"]


async def test_a_relayed_iterator_that_fails_raises_where_the_coroutine_waits() -> None:
    closed: list[str] = []

    async def steps() -> None:
        try:
            await relay(_letters(closed, fail_after=2))
        except ValueError as exc:
            await hand_out(f"caught: {exc}")  # the coroutine goes on after the error

    got = [value async for value in handed_out(steps())]
    assert got == ["x", "y", "caught: the stream broke"] and closed == ["closed"]


async def test_closing_early_inside_a_relay_closes_the_iterator_then_cancels_the_coroutine() -> (
    None
):
    order: list[str] = []

    async def stream() -> AsyncIterator[str]:
        try:
            yield "x"
            yield "y"
        finally:
            order.append("stream closed")

    async def steps() -> None:
        try:
            await relay(stream())
        except asyncio.CancelledError:
            order.append("coroutine cancelled")
            raise

    values = handed_out(steps())
    async with contextlib.aclosing(values):
        async for _ in values:
            break
    assert order == ["stream closed", "coroutine cancelled"]


async def test_cancelling_the_task_while_a_relayed_iterator_waits_reaches_both() -> None:
    seen: list[str] = []
    started = asyncio.Event()

    async def stalls() -> AsyncIterator[str]:
        try:
            started.set()
            await asyncio.sleep(30)
            yield "never"
        except asyncio.CancelledError:
            seen.append("stream cancelled")
            raise

    async def steps() -> None:
        try:
            await relay(stalls())
        except asyncio.CancelledError:
            seen.append("coroutine cancelled")
            raise

    async def iterate() -> None:
        async for _ in handed_out(steps()):
            pass

    task = asyncio.ensure_future(iterate())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert seen == ["stream cancelled", "coroutine cancelled"]

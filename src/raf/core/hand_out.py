"""Values handed out from deep inside a coroutine to whoever iterates it, in the same task.

`handed_out(coro)` drives `coro` in the iterating task and yields each value that the
coroutine (or anything it awaits, however deep: a middleware chain, a loop of steps)
passes to `await hand_out(value)`, and each item of an async iterator it passes to
`await relay(iterator)` (iterated by `handed_out` itself: a model's stream of many
deltas passes through none of the coroutine's frames); the coroutine goes on when the
next value is asked for. Everything else the coroutine awaits goes to the event loop as
usual. This is how a run streams through agent and chat middleware with no task and no
queue between them: the middleware runs in the caller's task, sees its context variables
and its cancellation, and its errors rise straight to the caller.
"""

from __future__ import annotations

import asyncio
import contextlib
import types
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Coroutine, Generator
from typing import Any


class _Handed:
    """One value on its way out, or (`relay`) an async iterator whose items go out: what
    `hand_out` and `relay` suspend the coroutine with."""

    __slots__ = ("relay", "value")

    def __init__(self, value: Any, relay: bool) -> None:
        self.value = value
        self.relay = relay


@types.coroutine
def hand_out(value: Any) -> Generator[Any, Any, None]:
    """`await hand_out(value)`: the iterating `handed_out` yields `value`, then the
    awaiting coroutine goes on. Outside `handed_out` the event loop refuses it."""
    yield _Handed(value, False)


@types.coroutine
def relay(source: AsyncIterator[Any]) -> Generator[Any, Any, None]:
    """`await relay(source)`: the iterating `handed_out` yields each item of `source`
    itself, as it is asked for, then the awaiting coroutine goes on; an error of
    `source` (or a cancellation while it waits) is raised at this await. Each item
    passes through no frame of the awaiting coroutine: a model's stream of many deltas
    costs what iterating it directly costs."""
    yield _Handed(source, True)


@types.coroutine
def _to_loop(value: Any) -> Generator[Any, Any, Any]:
    """Pass what a coroutine yields (a future, or a bare yield) on to the event loop."""
    return (yield value)


def _drive(
    coro: Coroutine[Any, Any, Any], thrown: BaseException | None
) -> Generator[Any, Any, _Handed | None]:
    """Run `coro` on (throwing `thrown` into it first, when given) until it hands a value
    out (that `_Handed`) or ends (None); what else it yields goes to the event loop."""
    if thrown is None:
        step, sent = coro.send, None
    else:
        step, sent = coro.throw, thrown
    while True:
        try:
            value = step(sent)
        except StopIteration:
            return None
        if type(value) is _Handed:
            return value
        try:
            sent = yield value  # a future or a bare yield: the event loop's
        except BaseException as exc:  # thrown in by the task (cancelled): pass it on
            step, sent = coro.throw, exc
        else:
            step = coro.send


class Drive:
    """`await Drive(coro, thrown)`: run `coro` on in this task (throwing `thrown` into it
    first, when given) until it hands a value out (that `_Handed`) or ends (None)."""

    __slots__ = ("coro", "thrown")

    def __init__(self, coro: Coroutine[Any, Any, Any], thrown: BaseException | None) -> None:
        self.coro, self.thrown = coro, thrown

    def __await__(self) -> Generator[Any, Any, _Handed | None]:
        return _drive(self.coro, self.thrown)


async def handed_out(coro: Coroutine[Any, Any, Any]) -> AsyncGenerator[Any, None]:
    """Run `coro` in this task, yielding every value it hands out (`hand_out`, and the
    items of each `relay`); its error, if it raises, is raised here. `aclose()` before
    the end stops `coro` as a cancelled task would be stopped (`CancelledError` at the
    point it waits, a relayed iterator closed first)."""
    step: Callable[[Any], Any] = coro.send
    sent: Any = None
    while True:
        try:
            value = step(sent)
        except StopIteration:
            return
        step, sent = coro.send, None
        if type(value) is not _Handed:
            try:
                sent = await _to_loop(value)  # a future or a bare yield: the event loop's
            except BaseException as exc:  # thrown in by the task (cancelled): pass it on
                step, sent = coro.throw, exc
        elif not value.relay:
            try:
                yield value.value
            except GeneratorExit:
                await _stop(coro)
                raise
        else:
            source: AsyncIterator[Any] = value.value
            following = source.__anext__
            while True:
                try:
                    item = await following()
                except StopAsyncIteration:
                    break
                except BaseException as exc:  # it failed, or the task was cancelled
                    step, sent = coro.throw, exc
                    break
                try:
                    yield item
                except GeneratorExit:
                    await _close(source)
                    await _stop(coro)
                    raise


async def _close(source: AsyncIterator[Any]) -> None:
    """Close a relayed iterator left before its end (its own clean-up runs)."""
    close = getattr(source, "aclose", None)
    if close is not None:
        with contextlib.suppress(Exception):
            await close()


async def _stop(coro: Coroutine[Any, Any, Any]) -> None:
    """End a coroutine left suspended at a `hand_out`: cancel it there and let it clean
    up (awaiting what it must); a value it hands out while stopping goes nowhere."""
    thrown: BaseException | None = asyncio.CancelledError()
    try:
        while (handed := await Drive(coro, thrown)) is not None:
            if handed.relay:  # nobody reads it: it is closed, not iterated
                await _close(handed.value)
            thrown = asyncio.CancelledError()
    except BaseException:  # its cancellation, or what its clean-up raised: it is over
        pass
    finally:
        coro.close()

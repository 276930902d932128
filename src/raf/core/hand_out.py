"""Values handed out from deep inside a coroutine to whoever iterates it, in the same task.

`handed_out(coro)` drives `coro` in the iterating task and yields each value that the
coroutine (or anything it awaits, however deep: a middleware chain, a loop of steps)
passes to `await hand_out(value)`; the coroutine goes on when the next value is asked
for. Everything else the coroutine awaits goes to the event loop as usual. This is how a
run streams through agent and chat middleware with no task and no queue between them:
the middleware runs in the caller's task, sees its context variables and its
cancellation, and its errors rise straight to the caller.
"""

from __future__ import annotations

import asyncio
import types
from collections.abc import Awaitable, Coroutine, Generator
from typing import Any


class _Handed:
    """One value on its way out: what `hand_out` suspends the coroutine with."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __await__(self) -> Generator[Any, Any, None]:
        yield self  # `Drive` takes it; nothing is sent back


def hand_out(value: Any) -> _Handed:
    """`await hand_out(value)`: the iterating `handed_out` yields `value`, then the
    awaiting coroutine goes on. Outside `handed_out` the event loop refuses it."""
    return _Handed(value)


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


class HandedOut:
    """The values a coroutine hands out, as an async iterator (`handed_out`)."""

    __slots__ = ("coro", "done")

    def __init__(self, coro: Coroutine[Any, Any, Any]) -> None:
        self.coro = coro
        self.done = False

    def __aiter__(self) -> HandedOut:
        return self

    def __anext__(self) -> Awaitable[Any]:
        return self._next()

    @types.coroutine
    def _next(self) -> Generator[Any, Any, Any]:
        if self.done:
            raise StopAsyncIteration
        try:
            handed = yield from _drive(self.coro, None)
        except BaseException:
            self.done = True  # what `_drive` raises came out of `coro`: it is over
            raise
        if handed is None:
            self.done = True
            raise StopAsyncIteration
        return handed.value

    async def aclose(self) -> None:
        """Stop the coroutine where it waits, as a cancelled task would be stopped
        (`CancelledError` there), and let it clean up; nothing when it is over."""
        if not self.done:
            self.done = True
            await _stop(self.coro)


def handed_out(coro: Coroutine[Any, Any, Any]) -> HandedOut:
    """Run `coro` in this task, yielding every value it hands out (`hand_out`); its
    error, if it raises, is raised here. `aclose()` before the end stops `coro` as a
    cancelled task would be stopped (`CancelledError` at the point it waits)."""
    return HandedOut(coro)


async def _stop(coro: Coroutine[Any, Any, Any]) -> None:
    """End a coroutine left suspended at a `hand_out`: cancel it there and let it clean
    up (awaiting what it must); a value it hands out while stopping goes nowhere."""
    thrown: BaseException | None = asyncio.CancelledError()
    try:
        while await Drive(coro, thrown) is not None:
            thrown = asyncio.CancelledError()
    except BaseException:  # its cancellation, or what its clean-up raised: it is over
        pass
    finally:
        coro.close()

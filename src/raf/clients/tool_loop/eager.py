"""Start a batch's calls without a task each: most tool calls finish without waiting.

Each call's coroutine takes its first step right here, in the run's task; a call that
finishes in that step costs no task and no trip through the event loop. The first call
that waits keeps running in the run's task (where it started, so `asyncio.timeout`,
task groups and `current_task()` inside it see the task they started in); the calls
after it start as tasks, in order, and run concurrently with it. A task that fails
cancels that waiting call at once, as `asyncio.gather` would.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Coroutine, Generator, Sequence
from typing import Any, TypeVar

T = TypeVar("T")


class _Resume:
    """Awaits a coroutine that already took steps and is suspended on `waiting`."""

    __slots__ = ("context", "coro", "waiting")

    def __init__(
        self, coro: Coroutine[Any, Any, Any], waiting: Any, context: contextvars.Context | None
    ) -> None:
        self.coro, self.waiting, self.context = coro, waiting, context

    def __await__(self) -> Generator[Any, Any, Any]:
        coro, value, context = self.coro, self.waiting, self.context
        self.waiting = None
        while True:
            try:
                sent = yield value
            except BaseException as exc:  # thrown in by the task: pass it on
                try:
                    value = coro.throw(exc) if context is None else context.run(coro.throw, exc)
                except StopIteration as stop:
                    return stop.value
            else:
                try:
                    value = coro.send(sent) if context is None else context.run(coro.send, sent)
                except StopIteration as stop:
                    return stop.value


async def run_all(coros: Sequence[Coroutine[Any, Any, T]]) -> list[T]:
    """Await `coros` concurrently; results in their order. The first exception cancels
    the others (each awaited to its end) and is raised."""
    count = len(coros)
    results: list[Any] = [None] * count
    for index, coro in enumerate(coros):
        # one call runs in the caller's context, as an awaited coroutine would; several
        # each get a copy, as tasks would
        context = contextvars.copy_context() if count > 1 else None
        try:
            waiting = coro.send(None) if context is None else context.run(coro.send, None)
        except StopIteration as stop:
            results[index] = stop.value
            continue
        except BaseException:
            for rest in coros[index + 1 :]:
                rest.close()
            raise
        await _finish_from(index, _Resume(coro, waiting, context), coros, results)
        break
    return results


async def _finish_from(
    index: int, waiting: _Resume, coros: Sequence[Coroutine[Any, Any, Any]], results: list[Any]
) -> None:
    """Call `index` waits: start the rest as tasks, drive it here, then await them."""
    rest = coros[index + 1 :]
    if not rest:
        results[index] = await waiting
        return
    loop = asyncio.get_running_loop()
    run_task = asyncio.current_task()
    tasks = [loop.create_task(coro) for coro in rest]
    watching, interrupted = True, False

    def on_done(task: asyncio.Task[Any]) -> None:
        nonlocal watching, interrupted
        if watching and run_task is not None and not task.cancelled() and task.exception():
            watching, interrupted = False, True
            run_task.cancel()  # the call driven here stops; the failure is raised below

    for task in tasks:
        task.add_done_callback(on_done)
    try:
        try:
            results[index] = await waiting
        finally:
            watching = False
        if interrupted:
            raise asyncio.CancelledError
        results[index + 1 :] = await asyncio.gather(*tasks)
    except BaseException:
        waiting.coro.close()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if not interrupted or run_task is None:
            raise
        run_task.uncancel()
        raise _first_failure(tasks) from None


def _first_failure(tasks: Sequence[asyncio.Task[Any]]) -> BaseException:
    for task in tasks:
        if task.done() and not task.cancelled():
            error = task.exception()
            if error is not None:
                return error
    return asyncio.CancelledError()  # pragma: no cover - `interrupted` means one failed

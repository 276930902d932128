"""Start a batch's calls without a task each: most tool calls finish without waiting.

Each call's coroutine takes its first step right here, in the run's task; a call that
finishes in that step costs no task and no trip through the event loop. A call that only
waits for raf's tool thread pool (a sync tool, marked to join the batch) is held while
the next calls start, so every sync call of the batch runs on the pool at once and the
loop is woken once for all of them. The first call that waits for anything else keeps
running in the run's task (where it started, so `asyncio.timeout`, task groups and
`current_task()` inside it see the task they started in); the calls after it start as
tasks, in order, and run concurrently with it. A task that fails cancels that waiting
call at once, as `asyncio.gather` would.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Coroutine, Generator, Sequence
from typing import Any, TypeVar

from raf.core.tool_threads import ThreadBatch

T = TypeVar("T")
_Call = Coroutine[Any, Any, Any]


class _Resume:
    """Awaits a coroutine that already took steps and is suspended on `waiting`."""

    __slots__ = ("context", "coro", "waiting")

    def __init__(self, coro: _Call, waiting: Any, context: contextvars.Context | None) -> None:
        self.coro, self.waiting, self.context = coro, waiting, context

    def __await__(self) -> Generator[Any, Any, Any]:
        coro, value, context = self.coro, self.waiting, self.context
        self.waiting = None
        while True:
            if type(value) is _FUTURE and value.done():
                # a batch's call already settled: go on at once, as the task would after
                # a trip through the event loop
                try:
                    value = coro.send(None) if context is None else context.run(coro.send, None)
                except StopIteration as stop:
                    return stop.value
                continue
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


_FUTURE = asyncio.Future
"""What a call waiting for raf's tool pool is suspended on."""


async def run_all(coros: Sequence[Coroutine[Any, Any, T]], joins: Sequence[bool] = ()) -> list[T]:
    """Await `coros` concurrently; results in their order. The first exception cancels
    the others (each awaited to its end) and is raised. `joins[i]`: call i only waits
    for raf's tool threads before it finishes (a sync tool with no timeout and no
    middleware around it), so it may join the batch's single wake-up."""
    count = len(coros)
    calls: Sequence[_Call] = coros
    results: list[Any] = [None] * count
    batch = ThreadBatch() if any(joins) else None
    held: list[tuple[int, _Resume]] = []
    waiting: tuple[int, _Resume] | None = None
    for index, coro in enumerate(coros):
        # one call runs in the caller's context, as an awaited coroutine would; several
        # each get a copy, as tasks would
        context = contextvars.copy_context() if count > 1 or batch is not None else None
        joining = batch is not None and index < len(joins) and joins[index]
        if joining:
            assert context is not None and batch is not None
            context.run(batch.join)
        try:
            step = coro.send(None) if context is None else context.run(coro.send, None)
        except StopIteration as stop:
            results[index] = stop.value
            continue
        except BaseException:
            for rest in coros[index + 1 :]:
                rest.close()
            _abandon(batch, held)
            raise
        if joining and batch is not None and batch.owns(step):
            held.append((index, _Resume(coro, step, context)))
            continue
        waiting = (index, _Resume(coro, step, context))
        break
    if batch is not None:
        sealed = batch.seal()
        if waiting is None and held:
            await _finish_held(sealed, batch, held, results)
            return results
        if held:
            # the held calls settle in a task of their own, beside the waiting one
            calls = [*coros, _settle_held(sealed, batch, held, results)]
    if waiting is not None:
        index, resume = waiting
        await _finish_from(index, resume, calls, results)
    return results[:count]


async def _finish_held(
    sealed: asyncio.Future[None] | None,
    batch: ThreadBatch,
    held: list[tuple[int, _Resume]],
    results: list[Any],
) -> None:
    """Wait for the batch's threads, then finish each held call in order."""
    try:
        if sealed is not None:
            await sealed
        while held:
            index, resume = held[0]
            results[index] = await resume
            del held[0]
    except BaseException:
        _abandon(None, held)
        raise


async def _settle_held(
    sealed: asyncio.Future[None] | None,
    batch: ThreadBatch,
    held: list[tuple[int, _Resume]],
    results: list[Any],
) -> None:
    await _finish_held(sealed, batch, held, results)


def _abandon(batch: ThreadBatch | None, held: list[tuple[int, _Resume]]) -> None:
    """Stop held calls (their threads run to the end on their own)."""
    if batch is not None:
        batch.seal()
    for _, resume in held:
        waited = resume.waiting
        if isinstance(waited, asyncio.Future):
            waited.cancel()
        context = resume.context
        try:
            error = asyncio.CancelledError()
            throw = resume.coro.throw
            step = throw(error) if context is None else context.run(throw, error)
        except BaseException:
            continue
        if step is not None:  # it goes on waiting although cancelled: close it
            resume.coro.close()
    held.clear()


async def _finish_from(
    index: int, waiting: _Resume, coros: Sequence[_Call], results: list[Any]
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
        results[index + 1 : index + 1 + len(tasks)] = await asyncio.gather(*tasks)
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

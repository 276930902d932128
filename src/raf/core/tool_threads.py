"""raf's own bounded thread pool for sync tools, apart from asyncio's default executor.

A sync tool that blocks cannot be interrupted: when its call times out or the run is
cancelled, the run moves on and the thread finishes the function on its own, holding
one of the pool's threads until then. Bounding the pool keeps such calls from starving
the rest of the program (other `asyncio.to_thread` users keep the default executor).

The workers are daemon threads, so a tool still stuck after its timeout does not hold up
the process's exit (`concurrent.futures` joins its workers at exit), and a forked child
starts with no pool (the parent's threads do not exist there; a copied pool would wait
for them forever).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import itertools
import os
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from raf.core.errors import ConfigurationError

T = TypeVar("T")


class _DaemonPool:
    """At most `max_workers` daemon threads taking calls from one queue; a thread is
    started only when no idle one is waiting."""

    def __init__(self, max_workers: int) -> None:
        self.max_workers = max_workers
        self._calls: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._idle = threading.Semaphore(0)
        self._lock = threading.Lock()
        self._threads = 0
        self._names = itertools.count()

    def submit(self, call: Callable[[], None]) -> None:
        """Run `call` on a worker (it handles its own errors)."""
        self._calls.put(call)
        if self._idle.acquire(blocking=False):
            return
        with self._lock:
            if self._threads >= self.max_workers:
                return
            self._threads += 1
        name = f"raf-tool_{next(self._names)}"
        threading.Thread(target=self._work, name=name, daemon=True).start()

    def _work(self) -> None:
        while (call := self._calls.get()) is not None:
            call()
            self._idle.release()

    def shutdown(self) -> None:
        """Let each worker end once the calls queued before this are done."""
        with self._lock:
            threads = self._threads
        for _ in range(threads):
            self._calls.put(None)


_lock = threading.Lock()
_pool: _DaemonPool | None = None
_size: int | None = None


def _forget_pool_in_child() -> None:
    global _lock, _pool
    _lock = threading.Lock()  # the parent may have held it while forking
    _pool = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_in_child)


def _default_size() -> int:
    raw = os.environ.get("RAF_TOOL_THREADS")
    if raw is None:
        return min(32, (os.cpu_count() or 1) + 4)
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value <= 0:
        raise ConfigurationError(
            f"RAF_TOOL_THREADS must be a whole number above 0, got {raw!r}",
            key_path="RAF_TOOL_THREADS",
        )
    return value


def tool_threads() -> int:
    """How many sync tool calls may run at once."""
    return _size if _size is not None else _default_size()


def set_tool_threads(count: int | None) -> None:
    """Size the pool (None: the default, `RAF_TOOL_THREADS` or else min(32, CPUs + 4));
    calls already running finish on the old pool."""
    global _pool, _size
    if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count <= 0):
        raise ConfigurationError(
            f"set_tool_threads(count=...): must be a whole number above 0, got {count!r}"
        )
    with _lock:
        old, _pool, _size = _pool, None, count
    if old is not None:
        old.shutdown()


def _executor() -> _DaemonPool:
    global _pool
    pool = _pool
    if pool is None:
        with _lock:
            if _pool is None:
                _pool = _DaemonPool(tool_threads())
            pool = _pool
    return pool


async def run_in_tool_thread(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """`fn(*args, **kwargs)` on raf's tool pool, with the caller's context variables.

    Inside an open `ThreadBatch` the call joins it (the loop is woken once for the whole
    batch); otherwise the worker wakes the loop itself when the call is done.
    """
    call = functools.partial(contextvars.copy_context().run, fn, *args, **kwargs)
    batch = _joining.get()
    if batch is not None and batch.open:
        return await batch.submit(call)
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()
    _executor().submit(functools.partial(_run_alone, loop, future, call))
    return await future


def _run_alone(
    loop: asyncio.AbstractEventLoop, future: asyncio.Future[Any], call: Callable[[], Any]
) -> None:
    """On a pool thread: run `call`, then wake the loop once with its outcome (cheaper than
    `run_in_executor`, which chains a second future and a callback per call)."""
    try:
        outcome: tuple[bool, Any] = (True, call())
    except BaseException as exc:
        outcome = (False, exc)
    with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits for the result
        loop.call_soon_threadsafe(_settle, future, outcome)


def _settle(future: asyncio.Future[Any], outcome: tuple[bool, Any]) -> None:
    if future.done():  # the caller stopped waiting (cancelled)
        return
    ok, value = outcome
    if ok:
        future.set_result(value)
    else:
        future.set_exception(value)


class ThreadBatch:
    """Sync calls started together (one batch of tool calls): each goes to the pool at
    once and they run concurrently; the event loop is woken once, when the last is done,
    or not at all when every call is done by the time the batch is sealed. The loop's
    thread never waits for them: it goes back to the event loop, which the last call wakes.

    Used from the event loop's thread: `join()` makes `run_in_tool_thread` calls in the
    current context join the batch; `seal()` closes it to new calls.
    """

    __slots__ = ("_done", "_finished", "_futures", "_lock", "_loop", "_running", "open")

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._lock = threading.Lock()
        self.open = True
        self._running = 0
        self._finished: list[tuple[asyncio.Future[Any], tuple[bool, Any]]] = []
        self._futures: set[asyncio.Future[Any]] = set()
        self._done: asyncio.Future[None] | None = None

    def join(self) -> None:
        """Make this context's `run_in_tool_thread` calls join the batch while it is open."""
        _joining.set(self)

    def owns(self, value: object) -> bool:
        """Whether `value` (what a suspended coroutine waits on) is one of our calls."""
        return value in self._futures

    def submit(self, call: Callable[[], T]) -> asyncio.Future[T]:
        future: asyncio.Future[T] = self._loop.create_future()
        self._futures.add(future)
        with self._lock:
            self._running += 1
        try:
            _executor().submit(functools.partial(self._work, future, call))
        except BaseException:
            with self._lock:
                self._running -= 1
            raise
        return future

    def _work(self, future: asyncio.Future[Any], call: Callable[[], Any]) -> None:
        try:
            outcome: tuple[bool, Any] = (True, call())
        except BaseException as exc:
            outcome = (False, exc)
        with self._lock:
            self._finished.append((future, outcome))
            self._running -= 1
            last = not self.open and self._running == 0
        if last:
            with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits
                self._loop.call_soon_threadsafe(self._resolve)

    def seal(self) -> asyncio.Future[None] | None:
        """Close the batch to new calls. None when every call is already done (their
        results are set); else a future done once they are (the last call wakes the
        event loop for it)."""
        with self._lock:
            self.open = False
            idle = self._running == 0
        if idle:
            self._resolve()
            return None
        done: asyncio.Future[None] = self._loop.create_future()
        self._done = done
        return done

    def _resolve(self) -> None:
        with self._lock:
            finished, self._finished = self._finished, []
        for future, outcome in finished:
            _settle(future, outcome)
        done = self._done
        if done is not None and not done.done():
            done.set_result(None)


_joining: contextvars.ContextVar[ThreadBatch | None] = contextvars.ContextVar(
    "raf_tool_thread_batch", default=None
)

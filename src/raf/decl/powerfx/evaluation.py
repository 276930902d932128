"""Where a running workflow's formulas are evaluated. Most are quick and run on the
event loop. Two kinds may take long, so they run on a worker thread while the run awaits
them, and the loop goes on serving other runs and requests:

- a formula that matches patterns (IsMatch, Match, MatchAll): it is first tried on the
  loop with `TRY_SECONDS` for its matches; when they need longer it is evaluated again,
  from its start, on a thread, and goes there at once from then on (a formula that calls
  Patch, which writes a variable, goes there at once, as it cannot be evaluated twice).
  On the thread it has `MATCH_SECONDS` of wall time: whoever waits gives it up after
  that and `STOP_GRACE_SECONDS` more, even when the regex engine (which counts the
  process's CPU time) would let it run on;
- a formula whose row functions (ForAll, Filter, Sum, ...) would visit more than
  `BIG_ROWS` rows, estimated from the tables and texts it reads before it runs.

The rest stay on the loop, each bounded by the formula limits of
`raf.decl.powerfx.expressions` (100,000 steps: about 0.1 s at most).

A run awaits its formula, so at most one evaluation of a run is in flight and nothing
else changes the run's variables meanwhile: a thread reading them or writing them
(Patch) races with nobody. A formula that is given up is told to stop: it fails at its
next step, reads and writes nothing more once told, and a match in progress ends at the
regex engine's own limit."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from raf.core.bounded_regex import MATCH_SECONDS
from raf.decl.powerfx.expressions import Assigner, Expression, ExpressionError, Resolver
from raf.decl.powerfx.functions import FUNCTIONS
from raf.decl.powerfx.patterns import MatchDeferred
from raf.decl.powerfx.variables import VariableError

TRY_SECONDS = 0.005
"""How long a formula's matches may hold the event loop before the formula moves to a
worker thread (the regex engine notices a spent limit a few milliseconds late)."""
STOP_GRACE_SECONDS = 0.1
"""How much longer than `MATCH_SECONDS` a formula that matches may take on its thread
before whoever waits gives it up; the regex engine's own limit usually ends it first."""
BIG_ROWS = 1_000
"""Rows a formula's row functions may visit, estimated before it runs (a table's rows; a
text, a row per 100 characters; nested row functions multiply), and still run on the
event loop."""
WORKERS = 4
"""Threads that evaluate formulas; one evaluation of a run is in flight at a time, so
more runs than this wait their turn."""

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()

Peek = Callable[[tuple[str, ...]], Any]
"""Looks at a variable without copying it (to estimate a formula's work)."""


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="raf-formula")
        return _pool


ON_THREAD: Any = object()
"""What `evaluate_here` answers for a formula that is to be evaluated by `on_thread`."""


def evaluate_here(
    compiled: Expression, resolve: Resolver, assign: Assigner | None, peek: Peek
) -> Any:
    """The formula's value, evaluated on the event loop, or `ON_THREAD` when it is to go
    to a worker thread (see the module's description); failures are `ExpressionError`s
    or `VariableError`s."""
    if compiled.slow or (compiled.matches and compiled.patches):
        return ON_THREAD
    if compiled.row_depth and _estimated_rows(compiled, peek) > BIG_ROWS:
        return ON_THREAD
    if not compiled.matches:
        return compiled.evaluate(resolve, FUNCTIONS, assign)
    try:
        return compiled.evaluate(resolve, FUNCTIONS, assign, try_seconds=TRY_SECONDS)
    except MatchDeferred:
        return ON_THREAD


def _estimated_rows(compiled: Expression, peek: Peek) -> int:
    """The rows the formula's row functions may visit: the rows of the tables it reads
    (a text as a row per 100 characters), to the power of how deeply they nest."""
    rows = 0
    for parts, _ in compiled.names:
        try:
            value = peek(parts)
        except VariableError:
            continue  # the evaluation reports what is wrong with the name
        if isinstance(value, list):
            rows += len(value)
        elif isinstance(value, str):
            rows += len(value) // 100
    estimate = 1
    for _ in range(compiled.row_depth):
        estimate *= rows
        if estimate > BIG_ROWS:
            break
    return estimate


class _Evaluation:
    """One formula on a worker thread: when it started, and whether it was given up.
    The lock makes a write and giving up exclusive, so nothing is written once the
    waiter has given up."""

    def __init__(self, resolve: Resolver, assign: Assigner | None) -> None:
        self.started: float | None = None
        self.cpu_seconds = 0.0
        """CPU time the worker thread spent on the formula (matching included)."""
        self.stopped = threading.Event()
        self.lock = threading.Lock()
        self.resolve = resolve
        self.assign = assign

    def stop(self) -> None:
        with self.lock:
            self.stopped.set()

    def read(self, parts: tuple[str, ...]) -> Any:
        if self.stopped.is_set():
            raise ExpressionError("the formula was stopped before it read a variable")
        return self.resolve(parts)

    def write(self, parts: tuple[str, ...], value: Any) -> None:
        assert self.assign is not None
        with self.lock:
            if self.stopped.is_set():
                raise ExpressionError("the formula was stopped before it wrote a variable")
            self.assign(parts, value)


async def on_thread(compiled: Expression, resolve: Resolver, assign: Assigner | None) -> Any:
    """Evaluate on a worker thread (see `evaluate_here`). A formula that matches is given
    up (and fails) once its matching time and the grace are spent; any formula is given
    up when its waiter is cancelled (the run's time is up, or the run was stopped)."""
    job = _Evaluation(resolve, assign)

    def work() -> Any:
        job.started = time.monotonic()
        cpu = time.thread_time()
        try:
            return compiled.evaluate(
                job.read, FUNCTIONS, job.write if assign is not None else None, stop=job.stopped
            )
        finally:
            job.cpu_seconds = time.thread_time() - cpu

    loop = asyncio.get_running_loop()
    future = loop.run_in_executor(_executor(), contextvars.copy_context().run, work)
    try:
        if not compiled.matches:
            return await future
        try:
            return await _within_match_time(compiled, job, future)
        finally:
            if not future.done() or job.cpu_seconds > TRY_SECONDS:
                # it matched for longer than a try on the loop allows, and will again:
                # later evaluations come here at once (a benign race: any evaluation may
                # set it). Counted in the thread's own CPU time, so that a busy machine
                # does not set it.
                compiled.slow = True
    finally:
        job.stop()
        if not future.done():
            future.cancel()  # its thread's outcome, when it comes, is dropped


async def _within_match_time(
    compiled: Expression, job: _Evaluation, future: asyncio.Future[Any]
) -> Any:
    """The formula's value, or a timed-out error once it ran `MATCH_SECONDS` and the
    grace since its thread took it up (time waiting for a free thread is not counted)."""
    limit = MATCH_SECONDS + STOP_GRACE_SECONDS
    while True:
        started = job.started
        wait = limit if started is None else started + limit - time.monotonic()
        if wait <= 0:
            raise ExpressionError(
                f"its patterns took longer than the formula's {MATCH_SECONDS:g} s for "
                "patterns and it was stopped",
                source=compiled.source,
            )
        done, _ = await asyncio.wait({future}, timeout=wait)
        if done:
            return future.result()

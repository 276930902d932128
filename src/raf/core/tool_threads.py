"""raf's own bounded thread pool for sync tools, apart from asyncio's default executor.

A sync tool that blocks cannot be interrupted: when its call times out or the run is
cancelled, the run moves on and the thread finishes the function on its own, holding
one of the pool's threads until then. Bounding the pool keeps such calls from starving
the rest of the program (other `asyncio.to_thread` users keep the default executor).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from raf.core.errors import ConfigurationError

T = TypeVar("T")

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_size: int | None = None


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
        old.shutdown(wait=False)


def _executor() -> ThreadPoolExecutor:
    global _pool
    pool = _pool
    if pool is None:
        with _lock:
            if _pool is None:
                _pool = ThreadPoolExecutor(
                    max_workers=tool_threads(), thread_name_prefix="raf-tool"
                )
            pool = _pool
    return pool


async def run_in_tool_thread(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """`fn(*args, **kwargs)` on raf's tool pool, with the caller's context variables."""
    call = functools.partial(contextvars.copy_context().run, fn, *args, **kwargs)
    return await asyncio.get_running_loop().run_in_executor(_executor(), call)

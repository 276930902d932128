"""A cancellation token a caller hands to a run and may trip from anywhere."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

from raf.core.errors import RunCancelledError


class CancellationToken:
    """Set once by `cancel()`; the run checks it before each model call and tool round."""

    __slots__ = ("_callbacks", "_cancelled", "reason")

    def __init__(self) -> None:
        self._cancelled = False
        self.reason: str | None = None
        self._callbacks: list[Callable[[], None]] = []

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def cancel(self, reason: str | None = None) -> None:
        """Ask the run to stop; safe to call from any thread and more than once."""
        if self._cancelled:
            return
        self._cancelled = True
        self.reason = reason
        for callback in list(self._callbacks):
            callback()

    def on_cancel(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call `callback` once when cancelled (at once if already cancelled); returns a
        function that unregisters it, so a waiter that is done leaves nothing behind."""
        if self._cancelled:
            callback()
            return _nothing
        self._callbacks.append(callback)

        def remove() -> None:
            with contextlib.suppress(ValueError):
                self._callbacks.remove(callback)

        return remove

    def raise_if_cancelled(self) -> None:
        if self._cancelled:
            raise RunCancelledError(self.reason or "the run was cancelled")

    async def wait(self) -> None:
        """Return when the token is cancelled."""
        if self._cancelled:
            return
        event = asyncio.Event()
        loop = asyncio.get_running_loop()

        def wake() -> None:
            loop.call_soon_threadsafe(event.set)

        remove = self.on_cancel(wake)
        try:
            await event.wait()
        finally:
            remove()


def _nothing() -> None:
    return None

"""A decorator that retries transient model failures with backoff, and bounds each try."""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import AsyncIterator, Callable, Sequence
from typing import TypeVar

from raf.clients.errors import (
    ClientError,
    RateLimitError,
    StreamInterruptedError,
    timeout_error,
)
from raf.core.chat_client import ChatClient
from raf.core.errors import ModelError
from raf.core.messages import ChatMessage
from raf.core.options import ChatOptions
from raf.core.responses import AgentResponseUpdate, ChatResponse

log = logging.getLogger("raf.clients.retry")

T = TypeVar("T")


class RetryingChatClient:
    """Retries 429, 5xx, refused/reset connections and timeouts; nothing else.

    Waits grow exponentially (`base_delay * 2**attempt`, capped at `max_delay`) with full
    jitter; a server's Retry-After (on 429 and 5xx) wins when it asks for longer, and one
    asking for more than `max_retry_after` seconds ends the retries (the error says how long).
    `timeout` bounds each try of `get_response` and, when streaming, each wait for the
    next update. A stream is retried only until its first update: once data has been
    yielded a failure is raised, so a half answer is never stitched to a second one.

    Use it directly or in a pipeline: `ChatClientBuilder(leaf).use(RetryingChatClient.wrap())`.
    """

    def __init__(
        self,
        inner: ChatClient,
        *,
        max_retries: int = 3,
        base_delay: float = 0.5,
        max_delay: float = 30.0,
        max_retry_after: float = 60.0,
        timeout: float | None = None,
        sleep: Callable[[float], object] | None = None,
        rng: random.Random | None = None,
    ) -> None:
        if max_retries < 0:
            raise ValueError("max_retries must be 0 or more")
        self.inner = inner
        self.max_retries = max_retries
        self.base_delay = base_delay
        self.max_delay = max_delay
        self.max_retry_after = max_retry_after
        self.timeout = timeout
        self._sleep = sleep
        self._rng = rng or random.Random()
        self.attempts = 0
        """Tries made over this client's life (for tests and metrics)."""

    @classmethod
    def wrap(cls, **settings: object) -> Callable[[ChatClient], ChatClient]:
        """A decorator for `ChatClientBuilder.use` with these settings."""

        def decorate(inner: ChatClient) -> ChatClient:
            return cls(inner, **settings)  # type: ignore[arg-type]

        return decorate

    def __repr__(self) -> str:
        return f"RetryingChatClient({self.inner!r}, max_retries={self.max_retries})"

    async def aclose(self) -> None:
        """Close the client below, when it holds connections."""
        closer = getattr(self.inner, "aclose", None)
        if closer is not None:
            await closer()

    def delay_for(self, attempt: int, error: BaseException) -> float:
        """How long to wait before try `attempt + 1` (attempt counts from 0)."""
        ceiling = min(self.max_delay, self.base_delay * (2**attempt))
        wait = self._rng.uniform(0, ceiling)
        if isinstance(error, ClientError) and error.retry_after is not None:
            wait = max(wait, error.retry_after)
        return wait

    @staticmethod
    def retryable(error: BaseException) -> bool:
        if isinstance(error, StreamInterruptedError):
            return False
        if isinstance(error, ModelError):
            return error.retryable
        return isinstance(error, (ConnectionError, TimeoutError))

    def _retry(self, attempt: int, error: BaseException) -> bool:
        """Whether to try again: retries left, a transient error, and not asked to wait
        longer than `max_retry_after` (an earlier try would only be refused again)."""
        if attempt >= self.max_retries or not self.retryable(error):
            return False
        if isinstance(error, ClientError) and error.retry_after is not None:
            return error.retry_after <= self.max_retry_after
        return True

    async def _pause(self, seconds: float) -> None:
        if self._sleep is not None:
            result = self._sleep(seconds)
            if asyncio.iscoroutine(result):
                await result
            return
        await asyncio.sleep(seconds)

    def _timeout_error(self, options: ChatOptions) -> ModelError:
        model = options.model_id or str(getattr(self.inner, "model", "") or "")
        provider = str(getattr(self.inner, "provider", "") or type(self.inner).__name__)
        return timeout_error(provider, model, self.timeout)

    async def _backoff(self, attempt: int, error: BaseException) -> None:
        wait = self.delay_for(attempt, error)
        log.warning(
            "model call failed (%s), retry %d of %d in %.2fs",
            type(error).__name__,
            attempt + 1,
            self.max_retries,
            wait,
        )
        await self._pause(wait)

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        options = options if options is not None else ChatOptions()
        attempt = 0
        while True:
            self.attempts += 1
            try:
                async with asyncio.timeout(self.timeout):
                    return await self.inner.get_response(messages, options)
            except TimeoutError as exc:
                error: BaseException = self._timeout_error(options)
                error.__cause__ = exc
            except Exception as exc:
                error = exc
            if not self._retry(attempt, error):
                final = given_up(error, attempt)
                if final is error:
                    raise error
                raise final from error
            await self._backoff(attempt, error)
            attempt += 1

    async def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[AgentResponseUpdate]:
        options = options if options is not None else ChatOptions()
        attempt = 0
        while True:
            self.attempts += 1
            stream = self.inner.get_streaming_response(messages, options)
            iterator = aiter(stream)
            yielded = False
            try:
                while True:
                    try:
                        async with asyncio.timeout(self.timeout):
                            update = await anext(iterator)
                    except StopAsyncIteration:
                        return
                    except TimeoutError as exc:
                        raise self._timeout_error(options) from exc
                    yielded = True
                    yield update
            except Exception as exc:
                if yielded or not self._retry(attempt, exc):
                    final = given_up(exc, attempt)
                    if final is exc:
                        raise
                    raise final from exc
                error = exc
            finally:
                closer = getattr(iterator, "aclose", None)
                if closer is not None:
                    await closer()
            await self._backoff(attempt, error)
            attempt += 1


WRAP_ADVICE = "wrap the client in RetryingChatClient, or lower the request rate"


def given_up(error: BaseException, retries: int) -> BaseException:
    """The error to raise when retrying stops: a rate limit no longer tells the user to
    wrap the client in what already wrapped it, but what is left to do."""
    if not isinstance(error, RateLimitError) or WRAP_ADVICE not in str(error):
        return error
    advice = (
        f"still rate limited after {retries} retries: lower the request rate, or give "
        "RetryingChatClient more max_retries (or a longer max_retry_after)"
    )
    return RateLimitError(
        str(error).replace(WRAP_ADVICE, advice),
        retry_after=error.retry_after,
        provider=error.provider,
        model=error.model,
    )

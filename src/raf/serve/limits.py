"""How much a server gives each client: every limit of `raf serve` in one value, with
safe defaults, checked once when built."""

from __future__ import annotations

import re
import time
from collections.abc import Hashable
from dataclasses import dataclass, fields

from raf.core.errors import ConfigurationError

DEFAULT_MAX_BODY = 1024 * 1024
"""Largest request body accepted by default (1 MiB)."""

DEFAULT_MAX_HEADER = 64 * 1024
"""Largest request line and headers accepted by default (64 KiB)."""

_ZERO_ALLOWED = frozenset({"rate_per_second", "loopback_rate_per_second", "auth_failures"})
"""Limits where 0 means "no limit" rather than "nothing allowed"."""


@dataclass(kw_only=True, slots=True, frozen=True)
class ServeLimits:
    """The server's limits on connections, requests and callers; each is a flag of
    `raf serve` and `raf ui` (`--header-timeout`, `--max-connections`, …)."""

    header_timeout: float = 10.0
    """Seconds a client has to send a request's line and headers, counted from connecting
    or from the first byte of the next request on a kept-alive connection; the
    connection is closed past it (a client sending headers slowly holds nothing)."""
    max_header_bytes: int = DEFAULT_MAX_HEADER
    """Largest request line and headers of one request (its trailers, if chunked, count
    too), counted as the bytes arrive, before any parser keeps them; past it a 431 and
    the connection is closed."""
    body_timeout: float = 30.0
    """Seconds a client has to send a request's whole body once its headers are in; a 408
    past it."""
    keep_alive: int = 5
    """Seconds an idle connection is kept open between requests."""
    max_connections: int = 1000
    """Open connections at once. Past it, the oldest connection that is not being
    answered (idle, or still sending its headers) is closed to make room, so a flood of
    idle connections cannot lock clients out; when every connection is being answered,
    the newcomer is closed."""
    max_streams: int = 500
    """Requests being answered at once (a streamed run counts until its stream ends);
    past it a 503 with Retry-After. Health probes are not counted. A run mostly waits
    on its model, so one process holds hundreds at a small cost each; the cap bounds
    what a flood of callers can hold, not a service's ordinary load. Counted in each
    process: with several workers each has its own."""
    stream_share: float = 0.25
    """The share of `max_streams` one caller may hold at once (`streams_per_caller`):
    each token on a server with tokens, each address other than loopback on a server
    without; past it a 429 with Retry-After, while other callers still get the rest.
    1 lets one caller hold them all. Counted in each process, as `max_streams` is."""
    max_body_bytes: int = DEFAULT_MAX_BODY
    """Largest request body, declared or sent in chunks; a 413 past it."""
    max_json_depth: int = 64
    """Deepest nesting of arrays and objects in a JSON body; a 400 past it."""
    rate_per_second: float = 50.0
    """Requests per second one caller may make on average: each token on a server with
    tokens (wherever it is used from), each client address on a server without; a 429
    with Retry-After past it. 0 turns the rate limit off."""
    rate_burst: int = 200
    """Requests a caller may make at once before its rate applies."""
    loopback_rate_per_second: float = 0.0
    """Requests per second each loopback address may make on a server without tokens:
    that server is one developer's, so by default (0) its own machine is not limited
    and a local load test is not refused."""
    auth_failures: int = 10
    """Wrong bearer tokens one client address may send at once on a server with tokens;
    past them the address is refused (a 429 with Retry-After, its token not even looked
    at) until it has earned a try back, one each `auth_failure_window / auth_failures`
    seconds. Loopback addresses count too. 0 turns the limit off."""
    auth_failure_window: float = 60.0
    """Seconds in which an address that stops failing earns back all its `auth_failures`
    tries."""

    def __post_init__(self) -> None:
        for item in fields(self):
            value = getattr(self, item.name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ConfigurationError(f"server limit {item.name} must be a number")
            if value < 0 or (value == 0 and item.name not in _ZERO_ALLOWED):
                raise ConfigurationError(
                    f"server limit {item.name} must be a positive number, not {value}"
                )
        if self.stream_share > 1:
            raise ConfigurationError(
                f"server limit stream_share is a share of max_streams, from above 0 to 1, "
                f"not {self.stream_share}"
            )

    @property
    def streams_per_caller(self) -> int:
        """Requests one caller may have answered at once: its `stream_share` of
        `max_streams`, at least one."""
        return max(1, int(self.max_streams * self.stream_share))


_STRINGS = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_BRACKETS = re.compile(rb"[\[\]{}]")


def json_too_deep(body: bytes, limit: int) -> bool:
    """Whether a JSON text nests arrays and objects deeper than `limit`, told without
    parsing it (so a hostile depth never reaches a recursive parser)."""
    if body.count(b"[") + body.count(b"{") <= limit:
        return False  # it cannot nest deeper than it has openers (the usual body)
    depth = 0
    for match in _BRACKETS.finditer(_STRINGS.sub(b'""', body)):
        if match.group() in (b"[", b"{"):
            depth += 1
            if depth > limit:
                return True
        else:
            depth -= 1
    return False


MAX_CALLERS = 10_000
"""Callers whose buckets a `RateLimiter` remembers at once. Keyed by address, a client
could otherwise make the server remember one bucket per address it uses."""


class RateLimiter:
    """A token bucket per caller: `burst` requests at once, then `rate` per second.

    Buckets live in least-recently-used order and are forgotten once refilled (a full
    bucket is the same as none) or, the least recently used first, past `keep`, so
    memory stays bounded however many callers come and go."""

    def __init__(self, rate: float, burst: int, *, keep: int = MAX_CALLERS) -> None:
        self.rate = rate
        self.burst = burst
        self.keep = keep
        self._buckets: dict[Hashable, tuple[float, float]] = {}

    def __len__(self) -> int:
        return len(self._buckets)

    def wait(self, caller: Hashable, now: float | None = None) -> float:
        """Take one request from the caller's bucket: 0 when it may go now, else the
        seconds until it may (nothing is taken then)."""
        if self.rate <= 0:
            return 0.0
        now = time.monotonic() if now is None else now
        level, since = self._buckets.pop(caller, (float(self.burst), now))
        level = min(float(self.burst), level + (now - since) * self.rate)
        wait = 0.0
        if level < 1.0:
            wait = (1.0 - level) / self.rate
        else:
            level -= 1.0
        self._buckets[caller] = (level, now)
        self._forget(now)
        return wait

    def waiting(self, caller: Hashable, now: float | None = None) -> float:
        """Seconds until the caller may make a request (0: now), taking nothing."""
        if self.rate <= 0:
            return 0.0
        bucket = self._buckets.get(caller)
        if bucket is None:
            return 0.0
        now = time.monotonic() if now is None else now
        level = min(float(self.burst), bucket[0] + (now - bucket[1]) * self.rate)
        return 0.0 if level >= 1.0 else (1.0 - level) / self.rate

    def _forget(self, now: float) -> None:
        """Drop buckets from the least recently used end while they are full again or
        there are more than `keep`; each call drops what it can cheaply, the rest go on
        later calls."""
        while self._buckets:
            oldest = next(iter(self._buckets))
            level, since = self._buckets[oldest]
            if len(self._buckets) <= self.keep and level + (now - since) * self.rate < self.burst:
                return
            del self._buckets[oldest]


class FailedAuthLimiter:
    """Failed authentications by client address: `failures` at once, then one each
    `window / failures` seconds. A bucket per address that only a failure takes from,
    so a caller that authenticates never touches it, and one address's failures (or
    another's success) never change another's; bounded as `RateLimiter` is."""

    def __init__(self, failures: int, window: float, *, keep: int = MAX_CALLERS) -> None:
        self.failures = failures
        self.window = window
        self._tries = RateLimiter(failures / window if failures else 0.0, failures, keep=keep)

    def __len__(self) -> int:
        return len(self._tries)

    def waiting(self, address: str, now: float | None = None) -> float:
        """Seconds until `address` may present a token again; 0 when it may now."""
        return self._tries.waiting(address, now)

    def failed(self, address: str, now: float | None = None) -> None:
        """Count one failed authentication from `address`."""
        self._tries.wait(address, now)

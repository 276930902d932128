"""How much a server gives each client: every limit of `raf serve` in one value, with
safe defaults, checked once when built."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, fields

from raf.core.errors import ConfigurationError

DEFAULT_MAX_BODY = 1024 * 1024
"""Largest request body accepted by default (1 MiB)."""


@dataclass(kw_only=True, slots=True, frozen=True)
class ServeLimits:
    """The server's limits on connections, requests and callers; each is a flag of
    `raf serve` and `raf ui` (`--header-timeout`, `--max-connections`, …)."""

    header_timeout: float = 10.0
    """Seconds a client has to send a request's line and headers, counted from connecting
    or from the first byte of the next request on a kept-alive connection; the
    connection is closed past it (a client sending headers slowly holds nothing)."""
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
    max_streams: int = 100
    """Requests being answered at once (a streamed run counts until its stream ends);
    past it a 503 with Retry-After. Health probes are not counted."""
    max_body_bytes: int = DEFAULT_MAX_BODY
    """Largest request body, declared or sent in chunks; a 413 past it."""
    max_json_depth: int = 64
    """Deepest nesting of arrays and objects in a JSON body; a 400 past it."""
    rate_per_second: float = 50.0
    """Requests per second each token may make on average (the anonymous caller of a
    token-less server counts as one token); a 429 with Retry-After past it. 0 turns
    the rate limit off."""
    rate_burst: int = 200
    """Requests a token may make at once before `rate_per_second` applies."""

    def __post_init__(self) -> None:
        for item in fields(self):
            value = getattr(self, item.name)
            allowed_zero = item.name == "rate_per_second"
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ConfigurationError(f"server limit {item.name} must be a number")
            if value < 0 or (value == 0 and not allowed_zero):
                raise ConfigurationError(
                    f"server limit {item.name} must be a positive number, not {value}"
                )


_STRINGS = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_BRACKETS = re.compile(rb"[\[\]{}]")


def json_too_deep(body: bytes, limit: int) -> bool:
    """Whether a JSON text nests arrays and objects deeper than `limit`, told without
    parsing it (so a hostile depth never reaches a recursive parser)."""
    depth = 0
    for match in _BRACKETS.finditer(_STRINGS.sub(b'""', body)):
        if match.group() in (b"[", b"{"):
            depth += 1
            if depth > limit:
                return True
        else:
            depth -= 1
    return False


class RateLimiter:
    """A token bucket per caller: `burst` requests at once, then `rate` per second."""

    def __init__(self, rate: float, burst: int) -> None:
        self.rate = rate
        self.burst = burst
        self._buckets: dict[str, tuple[float, float]] = {}

    def wait(self, caller: str, now: float | None = None) -> float:
        """Take one request from the caller's bucket: 0 when it may go now, else the
        seconds until it may (nothing is taken then)."""
        if self.rate <= 0:
            return 0.0
        now = time.monotonic() if now is None else now
        level, since = self._buckets.get(caller, (float(self.burst), now))
        level = min(float(self.burst), level + (now - since) * self.rate)
        if level < 1.0:
            self._buckets[caller] = (level, now)
            return (1.0 - level) / self.rate
        self._buckets[caller] = (level - 1.0, now)
        return 0.0

"""Callbacks when a run ends: the final run POSTed to the URL the run was started with,
signed with HMAC-SHA256 over the body, retried with back-off, each attempt recorded in
the run.

Headers: `Raf-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">` with the
server's secret, `Raf-Run-Id`, `Raf-Delivery` (the attempt's id: one POST per attempt),
`Raf-Attempt` (1, 2, …). A receiver checks the signature and that `t` is recent, and
treats a second delivery of one run (`Raf-Run-Id`) as the same event. The outbound
guard of `web_fetch` applies: a URL that reaches a private or loopback address is
refused when the run is asked for, unless the server allows such targets.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from raf.core import outbound
from raf.serve.errors import ServeError
from raf.stores.runs import RunRecord

log = logging.getLogger("raf.serve")

SECRET_ENV = "RAF_WEBHOOK_SECRET"
"""Environment variable holding the webhook signing secret (`--webhook-secret`)."""

SIGNATURE_HEADER = "Raf-Signature"
RETRY_DELAYS = (0.5, 2.0, 8.0, 30.0)
"""Seconds before each retry of a delivery that failed (a non-2xx answer, no answer)."""

ATTEMPT_TIMEOUT = 10.0
"""Seconds one delivery may take."""


def signature(secret: str, body: bytes, at: int) -> str:
    """The `Raf-Signature` value for `body` sent at `at` (unix seconds)."""
    mac = hmac.new(secret.encode(), f"{at}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={at},v1={mac}"


def verify(secret: str, body: bytes, header: str, *, tolerance: float = 300.0) -> bool:
    """Whether `header` (a `Raf-Signature`) signs `body` with `secret`, sent within
    `tolerance` seconds of now: what a receiver checks."""
    parts = dict(p.split("=", 1) for p in header.split(",") if "=" in p)
    try:
        at = int(parts["t"])
    except (KeyError, ValueError):
        return False
    if abs(time.time() - at) > tolerance:
        return False
    expected = signature(secret, body, at).split("v1=", 1)[1]
    return hmac.compare_digest(expected, parts.get("v1", ""))


class Webhooks:
    """The server's webhook sender: its secret, what it may reach, how it retries."""

    def __init__(
        self,
        secret: str | None,
        *,
        allow_private: bool = False,
        retry_delays: tuple[float, ...] = RETRY_DELAYS,
    ) -> None:
        self.secret = secret or None
        self.policy = outbound.policy(who="webhook", allow_private=allow_private)
        self.retry_delays = retry_delays

    async def check(self, url: str) -> None:
        """Refuse, with a 422 that says why, a webhook this server cannot call: no
        secret to sign with, not an http(s) URL, or an address the guard refuses."""
        if self.secret is None:
            raise ServeError(
                422,
                "webhooks_off",
                "webhook: this server signs no webhooks (start it with --webhook-secret "
                f"or ${SECRET_ENV}); the run was not started",
            )
        try:
            await outbound.check_url(url, self.policy)
        except outbound.OutboundRefused as exc:
            raise ServeError(
                422, "webhook_refused", f"webhook {url!r} refused: {exc}; the run was not started"
            ) from None

    async def deliver(
        self, record: RunRecord, body: bytes, save: Callable[[RunRecord], Awaitable[None]]
    ) -> None:
        """POST `body` (the final run's JSON form) to the run's webhook until a 2xx
        answer or the retries are spent, recording each attempt in the run
        (`webhook_attempts`) with `save`."""
        assert record.webhook is not None and self.secret is not None
        client = outbound.guarded_async_client(
            self.policy, timeout=ATTEMPT_TIMEOUT, follow_redirects=False
        )
        async with client:
            for attempt, delay in enumerate((0.0, *self.retry_delays), start=1):
                if delay:
                    await asyncio.sleep(delay)
                delivery = uuid.uuid4().hex
                headers = {
                    "content-type": "application/json",
                    SIGNATURE_HEADER: signature(self.secret, body, int(time.time())),
                    "Raf-Run-Id": record.id,
                    "Raf-Delivery": delivery,
                    "Raf-Attempt": str(attempt),
                }
                entry: dict[str, Any] = {
                    "attempt": attempt,
                    "delivery": delivery,
                    "at": time.time(),
                }
                try:
                    answer = await client.post(record.webhook, content=body, headers=headers)
                    entry["status"] = answer.status_code
                    ok = 200 <= answer.status_code < 300
                except Exception as exc:  # no answer: refused, timed out, reset
                    entry["error"] = f"{type(exc).__name__}: {exc}"
                    ok = False
                record.webhook_attempts.append(entry)
                try:
                    await save(record)
                except Exception as exc:
                    log.warning("could not record webhook attempt of run %s: %s", record.id, exc)
                if ok:
                    return
        log.warning("run %s: its webhook failed %d times; giving up", record.id, attempt)

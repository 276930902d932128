"""What a run does when its session is busy ("double texting"): the four strategies, the
one check of a strategy a request names, and what a rollback removes.

`reject` answers 409 `session_busy`; `enqueue` waits for the runs before it, first come
first served over every process sharing the store; `interrupt` stops the run in progress
(its transcript repaired as a cancel repairs it, its turn kept) and then runs;
`rollback` stops it, removes its turn from the session, and then runs.
"""

from __future__ import annotations

from dataclasses import dataclass

from raf.serve.errors import ServeError

REJECT = "reject"
ENQUEUE = "enqueue"
INTERRUPT = "interrupt"
ROLLBACK = "rollback"
IF_BUSY = (REJECT, ENQUEUE, INTERRUPT, ROLLBACK)

QUEUE_POLL_SECONDS = 0.05
"""How often a queued run looks whether its turn came (one read of the session's active
runs, and a try of the lease when none is ahead)."""


@dataclass(kw_only=True, slots=True, frozen=True)
class Rollback:
    """The session as it stood when a rollback was asked: the run in progress had not
    stored its turn yet, so what was stored past `messages` (when the revision moved) is
    that run's turn."""

    messages: int
    revision: str | None


def check_if_busy(value: object, where: str = "if_busy") -> str:
    """`value` when it names a strategy; a 422 that lists them otherwise."""
    if isinstance(value, str) and value in IF_BUSY:
        return value
    raise ServeError(
        422,
        "invalid_request",
        f"{where}: {value!r} is not a strategy; use one of {', '.join(IF_BUSY)}",
    )


__all__ = [
    "ENQUEUE",
    "IF_BUSY",
    "INTERRUPT",
    "QUEUE_POLL_SECONDS",
    "REJECT",
    "ROLLBACK",
    "Rollback",
    "check_if_busy",
]

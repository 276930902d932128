"""Scheduled runs: a cron schedule kept in the system database (DBOS), whose every tick
starts one run of an agent across all workers. DBOS names each tick's workflow by the
schedule and the tick's time, so however many workers see the tick it runs once; the
run it starts waits on its agent's queue behind the session's earlier runs. (The tick's
workflow and the schedules' upkeep are `DurableRuntime`'s.)"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from raf.core.errors import RafError

SCHEDULE_PREFIX = "raf:"
"""Every schedule raf keeps in the system database is named with this prefix."""

DOCUMENT_PREFIX = "raf:doc:"
"""Schedules declared in agent documents (replaced as a set when a worker starts)."""

RunOpener = Callable[[dict[str, Any], str], Coroutine[Any, Any, str]]
"""Opens the run of one tick (its session, created when missing, and its run record,
idempotently) from the schedule's context and the run's id; the session's stored id."""


@dataclass(kw_only=True, slots=True)
class Schedule:
    """A cron schedule of runs of one agent."""

    name: str
    """The schedule's name in the system database (unique there)."""
    agent: str
    cron: str
    """Five fields (minute hour day month weekday), or six with seconds first."""
    input: str
    """The user message each tick's run is given."""
    session: str | None = None
    """The session every tick runs in, by the owner's name for it; a new one each tick
    when None."""
    owner: str = ""
    """Whose runs and session they are (the tenant of the request that made it)."""
    label: str = ""
    """The name its owner gave it."""

    def context(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "input": self.input,
            "session": self.session,
            "owner": self.owner,
            "label": self.label,
            "cron": self.cron,
        }

    @classmethod
    def from_stored(cls, name: str, cron: str, context: dict[str, Any]) -> Schedule:
        return cls(
            name=name,
            agent=str(context["agent"]),
            cron=cron,
            input=str(context["input"]),
            session=context.get("session"),
            owner=str(context.get("owner", "")),
            label=str(context.get("label", "")),
        )


def check_cron(cron: str) -> None:
    """Raise a `RafError` saying why `cron` is no crontab DBOS can run."""
    from croniter import croniter  # type: ignore[import-untyped]

    fields = cron.split()
    if len(fields) not in (5, 6) or not croniter.is_valid(cron, second_at_beginning=True):
        raise RafError(
            f"schedule {cron!r} is not a cron expression: five fields (minute hour day "
            "month weekday, e.g. '*/5 * * * *') or six with seconds first"
        )


def tick_run_id(tick_workflow_id: str) -> str:
    """The run a tick starts: named after the tick, so it is the same every replay."""
    return uuid.uuid5(uuid.NAMESPACE_URL, tick_workflow_id).hex


__all__ = [
    "DOCUMENT_PREFIX",
    "SCHEDULE_PREFIX",
    "RunOpener",
    "Schedule",
    "check_cron",
    "tick_run_id",
]

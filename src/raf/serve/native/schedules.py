"""`/schedules` on the native API: cron schedules of runs, kept in the durable system
database so that each tick runs once across all workers. A caller sees and deletes only
its own schedules (as with runs); without `--durable` every request is refused, naming
the flag."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from fastapi import APIRouter, Depends, Request, Response
from pydantic import BaseModel, ConfigDict, Field

from raf.decl.documents.schedule_decls import SCHEDULE_NAME, cron_problem
from raf.serve.errors import ServeError, not_found
from raf.serve.hosting import AgentHost
from raf.serve.requests import parse_body
from raf.serve.security import owner_of_request
from raf.serve.tenancy import Tenant

if TYPE_CHECKING:
    from raf.durable import DurableRuntime
    from raf.durable.schedules import Schedule

API_PREFIX = "raf:api:"
"""The system-database names of schedules posted to `/schedules`."""


class ScheduleRequest(BaseModel):
    """A schedule to keep: `{"agent", "cron", "input", "session_id"?, "name"?}`."""

    model_config = ConfigDict(extra="forbid")
    agent: str
    cron: str
    input: str = Field(min_length=1)
    session_id: str | None = None
    name: str | None = Field(default=None, pattern=SCHEDULE_NAME)


def public_schedule(schedule: Schedule) -> dict[str, Any]:
    """A schedule's JSON form for its owner."""
    return {
        "id": schedule.label,
        "object": "schedule",
        "agent": schedule.agent,
        "cron": schedule.cron,
        "input": schedule.input,
        "session_id": schedule.session,
        "declared_in": "api" if schedule.name.startswith(API_PREFIX) else "document",
    }


def stored_name(owner: str, label: str) -> str:
    return API_PREFIX + Tenant(owner).key(label)


def need_durable() -> ServeError:
    return ServeError(
        409,
        "schedules_need_durable",
        "scheduled runs need `raf serve --durable URL`: each tick must run once across "
        "all workers, which the durable system database decides",
    )


@dataclass(frozen=True)
class SchedulesPlace:
    """What the `/schedules` endpoints serve from: the `host` of the agents, and the
    durable `runtime` that keeps schedules (every request refused when None). A router's
    dependency puts it in each request's state."""

    host: AgentHost
    runtime: DurableRuntime | None

    def attach(self, request: Request) -> None:
        """Make this the place of `request` (the router's dependency)."""
        request.state.raf_schedules = self

    def durable(self) -> DurableRuntime:
        """The runtime that keeps schedules; refused, naming the flag, without one."""
        if self.runtime is None:
            raise need_durable()
        return self.runtime

    async def find(self, owner: str, label: str) -> Schedule:
        """`owner`'s schedule `label` (404 for another caller's)."""
        for schedule in await self.durable().schedules():
            if schedule.label == label and schedule.owner == owner:
                return schedule
        raise not_found("schedule", label)


def place_of(request: Request) -> SchedulesPlace:
    """The place the router put in this request's state."""
    return cast(SchedulesPlace, request.state.raf_schedules)


async def create(request: Request) -> dict[str, Any]:
    """Keep a schedule: each tick starts a background run of `agent` with `input`,
    in `session_id` (made at the first tick) or a new session each tick."""
    from raf.durable.schedules import Schedule

    place = place_of(request)
    kept = place.durable()
    body = parse_body(await request.body(), ScheduleRequest)
    place.host.agent(body.agent)
    problem = cron_problem(body.cron)
    if problem is not None:
        refused = ServeError(
            422,
            "invalid_schedule",
            f"cron {body.cron!r} is not a cron expression: {problem}",
        )
        refused.param = "cron"
        raise refused
    owner = owner_of_request(request.scope)
    label = body.name or uuid.uuid4().hex[:12]
    name = stored_name(owner, label)
    if any(s.name == name for s in await kept.schedules(API_PREFIX)):
        raise ServeError(409, "schedule_exists", f"a schedule named {label!r} exists")
    schedule = Schedule(
        name=name,
        agent=body.agent,
        cron=body.cron,
        input=body.input,
        session=body.session_id,
        owner=owner,
        label=label,
    )
    await kept.create_schedule(schedule)
    return public_schedule(schedule)


async def list_all(request: Request) -> dict[str, Any]:
    """The caller's schedules (posted here, or declared in agent documents)."""
    owner = owner_of_request(request.scope)
    found = [s for s in await place_of(request).durable().schedules() if s.owner == owner]
    return {"object": "list", "data": [public_schedule(s) for s in found]}


async def get_one(name: str, request: Request) -> dict[str, Any]:
    """One of the caller's schedules (404 for another caller's)."""
    return public_schedule(await place_of(request).find(owner_of_request(request.scope), name))


async def delete(name: str, request: Request) -> Response:
    """Stop a schedule (a tick already started runs to its end)."""
    place = place_of(request)
    schedule = await place.find(owner_of_request(request.scope), name)
    if not schedule.name.startswith(API_PREFIX):
        raise ServeError(
            409,
            "schedule_declared",
            f"schedule {name!r} is declared in agent {schedule.agent!r}'s document; "
            "remove it there",
        )
    await place.durable().delete_schedule(schedule.name)
    return Response(status_code=204)


def schedules_router(host: AgentHost, runtime: DurableRuntime | None) -> APIRouter:
    """The `/schedules` routes over `runtime` (every request refused when None)."""
    router = APIRouter(dependencies=[Depends(SchedulesPlace(host, runtime).attach)])
    router.add_api_route("/schedules", create, methods=["POST"], status_code=201)
    router.add_api_route("/schedules", list_all, methods=["GET"])
    router.add_api_route("/schedules/{name}", get_one, methods=["GET"])
    router.add_api_route("/schedules/{name}", delete, methods=["DELETE"])
    return router


__all__ = ["API_PREFIX", "ScheduleRequest", "public_schedule", "schedules_router"]

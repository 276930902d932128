"""`/schedules` on the native API: cron schedules of runs, kept in the durable system
database so that each tick runs once across all workers. A caller sees and deletes only
its own schedules (as with runs); without `--durable` every request is refused, naming
the flag."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Request, Response
from pydantic import BaseModel, ConfigDict, Field

from raf.decl.documents.schedule_decls import SCHEDULE_NAME, cron_problem
from raf.serve.errors import ServeError, not_found
from raf.serve.hosting import AgentHost
from raf.serve.native.routes import owner_of_request
from raf.serve.requests import parse_body
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


def schedules_router(host: AgentHost, runtime: DurableRuntime | None) -> APIRouter:
    """The `/schedules` routes over `runtime` (every request refused when None)."""
    router = APIRouter()

    def durable() -> DurableRuntime:
        if runtime is None:
            raise need_durable()
        return runtime

    async def find(owner: str, label: str) -> Schedule:
        for schedule in await durable().schedules():
            if schedule.label == label and schedule.owner == owner:
                return schedule
        raise not_found("schedule", label)

    @router.post("/schedules", status_code=201)
    async def create(request: Request) -> dict[str, Any]:
        """Keep a schedule: each tick starts a background run of `agent` with `input`,
        in `session_id` (made at the first tick) or a new session each tick."""
        from raf.durable.schedules import Schedule

        kept = durable()
        body = parse_body(await request.body(), ScheduleRequest)
        host.agent(body.agent)
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

    @router.get("/schedules")
    async def list_all(request: Request) -> dict[str, Any]:
        """The caller's schedules (posted here, or declared in agent documents)."""
        owner = owner_of_request(request.scope)
        found = [s for s in await durable().schedules() if s.owner == owner]
        return {"object": "list", "data": [public_schedule(s) for s in found]}

    @router.get("/schedules/{name}")
    async def get_one(name: str, request: Request) -> dict[str, Any]:
        """One of the caller's schedules (404 for another caller's)."""
        return public_schedule(await find(owner_of_request(request.scope), name))

    @router.delete("/schedules/{name}")
    async def delete(name: str, request: Request) -> Response:
        """Stop a schedule (a tick already started runs to its end)."""
        schedule = await find(owner_of_request(request.scope), name)
        if not schedule.name.startswith(API_PREFIX):
            raise ServeError(
                409,
                "schedule_declared",
                f"schedule {name!r} is declared in agent {schedule.agent!r}'s document; "
                "remove it there",
            )
        await durable().delete_schedule(schedule.name)
        return Response(status_code=204)

    return router


__all__ = ["API_PREFIX", "ScheduleRequest", "public_schedule", "schedules_router"]

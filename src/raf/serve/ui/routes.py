"""The UI's pages (static files from the package) and the read-mostly API behind them."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, cast

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import HTMLResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from raf.core.agent_like import AgentLike, own_providers
from raf.core.call_approval import session_approvals
from raf.core.errors import RafError, SessionStoreError
from raf.core.sessions import AgentSession
from raf.serve.catalog import describe_agent
from raf.serve.errors import ServeError, not_found
from raf.serve.hosting import SERVE_KEY, AgentHost, public_id
from raf.serve.limits import DEFAULT_MAX_BODY
from raf.serve.requests import json_line, parse_body
from raf.serve.tenancy import Tenant
from raf.serve.ui.evals import caller_of, evals_router
from raf.serve.ui.recorder import TurnRecorder
from raf.serve.ui.shown_paths import shown_path
from raf.serve.ui.workflows import WorkflowHost, graph_of, parse_value

STATIC_FILES = {
    **{
        f"{name}.js": "text/javascript; charset=utf-8"
        for name in ("base", "chat", "pages", "workflows", "evals", "app")
    },
    "style.css": "text/css; charset=utf-8",
}
"""The files the page loads besides index.html (nothing else is served from the folder)."""

PAGE_PATHS = frozenset({"/ui", "/ui/", *(f"/ui/static/{name}" for name in STATIC_FILES)})
"""Paths answered without a token: the page and its files (no data; the page then asks
for a token and sends it with every API call)."""

PAGE_HEADERS = {
    "content-security-policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
    ),
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-cache",
}
"""Sent with every page file: no script but ours runs, even if some text slipped through."""

CONVERSATION = "gen_ai.conversation.id"
"""The span attribute that names the session a traced run ran in."""


class WorkflowStart(BaseModel):
    """Body of starting a workflow run: its input, JSON or plain text."""

    model_config = ConfigDict(extra="forbid")
    input: Any = None


class WorkflowAnswers(BaseModel):
    """Body of answering a paused run's requests: request id → answer."""

    model_config = ConfigDict(extra="forbid")
    responses: dict[str, Any] = Field(min_length=1)


def known_as(runs: list[dict[str, Any]], session: AgentSession) -> list[dict[str, Any]]:
    """Recorded runs with the session named by the id its owner knows (the stored id is
    scoped to the owner)."""
    shown = public_id(session)
    for run in runs:
        run["session_id"] = shown
        for span in run.get("spans", ()):
            attributes = span.get("attributes")
            if isinstance(attributes, dict) and attributes.get(CONVERSATION) == session.id:
                span["attributes"] = {**attributes, CONVERSATION: shown}  # not the stored one
    return runs


def _asset(name: str) -> bytes:
    return (resources.files("raf.serve.ui") / "static" / name).read_bytes()


def _providers(agent: AgentLike, kind: str) -> list[Any]:
    return [p for p in own_providers(agent) if getattr(p, "kind", "") == kind]


def memory_view(agent: AgentLike) -> list[dict[str, Any]]:
    """The super-brain folders of an agent, each file with its text (read-only)."""
    out: list[dict[str, Any]] = []
    for provider in _providers(agent, "memory"):
        store = getattr(provider, "store", None)
        if store is None:
            continue
        files: list[dict[str, Any]] = []
        if store.root.is_dir():
            for relative in store.files():
                try:
                    text = store.read(relative)
                except (OSError, RafError) as exc:
                    text = f"(cannot read: {exc})"
                files.append({"path": relative, "text": text})
        folder = shown_path(store.root, Path.cwd())
        out.append({"provider": provider.name, "folder": folder, "files": files})
    return out


def skills_view(agent: AgentLike) -> list[dict[str, Any]]:
    """The skills an agent is offered: name, description, folder, body and files."""
    out: list[dict[str, Any]] = []
    for provider in _providers(agent, "skills"):
        for skill in provider.skills:
            out.append(
                {
                    "provider": provider.name,
                    "name": skill.name,
                    "description": skill.description,
                    "folder": shown_path(skill.path, Path.cwd()) if skill.path else None,
                    "instructions": skill.instructions,
                    "files": list(skill.files) or sorted(skill.resources),
                    "scripts": list(skill.scripts),
                }
            )
    return out


def attachment_limits(max_body_bytes: int) -> dict[str, Any]:
    """What the chat page may attach: the media types the HTTP API takes, the most bytes
    of each family, and the largest file that fits in one request body (base64 makes a
    file a third larger; a few KiB are left for the message itself)."""
    from raf.clients.media import KNOWN_TYPES, MAX_BYTES

    fits = max(0, (max_body_bytes - 16 * 1024) * 3 // 4)
    return {
        "types": list(KNOWN_TYPES),
        "max_bytes": {family: min(limit, fits) for family, limit in MAX_BYTES.items()},
    }


@dataclass(frozen=True)
class UiPlace:
    """What the web UI's endpoints serve from: the `host` of the agents and sessions, the
    `workflows` host, the `recorder` of runs, OpenTelemetry `traces` (an `OtelTraces`;
    the recorder's runs without) and the `attachments` the chat page may send. A router's
    dependency puts it in each request's state."""

    host: AgentHost
    workflows: WorkflowHost
    recorder: TurnRecorder
    traces: Any
    attachments: dict[str, Any]

    def attach(self, request: Request) -> None:
        """Make this the place of `request` (the router's dependency)."""
        request.state.raf_ui = self


def place_of(request: Request) -> UiPlace:
    """The place the router put in this request's state."""
    return cast(UiPlace, request.state.raf_ui)


async def page() -> Response:
    """The web UI's page."""
    return Response(_asset("index.html"), media_type="text/html", headers=PAGE_HEADERS)


async def static(name: str) -> Response:
    """One of the page's own script and style files."""
    media = STATIC_FILES.get(name)
    if media is None:
        raise not_found("file", name)
    return Response(_asset(name), media_type=media, headers=PAGE_HEADERS)


async def catalog(request: Request) -> dict[str, Any]:
    """The agents and workflows the pages show."""
    place = place_of(request)
    agents = []
    for agent in place.host.agents.values():
        summary = describe_agent(agent)
        summary["memory"] = bool(_providers(agent, "memory"))
        summary["skills"] = bool(_providers(agent, "skills"))
        agents.append(summary)
    return {
        "agents": agents,
        "workflows": [graph_of(w) for w in place.workflows.workflows.values()],
        "attachments": place.attachments,
    }


async def sessions(agent: str, request: Request) -> dict[str, Any]:
    """The agent's stored sessions of the caller, with their first message."""
    place = place_of(request)
    host = place.host
    host.agent(agent)
    who = Tenant(caller_of(request))
    found: list[dict[str, Any]] = []
    for session_id in await host.store.list():
        if not who.owns_key(session_id):
            continue
        try:
            session = await host.store.load(session_id)
        except SessionStoreError:
            raise  # the store is away: a 503, not a shorter list
        except RafError:
            continue  # a damaged or foreign entry is left out of the list, not fatal
        mark = session.metadata.get(SERVE_KEY)
        if not isinstance(mark, dict) or mark.get("agent") != agent:
            continue
        if not who.owns(mark.get("owner")):
            continue
        first = next((m.text for m in session.messages if m.role.value == "user"), "")
        found.append(
            {
                "id": public_id(session),
                "title": first[:80],
                "messages": len(session.messages),
                "pending": sum(a.answerable for a in session_approvals(session)),
                "running": await host.run_in_progress(session.id) is not None,
                "recorded_runs": len(place.recorder.runs(session.id)),
            }
        )
    return {"sessions": found}


async def recorded_runs(agent: str, session_id: str, request: Request) -> dict[str, Any]:
    """Each recorded run of a session: the requests exactly as the model got them."""
    place = place_of(request)
    session = await place.host.session(agent, session_id, caller_of(request))
    return {"runs": known_as(place.recorder.runs(session.id), session)}


async def session_traces(agent: str, session_id: str, request: Request) -> dict[str, Any]:
    """The span trees of a session's runs."""
    place = place_of(request)
    session = await place.host.session(agent, session_id, caller_of(request))
    if place.traces is not None:
        return {"source": "opentelemetry", "runs": known_as(place.traces.runs(session.id), session)}
    return {"source": "recorder", "runs": known_as(place.recorder.runs(session.id), session)}


async def memory(agent: str, request: Request) -> dict[str, Any]:
    """The agent's memory and skills."""
    found = place_of(request).host.agent(agent)
    return {"memory": memory_view(found), "skills": skills_view(found)}


async def checkpoints(name: str, request: Request) -> dict[str, Any]:
    """A workflow's stored checkpoints."""
    return {"checkpoints": await place_of(request).workflows.checkpoints(name, caller_of(request))}


async def start_workflow(name: str, request: Request) -> dict[str, Any]:
    """Start a workflow run."""
    body = parse_body(await request.body(), WorkflowStart, empty_ok=True)
    workflows = place_of(request).workflows
    record = workflows.start(name, caller_of(request), input=parse_value(body.input))
    return record.summary()


async def resume(name: str, checkpoint_id: str, request: Request) -> dict[str, Any]:
    """Resume a workflow from a checkpoint."""
    record = await place_of(request).workflows.resume(name, caller_of(request), checkpoint_id)
    return record.summary()


async def answer_checkpoint(name: str, checkpoint_id: str, request: Request) -> dict[str, Any]:
    """Answer the questions a paused checkpoint asks."""
    body = parse_body(await request.body(), WorkflowAnswers)
    record = await place_of(request).workflows.answer_checkpoint(
        name, caller_of(request), checkpoint_id, body.responses
    )
    return record.summary()


async def run_state(run_id: str, request: Request) -> dict[str, Any]:
    """A workflow run's state."""
    return place_of(request).workflows.run(run_id, caller_of(request)).summary()


async def answers(run_id: str, request: Request) -> dict[str, Any]:
    """Answer a paused workflow run's questions."""
    body = parse_body(await request.body(), WorkflowAnswers)
    record = await place_of(request).workflows.answer(run_id, caller_of(request), body.responses)
    return record.summary()


async def events(run_id: str, request: Request, after: int = 0) -> Response:
    """A workflow run's events, as server-sent events (after: skip that many)."""
    workflows = place_of(request).workflows
    record = workflows.run(run_id, caller_of(request))
    if after < 0:
        raise ServeError(422, "invalid_request", "after: a number of events, 0 or more")

    async def stream() -> AsyncIterator[str]:
        index = after
        async for event in workflows.events(record, after):
            index += 1
            yield f"id: {index}\nevent: workflow\ndata: {json_line(event)}\n\n"
        end = json.dumps(record.summary())
        yield f"event: end\ndata: {end}\n\n"

    return StreamingResponse(
        stream(),
        media_type="text/event-stream",
        headers={"cache-control": "no-cache", "x-accel-buffering": "no"},
    )


def ui_router(
    host: AgentHost,
    workflows: WorkflowHost,
    recorder: TurnRecorder,
    traces: Any = None,
    *,
    max_body_bytes: int = DEFAULT_MAX_BODY,
    datasets: str | Path | None = None,
) -> APIRouter:
    """The page at `/ui` and its API under `/ui/api`; `traces` (an `OtelTraces`) gives
    the Traces page OpenTelemetry spans instead of the recorder's; `max_body_bytes` (the
    server's request limit) bounds the files the chat page lets a person attach;
    `datasets` is the folder of eval datasets runs are saved into as cases."""
    place = UiPlace(host, workflows, recorder, traces, attachment_limits(max_body_bytes))
    router = APIRouter(dependencies=[Depends(place.attach)])
    # the Evals page: runs kept by `raf eval`, datasets, a session's turn saved as a case
    router.include_router(evals_router(host, datasets=datasets))
    for path in ("/ui", "/ui/"):
        router.add_api_route(path, page, response_class=HTMLResponse, methods=["GET"])
    router.add_api_route("/ui/static/{name}", static, methods=["GET"])
    router.add_api_route("/ui/api/catalog", catalog, methods=["GET"])
    agent = "/ui/api/agents/{agent}"
    router.add_api_route(f"{agent}/sessions", sessions, methods=["GET"])
    router.add_api_route(f"{agent}/sessions/{{session_id}}/runs", recorded_runs, methods=["GET"])
    router.add_api_route(f"{agent}/sessions/{{session_id}}/traces", session_traces, methods=["GET"])
    router.add_api_route(f"{agent}/memory", memory, methods=["GET"])
    flow = "/ui/api/workflows/{name}"
    router.add_api_route(f"{flow}/checkpoints", checkpoints, methods=["GET"])
    router.add_api_route(f"{flow}/runs", start_workflow, methods=["POST"], status_code=201)
    checkpoint = f"{flow}/checkpoints/{{checkpoint_id}}"
    router.add_api_route(f"{checkpoint}/resume", resume, methods=["POST"], status_code=201)
    router.add_api_route(
        f"{checkpoint}/answers", answer_checkpoint, methods=["POST"], status_code=201
    )
    run = "/ui/api/workflow-runs/{run_id}"
    router.add_api_route(run, run_state, methods=["GET"])
    router.add_api_route(f"{run}/answers", answers, methods=["POST"], status_code=201)
    router.add_api_route(f"{run}/events", events, methods=["GET"])
    return router

"""The ASGI application of `raf serve`: every protocol behind one security middleware."""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING, Any, cast

from raf._version import __version__
from raf.core.agent_like import close_agent_like
from raf.core.errors import RafError
from raf.serve.a2a.requests import is_rpc_path, jsonrpc_error_body
from raf.serve.errors import ServeError, openai_shaped, require_extra
from raf.serve.hosting import AgentHost
from raf.serve.public_url import check_public_url
from raf.serve.requests import error_for, field_path, openai_code
from raf.serve.security import (
    OPENAI_PREFIX,
    ASGIApp,
    Receive,
    Scope,
    SecurityMiddleware,
    Send,
    ServeSecurity,
    owner_of_request,
)

if TYPE_CHECKING:
    from fastapi import Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse
    from starlette.exceptions import HTTPException

OPENAI_ROUTES = ("GET /v1/models", "POST /v1/chat/completions", "POST /v1/responses")
"""What the OpenAI-compatible API serves, named in its 404s."""


def _openai_http_message(method: str, path: str, status: int) -> str:
    """What an OpenAI client reads for a path or method the API does not serve."""
    if status == 405:
        return f"{method} is not allowed on {path}; raf serves " + ", ".join(OPENAI_ROUTES)
    if status == 404:
        return (
            f"Invalid URL ({method} {path}): raf's OpenAI-compatible API serves "
            + ", ".join(OPENAI_ROUTES)
            + " (and GET /v1/responses/{id})"
        )
    return f"{method} {path} failed with status {status}"


@dataclass(frozen=True)
class AppPlace:
    """What the app's lifespan and error handlers serve from: the `host` of the agents,
    the web `ui` (a `raf.serve.ui.ServeUI`, or None) and whether the `openai` and `a2a`
    APIs are on (their errors answered in their shapes). `create_app` keeps it in the
    app's state."""

    host: AgentHost
    ui: Any
    openai: bool
    a2a: bool


def place_of(app: Any) -> AppPlace:
    """The place `create_app` kept in `app`'s state."""
    return cast(AppPlace, app.state.raf_app)


@asynccontextmanager
async def lifespan(app: Any) -> AsyncIterator[None]:
    """The server's life: its heap frozen while it serves; at the end, runs in progress
    cancelled, the UI's workflows and the agents closed."""
    place = place_of(app)
    # What exists when the server starts (modules, agents, this app) lives as long as
    # it serves: frozen, the collector's full passes skip it instead of walking it
    # all again (about 40 ms each on a served agent's heap, a pause for every request
    # in flight, and most of raf's p99 latency under load). Unfrozen at the end,
    # so a process that serves more than once (tests) can collect it again.
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
    for active in list(place.host.runs.values()):
        active.token.cancel("the server is shutting down")
    if place.ui is not None:
        await place.ui.workflows.aclose()
    for agent in place.host.agents.values():
        await close_agent_like(agent)


def answer(request: Request, error: ServeError, headers: Any = None) -> JSONResponse:
    """The error in the shape of the API asked: OpenAI's under `/v1/`, JSON-RPC's on
    an A2A endpoint's URL, raf's elsewhere."""
    from fastapi.responses import JSONResponse

    place = place_of(request.app)
    if place.openai and request.url.path.startswith(OPENAI_PREFIX):
        status, body = openai_shaped(error)
        return JSONResponse(body, status_code=status, headers=headers)
    if place.a2a and is_rpc_path(request.url.path):
        rpc = jsonrpc_error_body(error.status, error.code, error.message)
        return JSONResponse(rpc, status_code=error.status, headers=headers)
    return JSONResponse(error.body(), status_code=error.status, headers=headers)


async def serve_error(request: Request, exc: ServeError) -> JSONResponse:
    """A refusal raised by an endpoint, in the API's shape."""
    return answer(request, exc)


async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
    """The framework's 404 or 405 (or other HTTP error), in the API's shape; an OpenAI
    client reads which routes the API serves."""
    code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
    message = str(exc.detail)
    if place_of(request.app).openai and request.url.path.startswith(OPENAI_PREFIX):
        message = _openai_http_message(request.method, request.url.path, exc.status_code)
        code = {404: "unknown_url"}.get(exc.status_code, code)
    return answer(request, ServeError(exc.status_code, code, message), exc.headers)


async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
    """A request the framework could not validate: 422, naming the first bad field."""
    error = ServeError(422, "invalid_request", str(exc.errors()))
    problems = exc.errors()
    if problems:
        error.param = field_path(tuple(problems[0].get("loc", ()))[1:])
        error.openai_code = openai_code(str(problems[0].get("type", "")))
    return answer(request, error)


async def raf_error(request: Request, exc: RafError) -> JSONResponse:
    """A raf error out of an endpoint, as the status and body it stands for."""
    return answer(request, error_for(exc))


def create_app(
    host: AgentHost,
    security: ServeSecurity | None = None,
    *,
    openai: bool = True,
    a2a: bool = True,
    agui: bool = True,
    public_url: str | None = None,
    ui: Any = None,
    runs: Any = None,
) -> ASGIApp:
    """The server's ASGI app: the native API, and the OpenAI-compatible, A2A and AG-UI
    ones unless turned off; `public_url` is where clients reach it (an absolute http(s)
    URL, used in every URL the server publishes, such as the A2A agent cards; without it
    they give the address each request came to); `ui` (a `raf.serve.ui.ServeUI`) adds
    the web pages at `/ui`; `runs` (a `raf.serve.runs.RunManager` over `host`) keeps
    the native runs, with its retention and webhooks (the defaults when None)."""
    require_extra("fastapi")
    if public_url is not None:
        public_url = check_public_url(public_url)
    from fastapi import FastAPI
    from fastapi.exceptions import RequestValidationError
    from starlette.exceptions import HTTPException

    from raf.serve.native.routes import native_router

    security = security or ServeSecurity.for_bind("127.0.0.1")

    app = FastAPI(
        title="raf",
        version=__version__,
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        servers=[{"url": public_url}] if public_url else None,  # the OpenAPI document's
        exception_handlers={
            ServeError: serve_error,
            HTTPException: http_error,
            RequestValidationError: invalid,
            RafError: raf_error,
        },
    )
    app.state.raf_app = AppPlace(host, ui, openai, a2a)
    if runs is None and getattr(host, "runtime", None) is not None:
        # a durable host (imported only then: it needs the durable extra)
        from raf.serve.durable_host import DurableAgentHost
        from raf.serve.durable_runs import DurableRunManager

        assert isinstance(host, DurableAgentHost)
        runs = DurableRunManager(host)
    elif runs is None:
        from raf.serve.runs import RunManager

        runs = RunManager(host)
    app.include_router(native_router(host, runs))
    from raf.serve.native.schedules import schedules_router

    # a durable host's runtime keeps schedules; any other host refuses them, naming why
    app.include_router(schedules_router(host, getattr(host, "runtime", None)))
    if ui is not None:
        from raf.serve.ui.routes import PAGE_PATHS, ui_router

        app.include_router(
            ui_router(
                host,
                ui.workflows,
                ui.recorder,
                ui.traces,
                max_body_bytes=security.max_body_bytes,
                datasets=ui.datasets,
            )
        )
        # the page's own files hold no data: a browser loads them before it has a token
        security = replace(security, public_paths=security.public_paths | PAGE_PATHS)
    if openai:
        from raf.serve.openai.background import BackgroundResponses
        from raf.serve.openai.chat import openai_router
        from raf.serve.openai.responses import responses_router

        app.include_router(openai_router(host))
        app.include_router(responses_router(host, BackgroundResponses(host)))
    if agui:
        from raf.serve.agui.routes import agui_router

        app.include_router(agui_router(host))
    if a2a:
        from raf.serve.a2a.routes import mount_a2a

        mount_a2a(
            app,
            host,
            public_url=public_url,
            security=security,
            push_policy=runs.webhooks.policy,
            push_retry_delays=runs.webhooks.retry_delays,
        )
    return SecurityMiddleware(RunRoutes(app, host, runs, openai=openai), security)


class RunRoutes:
    """The run endpoints (`POST /agents/{agent}/runs`, `POST /agents/{agent}/sessions/
    {session_id}/runs`, `POST /v1/chat/completions`) answered before FastAPI sees them;
    every other request goes on to `app`.

    FastAPI's work for a request (its middleware stack, matching the path against every
    route in turn, solving the endpoint's dependencies) cost more than raf's own work for
    a run, and these endpoints take nothing from it: the path gives the names and the
    body is parsed by the handler. The routes stay registered in `app` as well, for the
    OpenAPI document and for what is not answered here (other methods, a trailing slash,
    a root path). Errors are answered as `create_app`'s exception handlers answer them;
    an unexpected one goes up to the server, which answers 500 and logs it.
    """

    def __init__(self, app: ASGIApp, host: AgentHost, runs: Any, *, openai: bool) -> None:
        from raf.serve.native.routes import run_request
        from raf.serve.openai.chat import chat_completion

        self.app = app
        self.host = host
        self.runs = runs
        self.run_request = run_request
        self.owner = owner_of_request
        self.chat_completion = chat_completion if openai else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        handler = self._handler(scope) if scope["type"] == "http" else None
        if handler is None:
            await self.app(scope, receive, send)
            return
        raw = await _body(receive)
        if raw is None:  # the client left before its body was in: nobody to answer
            return
        from fastapi.responses import JSONResponse

        try:
            response = await handler(raw)
        except RafError as exc:
            error = error_for(exc)
            response = JSONResponse(error.body(), status_code=error.status)
        await response(scope, receive, send)

    def _handler(self, scope: Scope) -> Callable[[bytes], Awaitable[Any]] | None:
        """What answers this request's body, or None when `app` should have it."""
        if scope["method"] != "POST" or scope.get("root_path"):
            return None
        path: str = scope["path"]
        if path == "/v1/chat/completions":
            return (
                None if self.chat_completion is None else partial(self.chat_completion, self.host)
            )
        parts = path.split("/")
        if len(parts) < 4 or parts[1] != "agents" or parts[-1] != "runs" or not parts[2]:
            return None
        if len(parts) == 4:  # /agents/{agent}/runs
            return partial(self.run_request, self.runs, parts[2], None, self.owner(scope))
        if len(parts) == 6 and parts[3] == "sessions" and parts[4]:
            return partial(self.run_request, self.runs, parts[2], parts[4], self.owner(scope))
        return None


async def _body(receive: Receive) -> bytes | None:
    """The request's whole body; None when the client disconnected first."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)

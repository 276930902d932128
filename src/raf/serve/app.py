"""The ASGI application of `raf serve`: every protocol behind one security middleware."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any

from raf import __version__
from raf.core.agent_like import close_agent_like
from raf.core.errors import RafError
from raf.serve.errors import ServeError, require_extra
from raf.serve.hosting import AgentHost
from raf.serve.requests import error_for
from raf.serve.security import ASGIApp, SecurityMiddleware, ServeSecurity


def create_app(
    host: AgentHost,
    security: ServeSecurity | None = None,
    *,
    openai: bool = True,
    a2a: bool = True,
    agui: bool = True,
    base_url: str | None = None,
    ui: Any = None,
) -> ASGIApp:
    """The server's ASGI app: the native API, and the OpenAI-compatible, A2A and AG-UI
    ones unless turned off; `base_url` is where clients reach it (for the A2A agent card);
    `ui` (a `raf.serve.ui.ServeUI`) adds the web pages at `/ui`."""
    require_extra("fastapi")
    from fastapi import FastAPI, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse
    from starlette.exceptions import HTTPException

    from raf.serve.native import native_router

    security = security or ServeSecurity.for_bind("127.0.0.1")

    @asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        yield
        for active in list(host.runs.values()):
            active.token.cancel("the server is shutting down")
        if ui is not None:
            await ui.workflows.aclose()
        for agent in host.agents.values():
            await close_agent_like(agent)

    app = FastAPI(
        title="raf", version=__version__, lifespan=lifespan, docs_url=None, redoc_url=None
    )

    @app.exception_handler(ServeError)
    async def serve_error(request: Request, exc: ServeError) -> JSONResponse:
        return JSONResponse(exc.body(), status_code=exc.status)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return JSONResponse(
            {"error": {"code": code, "message": str(exc.detail)}}, status_code=exc.status_code
        )

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse(
            {"error": {"code": "invalid_request", "message": str(exc.errors())}},
            status_code=422,
        )

    @app.exception_handler(RafError)
    async def raf_error(request: Request, exc: RafError) -> JSONResponse:
        error = error_for(exc)
        return JSONResponse(error.body(), status_code=error.status)

    app.include_router(native_router(host))
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
        from raf.serve.openai_api import openai_router

        app.include_router(openai_router(host))
    if agui:
        from raf.serve.agui import agui_router

        app.include_router(agui_router(host))
    if a2a:
        from raf.serve.a2a import mount_a2a

        mount_a2a(app, host, base_url=base_url, security=security)
    return SecurityMiddleware(app, security)

"""Every surface's endpoints are module-level functions: what they serve from comes with
the request, not from a router factory's closure."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

from raf import AgentBuilder
from raf.serve.app import create_app
from raf.serve.hosting import AgentHost
from raf.serve.ui import ServeUI
from raf.testing import ScriptedChatClient


def _routes(routes: list[Any]) -> Iterator[Any]:
    """Each route, with those of the routers included in it."""
    for route in routes:
        included = getattr(route, "original_router", None)
        if included is not None:
            yield from _routes(included.routes)
        else:
            yield route


def _where(handler: Any) -> str:
    """Where `handler` is defined: its module and qualified name (a partial's function)."""
    while isinstance(handler, functools.partial):
        handler = handler.func
    return f"{handler.__module__}.{handler.__qualname__}"


def test_every_endpoint_and_error_handler_is_a_module_level_function() -> None:
    agents = {
        name: AgentBuilder(name).with_chat_client(ScriptedChatClient([])).build()
        for name in ("one", "two")
    }
    host = AgentHost(agents)
    app: Any = create_app(host, ui=ServeUI.attach(host, tracing=False))
    while not hasattr(app, "router") and hasattr(app, "app"):
        app = app.app
    served = [
        (getattr(route, "path", "?"), _where(route.endpoint))
        for route in _routes(app.routes)
        if getattr(route, "endpoint", None) is not None
    ]
    handlers = [(str(kind), _where(handler)) for kind, handler in app.exception_handlers.items()]
    paths = {path for path, _ in served}
    # every surface of the app is there: native, schedules, OpenAI, Responses, AG-UI,
    # A2A (a card and an endpoint per agent), the web UI and its evals
    for path in (
        "/agents/{agent}/runs",
        "/schedules",
        "/v1/chat/completions",
        "/v1/responses/{response_id}",
        "/agui/{agent}",
        "/a2a/two/.well-known/agent-card.json",
        "/a2a/two",
        "/ui/api/catalog",
        "/ui/api/evals/runs",
    ):
        assert path in paths, path
    assert [path for path, where in served if not where.startswith("raf.")] == ["/openapi.json"]
    assert {kind for kind, where in handlers if where.startswith("raf.serve.app.")} >= {
        "<class 'raf.serve.errors.ServeError'>",
        "<class 'raf.core.errors.RafError'>",
        "<class 'starlette.exceptions.HTTPException'>",
        "<class 'fastapi.exceptions.RequestValidationError'>",
    }
    nested = [(path, where) for path, where in served + handlers if "<locals>" in where]
    assert [(path, where) for path, where in nested if where.startswith("raf.")] == []

"""Serving agents to other programs: raf's HTTP API, the OpenAI-compatible API, A2A,
AG-UI, ACP and the MCP server (`raf.serve.mcp.server`), behind bearer tokens, Host/Origin
checks and the limits of `ServeLimits` (`raf-agents[serve]`).

The names below are imported on first use, so that `raf.serve.limits` (which the CLI
reads to describe its flags) does not load the whole server with every `raf` command.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from raf.serve.app import create_app
    from raf.serve.errors import ServeError
    from raf.serve.hosting import ActiveRun, AgentHost
    from raf.serve.limits import ServeLimits
    from raf.serve.loading import load_agents
    from raf.serve.security import ServeSecurity
    from raf.serve.server import serve_in_thread

_HOMES = {
    "ActiveRun": "raf.serve.hosting",
    "AgentHost": "raf.serve.hosting",
    "ServeError": "raf.serve.errors",
    "ServeLimits": "raf.serve.limits",
    "ServeSecurity": "raf.serve.security",
    "create_app": "raf.serve.app",
    "load_agents": "raf.serve.loading",
    "serve_in_thread": "raf.serve.server",
}

__all__ = [
    "ActiveRun",
    "AgentHost",
    "ServeError",
    "ServeLimits",
    "ServeSecurity",
    "create_app",
    "load_agents",
    "serve_in_thread",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'raf.serve' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])

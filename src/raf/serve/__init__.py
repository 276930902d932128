"""Serving agents to other programs: raf's HTTP API, the OpenAI-compatible API, A2A,
ACP and the MCP server (`raf.serve.mcp`), behind bearer tokens, Host/Origin checks and
the limits of `ServeLimits` (`raf-agents[serve]`)."""

from raf.serve.app import create_app
from raf.serve.errors import ServeError
from raf.serve.hosting import ActiveRun, AgentHost
from raf.serve.limits import ServeLimits
from raf.serve.loading import load_agents
from raf.serve.security import ServeSecurity
from raf.serve.server import serve_in_thread

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

"""`raf mcp serve FILE`: expose a declared agent (and optionally its tools) over MCP."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import inspect
import os
import sys
from collections.abc import Sequence
from typing import Any

from raf.cli.terminal_text import terminal_safe
from raf.core.errors import ConfigurationError


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "mcp", help="Model Context Protocol: serve an agent as an MCP server"
    )
    sub = parser.add_subparsers(dest="mcp_command", metavar="SUBCOMMAND", required=True)
    serve = sub.add_parser("serve", help="serve an agent over stdio or streamable HTTP")
    serve.add_argument("file", nargs="?", help="agent declaration (YAML, JSON or TOML)")
    serve.add_argument(
        "--python",
        metavar="MODULE:FACTORY",
        help="build the agent in code instead: a callable returning an Agent",
    )
    serve.add_argument(
        "--model",
        metavar="SPEC",
        help="use this model instead of the document's (as in raf run; scripted:FILE.json "
        "replays a scripted model)",
    )
    serve.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    serve.add_argument(
        "--host",
        default="127.0.0.1",
        help="HTTP address (default 127.0.0.1); beyond loopback $RAF_MCP_TOKEN is required "
        "(one token, or several separated by commas: each sees only its own sessions)",
    )
    serve.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="another name clients may use in the Host header (repeatable); loopback and "
        "--host are always allowed",
    )
    serve.add_argument("--port", type=int, default=8000, help="HTTP port (default 8000)")
    serve.add_argument(
        "--expose-tools",
        action="store_true",
        help="also offer the agent's tools, those its context providers add at run time "
        "(workspace files and shell, skills) included; never those that need approval for "
        "every call, and calls that need it are refused",
    )
    serve.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="URL",
        help="a browser Origin to accept (repeatable); loopback origins are accepted on "
        "a loopback address",
    )
    from raf.cli.serve import add_session_options

    add_session_options(serve, sessions_default="memory, for the life of the server")
    serve.add_argument(
        "--if-busy",
        choices=("reject", "enqueue", "interrupt", "rollback"),
        default="reject",
        help="what an ask does when its session has a run in progress: refuse it (the "
        "default), queue it after the runs before it, stop the run in progress and keep "
        "its turn, or stop it and remove its turn",
    )
    from raf.cli.tool_option import add_tools_option

    add_tools_option(serve)
    serve.set_defaults(handler=run_serve)


async def load_agent(
    file: str | None,
    factory: str | None,
    model: str | None = None,
    tools: Sequence[str] = (),
) -> Any:
    """The agent named on the command line: a declaration file (on `model` when given,
    else $RAF_MODEL, else its own; its function tools bound by the `tools` specs and the
    installed entry points) or `module:factory`."""
    if bool(file) == bool(factory):
        raise ConfigurationError("give exactly one of FILE or --python MODULE:FACTORY")
    if factory:
        if model:
            raise ConfigurationError("--model applies to a FILE, not to --python MODULE:FACTORY")
        if tools:
            raise ConfigurationError("--tools applies to a FILE, not to --python MODULE:FACTORY")
        module_name, _, attr = factory.partition(":")
        if not module_name or not attr:
            raise ConfigurationError(f"--python wants MODULE:FACTORY, got {factory!r}")
        try:
            target = getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError) as exc:
            raise ConfigurationError(f"cannot load {factory!r}: {exc}") from exc
        agent = target() if callable(target) else target
        if inspect.isawaitable(agent):
            agent = await agent
        return agent
    from raf.cli._agents import build_agent

    return build_agent(str(file), model, None, tools)


def run_serve(args: argparse.Namespace) -> int:
    from raf.cli.tool_option import EXIT_BAD_SPEC, loaded_tools

    if loaded_tools(args.tools, "raf mcp") is None:
        return EXIT_BAD_SPEC
    return asyncio.run(_serve(args))


async def _serve(args: argparse.Namespace) -> int:
    from raf.cli.serve import lease_seconds_from, open_sessions, store_timeout_from
    from raf.serve.hosting import AgentHost
    from raf.serve.mcp.guard import env_tokens, mcp_security
    from raf.serve.mcp.server import AgentMcpServer

    tokens = env_tokens(os.environ)
    if args.transport == "http":  # refused before anything is built or bound
        mcp_security(args.host, tokens, allowed_hosts=args.allow_host)
    agent = await load_agent(args.file, args.python, args.model, args.tools)
    waits = store_timeout_from(args)
    store, _ = open_sessions(args.sessions or "memory", waits)
    host = AgentHost(
        [agent],
        store=store,
        lease_seconds=lease_seconds_from(args),
        store_timeout=waits,
        if_busy=args.if_busy,
    )
    server = AgentMcpServer(agent, expose_tools=args.expose_tools, host=host)
    await server.list_run_time_tools()  # what the context providers add, said up front
    for name, why in server.left_out.items():
        print(terminal_safe(f"raf mcp: tool {name!r} is not exposed: {why}"), file=sys.stderr)
    try:
        if args.transport == "http":
            await server.serve_http(
                host=args.host,
                port=args.port,
                tokens=tokens,
                allowed_hosts=args.allow_host,
                allowed_origins=args.allow_origin,
                ready=lambda url: print(
                    f"raf mcp: serving {agent.name!r} at {url} (streamable HTTP; Ctrl-C stops)",
                    file=sys.stderr,
                    flush=True,
                ),
            )
        else:
            await server.serve_stdio()
    finally:
        from raf.cli._agents import close_agent

        await close_agent(agent)  # providers with connections or background work
    return 0

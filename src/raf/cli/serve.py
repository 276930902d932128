"""`raf serve FILE…|DIR`: host agent documents over HTTP; `raf acp FILE`: one agent for an
editor over the Agent Client Protocol on stdio."""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from raf.cli.tool_option import add_tools_option

if TYPE_CHECKING:
    from raf.core.sessions import SessionStore
    from raf.serve.limits import ServeLimits

TOKEN_ENV = "RAF_SERVE_TOKEN"
"""Environment variable holding the bearer token (several separated by commas)."""

LIMIT_FLAGS = {
    "max_body": "max_body_bytes",
    "max_header_bytes": "max_header_bytes",
    "header_timeout": "header_timeout",
    "body_timeout": "body_timeout",
    "keep_alive": "keep_alive",
    "max_connections": "max_connections",
    "max_streams": "max_streams",
    "stream_share": "stream_share",
    "max_json_depth": "max_json_depth",
    "rate_limit": "rate_per_second",
    "rate_burst": "rate_burst",
    "loopback_rate_limit": "loopback_rate_per_second",
    "auth_failures": "auth_failures",
    "auth_failure_window": "auth_failure_window",
}
"""`raf serve` flags (as argparse names them) → the `ServeLimits` field each sets."""


def limits_from(args: argparse.Namespace) -> ServeLimits:
    """The server limits: the defaults, with those given as flags replaced."""
    from raf.serve.limits import ServeLimits

    given = {
        field: getattr(args, flag)
        for flag, field in LIMIT_FLAGS.items()
        if getattr(args, flag, None) is not None
    }
    return ServeLimits(**given)


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "serve",
        help="serve agent and workflow documents over HTTP (raf's API, OpenAI-compatible, A2A)",
        description=(
            "Serve agent and workflow documents over HTTP (a .py file: its module-level "
            "Agent and Workflow objects). Beyond loopback a bearer token is required: "
            f"${TOKEN_ENV} (several separated by commas) or --token-file."
        ),
    )
    parser.add_argument(
        "paths",
        nargs="+",
        metavar="FILE|DIR",
        help="agent and workflow documents, folders, or .py files",
    )
    parser.add_argument("--ui", action="store_true", help="also serve the web UI at /ui")
    _server_arguments(parser)
    parser.set_defaults(handler=serve_command, program="raf serve")

    ui: argparse.ArgumentParser = subparsers.add_parser(
        "ui",
        help="open a local web UI over agent documents and Python files of agents and workflows",
        description=(
            "Serve the web UI (chat, sessions, requests, traces, workflows, memory) at /ui, "
            "with raf's HTTP API, on loopback by default. A .py file is imported and its "
            "module-level Agent and Workflow objects are hosted."
        ),
    )
    ui.add_argument(
        "paths", nargs="+", metavar="FILE|DIR", help="agent documents, folders, or .py files"
    )
    _server_arguments(ui)
    ui.set_defaults(handler=serve_command, ui=True, program="raf ui")

    acp: argparse.ArgumentParser = subparsers.add_parser(
        "acp", help="serve one agent document to an editor over ACP (stdio)"
    )
    acp.add_argument("file", metavar="FILE", help="agent document")
    acp.add_argument("--model", metavar="SPEC", help="use this model instead of the document's")
    add_tools_option(acp)
    acp.set_defaults(handler=acp_command)


def _server_arguments(parser: argparse.ArgumentParser) -> None:
    add_tools_option(parser)
    parser.add_argument("--host", default="127.0.0.1", help="address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000; 0: any free)")
    parser.add_argument("--model", metavar="SPEC", help="use this model for every agent")
    parser.add_argument("--token-file", metavar="PATH", help="bearer tokens, one a line")
    parser.add_argument(
        "--allow-host", action="append", default=[], metavar="NAME", help="Host header to accept"
    )
    parser.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="URL",
        help="browser Origin to accept",
    )
    limits = parser.add_argument_group(
        "limits", "what each client may hold (defaults are safe for a shared server)"
    )
    from raf.serve.limits import ServeLimits

    defaults = ServeLimits()

    def limit(flag: str, kind: type, metavar: str, help: str) -> None:
        name = flag.lstrip("-").replace("-", "_")
        shown = getattr(defaults, LIMIT_FLAGS[name])
        limits.add_argument(
            flag, type=kind, metavar=metavar, help=f"{help} (default {shown})", dest=name
        )

    limit("--max-body", int, "BYTES", "largest request body")
    limit("--max-header-bytes", int, "BYTES", "largest request line and headers (431 past it)")
    limit("--header-timeout", float, "SECONDS", "time to send a request's headers")
    limit("--body-timeout", float, "SECONDS", "time to send a request's body")
    limit("--keep-alive", int, "SECONDS", "idle time a connection is kept open")
    limit("--max-connections", int, "N", "open connections (idle ones are closed first)")
    limit("--max-streams", int, "N", "requests and streams answered at once (503 past it)")
    limit(
        "--stream-share",
        float,
        "FRACTION",
        "share of --max-streams one token (one address without tokens) may hold; 429 past "
        "it (1: no cap)",
    )
    limit("--max-json-depth", int, "N", "deepest JSON nesting in a request")
    limit(
        "--rate-limit",
        float,
        "PER_SECOND",
        "requests a second per token, or per client address without tokens (0: off)",
    )
    limit("--rate-burst", int, "N", "requests a caller may make at once")
    limit(
        "--loopback-rate-limit",
        float,
        "PER_SECOND",
        "requests a second per loopback address on a server without tokens (0: no limit)",
    )
    limit(
        "--auth-failures",
        int,
        "N",
        "wrong tokens a client address may send before it gets 429 (loopback too; 0: off)",
    )
    limit(
        "--auth-failure-window",
        float,
        "SECONDS",
        "time in which an address earns back all its --auth-failures tries",
    )
    add_session_options(parser, sessions_default="serve-sessions.sqlite in raf's data folder")
    parser.add_argument(
        "--checkpoints",
        metavar="URL|PATH",
        help="where served workflows keep their checkpoints, shared by every worker "
        "(postgresql://…, a SQLite file, a folder, memory:; default: the sessions' store, "
        "a table of its database or file)",
    )
    parser.add_argument(
        "--public-url",
        metavar="URL",
        help="the absolute http(s) address clients reach the server at, e.g. behind a proxy "
        "(https://agents.example.com); every published URL (A2A agent cards) uses it "
        "(default: the address each request came to)",
    )
    parser.add_argument(
        "--durable",
        metavar="URL",
        help="run durably on DBOS with this system database (sqlite:///PATH for one "
        "process, postgresql://… for several workers); needs raf-agents[durable]",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        metavar="N",
        help="worker processes sharing the port and the session store (a file, SQLite, "
        "PostgreSQL or Redis store, not memory; with --durable, postgresql://…)",
    )
    parser.add_argument(
        "--max-runs",
        type=int,
        metavar="N",
        help="durable runs of one agent at a time, over all workers (default: no limit)",
    )
    parser.add_argument(
        "--if-busy",
        choices=("reject", "enqueue", "interrupt", "rollback"),
        default="enqueue",
        help="what a run does when its session is busy, unless its request says (if_busy): "
        "refuse it with 409, queue it after the runs before it, stop the run in progress "
        "and keep its turn, or stop it and remove its turn (default enqueue)",
    )
    parser.add_argument(
        "--run-retention",
        type=float,
        metavar="SECONDS",
        help="how long a run's events are kept after it ends; reading them later is a 410 "
        "(default 604800: a week)",
    )
    parser.add_argument(
        "--webhook-secret",
        metavar="SECRET",
        help="sign run webhooks with HMAC-SHA256 and this secret (better: $RAF_WEBHOOK_SECRET, "
        "which ps does not show); without one, runs asking for a webhook are refused",
    )
    parser.add_argument(
        "--webhook-allow-private",
        action="store_true",
        help="let run webhooks reach private and loopback addresses (refused by default)",
    )
    parser.add_argument("--executor-id", help=argparse.SUPPRESS)
    parser.add_argument("--worker-fd", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--no-openai", action="store_true", help="leave out /v1 (OpenAI API)")
    parser.add_argument("--no-a2a", action="store_true", help="leave out the A2A endpoints")
    parser.add_argument("--no-agui", action="store_true", help="leave out the AG-UI run endpoints")


def _tokens(args: argparse.Namespace) -> list[str]:
    tokens = [t for t in os.environ.get(TOKEN_ENV, "").split(",") if t.strip()]
    if args.token_file:
        tokens.extend(read_token_file(args.token_file))
    return tokens


def read_token_file(name: str) -> list[str]:
    """The bearer tokens in the file `name`, one a line. As ssh treats a private key, a
    file other users can read or change is refused (its tokens are no secret any more);
    one its group can read is taken with a warning (a group shared on purpose, as a
    Kubernetes secret mounted with `fsGroup` is)."""
    import stat

    from raf.core.errors import ConfigurationError
    from raf.core.safe_read import FileRefusedError, read_regular_file

    def private_enough(info: os.stat_result) -> None:
        """The mode of the file opened, the one whose bytes are read."""
        mode = stat.S_IMODE(info.st_mode)
        if mode & 0o007 or mode & 0o020:
            raise ConfigurationError(
                f"--token-file {name!r} has mode {mode:04o}: other users can "
                f"{'read or change' if mode & 0o007 else 'change'} the tokens in it. "
                f"Make it private: chmod 600 {name}"
            )
        if mode & 0o040:
            print(
                f"raf: warning: --token-file {name!r} has mode {mode:04o}: its group can "
                f"read the tokens (chmod 600 {name} unless that is meant)",
                file=sys.stderr,
            )

    try:
        data = read_regular_file(name, limit=1024 * 1024, opened=private_enough)
    except FileRefusedError as exc:
        raise ConfigurationError(f"--token-file refused: {exc}") from None
    except OSError as exc:
        raise ConfigurationError(
            f"--token-file {name!r} cannot be read: {exc.strerror or exc}"
        ) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigurationError(
            f"--token-file {name!r} is not UTF-8 text (byte {exc.start})"
        ) from None
    return [line.strip() for line in text.splitlines() if line.strip()]


def _check_workers(args: argparse.Namespace) -> str | None:
    """Why these worker and durable options cannot work together, or None."""
    if args.workers < 1:
        return f"--workers must be at least 1, not {args.workers}"
    if args.max_runs is not None and args.max_runs < 1:
        return f"--max-runs must be at least 1, not {args.max_runs}"
    kept = args.run_retention
    if kept is not None and not kept > 0:
        return f"--run-retention must be a number of seconds above 0, not {kept:g}"
    lease = args.lease_seconds
    if lease is not None and not lease > 0:
        return f"--lease-seconds must be a number of seconds above 0, not {lease:g}"
    waits = args.store_timeout
    if waits is not None and not 0 < waits < math.inf:
        return f"--store-timeout must be a number of seconds above 0, not {waits:g}"
    if args.max_runs and not args.durable:
        return "--max-runs needs --durable (the queue lives in its database)"
    if args.workers > 1 and args.sessions == "memory":
        return (
            "several workers cannot share in-memory sessions: leave --sessions out (a "
            "SQLite file in raf's data folder) or give a shared store (a folder, a SQLite "
            "file, postgresql://…, redis://…)"
        )
    if (
        args.workers > 1
        and args.durable
        and not args.durable.startswith(("postgresql://", "postgres://"))
    ):
        return (
            "several workers need a shared system database for durable runs: --durable "
            "postgresql://… (SQLite serves one process)"
        )
    return None


def lease_seconds_from(args: argparse.Namespace) -> float:
    """How long a run's lease lasts: `--lease-seconds`, or the default."""
    from raf.stores.leases import DEFAULT_LEASE_SECONDS

    return DEFAULT_LEASE_SECONDS if args.lease_seconds is None else float(args.lease_seconds)


def store_timeout_from(args: argparse.Namespace) -> float:
    """How long a request waits for one answer of the store: `--store-timeout`, or the
    default."""
    from raf.stores.timed import DEFAULT_STORE_TIMEOUT

    return DEFAULT_STORE_TIMEOUT if args.store_timeout is None else float(args.store_timeout)


REDIS_CHECKPOINTS = (
    "workflow checkpoints cannot be kept in Redis: give --checkpoints "
    "(postgresql://…, a SQLite file every worker reaches, or a folder)"
)
"""Why a workflow cannot be served beside Redis sessions without `--checkpoints`."""


def _checkpoint_store(given: str | None, sessions_at: str, waits: float) -> Any:
    """Where served workflows keep their checkpoints: `--checkpoints`, else beside the
    sessions (a table of their database or SQLite file, a folder inside theirs), so every
    worker that shares the sessions shares the checkpoints too. None beside Redis
    sessions without `--checkpoints`: agents need none, a workflow is refused."""
    from raf.core.errors import ConfigurationError
    from raf.core.private_files import private_dir
    from raf.stores.urls import open_checkpoint_store

    spec = given
    if spec is None:
        scheme = sessions_at.split("://", 1)[0].lower() if "://" in sessions_at else ""
        if scheme in ("redis", "rediss", "unix"):
            return None
        if not scheme and sessions_at != "memory:" and Path(sessions_at).is_dir():
            spec = str(private_dir(Path(sessions_at) / "checkpoints"))
        else:
            spec = sessions_at
    try:
        return open_checkpoint_store(spec, timeout=waits)
    except ConfigurationError:
        raise
    except Exception as exc:
        raise ConfigurationError(f"--checkpoints {spec!r}: {exc}") from None


def _spawn_workers(args: argparse.Namespace) -> int:
    """Bind once, then run N worker processes on the one socket; a worker that dies is
    started again under its executor id (its runs resume in it, or in another first)."""
    import signal
    import subprocess
    import time
    import uuid

    from raf.serve.server import bind

    sock = bind(args.host, args.port)
    sock.set_inheritable(True)
    argv = _worker_argv(sys.argv[1:])
    prefix = f"raf-{uuid.uuid4().hex[:8]}"

    def spawn(index: int) -> subprocess.Popen[bytes]:
        command = [sys.executable, "-m", "raf.cli", *argv, "--worker-fd", str(sock.fileno())]
        command += ["--executor-id", f"{prefix}-{index}"]
        return subprocess.Popen(command, pass_fds=[sock.fileno()])

    workers = {i: spawn(i) for i in range(args.workers)}
    stopping = False

    def stop(signum: int, frame: Any) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        while not stopping:
            time.sleep(0.5)
            for index, process in list(workers.items()):
                if process.poll() is not None and not stopping:
                    print(
                        f"raf serve: worker {index} exited ({process.returncode}); restarting",
                        file=sys.stderr,
                        flush=True,
                    )
                    workers[index] = spawn(index)
    finally:
        for process in workers.values():
            if process.poll() is None:
                process.send_signal(signal.SIGINT)
        for process in workers.values():
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        sock.close()
    print("raf serve: stopped", file=sys.stderr)
    return 0


def _exit_with_parent() -> None:
    """A worker stops when the process that started it is gone (even by SIGKILL)."""
    import signal
    import threading
    import time

    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=watch, name="raf-serve-parent", daemon=True).start()


def _worker_argv(argv: list[str]) -> list[str]:
    """The command line of one worker: the parent's, without --workers."""
    out: list[str] = []
    skip = False
    for item in argv:
        if skip:
            skip = False
            continue
        if item == "--workers":
            skip = True
            continue
        if item.startswith("--workers="):
            continue
        out.append(item)
    return out


def _run_manager(args: argparse.Namespace, host: Any) -> Any:
    """The server's native runs: their retention and webhooks, from the flags."""
    from raf.serve.runs import DEFAULT_RUN_RETENTION, RunManager
    from raf.serve.webhooks import SECRET_ENV, Webhooks

    retention = DEFAULT_RUN_RETENTION if args.run_retention is None else args.run_retention
    secret = args.webhook_secret or os.environ.get(SECRET_ENV)
    webhooks = Webhooks(secret, allow_private=args.webhook_allow_private)
    if args.durable:  # background runs are durable workflows, queued per session
        from raf.serve.durable_runs import DurableRunManager

        return DurableRunManager(host, retention=retention, webhooks=webhooks)
    return RunManager(host, retention=retention, webhooks=webhooks)


def _document_schedules(paths: list[str]) -> list[tuple[str, int, Any, Path]]:
    """The `schedule:` entries of the agent documents served: (agent, place, entry, file)."""
    from raf.decl.agent.builder import DeclAgentBuilder
    from raf.decl.workflow import is_workflow_file
    from raf.serve.loading import document_paths

    named = [p for p in paths if not str(p).endswith(".py")]
    found: list[tuple[str, int, Any, Path]] = []
    for path in document_paths(named) if named else []:
        if is_workflow_file(path):
            continue
        decl = DeclAgentBuilder().from_file(path).declaration
        found.extend((decl.name, k, entry, path) for k, entry in enumerate(decl.schedule))
    return found


def _schedules(declared: list[tuple[str, int, Any, Path]]) -> list[Any]:
    """The documents' schedules as the durable runtime keeps them (the anonymous
    caller's, named after their agent and their name or place)."""
    from raf.durable.schedules import DOCUMENT_PREFIX, Schedule

    out = []
    for agent, place, entry, _ in declared:
        label = entry.name or f"{agent}-{place + 1}"
        out.append(
            Schedule(
                name=f"{DOCUMENT_PREFIX}{agent}:{label}",
                agent=agent,
                cron=entry.cron,
                input=entry.input,
                session=entry.session,
                label=label,
            )
        )
    return out


def serve_command(args: argparse.Namespace) -> int:
    import socket

    from raf.cli._agents import resolve_client
    from raf.cli.terminal_text import terminal_safe
    from raf.cli.tool_option import EXIT_BAD_SPEC, loaded_tools
    from raf.serve import AgentHost, ServeSecurity, create_app
    from raf.serve.loading import load_targets
    from raf.serve.server import bind, serve_socket
    from raf.stores.urls import open_session_store

    tools = loaded_tools(args.tools, args.program)
    if tools is None:  # a usage error, said before anything is bound or started
        return EXIT_BAD_SPEC
    problem = _check_workers(args)
    if problem is not None:
        print(terminal_safe(f"raf serve: {problem}"), file=sys.stderr)
        return 2
    if args.public_url is not None:  # before any worker starts
        from raf.serve.public_url import check_public_url

        args.public_url = check_public_url(args.public_url, where="--public-url")
    if args.workers > 1 and args.worker_fd is None:
        return _spawn_workers(args)

    security = ServeSecurity.for_bind(
        args.host,
        tokens=_tokens(args),
        allowed_hosts=args.allow_host,
        allowed_origins=args.allow_origin,
        limits=limits_from(args),
    )
    client = resolve_client(args.model) if args.model or os.environ.get("RAF_MODEL") else None
    store: SessionStore
    waits = store_timeout_from(args)
    sessions_at: str  # the sessions' store, spelt as --checkpoints takes it
    if args.sessions is None and args.durable and "postgres" in args.durable.split("://")[0]:
        store = open_session_store(args.durable, timeout=waits)  # workers share the sessions
        sessions_at = args.durable
    else:
        store, sessions_at = open_sessions(args.sessions, waits)
    checkpoints = _checkpoint_store(args.checkpoints, sessions_at, waits)
    agents, workflows = load_targets(
        args.paths, chat_client=client, tools=tools, checkpoints=checkpoints
    )
    if workflows and checkpoints is None:
        from raf.core.errors import ConfigurationError

        raise ConfigurationError(REDIS_CHECKPOINTS)
    if workflows and args.durable:
        print(
            terminal_safe(
                f"raf serve: --durable serves agents; {workflows[0].name!r} is a workflow "
                "(serve workflows without --durable: their checkpoints already outlive a "
                "worker)"
            ),
            file=sys.stderr,
        )
        return 2
    declared = _document_schedules(args.paths)
    if declared and not args.durable:
        agent_name, _, _, where = declared[0]
        print(
            terminal_safe(
                f"raf serve: {where}: agent {agent_name!r} declares a schedule; scheduled "
                "runs need --durable URL (each tick must run once across all workers)"
            ),
            file=sys.stderr,
        )
        return 2
    agents = [*agents, *(w.as_agent() for w in workflows)]  # served under /agents/NAME
    host: AgentHost
    runtime: Any = None
    if args.durable:
        from raf.durable import DurableRuntime
        from raf.serve.durable_host import DurableAgentHost

        runtime = DurableRuntime(
            agents,
            store=store,
            database=args.durable,
            concurrency=args.max_runs,
            executor_id=args.executor_id,
        )
        host = DurableAgentHost(
            runtime, lease_seconds=lease_seconds_from(args), store_timeout=waits
        )
        host.if_busy = args.if_busy
    else:
        host = AgentHost(
            agents,
            store=store,
            lease_seconds=lease_seconds_from(args),
            store_timeout=waits,
            if_busy=args.if_busy,
        )
    runs = _run_manager(args, host)
    if args.worker_fd is not None:
        sock = socket.socket(fileno=args.worker_fd)
        _exit_with_parent()
    else:
        sock = bind(args.host, args.port)
    port = sock.getsockname()[1]
    shown = f"[{args.host}]" if ":" in args.host else args.host
    url = args.public_url or f"http://{shown}:{port}"
    ui = None
    if args.ui:
        from raf.serve.ui import ServeUI

        ui = ServeUI.attach(host, workflows)
    app = create_app(
        host,
        security,
        openai=not args.no_openai,
        a2a=not args.no_a2a,
        agui=not args.no_agui,
        public_url=args.public_url,
        ui=ui,
        runs=runs,
    )

    def started() -> None:
        names = ", ".join(host.agents)
        auth = "bearer token" if security.tokens else "off (loopback only)"
        durable = f", durable: {args.executor_id or 'local'}" if runtime is not None else ""
        print(
            f"{args.program}: {names} on {url} (auth: {auth}{durable})",
            file=sys.stderr,
            flush=True,
        )
        if ui is not None:
            print(f"raf ui: open {url}/ui", file=sys.stderr, flush=True)

    async def main() -> None:
        if runtime is not None:
            await runtime.launch()
            try:
                await runtime.replace_document_schedules(_schedules(declared))
            except BaseException:
                runtime.shutdown()
                raise
        try:
            await serve_socket(app, sock, on_started=started)
        finally:
            if runtime is not None:
                runtime.shutdown()

    try:
        asyncio.run(main())
    except KeyboardInterrupt:  # Ctrl-C is how a server is stopped: a clean exit
        pass
    finally:
        sock.close()
    print(f"{args.program}: stopped", file=sys.stderr)
    return 0


def open_sessions(spec: str | None, waits: float) -> tuple[SessionStore, str]:
    """The session store `--sessions` names (`memory`, a store URL, or a SQLite file;
    None: serve-sessions.sqlite in raf's data folder), each call bounded by `waits`
    seconds, and its name as `--checkpoints` takes it. `raf serve` and `raf mcp serve`
    read the flag this one way."""
    from raf.cli._agents import data_dir
    from raf.core.private_files import private_dir
    from raf.stores.sessions import InMemorySessionStore, SqliteSessionStore
    from raf.stores.urls import open_session_store

    if spec == "memory":
        return InMemorySessionStore(), "memory:"
    if spec and "://" in spec:
        return open_session_store(spec, timeout=waits), spec
    path = Path(spec) if spec else data_dir() / "serve-sessions.sqlite"
    private_dir(path.parent)
    return SqliteSessionStore(path, timeout=waits), f"sqlite://{path}"


def add_session_options(parser: argparse.ArgumentParser, *, sessions_default: str) -> None:
    """`--sessions`, `--lease-seconds` and `--store-timeout`: where served sessions are
    kept and how long a run's lease and a store's answer may take."""
    from raf.stores.leases import DEFAULT_LEASE_SECONDS
    from raf.stores.timed import DEFAULT_STORE_TIMEOUT

    parser.add_argument(
        "--sessions",
        metavar="PATH|URL|memory",
        help="where sessions are kept: a SQLite file, a store URL (sqlite:///…, "
        f"postgresql://…, redis://…) or memory (default: {sessions_default})",
    )
    parser.add_argument(
        "--lease-seconds",
        type=float,
        metavar="SECONDS",
        help="how long a run holds its session without renewing it: a worker that dies "
        f"mid-run frees its session this long after its last renewal (default "
        f"{DEFAULT_LEASE_SECONDS:g})",
    )
    parser.add_argument(
        "--store-timeout",
        type=float,
        metavar="SECONDS",
        help="how long a request waits for one answer of the session store (a "
        "connection, a query, a lock on its file) before it fails with 503 "
        "session_store_error; /ready says 503 after as long while the store is away "
        f"(default {DEFAULT_STORE_TIMEOUT:g})",
    )


def acp_command(args: argparse.Namespace) -> int:
    from raf.cli._agents import StoredWorkflowAgent, build_agent, session_store
    from raf.cli.tool_option import EXIT_BAD_SPEC, loaded_tools
    from raf.serve.acp.agent import serve_acp_stdio

    if loaded_tools(args.tools, "raf acp") is None:
        return EXIT_BAD_SPEC
    agent = build_agent(args.file, args.model, None, args.tools)
    if isinstance(agent, StoredWorkflowAgent):
        print(f"raf acp: {args.file} is a workflow document; ACP serves agents", file=sys.stderr)
        return 2
    asyncio.run(serve_acp_stdio(agent, session_store()))
    return 0

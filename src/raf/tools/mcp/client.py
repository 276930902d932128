"""An MCP client on the official SDK whose connection lives in one owner task.

The SDK's transports and sessions are anyio context managers that must be entered and
left by the same task. `McpClient` therefore starts one dedicated asyncio task that owns
them; every request is handed to that task through a queue and answered through a
future. This gives lazy connect, reconnect after a dropped server and a shutdown without
cancel-scope errors, whichever task calls `aclose()`.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from raf.core import outbound
from raf.core.errors import MissingExtraError, RafError
from raf.tools.mcp.config import McpServerConfig
from raf.tools.mcp.interaction import (
    CallScope,
    ElicitationHandler,
    McpNotice,
    NoticeHandler,
    SamplingHandler,
)
from raf.tools.mcp.oauth import (
    Authorizer,
    TokenStore,
    default_store,
    first_line,
    oauth_provider,
)
from raf.tools.mcp.server_asks import ServerAsks

if TYPE_CHECKING:
    import mcp
    import mcp_types

T = TypeVar("T")

_CLOSE_TIMEOUT = 10.0


class McpError(RafError):
    """An MCP request failed; the message keeps the server's own words."""

    def __init__(self, message: str, *, server: str, code: int | None = None) -> None:
        self.server = server
        self.code = code
        super().__init__(message)


class _ConnectionLost(Exception):
    """The owner task ended while a request was queued or running."""


@dataclass(kw_only=True, slots=True)
class _Job:
    fn: Callable[[mcp.Client], Awaitable[Any]]
    future: asyncio.Future[Any]
    timeout: float


def _import_mcp() -> Any:
    try:
        import mcp
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise MissingExtraError("MCP", "mcp", exc.name) from exc
    return mcp


class McpClient:
    """A lazily connected client for one MCP server (stdio, streamable HTTP or SSE).

    `elicitation` and `sampling` answer what the server asks during any request (a
    terminal prompt, a UI); without them, what it asks during a tool call goes to that
    call (an agent's run pauses for a person), and otherwise it is declined. `on_notice`
    hears the server's progress and log notifications. With `config.oauth`, tokens go
    to `token_store` and the person authorizes through `authorizer` (`oauth.py`)."""

    def __init__(
        self,
        config: McpServerConfig | Mapping[str, Any],
        *,
        elicitation: ElicitationHandler | None = None,
        sampling: SamplingHandler | None = None,
        on_notice: NoticeHandler | None = None,
        token_store: TokenStore | None = None,
        authorizer: Authorizer | None = None,
    ) -> None:
        _import_mcp()
        self.token_store = token_store
        self.authorizer = authorizer
        self.elicitation = elicitation
        self.sampling = sampling
        self.on_notice = on_notice
        self._asks = ServerAsks(self)
        self.config = (
            config if isinstance(config, McpServerConfig) else McpServerConfig.from_mapping(config)
        )
        self._owner: asyncio.Task[None] | None = None
        self._jobs: asyncio.Queue[_Job | None] = asyncio.Queue()
        self._lock = asyncio.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._instructions: str | None = None
        self._server_name: str | None = None
        self.connect_count = 0
        """How many times a connection was opened (1 + reconnects)."""

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def connected(self) -> bool:
        return self._owner is not None and not self._owner.done()

    @property
    def server_instructions(self) -> str | None:
        """The `instructions` the server sent in its handshake, if any."""
        return self._instructions

    # -- lifecycle -----------------------------------------------------------------

    def _follow_loop(self) -> None:
        """Forget a connection made on another (finished) event loop, e.g. by `run_sync`."""
        loop = asyncio.get_running_loop()
        if self._loop is not None and self._loop is not loop:
            self._owner = None
            self._jobs = asyncio.Queue()
            self._lock = asyncio.Lock()
        self._loop = loop

    async def connect(self) -> None:
        """Open the connection now (requests also open it on first use)."""
        self._follow_loop()
        async with self._lock:
            if self.connected:
                return
            await self._stop_owner()
            self._jobs = asyncio.Queue()
            loop = asyncio.get_running_loop()
            ready: asyncio.Future[None] = loop.create_future()
            self._owner = loop.create_task(self._own(ready), name=f"mcp-{self.name}")
            try:
                await asyncio.wait_for(asyncio.shield(ready), self.config.connect_timeout)
            except TimeoutError:
                await self._stop_owner(cancel=True)
                raise McpError(
                    f"MCP server {self.name!r}: no connection within "
                    f"{self.config.connect_timeout:g}s",
                    server=self.name,
                ) from None
            except McpError:
                await self._stop_owner()
                raise
            except Exception as exc:
                await self._stop_owner()
                raise self._wrap(exc, "connect") from exc
            self.connect_count += 1

    async def aclose(self) -> None:
        """Close the session and the transport (stops a stdio server's process)."""
        self._follow_loop()
        async with self._lock:
            await self._stop_owner()

    async def __aenter__(self) -> McpClient:
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _stop_owner(self, *, cancel: bool = False) -> None:
        owner = self._owner
        self._owner = None
        if owner is None:
            return
        if cancel and not owner.done():
            owner.cancel()  # still connecting: nothing to leave politely
        elif not owner.done():
            self._jobs.put_nowait(None)
            try:
                await asyncio.wait_for(asyncio.shield(owner), _CLOSE_TIMEOUT)
            except TimeoutError:
                owner.cancel()
        with contextlib.suppress(BaseException):
            await owner

    # -- the owner task ------------------------------------------------------------

    async def _own(self, ready: asyncio.Future[None]) -> None:
        import anyio

        running: set[asyncio.Future[Any]] = set()
        try:
            async with contextlib.AsyncExitStack() as stack:
                client = await self._open(stack)
                self._instructions = client.instructions
                info = client.server_info
                self._server_name = info.name if info is not None else None
                ready.set_result(None)
                async with anyio.create_task_group() as tg:
                    while True:
                        job = await self._jobs.get()
                        if job is None:
                            tg.cancel_scope.cancel()
                            break
                        running.add(job.future)
                        tg.start_soon(self._run_job, client, job, running)
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else _ConnectionLost())
            if not isinstance(exc, Exception | asyncio.CancelledError):
                raise
        finally:
            lost = _ConnectionLost(f"connection to MCP server {self.name!r} closed")
            for future in running:
                if not future.done():
                    future.set_exception(lost)
            while not self._jobs.empty():
                job = self._jobs.get_nowait()
                if job is not None and not job.future.done():
                    job.future.set_exception(lost)

    async def _run_job(
        self, client: mcp.Client, job: _Job, running: set[asyncio.Future[Any]]
    ) -> None:
        import anyio

        try:
            with anyio.fail_after(job.timeout):
                value = await job.fn(client)
        except Exception as exc:
            if not job.future.done():
                job.future.set_exception(exc)
        else:
            if not job.future.done():
                job.future.set_result(value)
        finally:
            running.discard(job.future)

    async def _open(self, stack: contextlib.AsyncExitStack) -> mcp.Client:
        sdk = _import_mcp()
        cfg = self.config
        transport: Any
        if cfg.transport == "stdio":
            from mcp.client.stdio import StdioServerParameters, stdio_client

            params = StdioServerParameters(
                command=cfg.command or "", args=list(cfg.args), env=cfg.env, cwd=cfg.cwd
            )
            transport = stdio_client(params, errlog=sys.stderr)
        elif cfg.transport == "sse":
            from mcp.client.sse import sse_client

            rule = self._outbound()

            def guarded(
                headers: dict[str, str] | None = None,
                timeout: Any = None,
                auth: Any = None,
            ) -> Any:
                return outbound.guarded_async_client(
                    rule, module="httpx2", headers=headers, timeout=timeout, auth=auth
                )

            transport = sse_client(
                cfg.url or "",
                headers=dict(cfg.headers),
                timeout=cfg.connect_timeout,
                auth=self._auth(),
                httpx_client_factory=guarded,
            )
        else:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            http = outbound.guarded_async_client(
                self._outbound(),
                module="httpx2",
                headers=dict(cfg.headers),
                auth=self._auth(),
                timeout=httpx2.Timeout(cfg.connect_timeout, read=max(cfg.call_timeout, 300.0)),
            )
            await stack.enter_async_context(http)
            transport = streamable_http_client(cfg.url or "", http_client=http)
        callbacks: dict[str, Any] = {
            "logging_callback": self._asks.on_log,
            "elicitation_callback": self._asks.on_elicit,
        }
        if cfg.sampling != "never":
            callbacks["sampling_callback"] = self._asks.on_sample
        client = sdk.Client(
            transport,
            read_timeout_seconds=cfg.call_timeout,
            cache=None,
            client_info=_client_info(),
            mode=cfg.protocol,
            **callbacks,
        )
        entered: mcp.Client = await stack.enter_async_context(client)
        return entered

    def _outbound(self) -> outbound.OutboundPolicy:
        """The guard for every request to this server and its OAuth discovery: the URL
        the user configured is trusted (a loopback server too), with `allow_hosts`."""
        cfg = self.config
        return outbound.policy(
            who=f"MCP client {self.name!r}", allow_hosts=cfg.allow_hosts, trusted=[cfg.url]
        )

    def _auth(self) -> Any:
        """The OAuth flow for this server, or None when it needs none."""
        cfg = self.config
        if cfg.oauth is None:
            return None
        if self.token_store is None:  # one store for every connection of this client
            self.token_store = default_store(cfg.oauth)
        return oauth_provider(
            cfg.url or "", cfg.oauth, store=self.token_store, authorizer=self.authorizer
        )

    # -- requests ------------------------------------------------------------------

    async def _submit(self, fn: Callable[[mcp.Client], Awaitable[T]], op: str) -> T:
        self._follow_loop()
        if not self.connected:
            await self.connect()
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._jobs.put_nowait(_Job(fn=fn, future=future, timeout=self.config.call_timeout))
        return await future

    async def request(self, fn: Callable[[mcp.Client], Awaitable[T]], op: str) -> T:
        """Run `fn(client)` in the owner task, reconnecting once if the server went away."""
        attempts = 2 if self.config.reconnect else 1
        for attempt in range(attempts):
            try:
                return await self._submit(fn, op)
            except McpError:
                raise
            except Exception as exc:
                if attempt + 1 < attempts and self._is_connection_lost(exc):
                    async with self._lock:
                        await self._stop_owner()
                    continue
                raise self._wrap(exc, op) from exc
        raise McpError(f"MCP server {self.name!r}: {op} failed", server=self.name)

    def _is_connection_lost(self, exc: BaseException) -> bool:
        import anyio

        if isinstance(exc, _ConnectionLost):
            return True
        if isinstance(exc, anyio.ClosedResourceError | anyio.BrokenResourceError):
            return True
        if isinstance(exc, anyio.EndOfStream | ConnectionError):
            return True
        from mcp.shared.exceptions import MCPError
        from mcp_types import CONNECTION_CLOSED

        if isinstance(exc, MCPError):
            return exc.code == CONNECTION_CLOSED
        try:
            import httpx2
        except ImportError:  # pragma: no cover
            return False
        return isinstance(exc, httpx2.TransportError)

    def _wrap(self, exc: BaseException, op: str) -> McpError:
        from mcp.shared.exceptions import MCPError

        prefix = f"MCP server {self.name!r} {op}"
        if isinstance(exc, McpError):
            return exc
        if isinstance(exc, MCPError):
            return McpError(f"{prefix}: {exc.message}", server=self.name, code=exc.code)
        if isinstance(exc, TimeoutError):
            return McpError(
                f"{prefix}: timed out after {self.config.call_timeout:g}s", server=self.name
            )
        if isinstance(exc, ExceptionGroup):
            first = exc.exceptions[0] if exc.exceptions else exc
            return self._wrap(first, op)
        text = str(exc) or type(exc).__name__
        if type(exc).__module__.startswith("mcp.client.auth"):
            text = first_line(text)  # a parse error's later lines repeat tokens and secrets
        return McpError(f"{prefix}: {text}", server=self.name)

    # -- the protocol operations -----------------------------------------------------

    async def list_tools(self) -> list[mcp_types.Tool]:
        """Every tool the server offers (all pages)."""

        async def run(client: mcp.Client) -> list[mcp_types.Tool]:
            return await _all_pages(lambda cursor: client.list_tools(cursor=cursor), "tools")

        return await self.request(run, "tools/list")

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        scope: CallScope | None = None,
    ) -> mcp_types.CallToolResult:
        """Call one tool by its server name; a tool-level error comes back in the result.
        What the server asks or reports meanwhile goes to `scope` when this is the only
        call of this client in flight."""
        args = dict(arguments or {})
        scope = scope or CallScope()

        async def progress(progress: float, total: float | None, message: str | None) -> None:
            notice = McpNotice(
                server=self.name,
                kind="progress",
                message=message or "",
                progress=progress,
                total=total,
            )
            await self._asks.notify(notice, scope)

        async def run(client: mcp.Client) -> mcp_types.CallToolResult:
            return await client.call_tool(name, args, progress_callback=progress)

        self._asks.scopes.append(scope)
        try:
            return await self.request(run, f"tools/call {name!r}")
        finally:
            self._asks.scopes.remove(scope)

    async def list_resources(self) -> list[mcp_types.Resource]:
        async def run(client: mcp.Client) -> list[mcp_types.Resource]:
            return await _all_pages(
                lambda cursor: client.list_resources(cursor=cursor), "resources"
            )

        return await self.request(run, "resources/list")

    async def read_resource(self, uri: str) -> mcp_types.ReadResourceResult:
        async def run(client: mcp.Client) -> mcp_types.ReadResourceResult:
            return await client.read_resource(uri)

        return await self.request(run, f"resources/read {uri!r}")

    async def list_prompts(self) -> list[mcp_types.Prompt]:
        async def run(client: mcp.Client) -> list[mcp_types.Prompt]:
            return await _all_pages(lambda cursor: client.list_prompts(cursor=cursor), "prompts")

        return await self.request(run, "prompts/list")

    async def get_prompt(
        self, name: str, arguments: Mapping[str, str] | None = None
    ) -> mcp_types.GetPromptResult:
        args = {k: str(v) for k, v in (arguments or {}).items()}

        async def run(client: mcp.Client) -> mcp_types.GetPromptResult:
            return await client.get_prompt(name, args or None)

        return await self.request(run, f"prompts/get {name!r}")

    async def capabilities(self) -> Any:
        """The server's declared capabilities (connects if needed)."""

        async def run(client: mcp.Client) -> Any:
            return client.server_capabilities

        return await self.request(run, "capabilities")

    def __repr__(self) -> str:
        return f"<McpClient {self.name!r} {self.config.transport}>"


def _client_info() -> Any:
    import mcp_types

    from raf._version import __version__

    return mcp_types.Implementation(name="raf", version=__version__)


async def _all_pages(fetch: Callable[[str | None], Awaitable[Any]], field: str) -> list[Any]:
    """Every item of a paginated MCP list call, following `next_cursor` to the end."""
    out: list[Any] = []
    cursor: str | None = None
    while True:
        page = await fetch(cursor)
        out.extend(getattr(page, field))
        cursor = page.next_cursor
        if not cursor:
            return out

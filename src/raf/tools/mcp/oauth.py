"""OAuth 2.1 for remote MCP servers, on the official SDK's client flow.

The SDK does the protocol: it discovers the protected resource's and the authorization
server's metadata, registers the client dynamically (or uses a client id given here or a
client metadata URL), runs the authorization code flow with PKCE, and refreshes tokens.
raf adds where tokens are kept (a `TokenStore`: in memory, or a file only its owner can
read), pre-registered credentials, and how the person authorizes (an `Authorizer`: by
default the system browser, with the redirect caught on a loopback port). Tokens and
client secrets never appear in a log line, an error message or a `repr`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import tempfile
import time
import webbrowser
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import parse_qs, urlsplit

from pydantic import BaseModel, ConfigDict, Field

from raf.core.errors import ConfigurationError
from raf.core.private_files import private_dir

if TYPE_CHECKING:
    from mcp.shared.auth import OAuthClientInformationFull, OAuthToken


class _NoSecretsInLogs(logging.Filter):
    """Keeps the SDK's OAuth log records to their first line, without tracebacks: a
    failed token or registration response is logged with the parse error, whose text
    repeats the response body (tokens, client secrets)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = first_line(record.getMessage())
        record.args = None
        record.exc_info = None
        record.exc_text = None
        return True


def first_line(text: str) -> str:
    """The first line of an error text: parse errors list the offending values after it."""
    return text.strip().splitlines()[0] if text.strip() else text


def guard_sdk_logs() -> None:
    """Install the filter on the SDK's OAuth logger (once)."""
    sdk_logger = logging.getLogger("mcp.client.auth.oauth2")
    if not any(isinstance(f, _NoSecretsInLogs) for f in sdk_logger.filters):
        sdk_logger.addFilter(_NoSecretsInLogs())


class McpOAuthConfig(BaseModel):
    """How raf's client authorizes with an OAuth-protected MCP server."""

    model_config = ConfigDict(extra="forbid")

    client_name: str = "raf"
    """The name shown to the person on the consent page (dynamic registration)."""
    redirect_uri: str = "http://127.0.0.1:33418/callback"
    """Where the authorization server sends the browser back; a loopback address, on
    which the default authorizer listens for the redirect."""
    scopes: list[str] | None = None
    """Scopes to ask for; None leaves the choice to the server's metadata."""
    client_id: str | None = None
    """A client registered beforehand with the authorization server (no dynamic
    registration then)."""
    client_secret: str | None = Field(default=None, repr=False)
    token_endpoint_auth_method: str | None = None
    """How a pre-registered client authenticates at the token endpoint:
    client_secret_basic, client_secret_post or none (the default: basic with a secret)."""
    client_metadata_url: str | None = None
    """An HTTPS URL of this client's metadata document, used as the client id when the
    server accepts such ids."""
    token_file: str | None = None
    """Keep tokens in this file (mode 0600) instead of in memory."""


class TokenStore(Protocol):
    """Where the tokens and the registered client of one server are kept."""

    async def get_tokens(self) -> OAuthToken | None: ...

    async def set_tokens(self, tokens: OAuthToken) -> None: ...

    async def get_client_info(self) -> OAuthClientInformationFull | None: ...

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None: ...


def _stamp(tokens: OAuthToken) -> dict[str, Any]:
    """Tokens as kept: `expires_in` counts from when they were issued, so the moment
    they expire is kept as `expires_at`."""
    data = tokens.model_dump(mode="json", exclude_none=True)
    if tokens.expires_in is not None:
        data["expires_at"] = time.time() + tokens.expires_in
    return data


def _unstamp(data: Any) -> OAuthToken | None:
    """Kept tokens with `expires_in` counted from now (negative once expired)."""
    from mcp.shared.auth import OAuthToken

    if not isinstance(data, dict):
        return None
    data = dict(data)
    expires_at = data.pop("expires_at", None)
    if isinstance(expires_at, int | float):
        data["expires_in"] = min(int(expires_at - time.time()), data.get("expires_in") or 0)
        if data["expires_in"] <= 0:
            data["expires_in"] = -1
    return OAuthToken.model_validate(data)


class MemoryTokenStore:
    """Tokens for the life of the process."""

    def __init__(self) -> None:
        self._tokens: dict[str, Any] | None = None
        self._client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return _unstamp(self._tokens)

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self._tokens = _stamp(tokens)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self._client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self._client = client_info

    def __repr__(self) -> str:
        return f"<MemoryTokenStore {'with' if self._tokens else 'without'} tokens>"


class FileTokenStore:
    """Tokens in a JSON file only its owner may read or write (mode 0600), replaced
    atomically so a crash never leaves half a file."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path).expanduser()

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise ConfigurationError(f"token file {self.path} is unreadable: {exc}") from exc
        return data if isinstance(data, dict) else {}

    def _write(self, data: dict[str, Any]) -> None:
        private_dir(self.path.parent)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".tokens-")
        try:
            os.fchmod(fd, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(data, out)
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    async def _update(self, key: str, value: dict[str, Any]) -> None:
        def change() -> None:
            data = self._read()
            data[key] = value
            self._write(data)

        await asyncio.to_thread(change)

    async def get_tokens(self) -> OAuthToken | None:
        return _unstamp((await asyncio.to_thread(self._read)).get("tokens"))

    async def set_tokens(self, tokens: OAuthToken) -> None:
        await self._update("tokens", _stamp(tokens))

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        from mcp.shared.auth import OAuthClientInformationFull

        found = (await asyncio.to_thread(self._read)).get("client")
        return OAuthClientInformationFull.model_validate(found) if found else None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        await self._update("client", client_info.model_dump(mode="json", exclude_none=True))

    def __repr__(self) -> str:
        return f"<FileTokenStore {str(self.path)!r}>"


@dataclass(kw_only=True, slots=True)
class AuthorizationResult:
    """What the authorization server's redirect carried back."""

    code: str
    state: str | None = None
    iss: str | None = None


Authorizer = Callable[[str, str], Awaitable[AuthorizationResult]]
"""`await authorizer(authorization_url, redirect_uri)`: have the person authorize and
return the code from the redirect."""


def result_from_redirect(url: str) -> AuthorizationResult:
    """The code, state and issuer of a redirect URL; an error redirect raises."""
    query = parse_qs(urlsplit(url).query)

    def one(name: str) -> str | None:
        values = query.get(name)
        return values[0] if values else None

    code = one("code")
    if not code:
        error = one("error") or "no code"
        raise ConfigurationError(f"the authorization was refused: {error}")
    return AuthorizationResult(code=code, state=one("state"), iss=one("iss"))


async def browser_authorizer(authorization_url: str, redirect_uri: str) -> AuthorizationResult:
    """Open the system browser on the authorization page and wait (five minutes at most)
    for the redirect on the loopback `redirect_uri`."""
    target = urlsplit(redirect_uri)
    if target.hostname not in ("127.0.0.1", "localhost", "::1") or not target.port:
        raise ConfigurationError(
            f"the browser authorizer needs a loopback redirect_uri with a port, "
            f"got {redirect_uri!r}"
        )
    loop = asyncio.get_running_loop()
    got: asyncio.Future[str] = loop.create_future()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        line = (await reader.readline()).decode("latin-1").split(" ")
        path = line[1] if len(line) > 1 else "/"
        body = b"Authorization received; you may close this window."
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: "
            + str(len(body)).encode()
            + b"\r\nConnection: close\r\n\r\n"
            + body
        )
        await writer.drain()
        writer.close()
        if urlsplit(path).path == (target.path or "/") and not got.done():
            got.set_result(redirect_uri.split("?")[0] + "?" + urlsplit(path).query)

    server = await asyncio.start_server(handle, target.hostname, target.port)
    try:
        webbrowser.open(authorization_url)
        redirect = await asyncio.wait_for(got, 300)
    finally:
        server.close()
        await server.wait_closed()
    return result_from_redirect(redirect)


class _PreRegistered:
    """A store that answers with the pre-registered client until one is stored."""

    def __init__(self, store: TokenStore, client: OAuthClientInformationFull) -> None:
        self._store = store
        self._client = client

    async def get_tokens(self) -> OAuthToken | None:
        return await self._store.get_tokens()

    async def set_tokens(self, tokens: OAuthToken) -> None:
        await self._store.set_tokens(tokens)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return await self._store.get_client_info() or self._client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        await self._store.set_client_info(client_info)


def default_store(config: McpOAuthConfig) -> TokenStore:
    """The config's token file, or memory."""
    return FileTokenStore(config.token_file) if config.token_file else MemoryTokenStore()


def oauth_provider(
    server_url: str,
    config: McpOAuthConfig,
    *,
    store: TokenStore | None = None,
    authorizer: Authorizer | None = None,
) -> Any:
    """The SDK's OAuth flow (an httpx auth) for one server, wired to raf's store and
    authorizer."""
    from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider

    guard_sdk_logs()
    from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata

    store = store or default_store(config)
    authorize = authorizer or browser_authorizer
    scope = " ".join(config.scopes) if config.scopes else None
    metadata = OAuthClientMetadata(
        client_name=config.client_name,
        redirect_uris=[config.redirect_uri],  # type: ignore[list-item]
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        scope=scope,
        token_endpoint_auth_method=config.token_endpoint_auth_method,  # type: ignore[arg-type]
    )
    if config.client_id:
        method = config.token_endpoint_auth_method or (
            "client_secret_basic" if config.client_secret else "none"
        )
        store = _PreRegistered(
            store,
            OAuthClientInformationFull(
                client_id=config.client_id,
                client_secret=config.client_secret,
                redirect_uris=[config.redirect_uri],  # type: ignore[list-item]
                token_endpoint_auth_method=method,
                scope=scope,
            ),
        )
    pending: dict[str, str] = {}

    async def redirect(url: str) -> None:
        pending["url"] = url

    async def callback() -> Any:
        result = await authorize(pending.pop("url"), config.redirect_uri)
        return AuthorizationCodeResult(code=result.code, state=result.state, iss=result.iss)

    class Provider(OAuthClientProvider):
        async def _initialize(self) -> None:
            # Tokens loaded from a store carry the time they have left: without it a
            # stored token that expired would be sent, refused, and the person asked
            # again where a refresh would do.
            await super()._initialize()
            tokens = self.context.current_tokens
            if tokens is not None and tokens.expires_in is not None:
                self.context.update_token_expiry(tokens)

    return Provider(
        server_url,
        metadata,
        store,
        redirect_handler=redirect,
        callback_handler=callback,
        client_metadata_url=config.client_metadata_url,
    )

"""Who may talk to `raf mcp serve` over HTTP: `raf serve`'s own guard (`ServeSecurity`
and `SecurityMiddleware` of `serve/security.py`: bearer tokens, Host and Origin checks,
wrong tokens barring an address, the request limits) with the two things that are the MCP
server's own: its tokens come from `$RAF_MCP_TOKEN`, and the Host names it accepts are
loopback's, the bound address's and those the user adds, whatever the address."""

from __future__ import annotations

import socket
from collections.abc import Iterable, Mapping

from raf.core.errors import ConfigurationError
from raf.serve.limits import ServeLimits
from raf.serve.security import ServeSecurity

TOKEN_ENV = "RAF_MCP_TOKEN"
"""The environment variable holding the bearer tokens clients must send (one, or several
separated by commas: each token sees only the sessions issued to it)."""

_LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")


def env_tokens(environ: Mapping[str, str]) -> list[str]:
    """The bearer tokens `$RAF_MCP_TOKEN` names; refused when it is set but names none
    (a server meant to be guarded must not start open)."""
    value = environ.get(TOKEN_ENV)
    if value is None:
        return []
    tokens = [t.strip() for t in value.split(",") if t.strip()]
    if not tokens:
        raise ConfigurationError(f"${TOKEN_ENV} is set but empty; set a long random token")
    return tokens


def allowed_host_names(host: str, extra: Iterable[str] = ()) -> list[str]:
    """The names clients may put in the Host header: loopback, the bound address (and
    this machine's name when bound to every interface), and what the user names."""
    names = [*_LOOPBACK_NAMES, host, *extra]
    if host in ("0.0.0.0", "::", ""):
        names.append(socket.gethostname())
    seen: list[str] = []
    for name in names:
        if name and name not in ("0.0.0.0", "::") and name not in seen:
            seen.append(name)
    return seen


def mcp_security(
    host: str,
    tokens: Iterable[str] = (),
    *,
    allowed_hosts: Iterable[str] = (),
    allowed_origins: Iterable[str] = (),
    limits: ServeLimits | None = None,
) -> ServeSecurity:
    """`raf serve`'s admission rules for an MCP server bound to `host`: refused beyond
    loopback without a token, Host checked against `allowed_host_names` on any address."""
    return ServeSecurity.for_bind(
        host,
        tokens=list(tokens),
        allowed_hosts=allowed_host_names(host, allowed_hosts),
        allowed_origins=list(allowed_origins),
        limits=limits,
        token_source=f"${TOKEN_ENV} to a long random value (clients send 'Authorization: "
        "Bearer <token>')",
    )

"""Credentials for OpenAPI tools, read from environment variables at call time."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal

from raf.core.errors import ToolExecutionError


def _secret(env: str) -> str:
    value = os.environ.get(env)
    if not value:
        raise ToolExecutionError(f"environment variable {env} is not set: it holds the API key")
    return value


@dataclass(kw_only=True, slots=True)
class BearerAuth:
    """`Authorization: Bearer <token>` with the token from an environment variable."""

    env: str

    def apply(
        self, headers: dict[str, str], query: dict[str, object], cookies: dict[str, str]
    ) -> None:
        headers["Authorization"] = f"Bearer {_secret(self.env)}"


@dataclass(kw_only=True, slots=True)
class ApiKeyAuth:
    """An API key in a header, query parameter or cookie, from an environment variable."""

    name: str
    env: str
    location: Literal["header", "query", "cookie"] = "header"

    def apply(
        self, headers: dict[str, str], query: dict[str, object], cookies: dict[str, str]
    ) -> None:
        value = _secret(self.env)
        if self.location == "header":
            headers[self.name] = value
        elif self.location == "query":
            query[self.name] = value
        else:
            cookies[self.name] = value


@dataclass(kw_only=True, slots=True, repr=False)
class StaticBearerAuth:
    """`Authorization: Bearer <token>` with a token given in code (never printed)."""

    token: str

    def apply(
        self, headers: dict[str, str], query: dict[str, object], cookies: dict[str, str]
    ) -> None:
        headers["Authorization"] = f"Bearer {self.token}"

    def __repr__(self) -> str:
        return "StaticBearerAuth(token=***)"


Auth = BearerAuth | ApiKeyAuth | StaticBearerAuth
